package rollout

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/olapgke/terraform-provider-olapgke/internal/planner/plannertest"
)

// Terraform plans every resource again during apply and refuses the apply when a value known
// in the first plan differs ("Provider produced inconsistent final plan"), also for a saved plan
// applied after the cluster changed a little. These tests hold the planner to that: under
// ordinary drift (a Pod restarted in place, a node cordoned, not ready or added, a Pod not
// Ready for a moment) every value olapgke_statefulset plans as known is the same: what the
// drift stops now is in Plan.Held, which the resource turns into a warning
// (allow_unschedulable) or its own error, never a changed value. The migration's values are the
// same or its second plan refuses (a step that can no longer land), before anything is deleted.

// plannedValues are the per-ordinal values olapgke_statefulset plans as known.
func plannedValues(p *Plan) []string {
	var out []string
	for _, o := range p.Ordinals {
		out = append(out, fmt.Sprintf("%d pod=%s node=%s %s w%d sched=%v blocked=%v reason=%q pvcs=%s vols=%v",
			o.Ordinal, o.Pod, o.Node, o.Action, o.Wave, o.Schedulable, o.Blocked, o.Reason, o.PVCsAfter, o.Volumes))
	}
	return out
}

func TestBuildStableUnderDrift(t *testing.T) {
	t.Parallel()
	worlds := map[string]func(t *testing.T) *plannertest.World{
		"RollingUpdate image change": func(t *testing.T) *plannertest.World {
			return plannertest.NewWorld(t, plannertest.MkSet(3), plannertest.TwoPools()).Desire(plannertest.NewImage)
		},
		"RollingUpdate image change, maxUnavailable 2": func(t *testing.T) *plannertest.World {
			return plannertest.NewWorld(t, plannertest.MkSet(4), plannertest.TwoPools()).Desire(plannertest.NewImage, plannertest.MaxUnavailable(2))
		},
		"OnDelete image change (stale ordinals)": func(t *testing.T) *plannertest.World {
			return plannertest.NewWorld(t, plannertest.MkSet(3), plannertest.TwoPools()).Desire(plannertest.OnDelete, plannertest.NewImage)
		},
		"OnDelete pool switch (stale ordinals that cannot come back)": func(t *testing.T) *plannertest.World {
			return plannertest.NewWorld(t, plannertest.MkSet(3), plannertest.TwoPools()).Desire(plannertest.OnDelete, plannertest.ToPoolB)
		},
		"scale up and down": func(t *testing.T) *plannertest.World {
			return plannertest.NewWorld(t, plannertest.MkSet(3), plannertest.TwoPools()).Desire(plannertest.Replicas(2))
		},
		"unchanged template": func(t *testing.T) *plannertest.World {
			return plannertest.NewWorld(t, plannertest.MkSet(3), plannertest.TwoPools()).Desire()
		},
	}
	for wname, mk := range worlds {
		for dname, drift := range plannertest.Drifts() {
			t.Run(wname+"/"+dname, func(t *testing.T) {
				t.Parallel()
				w := mk(t)
				before, err := PlanRollout(plannertest.WithTopoLVM(plannertest.CopySnapshot(w.Snap)))
				if err != nil {
					t.Fatal(err)
				}
				s := plannertest.CopySnapshot(w.Snap)
				drift(&s)
				after, err := PlanRollout(plannertest.WithTopoLVM(s))
				if err != nil {
					t.Fatal(err)
				}
				// No refusal excuses a change: with allow_unschedulable = true olapgke_statefulset
				// does not refuse, and Terraform compares these values (Held is diagnostics only).
				if d := cmp.Diff(plannedValues(before), plannedValues(after)); d != "" {
					t.Errorf("planned values changed under drift (-first +second):\n%s", d)
				}
			})
		}
	}
}
