package planner

import (
	"fmt"
	"testing"

	"github.com/olapgke/terraform-provider-olapgke/internal/stsutil"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
)

// decisionWorlds are migration snapshots covering every branch of the
// decision: settled sets, pool switches, revision changes, planned templates,
// moves and restarts caught at every phase.
func decisionWorlds() map[string]func(w *migWorld) {
	return map[string]func(w *migWorld){
		"settled":                 func(w *migWorld) {},
		"pool switch":             func(w *migWorld) { w.switchTemplate("pool-b") },
		"new revision, same pool": func(w *migWorld) { w.s.Live.Status.UpdateRevision = migRevB },
		"planned pool switch":     func(w *migWorld) { d := w.s.Live.DeepCopy(); toPool(d, "pool-b"); w.s.Desired = d },
		"planned image bump": func(w *migWorld) {
			d := w.s.Live.DeepCopy()
			d.Spec.Template.Spec.Containers = []corev1.Container{{Name: "c", Image: "x:2"}}
			w.s.Desired = d
		},
		"rolling update, new rev": func(w *migWorld) {
			w.s.Live.Spec.UpdateStrategy.Type = appsv1.RollingUpdateStatefulSetStrategyType
			w.s.Live.Status.UpdateRevision = migRevB
		},
		"rolling update, pool moved": func(w *migWorld) {
			w.s.Live.Spec.UpdateStrategy.Type = appsv1.RollingUpdateStatefulSetStrategyType
			w.switchTemplate("pool-b")
		},
		"move: PVC terminating": func(w *migWorld) { w.switchTemplate("pool-b"); w.terminate(&w.pvc(1).ObjectMeta) },
		"move: both terminating": func(w *migWorld) {
			w.switchTemplate("pool-b")
			w.terminate(&w.pvc(1).ObjectMeta)
			w.terminate(&w.pod(1).ObjectMeta)
		},
		"move: Pod and PVC gone": func(w *migWorld) { w.switchTemplate("pool-b"); w.removePod(1); w.removePVC(1) },
		"move: new PVC, no Pod":  func(w *migWorld) { w.switchTemplate("pool-b"); w.removePod(1); w.addPVC(1, "", "n1") },
		"move: new Pod pending": func(w *migWorld) {
			w.switchTemplate("pool-b")
			w.addPVC(1, "", "n1")
			w.addPod(1, "", migRevB, "n1", false)
		},
		"move: done":                func(w *migWorld) { w.switchTemplate("pool-b"); w.addOrdinal(1, "gke-olap-pool-b-1", migRevB, "n1") },
		"move: race on the old PVC": func(w *migWorld) { w.switchTemplate("pool-b"); w.addPod(1, "", migRevB, "race", false) },
		"restart: Pod terminating": func(w *migWorld) {
			w.s.Live.Status.UpdateRevision = migRevB
			w.terminate(&w.pod(1).ObjectMeta)
		},
		"restart: Pod gone":        func(w *migWorld) { w.s.Live.Status.UpdateRevision = migRevB; w.removePod(1) },
		"restart: new Pod pending": func(w *migWorld) { w.s.Live.Status.UpdateRevision = migRevB; w.addPod(1, "", migRevB, "n1", false) },
		"restart: new Pod not ready": func(w *migWorld) {
			w.s.Live.Status.UpdateRevision = migRevB
			w.addPod(1, "gke-olap-pool-a-1", migRevB, "n1", false)
		},
		"restart: done": func(w *migWorld) {
			w.s.Live.Status.UpdateRevision = migRevB
			w.addPod(1, "gke-olap-pool-a-1", migRevB, "n1", true)
		},
		"node gone":           func(w *migWorld) { w.s.Nodes = w.s.Nodes[1:] },
		"cordoned, same pool": func(w *migWorld) { w.node("gke-olap-pool-a-1").Spec.Unschedulable = true },
		"moved back": func(w *migWorld) {
			w.switchTemplate("pool-b")
			w.addOrdinal(1, "gke-olap-pool-b-1", migRevB, "b1")
			w.addPVC(1, "gke-olap-pool-a-1", "back")
		},
		"Pod not Ready, settled": func(w *migWorld) { w.pod(1).Status.Conditions[0].Status = corev1.ConditionFalse },
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
			w := newMigWorld(3, "pool-a")
			setup(w)
			v := NewMigration(w.final())
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
				live := w.s
				if w.s.Desired != nil {
					live.Live = w.s.Desired.DeepCopy()
					live.Live.Status = w.s.Live.Status
					live.Live.Status.UpdateRevision = v.UpdateRevision()
					live.Desired = nil
				}
				liveSnap := withTopoLVM(live)
				lv := NewMigration(&liveSnap)
				if got := lv.need(o, claims).action; got != n.action {
					t.Errorf("ordinal %d: planned %q, at apply the predicate says %q", o, n.action, got)
				}
				for _, memory := range []bool{false, true} {
					pr := MoveProgress{}
					if memory {
						pr = lv.StartProgress(o, claims)
					}
					st := lv.NextStep(o, claims, pr, 0, migT0)
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
