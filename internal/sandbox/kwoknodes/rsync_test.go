package kwoknodes

import (
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// progress2Record splits a progress2 record into its fields: bytes, percent, rate, units, time
// column, end.
var progress2Record = regexp.MustCompile(`^ *([0-9,]+) +([0-9]+)% +([0-9.]+)(kB/s|MB/s|GB/s) +([0-9]+):([0-9]{2}):([0-9]{2})(.*)$`)

// TestRsyncRecord_RealRsyncOutput formats each record real rsync printed (testdata: rsync 3.5.0,
// --info=progress2 --stats) from its own values and wants the very same line, and the --stats
// line the same.
func TestRsyncRecord_RealRsyncOutput(t *testing.T) {
	raw, err := os.ReadFile("testdata/rsync-3.5.0-progress2-stats.txt")
	if err != nil {
		t.Fatal(err)
	}
	const size = 20971520
	records, stats := 0, 0
	for _, line := range strings.FieldsFunc(string(raw), func(r rune) bool { return r == '\r' || r == '\n' }) {
		if strings.HasPrefix(line, "Total transferred file size:") {
			stats++
			if got := rsyncStats(size); got != line {
				t.Errorf("stats line:\n got %q\nwant %q", got, line)
			}
			continue
		}
		m := progress2Record.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		records++
		if got := formatLike(t, m, size); got != line {
			t.Errorf("record:\n got %q\nwant %q", got, line)
		}
	}
	if records != 7 || stats != 1 {
		t.Fatalf("testdata has %d records and %d stats lines, want 7 and 1", records, stats)
	}
}

// formatLike calls rsyncRecord with the values of a parsed record m of a size-byte transfer.
func formatLike(t *testing.T, m []string, size int64) string {
	t.Helper()
	ofs, err := strconv.ParseInt(strings.ReplaceAll(m[1], ",", ""), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	rate, _ := strconv.ParseFloat(m[3], 64)
	switch m[4] {
	case "MB/s":
		rate *= 1024
	case "GB/s":
		rate *= 1024 * 1024
	}
	h, _ := strconv.Atoi(m[5])
	mi, _ := strconv.Atoi(m[6])
	s, _ := strconv.Atoi(m[7])
	return rsyncRecord(ofs, size, rate, float64(h*3600+mi*60+s)+0.5, m[8])
}

func TestRsyncRecord_Shapes(t *testing.T) {
	for _, c := range []struct {
		name         string
		ofs, size    int64
		rate, remain float64
		eol, want    string
	}{
		// The shape of rsync's man page example and of the brief.
		{"half", 536870912, 1073741824, 10240, 51.2, " (xfr#1, to-chk=0/1)", "    536,870,912  50%   10.00MB/s    0:00:51 (xfr#1, to-chk=0/1)"},
		{"kB/s at 1024", 1024, 4096, 1024, 3, "  ", "          1,024  25% 1024.00kB/s    0:00:03  "},
		{"GB/s", 5 << 30, 10 << 30, 2 * 1024 * 1024 * 1.5, 3661, "  ", "  5,368,709,120  50%    3.00GB/s    1:01:01  "},
		{"percent floors", 999, 1000, 1, 0, "  ", "            999  99%    1.00kB/s    0:00:00  "},
		{"time unknown", 0, 1, 0, 9999*3600 + 1, "  ", "              0   0%    0.00kB/s   ??:??:??  "},
		{"empty file", 0, 0, 0, 0, "  ", "              0 100%    0.00kB/s    0:00:00  "},
	} {
		if got := rsyncRecord(c.ofs, c.size, c.rate, c.remain, c.eol); got != c.want {
			t.Errorf("%s:\n got %q\nwant %q", c.name, got, c.want)
		}
	}
	for n, want := range map[int64]string{0: "0", 999: "999", 1000: "1,000", 1073741824: "1,073,741,824", -12345: "-12,345"} {
		if got := rsyncNum(n); got != want {
			t.Errorf("rsyncNum(%d) = %q, want %q", n, got, want)
		}
	}
	if got, want := rsyncError(10), "rsync error: error in socket IO (code 10) at io.c(231) [Receiver=3.2.7]"; got != want {
		t.Errorf("rsyncError(10) = %q, want %q", got, want)
	}
	if got := rsyncError(99); !strings.HasPrefix(got, "rsync error: unexplained error (code 99)") {
		t.Errorf("rsyncError(99) = %q", got)
	}
}

func texts(lines []logLine) []string {
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = l.text
	}
	return out
}

func TestCopyTranscript(t *testing.T) {
	start := time.Date(2026, 12, 6, 0, 0, 0, 0, time.UTC)
	const gib = 1 << 30
	claims := []string{"data", "cache"}
	per := 100 * time.Second

	// 50.5 s into the first claim: the header and records at 0..50 s.
	got := texts(copyTranscript(claims, gib, per, 0, start, start.Add(50500*time.Millisecond), 120))
	if len(got) != 52 || got[0] != "olapgke-copy: claim data (1 of 2)" {
		t.Fatalf("half way: %d lines, first %q", len(got), got[0])
	}
	// 1 GiB over 100 s: 10.24 MiB/s ("10.24MB/s"); 50% after 50 s, 50 s left, which rsync
	// shows as (bytes left)/(kB/s)/1000 = 51.2 s.
	if want := "    536,870,912  50%   10.24MB/s    0:00:51  "; got[51] != want {
		t.Errorf("record at 50 s:\n got %q\nwant %q", got[51], want)
	}

	// The first claim done, the second 10 s in.
	got = texts(copyTranscript(claims, gib, per, 0, start, start.Add(110*time.Second), 120))
	// header, records 0..99 (100), final, stats, header, records 0..10 (11)
	if len(got) != 1+100+2+1+11 {
		t.Fatalf("second claim: %d lines:\n%s", len(got), strings.Join(got, "\n"))
	}
	if want := "  1,073,741,824 100%   10.24MB/s    0:01:40 (xfr#1, to-chk=0/2)"; got[101] != want {
		t.Errorf("final record:\n got %q\nwant %q", got[101], want)
	}
	if got[102] != "Total transferred file size: 1,073,741,824 bytes" || got[103] != "olapgke-copy: claim cache (2 of 2)" {
		t.Errorf("after the first claim: %q, %q", got[102], got[103])
	}

	// A long claim keeps its latest 120 records.
	long := copyTranscript([]string{"data"}, gib, time.Hour, 0, start, start.Add(30*time.Minute), 120)
	if len(long) != 121 || !long[1].t.Equal(start.Add((1800-119)*time.Second)) || !long[120].t.Equal(start.Add(1800*time.Second)) {
		t.Errorf("long claim: %d lines, first record at %v, last at %v", len(long), long[1].t, long[len(long)-1].t)
	}

	// Failing: the last claim stops half way with rsync's error line, once the Pod's end came.
	per = time.Duration(float64(60*time.Second) / 1.5) // run-for 60 s, 2 claims, the second fails
	got = texts(copyTranscript(claims, gib, per, 10, start, start.Add(60*time.Second), 120))
	last := got[len(got)-1]
	if last != "rsync error: error in socket IO (code 10) at io.c(231) [Receiver=3.2.7]" {
		t.Fatalf("failed copy ends in %q", last)
	}
	if m := progress2Record.FindStringSubmatch(got[len(got)-2]); m == nil || m[2] != "50" {
		t.Errorf("failed copy's last record %q, want 50%%", got[len(got)-2])
	}
	if strings.Count(strings.Join(got, "\n"), "Total transferred file size") != 1 {
		t.Errorf("failed copy: want the first claim's stats only:\n%s", strings.Join(got, "\n"))
	}
	// Before the end: no error line yet.
	got = texts(copyTranscript(claims, gib, per, 10, start, start.Add(59*time.Second), 120))
	if strings.HasPrefix(got[len(got)-1], "rsync error") {
		t.Errorf("error line before the Pod's end")
	}
}
