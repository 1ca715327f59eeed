package statefulset

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/olapgke/terraform-provider-olapgke/internal/planner/rollout"
)

// The plan warns only for ordinals the live view (the refreshed state) already shows stranded;
// those this change strands are left to a migration of the same configuration.
func TestSplitStranded(t *testing.T) {
	t.Parallel()
	p := incidentPlan(rollout.ActionStranded) // ordinals 0-2 stale, could not come back
	stranded := strandedOrdinals(p)
	if len(stranded) != 3 {
		t.Fatalf("strandedOrdinals = %d ordinals, want 3", len(stranded))
	}
	liveState := func(actions ...string) *resourceModel {
		var views []ordinalView
		for o, a := range actions {
			views = append(views, ordinalView{Ordinal: int64(o), Pod: "hist-" + string(rune('0'+o)), Action: a, Schedulable: a != "stale"}) // "stale", false: state before "stranded"
		}
		l, d := ordinalsValue(views)
		if d.HasError() {
			t.Fatal(d)
		}
		return &resourceModel{Ordinals: l}
	}
	ords := func(os []rollout.OrdinalPlan) []int32 {
		var out []int32
		for _, o := range os {
			out = append(out, o.Ordinal)
		}
		return out
	}
	for name, tc := range map[string]struct {
		state             *resourceModel
		atRisk, freshOnes []int32
	}{
		"no state (create)":                          {state: nil, freshOnes: []int32{0, 1, 2}},
		"pool switch: live view all unchanged":       {state: liveState("unchanged", "unchanged", "unchanged"), freshOnes: []int32{0, 1, 2}},
		"switch applied earlier, ordinal 2 moved":    {state: liveState("stranded", "stranded", "unchanged"), atRisk: []int32{0, 1}, freshOnes: []int32{2}},
		"the same, state written before stranded":    {state: liveState("stale", "stale", "unchanged"), atRisk: []int32{0, 1}, freshOnes: []int32{2}},
		"state of an apply (planned, not refreshed)": {state: &resourceModel{Ordinals: liveState("create", "create", "create").Ordinals}, freshOnes: []int32{0, 1, 2}},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			atRisk, fresh := splitStranded(context.Background(), stranded, tc.state)
			if d := cmp.Diff(tc.atRisk, ords(atRisk)); d != "" {
				t.Errorf("at risk (-want +got):\n%s", d)
			}
			if d := cmp.Diff(tc.freshOnes, ords(fresh)); d != "" {
				t.Errorf("stranded by this change (-want +got):\n%s", d)
			}
		})
	}
	// The data source keeps warning for every stranded ordinal.
	if _, warns := summaries(verdictDiagnostics(&manifest{Namespace: "olap", Name: "hist"}, p, false)); !contains(warns, "Stale Ordinals Cannot Be Recreated In Place") {
		t.Errorf("verdictDiagnostics warnings = %v, want the stale-ordinal warning", warns)
	}
	if _, warns := summaries(staleWarning(&manifest{Namespace: "olap", Name: "hist"}, nil)); len(warns) > 0 {
		t.Errorf("staleWarning(none) = %v, want nothing", warns)
	}
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}
