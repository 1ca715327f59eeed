// Package gcpercent sets the Go garbage collector's GOGC for the provider process: 400 unless the
// user set GOGC.
//
// Why (issue 47, measured on make bench's 5,000-node x 1,000-ordinal world): Terraform starts
// the provider for one command, so every page of its heap is new to the process, and on the
// bench's machine first touching a page costs about 12 us. Before ModifyPlan runs, the plugin
// framework turns the request into values (three walks of every value of the resource), which
// churns through garbage with about 15 MiB live: at the default GOGC of 100 the collector ran
// about 70 times in that phase. ModifyPlan then grows the heap to about 180 MiB for the
// snapshot and the planner. With GOGC 400 the collector runs about a quarter as often and the
// plan reuses pages the framework's garbage already brought in: the plan's CPU (ModifyPlan,
// process CPU) went from 1.0-1.2 s to 0.6-0.96 s, the planner's own part from about 0.55 s to
// about 0.25 s (the warm Go benchmark's figure). GOGC 200 saved little (1.0-1.1 s) and 800
// brought in more new pages than it saved (0.7-1.0 s).
//
// The cost is memory: between collections the heap may grow to five times what is live, not
// two. The provider's live heap is the plan's snapshot and simulation (tens of MiB at 5,000
// nodes), so its peak RSS stays a few hundred MiB (make bench reports it); a user who needs the
// default sets GOGC=100.
package gcpercent

import "runtime/debug"

// Provider is the GOGC the provider runs with unless the user sets one.
const Provider = 400

// SetForProvider sets GOGC to Provider unless getenv("GOGC") is set (then the runtime already
// follows it). It returns the GOGC in effect afterwards.
func SetForProvider(getenv func(string) string) int {
	if getenv("GOGC") != "" {
		p := debug.SetGCPercent(100)
		debug.SetGCPercent(p)
		return p
	}
	debug.SetGCPercent(Provider)
	return Provider
}
