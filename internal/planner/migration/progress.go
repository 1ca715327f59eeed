package migration

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// A warm move's progress is what its copier says in its log: the default sink
// (DefaultSinkCommand) announces each claim with a CopyClaimMarker line, then runs rsync with
// --info=progress2, whose records it turns into lines. CopyProgress reads the latest of both
// from the tail of that log; a sink_command of the user's own that prints the same records is
// read the same way, and one that prints none shows no progress (the copy still works).

// CopyClaimMarker starts the line the default sink prints before it copies a claim:
// "olapgke-copy: claim <name> (<i> of <n>)".
const CopyClaimMarker = "olapgke-copy: claim "

// CopyProgress is how far a copier is, as its log says.
type CopyProgress struct {
	// Claim is the claim template being copied, Index and Of its place among the claims
	// ("" and 0 when the log names none).
	Claim     string
	Index, Of int
	// Bytes is what rsync has copied of that claim so far; Percent its share of the claim's
	// files (rsync's own figure).
	Bytes   int64
	Percent int
	// Rate is rsync's current rate in bytes per second; Remaining its estimate of the time
	// left for the claim (at 100%, rsync prints the time the claim took instead).
	Rate      float64
	Remaining time.Duration
}

// progress2 is one rsync --info=progress2 record (rsync progress.c, print_progress: "%12s %3d%%
// %7.2f%s %s%s", the bytes as human_num prints them, then the rate in kB/s, MB/s or GB/s
// (powers of 1024) and the time left as h:mm:ss), e.g.
// "    536,870,912  50%   10.00MB/s    0:00:51 (xfr#1, to-chk=0/1)". With -h the bytes carry a
// unit suffix instead of separators ("512.00M").
var progress2 = regexp.MustCompile(`^\s*([0-9][0-9,.]*)([KMGTP]?)\s+([0-9]{1,3})%\s+([0-9]+(?:\.[0-9]+)?)([kMGT]B/s)\s+([0-9]+):([0-9]{2}):([0-9]{2})`)

// claimLine is CopyClaimMarker's line.
var claimLine = regexp.MustCompile(`^` + regexp.QuoteMeta(CopyClaimMarker) + `(\S+) \(([0-9]+) of ([0-9]+)\)`)

// ParseCopyProgress reads the latest claim marker and the latest progress2 record of a
// copier's log tail (lines may also be separated by carriage returns, as rsync writes them to
// a terminal). ok is false when the tail holds no record of the latest claim (p then still
// names the claim, when a marker says which).
func ParseCopyProgress(log string) (p CopyProgress, ok bool) {
	lines := strings.FieldsFunc(log, func(r rune) bool { return r == '\n' || r == '\r' })
	record, marker := -1, -1
	for i := len(lines) - 1; i >= 0 && (record < 0 || marker < 0); i-- {
		if record < 0 && marker < 0 && progress2.MatchString(lines[i]) {
			record = i
		}
		if marker < 0 && claimLine.MatchString(lines[i]) {
			marker = i
		}
	}
	if marker >= 0 {
		m := claimLine.FindStringSubmatch(lines[marker])
		p.Claim, p.Index, p.Of = m[1], atoi(m[2]), atoi(m[3])
	}
	if record < 0 {
		return p, false
	}
	m := progress2.FindStringSubmatch(lines[record])
	p.Bytes = parseRsyncBytes(m[1], m[2])
	p.Percent = atoi(m[3])
	rate, _ := strconv.ParseFloat(m[4], 64)
	p.Rate = rate * float64(int64(1)<<(10*(strings.Index("kMGT", m[5][:1])+1)))
	p.Remaining = time.Duration(atoi(m[6]))*time.Hour + time.Duration(atoi(m[7]))*time.Minute + time.Duration(atoi(m[8]))*time.Second
	return p, true
}

func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}

// parseRsyncBytes reads human_num's output: digits with thousands separators (commas or
// points, by locale), or with -h a decimal number and a power-of-1024 suffix.
func parseRsyncBytes(num, suffix string) int64 {
	if suffix == "" {
		n, _ := strconv.ParseInt(strings.NewReplacer(",", "", ".", "").Replace(num), 10, 64)
		return n
	}
	f, _ := strconv.ParseFloat(strings.ReplaceAll(num, ",", "."), 64)
	return int64(f * float64(int64(1)<<(10*(strings.Index("KMGTP", suffix)+1))))
}

// Describe is the progress as an Event says it: "claim cache (1 of 2): 512.0 MiB copied (50%),
// 10.0 MiB/s, about 51s left".
func (p CopyProgress) Describe() string {
	var b strings.Builder
	if p.Claim != "" {
		fmt.Fprintf(&b, "claim %s (%d of %d): ", p.Claim, p.Index, p.Of)
	}
	fmt.Fprintf(&b, "%s copied (%d%%), %s/s", humanBytes(float64(p.Bytes)), p.Percent, humanBytes(p.Rate))
	if p.Percent < 100 {
		fmt.Fprintf(&b, ", about %s left", roughDuration(p.Remaining.Seconds()))
	} else {
		b.WriteString(", done")
	}
	return b.String()
}

// humanBytes is n bytes with one decimal and a power-of-1024 unit: "512.0 MiB".
func humanBytes(n float64) string {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB", "PiB"}
	i := 0
	for n >= 1024 && i < len(units)-1 {
		n /= 1024
		i++
	}
	if i == 0 {
		return fmt.Sprintf("%.0f B", n)
	}
	return fmt.Sprintf("%.1f %s", n, units[i])
}
