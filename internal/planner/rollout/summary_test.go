package rollout

import (
	"fmt"
	"testing"

	"github.com/olapgke/terraform-provider-olapgke/internal/planner"
)

func TestRolloutSummary(t *testing.T) {
	t.Parallel()
	vol := []planner.Volume{{Claim: "cache", PVC: "cache-h-0"}}
	ord := func(o int32, a Action, wave int, ok bool) OrdinalPlan {
		return OrdinalPlan{Ordinal: o, Pod: fmt.Sprintf("h-%d", o), Action: a, Wave: wave, Schedulable: ok, Volumes: vol}
	}
	cases := map[string]struct {
		plan *Plan
		want string
	}{
		"nothing": {
			plan: &Plan{Ordinals: []OrdinalPlan{ord(0, ActionUnchanged, 0, true), ord(1, ActionUnchanged, 0, true)}},
			want: "no change to 2 ordinals",
		},
		"rolling restart in wave order": {
			plan: &Plan{Ordinals: []OrdinalPlan{ord(0, ActionRecreate, 3, true), ord(1, ActionRecreate, 2, true), ord(2, ActionRecreate, 1, true)},
				Disruption: Disruption{Waves: 3}},
			want: "restart 3 ordinals in place (2,1,0) in 3 waves, keep 3 PVCs",
		},
		"pool switch under OnDelete": {
			plan: &Plan{Ordinals: []OrdinalPlan{ord(0, ActionStranded, 0, true), ord(1, ActionStranded, 0, true), ord(2, ActionStranded, 0, true)}},
			want: "leave 3 ordinals on the old revision (2,1,0) for olapgke_statefulset_migration to move: none could come back in place",
		},
		"image change under OnDelete": {
			plan: &Plan{Ordinals: []OrdinalPlan{ord(0, ActionStale, 0, true), ord(1, ActionStranded, 0, true)}},
			want: "leave 2 ordinals on the old revision (1,0), of which 1 could not come back in place",
		},
		"incident: recreated into Pending, stall": {
			plan: &Plan{Ordinals: []OrdinalPlan{ord(0, ActionRecreate, 3, false), ord(1, ActionRecreate, 2, false), ord(2, ActionRecreate, 1, false)},
				Stall: &Stall{Wave: 1, Ordinals: []int32{2}}, Disruption: Disruption{Waves: 1}},
			want: "restart 3 ordinals in place (2,1,0), keep 3 PVCs; 3 ordinals would stay Pending (2,1,0); the rollout stalls at wave 1",
		},
		"scale up and down": {
			plan: &Plan{Ordinals: []OrdinalPlan{ord(0, ActionUnchanged, 0, true), ord(3, ActionCreate, 1, true),
				{Ordinal: 5, Action: ActionDelete, Wave: 1, PVCsAfter: PVCsDeleted, Volumes: vol},
				{Ordinal: 4, Action: ActionDelete, Wave: 1, PVCsAfter: PVCsRetained, Volumes: vol}}},
			want: "create 1 ordinal (3); delete 2 ordinals (5,4), retain 1 PVC, delete 1 PVC",
		},
		"orphaning re-creation": {
			plan: &Plan{Ordinals: []OrdinalPlan{ord(0, ActionUnchanged, 0, true)}, Replace: &Replacement{Mode: RecreateOrphan}},
			want: "re-create the StatefulSet object without deleting a Pod",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if got := RolloutSummary(tc.plan); got != tc.want {
				t.Errorf("RolloutSummary:\n got %q\nwant %q", got, tc.want)
			}
		})
	}
}
