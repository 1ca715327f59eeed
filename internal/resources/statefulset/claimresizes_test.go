package statefulset

import (
	"testing"

	"github.com/olapgke/terraform-provider-olapgke/internal/planner/rollout"
)

// claim_resizes lists every claim a growth resizes, the retained ones too, and each retained
// claim that keeps its size with why (issue 41).
func TestClaimResizesValue(t *testing.T) {
	const gi = int64(1) << 30
	p := &rollout.Plan{Replace: &rollout.Replacement{
		Mode: rollout.RecreateOrphan,
		Expansions: []rollout.ClaimExpansion{
			{Claim: "cache", PVC: "cache-hist-0", Ordinal: 0, From: 50 * gi, To: 60 * gi},
			{Claim: "cache", PVC: "cache-hist-3", Ordinal: 3, From: 50 * gi, To: 60 * gi, Retained: true},
		},
		Kept: []rollout.ClaimExpansion{
			{Claim: "cache", PVC: "cache-hist-4", Ordinal: 4, From: 50 * gi, To: 60 * gi, Retained: true, Why: "node n-4 is gone"},
		},
	}}
	l, d := claimResizesValue(p)
	if d.HasError() {
		t.Fatal(d)
	}
	want := []string{
		`{"claim":"cache","fate":"grows","name":"cache-hist-0","ordinal":0,"reason":"","retained":false,"size_after":"60Gi","size_before":"50Gi"}`,
		`{"claim":"cache","fate":"grows","name":"cache-hist-3","ordinal":3,"reason":"","retained":true,"size_after":"60Gi","size_before":"50Gi"}`,
		`{"claim":"cache","fate":"keeps_size","name":"cache-hist-4","ordinal":4,"reason":"node n-4 is gone","retained":true,"size_after":"50Gi","size_before":"50Gi"}`,
	}
	if len(l.Elements()) != len(want) {
		t.Fatalf("%d entries, want %d: %v", len(l.Elements()), len(want), l)
	}
	for i, e := range l.Elements() {
		if got := e.String(); got != want[i] {
			t.Errorf("entry %d:\n got %s\nwant %s", i, got, want[i])
		}
	}
	if l, _ := claimResizesValue(&rollout.Plan{}); len(l.Elements()) != 0 || l.IsNull() {
		t.Errorf("a plan without claim growth: %v, want an empty list", l)
	}
}
