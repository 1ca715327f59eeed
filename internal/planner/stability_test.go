package planner

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Terraform plans every resource again during apply and refuses the apply when a value known
// in the first plan differs ("Provider produced inconsistent final plan"), also for a saved plan
// applied after the cluster changed a little. These tests hold the planner to that: under
// ordinary drift (a Pod restarted in place, a node cordoned, not ready or added, a Pod not
// Ready for a moment) every value olapgke_statefulset plans as known is the same: what the
// drift stops now is in Plan.Held, which the resource turns into a warning
// (allow_unschedulable) or its own error, never a changed value. The migration's values are the
// same or its second plan refuses (a step that can no longer land), before anything is deleted.

// drifts change a snapshot the way the cluster commonly changes between plan and apply.
func drifts() map[string]func(s *Snapshot) {
	return map[string]func(s *Snapshot){
		"Pod restarted in place": func(s *Snapshot) {
			for i := range s.Pods {
				if strings.HasSuffix(s.Pods[i].Name, "-1") {
					s.Pods[i].UID = types.UID("restarted-" + string(s.Pods[i].UID))
				}
			}
		},
		"Pod not Ready": func(s *Snapshot) {
			for i := range s.Pods {
				if strings.HasSuffix(s.Pods[i].Name, "-1") {
					for j := range s.Pods[i].Status.Conditions {
						if s.Pods[i].Status.Conditions[j].Type == corev1.PodReady {
							s.Pods[i].Status.Conditions[j].Status = corev1.ConditionFalse
						}
					}
				}
			}
		},
		"node of an ordinal cordoned": func(s *Snapshot) {
			for i := range s.Pods {
				if strings.HasSuffix(s.Pods[i].Name, "-1") {
					cordon(s, s.Pods[i].Spec.NodeName)
				}
			}
		},
		"unrelated node cordoned": func(s *Snapshot) { cordon(s, nodeName("pool-b", 2)) },
		"node of an ordinal not ready": func(s *Snapshot) {
			for i := range s.Pods {
				if strings.HasSuffix(s.Pods[i].Name, "-1") {
					for j := range s.Nodes {
						if s.Nodes[j].Name == s.Pods[i].Spec.NodeName {
							s.Nodes[j].Spec.Taints = append(s.Nodes[j].Spec.Taints,
								corev1.Taint{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoSchedule},
								corev1.Taint{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoExecute})
						}
					}
				}
			}
		},
		"node added": func(s *Snapshot) {
			s.Nodes = append(s.Nodes, mkNode("pool-b", 9, 1000))
		},
	}
}

func cordon(s *Snapshot, node string) {
	for i := range s.Nodes {
		if s.Nodes[i].Name == node {
			s.Nodes[i].Spec.Unschedulable = true
			s.Nodes[i].Spec.Taints = append(s.Nodes[i].Spec.Taints, corev1.Taint{Key: corev1.TaintNodeUnschedulable, Effect: corev1.TaintEffectNoSchedule})
		}
	}
}

func copySnapshot(s Snapshot) Snapshot {
	c := s
	c.Pods = nil
	for i := range s.Pods {
		c.Pods = append(c.Pods, *s.Pods[i].DeepCopy())
	}
	c.Nodes = nil
	for i := range s.Nodes {
		c.Nodes = append(c.Nodes, *s.Nodes[i].DeepCopy())
	}
	return c
}

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
	worlds := map[string]func(t *testing.T) *world{
		"RollingUpdate image change": func(t *testing.T) *world {
			return newWorld(t, mkSet(3), twoPools()).desire(newImage)
		},
		"RollingUpdate image change, maxUnavailable 2": func(t *testing.T) *world {
			return newWorld(t, mkSet(4), twoPools()).desire(newImage, maxUnavailable(2))
		},
		"OnDelete image change (stale ordinals)": func(t *testing.T) *world {
			return newWorld(t, mkSet(3), twoPools()).desire(onDelete, newImage)
		},
		"OnDelete pool switch (stale ordinals that cannot come back)": func(t *testing.T) *world {
			return newWorld(t, mkSet(3), twoPools()).desire(onDelete, toPoolB)
		},
		"scale up and down": func(t *testing.T) *world {
			return newWorld(t, mkSet(3), twoPools()).desire(replicas(2))
		},
		"unchanged template": func(t *testing.T) *world {
			return newWorld(t, mkSet(3), twoPools()).desire()
		},
	}
	for wname, mk := range worlds {
		for dname, drift := range drifts() {
			t.Run(wname+"/"+dname, func(t *testing.T) {
				t.Parallel()
				w := mk(t)
				before, err := Build(withTopoLVM(copySnapshot(w.snap)))
				if err != nil {
					t.Fatal(err)
				}
				s := copySnapshot(w.snap)
				drift(&s)
				after, err := Build(withTopoLVM(s))
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

// migrationValues are what olapgke_statefulset_migration plans as known.
func migrationValues(p MigrationPlan) []string {
	out := []string{"update_revision=" + p.UpdateRevision, fmt.Sprint("claims=", p.Claims)}
	for _, m := range p.Moves {
		out = append(out, fmt.Sprintf("%d %s %s from=%s to=%s vols=%v reason=%q", m.Ordinal, m.Pod, m.Action, m.FromNode, m.Target, m.Volumes, m.Reason))
	}
	return out
}

func TestMigrationPlanStableUnderDrift(t *testing.T) {
	t.Parallel()
	worlds := map[string]func(w *migWorld){
		"restart every ordinal": func(w *migWorld) { w.s.Live.Status.UpdateRevision = migRevB },
		"move every ordinal":    func(w *migWorld) { w.switchTemplate("pool-b") },
		"planned image change": func(w *migWorld) {
			d := w.s.Live.DeepCopy()
			d.Spec.Template.Spec.Containers = []corev1.Container{{Name: "c", Image: "x:2"}}
			w.s.Desired = d
		},
		"nothing to do": func(w *migWorld) {},
	}
	migDrifts := map[string]func(w *migWorld){
		"Pod restarted in place": func(w *migWorld) { w.pod(1).UID = "restarted" },
		"Pod not Ready":          func(w *migWorld) { w.pod(1).Status.Conditions[0].Status = corev1.ConditionFalse },
		"node of an ordinal cordoned": func(w *migWorld) {
			n := w.node("gke-olap-pool-a-1")
			n.Spec.Unschedulable = true
		},
		"unrelated node cordoned": func(w *migWorld) { w.node("gke-olap-pool-b-2").Spec.Unschedulable = true },
		"target node added":       func(w *migWorld) { w.addNode("gke-olap-pool-b-9", "pool-b", "700Gi") },
	}
	opt := MigrationOptions{MaxUnavailable: 1, RequireOthersReady: true}
	for wname, setup := range worlds {
		for dname, drift := range migDrifts {
			t.Run(wname+"/"+dname, func(t *testing.T) {
				t.Parallel()
				w := newMigWorld(3, "pool-a")
				setup(w)
				before := NewMigration(w.final()).Plan(opt)
				if !before.OK() {
					t.Fatalf("first plan refused: %+v", before.Problems)
				}
				drift(w)
				after := NewMigration(w.final()).Plan(opt)
				if !after.OK() {
					return // refused with olapgke's diagnostic before anything is deleted
				}
				if d := cmp.Diff(migrationValues(before), migrationValues(after)); d != "" {
					t.Errorf("planned values changed under drift (-first +second):\n%s", d)
				}
			})
		}
	}
	_ = appsv1.OnDeleteStatefulSetStrategyType
}
