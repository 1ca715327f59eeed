package migration

import (
	"fmt"
	"testing"

	"github.com/olapgke/terraform-provider-olapgke/internal/planner/plannertest"
	"github.com/olapgke/terraform-provider-olapgke/internal/stsutil"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
)

// decisionWorlds are migration snapshots covering every branch of the
// decision: settled sets, pool switches, revision changes, planned templates,
// moves and restarts caught at every phase.
func decisionWorlds() map[string]func(w *plannertest.MigWorld) {
	return map[string]func(w *plannertest.MigWorld){
		"settled":                 func(w *plannertest.MigWorld) {},
		"pool switch":             func(w *plannertest.MigWorld) { w.SwitchTemplate("pool-b") },
		"new revision, same pool": func(w *plannertest.MigWorld) { w.S.Live.Status.UpdateRevision = plannertest.MigRevB },
		"planned pool switch":     func(w *plannertest.MigWorld) { d := w.S.Live.DeepCopy(); toPool(d, "pool-b"); w.S.Desired = d },
		"planned image bump": func(w *plannertest.MigWorld) {
			d := w.S.Live.DeepCopy()
			d.Spec.Template.Spec.Containers = []corev1.Container{{Name: "c", Image: "x:2"}}
			w.S.Desired = d
		},
		"rolling update, new rev": func(w *plannertest.MigWorld) {
			w.S.Live.Spec.UpdateStrategy.Type = appsv1.RollingUpdateStatefulSetStrategyType
			w.S.Live.Status.UpdateRevision = plannertest.MigRevB
		},
		"rolling update, pool moved": func(w *plannertest.MigWorld) {
			w.S.Live.Spec.UpdateStrategy.Type = appsv1.RollingUpdateStatefulSetStrategyType
			w.SwitchTemplate("pool-b")
		},
		"move: PVC terminating": func(w *plannertest.MigWorld) { w.SwitchTemplate("pool-b"); w.Terminate(&w.PVC(1).ObjectMeta) },
		"move: both terminating": func(w *plannertest.MigWorld) {
			w.SwitchTemplate("pool-b")
			w.Terminate(&w.PVC(1).ObjectMeta)
			w.Terminate(&w.Pod(1).ObjectMeta)
		},
		"move: Pod and PVC gone": func(w *plannertest.MigWorld) { w.SwitchTemplate("pool-b"); w.RemovePod(1); w.RemovePVC(1) },
		"move: new PVC, no Pod":  func(w *plannertest.MigWorld) { w.SwitchTemplate("pool-b"); w.RemovePod(1); w.AddPVC(1, "", "n1") },
		"move: new Pod pending": func(w *plannertest.MigWorld) {
			w.SwitchTemplate("pool-b")
			w.AddPVC(1, "", "n1")
			w.AddPod(1, "", plannertest.MigRevB, "n1", false)
		},
		"move: done": func(w *plannertest.MigWorld) {
			w.SwitchTemplate("pool-b")
			w.AddOrdinal(1, "gke-olap-pool-b-1", plannertest.MigRevB, "n1")
		},
		"move: race on the old PVC": func(w *plannertest.MigWorld) {
			w.SwitchTemplate("pool-b")
			w.AddPod(1, "", plannertest.MigRevB, "race", false)
		},
		"restart: Pod terminating": func(w *plannertest.MigWorld) {
			w.S.Live.Status.UpdateRevision = plannertest.MigRevB
			w.Terminate(&w.Pod(1).ObjectMeta)
		},
		"restart: Pod gone": func(w *plannertest.MigWorld) { w.S.Live.Status.UpdateRevision = plannertest.MigRevB; w.RemovePod(1) },
		"restart: new Pod pending": func(w *plannertest.MigWorld) {
			w.S.Live.Status.UpdateRevision = plannertest.MigRevB
			w.AddPod(1, "", plannertest.MigRevB, "n1", false)
		},
		"restart: new Pod not ready": func(w *plannertest.MigWorld) {
			w.S.Live.Status.UpdateRevision = plannertest.MigRevB
			w.AddPod(1, "gke-olap-pool-a-1", plannertest.MigRevB, "n1", false)
		},
		"restart: done": func(w *plannertest.MigWorld) {
			w.S.Live.Status.UpdateRevision = plannertest.MigRevB
			w.AddPod(1, "gke-olap-pool-a-1", plannertest.MigRevB, "n1", true)
		},
		"node gone":           func(w *plannertest.MigWorld) { w.S.Nodes = w.S.Nodes[1:] },
		"cordoned, same pool": func(w *plannertest.MigWorld) { w.Node("gke-olap-pool-a-1").Spec.Unschedulable = true },
		"moved back": func(w *plannertest.MigWorld) {
			w.SwitchTemplate("pool-b")
			w.AddOrdinal(1, "gke-olap-pool-b-1", plannertest.MigRevB, "b1")
			w.AddPVC(1, "gke-olap-pool-a-1", "back")
		},
		"Pod not Ready, settled": func(w *plannertest.MigWorld) { w.Pod(1).Status.Conditions[0].Status = corev1.ConditionFalse },
	}
}

