// Package cputime reads the CPU time this process has used, for the timing lines make bench reads
// (the provider's plan timing). CPU time, unlike wall time, does not count the time the process
// waited for a core another process held: in the bench's large world the sandbox's API server and
// its 5,000 simulated nodes run on the same 2 cores as the provider (issue 47).
//
// Why not runtime/metrics: its /cpu/classes/ metrics are the Go runtime's estimates from
// GOMAXPROCS x wall time less idle time, not the CPU the kernel charged. The kernel's own count is
// getrusage(2) (RUSAGE_SELF: user + system time of every thread), which the syscall package has on
// Unix systems; elsewhere (Windows, wasm) Process reports none.
package cputime

import "time"

// Process is the user + system CPU time the process has used so far; ok is false where the
// platform gives none (then the timing lines leave their CPU fields out).
func Process() (d time.Duration, ok bool) { return process() }
