package migration

import (
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/olapgke/terraform-provider-olapgke/internal/planner/plannertest"
	"github.com/olapgke/terraform-provider-olapgke/internal/stsutil"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// TestPreflightPlanApplyAgree: on the same world, the plan (Plan, which asks Preflight with
// PreflightPlan) and the apply (the engine's question before a batch: Preflight with
// PreflightApply over the planned steps) refuse the same ordinals, wait for the same TopoLVM
// nodes and find the same unreachable Pods.
func TestPreflightPlanApplyAgree(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		setup   func(w *plannertest.MigWorld)
		force   bool
		refused []int32 // ordinals refused (-1: the migration as a whole)
		waits   bool
	}{
		"fits": {setup: func(*plannertest.MigWorld) {}},
		"ready but too small": {
			setup: func(w *plannertest.MigWorld) {
				for _, n := range poolBNodes {
					w.Node(n).Annotations[stsutil.AnnotationCapacityPrefix+"ssd"] = plannertest.CapacityBytes("1Gi")
				}
			},
			refused: []int32{0, 1, 2},
		},
		"would not fit anyway (CPU)": {
			setup: func(w *plannertest.MigWorld) {
				w.S.Live.Spec.Template.Spec.Containers = []corev1.Container{{Name: "olap", Image: "olap:1",
					Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("64")}}}}
			},
			refused: []int32{0, 1, 2},
		},
		"no target node": {
			setup:   func(w *plannertest.MigWorld) { w.SwitchTemplate("pool-z") },
			refused: []int32{-1},
		},
		"TopoLVM not ready on the target pool": {
			setup: func(w *plannertest.MigWorld) { freshPoolB(w, true) },
			waits: true,
		},
		"unreachable node": {
			setup:   func(w *plannertest.MigWorld) { w.KillNode("gke-olap-pool-a-1", time.Minute, true) },
			refused: []int32{1},
		},
		"unreachable node, force": {
			setup: func(w *plannertest.MigWorld) { w.KillNode("gke-olap-pool-a-1", time.Minute, true) },
			force: true,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			w := plannertest.NewMigWorld(3, "pool-a")
			w.SwitchTemplate("pool-b")
			tc.setup(w)
			s := w.Final()

			plan := NewMigration(s).Plan(MigrationOptions{Order: OrderDescending, MaxUnavailable: 1,
				ForceDeleteOnUnreachableNodes: tc.force, Now: w.Now})
			var planRefused []int32
			for _, p := range plan.Problems {
				if placementProblem(p.Kind) || p.Kind == ProblemUnreachableNode {
					planRefused = append(planRefused, p.Ordinal)
				}
			}

			// The engine's question, asked of a fresh Migration over the same snapshot, with
			// only what the engine has: the ordinals and their planned actions.
			var steps []Move
			for _, m := range plan.Moves {
				steps = append(steps, Move{Ordinal: m.Ordinal, Action: m.Action})
			}
			apply := NewMigration(s).Preflight(steps, PreflightOptions{Mode: PreflightApply, Claims: plan.Claims,
				Now: w.Now, ForceDeleteOnUnreachableNodes: tc.force})
			var applyRefused []int32
			if !tc.force {
				for _, u := range apply.Unreachable {
					applyRefused = append(applyRefused, u.Ordinal)
				}
			}
			applyWaits := false
			for _, st := range apply.Steps {
				switch {
				case len(st.Wait) > 0:
					applyWaits = true
					if diff := cmp.Diff(plan.TopoLVMWaits, st.Wait); diff != "" {
						t.Errorf("ordinal %d: apply waits for other nodes than the plan (-plan +apply):\n%s", st.Ordinal, diff)
					}
				case st.Problem != "" && !slices.Contains(applyRefused, st.Ordinal):
					applyRefused = append(applyRefused, st.Ordinal)
				}
			}
			if slices.Equal(planRefused, []int32{-1}) && len(applyRefused) == len(steps) {
				applyRefused = []int32{-1} // no target node: one problem at plan, every step at apply
			}

			slices.Sort(planRefused)
			slices.Sort(applyRefused)
			if diff := cmp.Diff(tc.refused, planRefused); diff != "" {
				t.Errorf("plan refuses (-want +got):\n%s\n%v", diff, plan.Problems)
			}
			if diff := cmp.Diff(planRefused, applyRefused); diff != "" {
				t.Errorf("plan and apply refuse different ordinals (-plan +apply):\n%s", diff)
			}
			if got := len(plan.TopoLVMWaits) > 0; got != tc.waits || applyWaits != tc.waits {
				t.Errorf("waits: plan %v, apply %v, want %v", plan.TopoLVMWaits, applyWaits, tc.waits)
			}
			var pu, au []int32
			for _, u := range plan.Unreachable {
				pu = append(pu, u.Ordinal)
			}
			for _, u := range apply.Unreachable {
				au = append(au, u.Ordinal)
			}
			if diff := cmp.Diff(pu, au); diff != "" {
				t.Errorf("unreachable (-plan +apply):\n%s", diff)
			}
		})
	}
}