func toPool(s *appsv1.StatefulSet, pool string) {
	s.Spec.Template.Spec.NodeSelector = map[string]string{stsutil.LabelNodePool: pool}
}

// TestDecisionEquivalence proves that the plan and the apply use the same
// restart / move / leave predicate: for every ordinal of every fixture, the
// action Plan lists equals what NextStep does first, with and without the
// executor's memory. A planned restart never deletes a PVC; a leave never
// deletes anything; a move deletes the PVCs whose PVs the template rejects
// before the Pod.
func TestDecisionEquivalence(t *testing.T) {
	t.Parallel()
	claims := []string{"cache"}
	for name, setup := range decisionWorlds() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			w := plannertest.NewMigWorld(3, "pool-a")
			setup(w)
			v := NewMigration(w.Final())
			planned := map[int32]MigrationAction{}
			for _, m := range v.Plan(MigrationOptions{MaxUnavailable: 1}).Moves {
				planned[m.Ordinal] = m.Action
			}
			for o := int32(0); o < 3; o++ {
				n := v.need(o, claims)
				if planned[o] != n.action {
					t.Errorf("ordinal %d: Plan lists %q, the predicate says %q", o, planned[o], n.action)
				}
				// The executor's engine acts on the Live set: judge it as
				// the apply will, once Desired has landed.
				live := w.S
				if w.S.Desired != nil {
					live.Live = w.S.Desired.DeepCopy()
					live.Live.Status = w.S.Live.Status
					live.Live.Status.UpdateRevision = v.UpdateRevision()
					live.Desired = nil
				}
				liveSnap := plannertest.WithTopoLVM(live)
				lv := NewMigration(&liveSnap)
				if got := lv.need(o, claims).action; got != n.action {
					t.Errorf("ordinal %d: planned %q, at apply the predicate says %q", o, n.action, got)
				}
				for _, memory := range []bool{false, true} {
					pr := MoveProgress{}
					if memory {
						pr = lv.StartProgress(o, claims)
					}
					st := lv.NextStep(o, claims, pr, 0, plannertest.MigT0)
					what := fmt.Sprintf("ordinal %d (memory %v): planned %q, first step %s (%s)", o, memory, n.action, st.Kind, st.Reason)
					switch n.action {
					case "":
						if st.Kind == StepDeletePVCs || st.Kind == StepDeletePod || st.Kind == StepFail {
							t.Error(what)
						}
					case MigrationRestart:
						if st.Kind == StepDeletePVCs || st.Kind == StepDone || st.Kind == StepFail {
							t.Error(what)
						}
					case MigrationMove:
						if st.Kind == StepDone || st.Kind == StepFail {
							t.Error(what)
						}
						if st.Kind == StepDeletePod && lv.oldPVCsLeft(o, claims, pr) {
							t.Errorf("%s: the Pod goes before the PVCs to replace", what)
						}
					}
					if st.Kind == StepDeletePVCs && n.action != MigrationMove {
						t.Errorf("%s: deletes a PVC of an ordinal that is not moved", what)
					}
				}
			}
		})
	}
}

// oldPVCsLeft reports whether a PVC to replace is still there and not being
// deleted (test helper).
func (v *Migration) oldPVCsLeft(o int32, claims []string, pr MoveProgress) bool {
	for _, c := range claims {
		pvc := v.pvc(stsutil.ClaimPVCName(c, v.set.Name, o))
		if pvc != nil && pvc.DeletionTimestamp == nil && v.pvcNeedsReplace(pvc, pr) != "" {
			return true
		}
	}
	return false
}
