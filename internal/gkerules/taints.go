package gkerules

import (
	"fmt"
	"slices"
	"strings"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
)

// Node pool taints are updated in place (EffectOf("taints") is InPlace), but a NoExecute taint
// that arrives on a node makes the taint-eviction controller (kube-controller-manager's
// taint-eviction-controller, SeparateTaintEvictionController GA in 1.34) evict every Pod that does
// not tolerate it, and the scheduler keeps such Pods off the node. A Pod whose local PV is pinned
// to that node can then run nowhere: it stays Pending. NoSchedule and PreferNoSchedule taints
// only keep new Pods off, and a removed taint evicts nothing.
// Source: https://kubernetes.io/docs/concepts/scheduling-eviction/taint-and-toleration/ ("If
// there is at least one un-ignored taint with effect NoExecute then Kubernetes will evict the pod
// from the node (if it is already running on the node) ... tolerationSeconds").

// taintComparisonOperators mirrors the TaintTolerationComparisonOperators feature gate (Gt/Lt
// tolerations), alpha and off in Kubernetes 1.37, as internal/planner does.
const taintComparisonOperators = false

// NoExecuteTaintsAdded lists the NoExecute taints of after that before does not carry with the
// same key, value and effect: a new NoExecute taint, a NoExecute taint whose value changed, or a
// taint whose effect became NoExecute. These are the taints whose arrival evicts Pods.
func NoExecuteTaintsAdded(before, after []corev1.Taint) []corev1.Taint {
	var out []corev1.Taint
	for _, t := range after {
		if t.Effect != corev1.TaintEffectNoExecute {
			continue
		}
		if !slices.ContainsFunc(before, func(b corev1.Taint) bool {
			return b.Key == t.Key && b.Value == t.Value && b.Effect == t.Effect
		}) {
			out = append(out, t)
		}
	}
	return out
}

// TaintString renders a taint as kubectl does: key=value:Effect (key:Effect without a value).
func TaintString(t corev1.Taint) string {
	if t.Value == "" {
		return t.Key + ":" + string(t.Effect)
	}
	return t.Key + "=" + t.Value + ":" + string(t.Effect)
}

// TaintsString renders taints with TaintString, comma-separated.
func TaintsString(ts []corev1.Taint) string {
	s := make([]string, len(ts))
	for i, t := range ts {
		s[i] = TaintString(t)
	}
	return strings.Join(s, ", ")
}

// evictedBy says whether a Pod with these tolerations is evicted once the NoExecute taints are on
// its node, and why. It follows the taint-eviction controller (pkg/controller/tainteviction,
// processPodOnNode): a taint no toleration matches evicts at once (found with component-helpers'
// FindMatchingUntoleratedTaint, as the scheduler's TaintToleration filter does); otherwise the
// first toleration matching each taint counts, and if any of those has tolerationSeconds the Pod
// is evicted when the shortest runs out. Only tolerations without tolerationSeconds keep it.
func evictedBy(taints []corev1.Taint, tolerations []corev1.Toleration) (string, bool) {
	noExecute := func(t *corev1.Taint) bool { return t.Effect == corev1.TaintEffectNoExecute }
	if t, bad := corev1helpers.FindMatchingUntoleratedTaint(logr.Discard(), taints, tolerations, noExecute, taintComparisonOperators); bad {
		return "its Pod does not tolerate " + TaintString(t), true
	}
	var bounded []string
	for i := range taints {
		if !noExecute(&taints[i]) {
			continue
		}
		for j := range tolerations {
			if !tolerations[j].ToleratesTaint(logr.Discard(), &taints[i], taintComparisonOperators) {
				continue
			}
			if s := tolerations[j].TolerationSeconds; s != nil {
				bounded = append(bounded, fmt.Sprintf("%s for %ds only (tolerationSeconds)", TaintString(taints[i]), max(*s, 0)))
			}
			break
		}
	}
	if len(bounded) > 0 {
		return "its Pod tolerates " + strings.Join(bounded, ", "), true
	}
	return "", false
}
