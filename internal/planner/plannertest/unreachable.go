package plannertest

import (
	"time"

	corev1 "k8s.io/api/core/v1"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// KillNode leaves node as the node lifecycle controller leaves a node whose kubelet stopped
// posting status: Ready Unknown since ago, and (taint) the unreachable NoSchedule and NoExecute
// taints.
func (w *MigWorld) KillNode(name string, ago time.Duration, taint bool) {
	n := w.Node(name)
	n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionUnknown,
		Reason: "NodeStatusUnknown", Message: "Kubelet stopped posting node status.",
		LastTransitionTime: metav1.NewTime(w.Now.Add(-ago))}}
	if taint {
		n.Spec.Taints = []corev1.Taint{
			{Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectNoSchedule},
			{Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectNoExecute},
		}
	}
}
