package kwoknodes

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// rsync's output, as the copier's sink (rsync --info=progress2 --stats) prints it. Copied from
// rsync's source (github.com/RsyncProject/rsync, 3.2/3.3/3.4):
//
//   - progress.c rprint_progress: a record is
//     "\r%15s %3d%% %7.2f%s %s%s": the bytes so far (human_num), the percent
//     (100 only when all bytes are in: (int)(100.0*ofs/size)), the rate in kB/s (1024 bytes),
//     shown as MB/s above 1024 kB/s and as GB/s above 1024*1024 kB/s, the time column
//     ("%4u:%02u:%02u", "  ??:??:??" when negative or over 9999 hours) and the end of line.
//     A record within a transfer (show_progress, is_last false) ends in two spaces, its rate is
//     over the last PROGRESS_HISTORY_SECS (5) samples, one a second (the oldest of which is 4 s
//     old), and its time column is the time remaining, computed as rsync does:
//     (size-ofs)/rate_kB/1000 (bytes over kB/s: 2.4% longer than the wall clock). The record
//     at a file's end (end_progress, is_last) ends in " (xfr#N, to-chk=M/T)" and shows the
//     average rate since the transfer's start and, in the time column, the time it took.
//     rsync starts each record with "\r", not a new line; the sink is expected to turn them
//     into new lines (tr '\r' '\n') so that the container log holds one record a line (the
//     kubelet's CRI log splits lines at '\n' only).
//   - human_num with --human-readable's default level 1 (rsync.1: "output numbers in a more
//     human-readable format ... digits in groups of 3 with a separator"): 1,073,741,824.
//   - main.c output_summary (--stats): "Total transferred file size: %s bytes".
//   - log.c log_exit: "rsync error: %s (code %d) at %s(%d) [%s=%s]" with errcode.h's
//     names (rerr_names in log.c).
//
// The played transfer is one file a claim, in the module's root directory (xfr#1, to-chk=0/2:
// the file list holds the directory and the file): the records' byte counts, percents, rates
// and times are what rsync prints for a file of the claim's size copied at a constant rate.
// testdata/rsync-3.5.0-progress2-stats.txt is real rsync's output for such a copy ("rsync -a
// --stats --info=progress2 --bwlimit=4096 src/ dst/", one 20 MiB file; rsync_test.go checks
// the formatter against each of its records). Divergences: real rsync's first record shows the
// first block received (32,768), the played one 0; rsync 3.5.0 printed its last record twice.

// rsyncVersion is the rsync the played error line names ([Receiver=VERSION]).
const rsyncVersion = "3.2.7"

// rsyncHistorySpan is how far back a record's rate looks: PROGRESS_HISTORY_SECS samples, one
// a second, the oldest 4 s before the newest.
const rsyncHistorySpan = 4

// rsyncRecord formats one --info=progress2 record without its leading "\r": ofs of size bytes,
// rate in kB/s, remain seconds in the time column, eol its end ("  " or the xfr# part).
func rsyncRecord(ofs, size int64, rateKB, remain float64, eol string) string {
	units := "kB/s"
	switch {
	case rateKB > 1024*1024:
		rateKB /= 1024.0 * 1024.0
		units = "GB/s"
	case rateKB > 1024:
		rateKB /= 1024.0
		units = "MB/s"
	}
	var rem string
	if remain < 0 || remain > 9999.0*3600.0 {
		rem = "  ??:??:??"
	} else {
		rem = fmt.Sprintf("%4d:%02d:%02d", uint(remain/3600.0), uint(remain/60.0)%60, uint(remain)%60)
	}
	pct := 100
	if ofs != size {
		pct = int(100.0 * float64(ofs) / float64(size))
	}
	return fmt.Sprintf("%15s %3d%% %7.2f%s %s%s", rsyncNum(ofs), pct, rateKB, units, rem, eol)
}

