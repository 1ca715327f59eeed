package bench

import (
	"strings"
	"testing"
)

func TestPlanVerdicts(t *testing.T) {
	plan := func(nodes ...string) string {
		var b strings.Builder
		b.WriteString("Terraform will perform the following actions:\n\nWarning: Ordinals Will Be Recreated\n\n")
		for i, n := range nodes {
			b.WriteString("wave 1, ordinal " + string(rune('0'+i)) + ": schedulable   \n  node today: " + n + "\n")
		}
		return b.String()
	}
	a := planVerdicts(plan("gke-olap-pool-a-80f305a5-c3c6", "gke-olap-pool-a-80f305a5-x9k2"))
	if want := "Ordinals Will Be Recreated\nwave 1, ordinal 0: schedulable\n  node today: NODE1\nwave 1, ordinal 1: schedulable\n  node today: NODE2"; a != want {
		t.Fatalf("planVerdicts:\n%s\nwant\n%s", a, want)
	}
	// Other node names, same pattern: equal. Two ordinals on one node: not.
	if b := planVerdicts(plan("gke-olap-pool-a-1234abcd-aaaa", "gke-olap-pool-a-1234abcd-bbbb")); b != a {
		t.Errorf("renamed nodes: got\n%s\nwant\n%s", b, a)
	}
	if b := planVerdicts(plan("gke-olap-pool-a-1234abcd-aaaa", "gke-olap-pool-a-1234abcd-aaaa")); b == a {
		t.Errorf("co-located ordinals compared equal to spread ones:\n%s", b)
	}
	if v := planVerdicts("No changes."); v != "" {
		t.Errorf("plan without the warning: %q", v)
	}
}

func TestRequestDiff(t *testing.T) {
	a := Requests{"LIST /api/v1/nodes": 1, "GET /api/v1/namespaces/bench/pods/olap-0": 1}
	if d := requestDiff(a, Requests{"GET /api/v1/namespaces/bench/pods/olap-0": 1, "LIST /api/v1/nodes": 1}); d != "" {
		t.Errorf("equal counts: %q", d)
	}
	b := Requests{"LIST /api/v1/nodes": 2, "LIST /api/v1/pods": 1, "GET /api/v1/namespaces/bench/pods/olap-0": 1}
	if d, want := requestDiff(a, b), "LIST /api/v1/nodes: 1 vs 2, LIST /api/v1/pods: 0 vs 1"; d != want {
		t.Errorf("requestDiff = %q, want %q", d, want)
	}
}
