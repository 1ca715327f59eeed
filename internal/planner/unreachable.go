package planner

import (
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// A Pod is deleted in two halves: the API server marks it (deletionTimestamp) and the kubelet of
// its node stops the containers and confirms, removing the object (kubernetes v1.37.2
// pkg/kubelet/status/status_manager.go canBeDeleted / syncPod: the kubelet's final delete with
// grace period 0). A node whose kubelet does not answer confirms nothing: the Pod stays
// Terminating until the kubelet comes back, the Node object is deleted (the Pod garbage
// collector then removes it) or someone force-deletes it, and the StatefulSet controller never
// creates the ordinal again meanwhile. So a migration step that deletes such a Pod would wait
// out ordinal_timeout. This is the one judgement of that case, for the migration's plan and for
// the engine's waits.

// CauseUnreachableNode: the Pod's node does not answer; its deletion is never confirmed.
const CauseUnreachableNode StuckCause = "unreachable_node"

// NodeNotReadyGrace is how long a node's Ready condition may be Unknown or False, without the
// node lifecycle controller's NoExecute taint, before its kubelet is taken as gone: a kubelet
// restarting or a short network blip flips Ready for seconds. The taint itself is added only
// after node-monitor-grace-period (50 s in 1.37, kubernetes v1.37.2
// pkg/controller/nodelifecycle/config/v1alpha1/defaults.go), so it needs no grace of its own.
const NodeNotReadyGrace = 40 * time.Second

// NodeUnreachable says why node n would not confirm a Pod deletion, "" when it would: it carries
// the node lifecycle controller's node.kubernetes.io/unreachable or node.kubernetes.io/not-ready
// NoExecute taint (kubernetes v1.37.2 pkg/controller/nodelifecycle/node_lifecycle_controller.go
// doNoExecuteTaintingPass: Ready Unknown or False), or its Ready condition has been Unknown or
// False for NodeNotReadyGrace (now is when that is judged; zero: the taints alone).
func NodeUnreachable(n *corev1.Node, now time.Time) string {
	if n == nil {
		return "" // gone: the Pod garbage collector removes its Pods
	}
	var taints []string
	for _, t := range n.Spec.Taints {
		if t.Effect == corev1.TaintEffectNoExecute && (t.Key == corev1.TaintNodeUnreachable || t.Key == corev1.TaintNodeNotReady) {
			taints = append(taints, "taint "+t.Key+":"+string(t.Effect))
		}
	}
	var cond string
	for _, c := range n.Status.Conditions {
		if c.Type != corev1.NodeReady || c.Status == corev1.ConditionTrue {
			continue
		}
		cond = "condition Ready=" + string(c.Status)
		if !c.LastTransitionTime.IsZero() {
			cond += " since " + c.LastTransitionTime.UTC().Format(time.RFC3339)
		}
		if c.Message != "" {
			cond += " (" + strings.TrimSuffix(c.Message, ".") + ")"
		}
		if len(taints) == 0 && (now.IsZero() || c.LastTransitionTime.IsZero() || now.Sub(c.LastTransitionTime.Time) < NodeNotReadyGrace) {
			return ""
		}
	}
	if len(taints) == 0 && cond == "" {
		return ""
	}
	parts := taints
	if cond != "" {
		parts = append([]string{cond}, taints...)
	}
	return strings.Join(parts, ", ")
}

// PodOnUnreachableNode judges pod against its node (nil when the node is gone): a Stuck with
// CauseUnreachableNode when the node would not confirm the Pod's deletion, nil otherwise.
func PodOnUnreachableNode(pod *corev1.Pod, node *corev1.Node, now time.Time) *Stuck {
	if pod == nil || pod.Spec.NodeName == "" || node == nil {
		return nil
	}
	why := NodeUnreachable(node, now)
	if why == "" {
		return nil
	}
	return &Stuck{Cause: CauseUnreachableNode, Source: "node " + node.Name, Quote: why}
}
