package migration

import (
	"slices"
	"strings"
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
		warm    bool
		refused []int32 // ordinals refused (-1: the migration as a whole)
		waits   bool
	}{
		"fits":      {setup: func(*plannertest.MigWorld) {}},
		"warm fits": {setup: func(*plannertest.MigWorld) {}, warm: true},
		// Claims grown to 50Gi since (the template asks 10Gi), 30Gi free on each target: a cold
		// move's new claims (the template's size) fit, a warm move's copies (the live size) do
		// not, and plan and apply both say so before anything is created.
		"grown claims, cold": {setup: growClaims("50Gi", "30Gi")},
		"grown claims, warm": {setup: growClaims("50Gi", "30Gi"), warm: true, refused: []int32{0, 1, 2}},
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
				ForceDeleteOnUnreachableNodes: tc.force, Now: w.Now, Warm: tc.warm})
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
				Now: w.Now, ForceDeleteOnUnreachableNodes: tc.force, Warm: tc.warm})
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

// growClaims makes every live claim of the world hold capacity (claims resized since the
// template was written) and leaves free on each node of pool-b.
func growClaims(capacity, free string) func(w *plannertest.MigWorld) {
	return func(w *plannertest.MigWorld) {
		for i := range w.S.PVCs {
			w.S.PVCs[i].Status.Capacity = corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(capacity)}
		}
		for _, n := range poolBNodes {
			w.Node(n).Annotations[stsutil.AnnotationCapacityPrefix+"ssd"] = plannertest.CapacityBytes(free)
		}
	}
}

// TestWarmMovesCopyBytes: a warm plan says per move how much its copy takes on the target node
// (the larger of the template's request and the live claim's capacity), the size NextClaim
// requests; a cold plan says nothing; and a capacity refusal of a warm move names that size.
func TestWarmMovesCopyBytes(t *testing.T) {
	t.Parallel()
	w := plannertest.NewMigWorld(3, "pool-a")
	w.SwitchTemplate("pool-b")
	w.PVC(1).Status.Capacity = corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("25Gi")}
	s := w.Final()
	v := NewMigration(s)
	warm := v.Plan(MigrationOptions{Order: OrderDescending, MaxUnavailable: 1, Now: w.Now, Warm: true})
	cold := NewMigration(s).Plan(MigrationOptions{Order: OrderDescending, MaxUnavailable: 1, Now: w.Now})
	want := map[int32]int64{0: 10 << 30, 1: 25 << 30, 2: 10 << 30}
	if len(warm.Moves) != 3 || len(cold.Moves) != 3 {
		t.Fatalf("moves: warm %d, cold %d, want 3 each", len(warm.Moves), len(cold.Moves))
	}
	for i, m := range warm.Moves {
		if m.CopyBytes != want[m.Ordinal] {
			t.Errorf("ordinal %d: CopyBytes %d, want %d", m.Ordinal, m.CopyBytes, want[m.Ordinal])
		}
		next := v.NextClaim(m.Ordinal, plannertest.MigClaim, w.PVC(m.Ordinal), "n")
		if q := next.Spec.Resources.Requests[corev1.ResourceStorage]; q.Value() != m.CopyBytes {
			t.Errorf("ordinal %d: NextClaim requests %s, the plan says the copy takes %d bytes", m.Ordinal, q.String(), m.CopyBytes)
		}
		if cold.Moves[i].CopyBytes != 0 {
			t.Errorf("cold ordinal %d: CopyBytes %d, want 0", cold.Moves[i].Ordinal, cold.Moves[i].CopyBytes)
		}
	}

	growClaims("50Gi", "30Gi")(w)
	refused := NewMigration(w.Final()).Plan(MigrationOptions{Order: OrderDescending, MaxUnavailable: 1, Now: w.Now, Warm: true})
	found := false
	for _, p := range refused.Problems {
		if p.Kind == ProblemCapacity && strings.Contains(p.Message, "warm copy needs 50Gi on the target node") {
			found = true
		}
	}
	if !found {
		t.Errorf("no capacity problem naming the copy's 50Gi: %+v", refused.Problems)
	}
}
