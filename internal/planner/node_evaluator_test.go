package planner_test

import (
	"strings"
	"testing"

	"github.com/olapgke/terraform-provider-olapgke/internal/planner"
	"github.com/olapgke/terraform-provider-olapgke/internal/planner/plannertest"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestOneNodeEvaluator: the plan's durable come-back verdict (PodCanComeBack), the migration's
// target check (podPlacement.admits) and kube-scheduler's own plugins (PodCanSchedule) agree on
// whether a Pod's tolerations admit a node, including Gt/Lt tolerations, which the
// TaintTolerationComparisonOperators gate (off in 1.37) makes tolerate nothing. Before one
// evaluator, admits honoured Gt/Lt while the plan did not.
func TestOneNodeEvaluator(t *testing.T) {
	t.Parallel()
	noExec := func(key, value string) corev1.Taint {
		return corev1.Taint{Key: key, Value: value, Effect: corev1.TaintEffectNoExecute}
	}
	tests := map[string]struct {
		taint      corev1.Taint
		toleration corev1.Toleration
		admitted   bool
	}{
		"Gt toleration does not tolerate (gate off)": {
			taint:      noExec("tier", "5"),
			toleration: corev1.Toleration{Key: "tier", Operator: "Gt", Value: "3", Effect: corev1.TaintEffectNoExecute},
		},
		"Lt toleration does not tolerate (gate off)": {
			taint:      noExec("tier", "2"),
			toleration: corev1.Toleration{Key: "tier", Operator: "Lt", Value: "3", Effect: corev1.TaintEffectNoExecute},
		},
		"Equal toleration tolerates": {
			taint:      noExec("tier", "5"),
			toleration: corev1.Toleration{Key: "tier", Operator: corev1.TolerationOpEqual, Value: "5", Effect: corev1.TaintEffectNoExecute},
			admitted:   true,
		},
		"Exists toleration tolerates": {
			taint:      noExec("tier", "5"),
			toleration: corev1.Toleration{Key: "tier", Operator: corev1.TolerationOpExists},
			admitted:   true,
		},
		"wrong value does not tolerate": {
			taint:      noExec("tier", "5"),
			toleration: corev1.Toleration{Key: "tier", Operator: corev1.TolerationOpEqual, Value: "4", Effect: corev1.TaintEffectNoExecute},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			set := plannertest.MkSet(3)
			set.Spec.Template.Spec.Tolerations = []corev1.Toleration{tc.toleration}
			w := plannertest.NewWorld(t, set, plannertest.TwoPools())
			for i := 0; i < 3; i++ {
				w.Node(plannertest.NodeName("pool-b", i)).Spec.Taints = []corev1.Taint{tc.taint}
			}
			w.Desire(plannertest.ToPoolB)
			snap := w.Final()
			ix := planner.NewIndex(&snap)
			target := ix.Node(plannertest.NodeName("pool-b", 0))

			// The migration's target check.
			p := planner.NewPodPlacement(&snap.Desired.Spec.Template)
			admits, why := p.Admits(target)

			// The plan's durable verdict for a Pod of the template whose PV is pinned to target.
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "olap-0", Namespace: plannertest.NS}, Spec: *snap.Desired.Spec.Template.Spec.DeepCopy()}
			w2 := plannertest.NewWorld(t, plannertest.MkSet(3), plannertest.TwoPools())
			w2.AddBoundClaim("data-olap-9", plannertest.Vct("data", 1), target.Name)
			pin := planner.NewIndex(&w2.Snap).PV("pv-data-olap-9")
			back := planner.PodCanComeBack(pod, []planner.ClaimState{{Claim: "data", PVC: "data-olap-9", PV: pin}}, ix)

			// kube-scheduler's plugins, for the same Pod with no claims: only pool b is selected.
			sched := planner.PodCanSchedule(pod, nil, ix)

			if admits != tc.admitted || back.OK != tc.admitted || sched.OK != tc.admitted {
				t.Fatalf("want admitted=%v; migration admits=%v (%s), plan come-back=%v (%s), scheduler=%v (%s)",
					tc.admitted, admits, why, back.OK, back.Reason, sched.OK, sched.Reason)
			}
			if !tc.admitted && !strings.Contains(back.Reason, "does not tolerate") {
				t.Errorf("come-back reason %q does not name the taint", back.Reason)
			}
			// The short reason names the PV, its PVC and the node once each, and neither the
			// ordinal nor the Pod (the list it goes into names them).
			if !tc.admitted {
				want := "PV pv-data-olap-9 of PVC data-olap-9 is pinned to node " + target.Name
				if !strings.HasPrefix(back.Short, want) || !strings.Contains(back.Short, "does not tolerate") ||
					strings.Contains(back.Short, "ordinal") || strings.Contains(back.Short, "olap-0") || strings.Count(back.Short, target.Name) != 1 {
					t.Errorf("come-back short reason %q, want it to start %q", back.Short, want)
				}
			}
		})
	}
}
