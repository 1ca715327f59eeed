package planner

import (
	"fmt"
	"sort"
	"strings"

	"github.com/go-logr/logr"
	"github.com/olapgke/terraform-provider-olapgke/internal/stsutil"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
)

// PodPlacement is the placement a Pod of a template asks for. Matching is
// component-helpers' (nodeaffinity for nodeSelector + required affinity,
// FindMatchingUntoleratedTaint for taints), as in the scheduler.
type PodPlacement struct {
	tmpl *corev1.PodTemplateSpec
	Req  nodeaffinity.RequiredNodeAffinity
}

func NewPodPlacement(t *corev1.PodTemplateSpec) PodPlacement {
	pod := &corev1.Pod{Spec: t.Spec}
	return PodPlacement{tmpl: t, Req: nodeaffinity.GetRequiredNodeAffinity(pod)}
}

// Matches reports whether the node satisfies the required placement
// (nodeSelector and required node affinity); why says which part fails.
func (p PodPlacement) Matches(n *corev1.Node) (bool, string) {
	if why := Evacuating(n); why != "" {
		return false, why
	}
	if p.tmpl == nil {
		return true, ""
	}
	if f, _ := JudgeNode(p.Req, nil, n, CheckMatch); f != FailNone {
		return false, "fails the template placement " + p.Describe()
	}
	return true, ""
}

// Admits reports whether a new Pod of the template can be placed on the
// node: matches, not cordoned, every NoSchedule/NoExecute taint tolerated
// (judgeNode with checkNow, the same evaluation the plan's verdicts use).
func (p PodPlacement) Admits(n *corev1.Node) (bool, string) {
	if why := Evacuating(n); why != "" {
		return false, why
	}
	if p.tmpl == nil {
		return true, ""
	}
	switch f, t := JudgeNode(p.Req, p.tmpl.Spec.Tolerations, n, CheckNow); f {
	case failCordon:
		return false, "are cordoned (unschedulable)"
	case failAffinity:
		_, why := p.Matches(n)
		return false, why
	case failTaint:
		return false, fmt.Sprintf("have the untolerated taint %s=%s:%s", t.Key, t.Value, t.Effect)
	}
	return true, ""
}

// Evacuating says why node n is being emptied ("" when it is not): it carries
// stsutil.TaintEvacuating, which olapgke_evacuate_node_pool puts on a pool's nodes before
// it moves the ordinals pinned there. Such a node is admitted by no template: the
// migration's placement rejects it, so its ordinals move and none moves onto it, in the
// plan and in every later look of a run (also one resumed after a kill).
func Evacuating(n *corev1.Node) string {
	for _, t := range n.Spec.Taints {
		if t.Key == stsutil.TaintEvacuating {
			return fmt.Sprintf("is being evacuated (taint %s=%s)", t.Key, t.Value)
		}
	}
	return ""
}

// taintComparisonOperators mirrors the TaintTolerationComparisonOperators
// feature gate (Gt/Lt tolerations), alpha and off in Kubernetes 1.37: with it
// off a Gt/Lt toleration tolerates nothing, as in the scheduler.
const taintComparisonOperators = false

// NodeCheck selects which of a Pod's own constraints judge a node.
type NodeCheck int

const (
	// checkMatch: nodeSelector and required node affinity only (does the
	// template select this node at all).
	CheckMatch NodeCheck = iota
	// checkDurable: checkMatch plus NoExecute taints: what stays true between
	// a plan and its apply (a cordon or a NoSchedule taint may not).
	checkDurable
	// checkNow: checkDurable plus the cordon and NoSchedule taints, as the
	// scheduler's NodeUnschedulable, TaintToleration and NodeAffinity filters
	// judge a new Pod.
	CheckNow
)

// NodeFailure is the first of a Pod's own constraints a node fails.
type NodeFailure int

const (
	FailNone NodeFailure = iota
	failCordon
	failAffinity
	failTaint
)