// rsyncNum is human_num at --human-readable level 1: digits in groups of three.
func rsyncNum(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	if neg {
		b.WriteByte('-')
	}
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// rsyncStats is --stats' line with what a claim's rsync transferred.
func rsyncStats(bytes int64) string {
	return "Total transferred file size: " + rsyncNum(bytes) + " bytes"
}

// rsyncErrNames are rsync's exit codes' names (errcode.h, log.c rerr_names).
var rsyncErrNames = map[int]string{
	1:  "syntax or usage error",
	2:  "protocol incompatibility",
	3:  "errors selecting input/output files, dirs",
	4:  "requested action not supported",
	5:  "error starting client-server protocol",
	6:  "daemon unable to append to log-file",
	10: "error in socket IO",
	11: "error in file IO",
	12: "error in rsync protocol data stream",
	13: "errors with program diagnostics",
	14: "error in IPC code",
	15: "sibling process crashed",
	16: "sibling process terminated abnormally",
	19: "received SIGUSR1",
	20: "received SIGINT, SIGTERM, or SIGHUP",
	21: "waitpid() failed",
	22: "error allocating core memory buffers",
	23: "some files/attrs were not transferred (see previous errors)",
	24: "some files vanished before they could be transferred",
	25: "the --max-delete limit stopped deletions",
	30: "timeout in data send/receive",
	35: "timeout waiting for daemon connection",
}

// rsyncError is log_exit's line for exit code (the sink's exit code is its rsync's: set -e).
// The source location is the one rsync 3.2.7 names for a connection lost in a transfer
// (io.c(231)); here it is the same for every code.
func rsyncError(code int) string {
	name, ok := rsyncErrNames[code]
	if !ok {
		name = "unexplained error"
	}
	return fmt.Sprintf("rsync error: %s (code %d) at io.c(231) [Receiver=%s]", name, code, rsyncVersion)
}

// copyTranscript is the sink's log for claims copied one after another from start: each claim
// takes per (its bytes at a constant rate) and the last one fails half way when exitCode is not
// 0 (per is then the Pod's run time over len(claims)-½). Lines up to now are returned, each
// with its time; at most maxRecords progress records a claim (the latest).
func copyTranscript(claims []string, bytes int64, per time.Duration, exitCode int, start, now time.Time, maxRecords int) []logLine {
	var out []logLine
	perMs := per.Milliseconds()
	if perMs <= 0 {
		perMs = 1
	}
	ofsAt := func(k int64) int64 { // bytes after k seconds
		if k*1000 >= perMs {
			return bytes
		}
		return int64(float64(bytes) * float64(k*1000) / float64(perMs))
	}
	for i, claim := range claims {
		cs := start.Add(time.Duration(i) * per)
		if now.Before(cs) {
			break
		}
		out = append(out, logLine{t: cs, text: fmt.Sprintf("olapgke-copy: claim %s (%d of %d)", claim, i+1, len(claims))})
		failing := exitCode != 0 && i == len(claims)-1
		endMs := perMs
		if failing {
			endMs = perMs / 2
		}
		elapsedMs := now.Sub(cs).Milliseconds()
		// Records at 0, 1, 2, ... s while the transfer runs (rsync prints one a second).
		last := min(elapsedMs, endMs-1) / 1000
		if failing {
			last = min(elapsedMs, endMs) / 1000
		}
		first := max(0, last-int64(maxRecords)+1)
		for k := first; k <= last; k++ {
			ofs := ofsAt(k)
			old := max(0, k-rsyncHistorySpan)
			rate := 0.0
			if k > old {
				rate = float64(ofs-ofsAt(old)) * 1000.0 / float64((k-old)*1000) / 1024.0
			}
			remain := 0.0
			if rate != 0 {
				remain = float64(bytes-ofs) / rate / 1000.0
			}
			out = append(out, logLine{t: cs.Add(time.Duration(k) * time.Second), text: rsyncRecord(ofs, bytes, rate, remain, "  ")})
		}
		if failing {
			if elapsedMs >= endMs {
				out = append(out, logLine{t: cs.Add(time.Duration(endMs) * time.Millisecond), text: rsyncError(exitCode)})
			}
			break
		}
		if elapsedMs < perMs {
			break
		}
		end := cs.Add(per)
		rate := float64(bytes) * 1000.0 / float64(perMs) / 1024.0
		out = append(out,
			logLine{t: end, text: rsyncRecord(bytes, bytes, rate, float64(perMs)/1000.0, " (xfr#1, to-chk=0/2)")},
			logLine{t: end, text: rsyncStats(bytes)})
	}
	return out
}

// logLine is one line of a played container log (without its new line) and the time it was
// written; partial: the log's last line, written without a new line (the CRI log's "P" tag).
type logLine struct {
	t       time.Time
	text    string
	partial bool
}
