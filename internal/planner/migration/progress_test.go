package migration

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestParseCopyProgress reads the default sink's log: rsync --info=progress2 records (rsync
// progress.c print_progress: "%12s %3d%% %7.2f%s %s%s") after the sink's claim markers.
func TestParseCopyProgress(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		log  string
		want CopyProgress
		ok   bool
	}{
		"half way, one claim": {
			log: "olapgke-copy: claim cache (1 of 1)\n" +
				"         32,768   0%    0.00kB/s    0:00:00 (xfr#1, to-chk=9/11)\n" +
				"    536,870,912  50%   10.00MB/s    0:00:51 (xfr#1, to-chk=0/1)\n",
			want: CopyProgress{Claim: "cache", Index: 1, Of: 1, Bytes: 536870912, Percent: 50, Rate: 10 << 20, Remaining: 51 * time.Second},
			ok:   true,
		},
		"as rsync writes to a terminal (carriage returns), second claim": {
			log: "olapgke-copy: claim a (1 of 2)\n  1,024 100%  1.00kB/s    0:00:01 (xfr#1, to-chk=0/1)\n" +
				"olapgke-copy: claim b (2 of 2)\n" +
				"      1,048,576   1%    1.50GB/s    1:02:03 (xfr#1, ir-chk=1000/1001)\r    2,097,152   2%    1.50GB/s    1:01:00 (xfr#2, ir-chk=999/1001)",
			want: CopyProgress{Claim: "b", Index: 2, Of: 2, Bytes: 2097152, Percent: 2, Rate: 1.5 * (1 << 30), Remaining: time.Hour + time.Minute},
			ok:   true,
		},
		"-h: a unit instead of separators": {
			log:  "        512.00M  50%   10.00MB/s    0:00:51\n",
			want: CopyProgress{Bytes: 512 << 20, Percent: 50, Rate: 10 << 20, Remaining: 51 * time.Second},
			ok:   true,
		},
		"a claim started, nothing printed yet": {
			log:  "olapgke-copy: claim a (1 of 2)\n  1,024 100%  1.00kB/s    0:00:01 (xfr#1, to-chk=0/1)\nolapgke-copy: claim b (2 of 2)\n",
			want: CopyProgress{Claim: "b", Index: 2, Of: 2},
		},
		"nothing rsync wrote":     {log: "sending incremental file list\n"},
		"empty":                   {},
		"a percent in prose only": {log: "disk 50% full\n"},
	} {
		got, ok := ParseCopyProgress(tc.log)
		if ok != tc.ok {
			t.Errorf("%s: ok = %v, want %v", name, ok, tc.ok)
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", name, diff)
		}
	}
}

func TestCopyProgressDescribe(t *testing.T) {
	t.Parallel()
	p := CopyProgress{Claim: "cache", Index: 1, Of: 2, Bytes: 536870912, Percent: 50, Rate: 10 << 20, Remaining: 51 * time.Second}
	if got, want := p.Describe(), "claim cache (1 of 2): 512.0 MiB copied (50%), 10.0 MiB/s, about 51s left"; got != want {
		t.Errorf("Describe() = %q, want %q", got, want)
	}
	p.Percent, p.Claim = 100, ""
	if got, want := p.Describe(), "512.0 MiB copied (100%), 10.0 MiB/s, done"; got != want {
		t.Errorf("Describe() = %q, want %q", got, want)
	}
}