// JudgeNode is the one node-level evaluation of a Pod's own placement
// constraints, used by the plan's verdicts (placement.go) and the
// migration's target checks alike. Matching is component-helpers'
// (nodeaffinity for nodeSelector + required affinity,
// FindMatchingUntoleratedTaint for taints), as in the scheduler. The taint
// returned is the untolerated one for failTaint.
func JudgeNode(req nodeaffinity.RequiredNodeAffinity, tolerations []corev1.Toleration, n *corev1.Node, c NodeCheck) (NodeFailure, *corev1.Taint) {
	if c == CheckNow && n.Spec.Unschedulable {
		return failCordon, nil
	}
	if ok, err := req.Match(n); err != nil || !ok {
		return failAffinity, nil
	}
	if c == CheckMatch {
		return FailNone, nil
	}
	filter := func(t *corev1.Taint) bool { return t.Effect == corev1.TaintEffectNoExecute }
	if c == CheckNow {
		filter = func(t *corev1.Taint) bool {
			return t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute
		}
	}
	if t, bad := corev1helpers.FindMatchingUntoleratedTaint(logr.Discard(), n.Spec.Taints, tolerations, filter, taintComparisonOperators); bad {
		return failTaint, &t
	}
	return FailNone, nil
}

// Describe names the target: the node pool(s) when the template selects by
// cloud.google.com/gke-nodepool, otherwise its node selector and required
// node affinity terms.
func (p PodPlacement) Describe() string {
	if p.tmpl == nil {
		return "any node"
	}
	spec := &p.tmpl.Spec
	if pool := spec.NodeSelector[stsutil.LabelNodePool]; pool != "" {
		return pool
	}
	var req *corev1.NodeSelector
	if spec.Affinity != nil && spec.Affinity.NodeAffinity != nil {
		req = spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution
	}
	if req != nil && len(spec.NodeSelector) == 0 {
		var pools []string
		onlyPools := true
		for _, t := range req.NodeSelectorTerms {
			if len(t.MatchExpressions) != 1 || len(t.MatchFields) != 0 || t.MatchExpressions[0].Key != stsutil.LabelNodePool ||
				t.MatchExpressions[0].Operator != corev1.NodeSelectorOpIn {
				onlyPools = false
				break
			}
			pools = append(pools, t.MatchExpressions[0].Values...)
		}
		if onlyPools && len(pools) > 0 {
			return strings.Join(pools, ",")
		}
	}
	var parts []string
	keys := make([]string, 0, len(spec.NodeSelector))
	for k := range spec.NodeSelector {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		parts = append(parts, k+"="+spec.NodeSelector[k])
	}
	if req != nil {
		parts = append(parts, "affinity "+describeNodeSelector(req))
	}
	if len(parts) == 0 {
		return "any node"
	}
	return strings.Join(parts, "; ")
}

// placementEqual reports whether two templates ask for the same placement.
func placementEqual(a, b *corev1.PodTemplateSpec) bool {
	var na, nb *corev1.NodeAffinity
	if a.Spec.Affinity != nil {
		na = a.Spec.Affinity.NodeAffinity
	}
	if b.Spec.Affinity != nil {
		nb = b.Spec.Affinity.NodeAffinity
	}
	var ra, rb *corev1.NodeSelector
	if na != nil {
		ra = na.RequiredDuringSchedulingIgnoredDuringExecution
	}
	if nb != nil {
		rb = nb.RequiredDuringSchedulingIgnoredDuringExecution
	}
	return apiequality.Semantic.DeepEqual(a.Spec.NodeSelector, b.Spec.NodeSelector) &&
		apiequality.Semantic.DeepEqual(ra, rb) &&
		apiequality.Semantic.DeepEqual(a.Spec.Tolerations, b.Spec.Tolerations)
}

// PlacementEqual reports whether two pod templates ask for the same node
// placement (nodeSelector, required node affinity, tolerations).
func PlacementEqual(a, b *corev1.PodTemplateSpec) bool { return placementEqual(a, b) }

// DescribePlacement names where Pods of the template go (a node pool or the
// selector), for messages and the `moves` target.
func DescribePlacement(t *corev1.PodTemplateSpec) string { return NewPodPlacement(t).Describe() }
