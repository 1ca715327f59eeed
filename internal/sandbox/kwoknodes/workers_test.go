package kwoknodes

import "testing"

// Worlds up to 1,000 nodes keep KWOK's 4 workers and the kubelet's 40 s Lease (every suite's
// worlds); larger ones get one more worker per 250 nodes and 120 s Leases, so that 5,000 nodes'
// renewals keep up.
func TestWorkersFor(t *testing.T) {
	for nodes, want := range map[int][2]uint{0: {4, 40}, 50: {4, 40}, 500: {4, 40}, 1000: {4, 40}, 1250: {5, 120}, 5000: {20, 120}} {
		if got := [2]uint{workersFor(nodes), leaseSecondsFor(nodes)}; got != want {
			t.Errorf("workers and lease seconds for %d nodes = %v, want %v", nodes, got, want)
		}
	}
}
