package gcpercent

import (
	"runtime/debug"
	"testing"
)

// current reads GOGC without changing it.
func current() int {
	p := debug.SetGCPercent(100)
	debug.SetGCPercent(p)
	return p
}

// Not parallel: GOGC is process-wide.
func TestSetForProvider(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	unset := func(string) string { return "" }
	if got := SetForProvider(unset); got != Provider || current() != Provider {
		t.Errorf("without GOGC: returned %d, GOGC %d; want %d", got, current(), Provider)
	}
	// A GOGC the user set is theirs (the runtime read it at start; here it stands at 50).
	debug.SetGCPercent(50)
	set := func(k string) string {
		if k == "GOGC" {
			return "50"
		}
		return ""
	}
	if got := SetForProvider(set); got != 50 || current() != 50 {
		t.Errorf("with GOGC=50: returned %d, GOGC %d; want 50", got, current())
	}
	debug.SetGCPercent(-1)
	off := func(k string) string {
		if k == "GOGC" {
			return "off"
		}
		return ""
	}
	if got := SetForProvider(off); got != -1 || current() != -1 {
		t.Errorf("with GOGC=off: returned %d, GOGC %d; want -1 (off)", got, current())
	}
}
