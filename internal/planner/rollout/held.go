package rollout

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/olapgke/terraform-provider-olapgke/internal/planner"
	corev1 "k8s.io/api/core/v1"
)

// Terraform plans every changed resource again during apply, with the same configuration and
// prior state, and refuses the apply when a value known in the first plan differs; it does not
// tell the provider what it planned the first time. So a planned verdict can only be derived
// from what stays the same between a plan and its apply. A node's cordon and the taints
// Kubernetes sets from its conditions (not ready, unreachable, pressure) come and go without
// anyone touching the configuration: PlanRollout judges the ordinals with them lifted, and reports in
// Plan.Held what they keep from being placed now, which the resources turn into a warning or
// their own error (never a changed value).

// volatileTaints are the taints Kubernetes sets and clears itself: the cordon's (kubectl
// cordon, drain) and the node lifecycle controller's, from the node's conditions.
var volatileTaints = map[string]bool{
	corev1.TaintNodeUnschedulable:      true,
	corev1.TaintNodeNotReady:           true,
	corev1.TaintNodeUnreachable:        true,
	corev1.TaintNodeMemoryPressure:     true,
	corev1.TaintNodeDiskPressure:       true,
	corev1.TaintNodePIDPressure:        true,
	corev1.TaintNodeNetworkUnavailable: true,
}

// HeldOrdinal is an ordinal this apply creates or recreates that the plan places (Schedulable),
// but that the nodes' state now keeps from being placed: its new Pod would stay Pending until
// that state clears (kubectl uncordon, the node Ready again).
type HeldOrdinal struct {
	Ordinal int32
	Pod     string
	Action  Action
	// Nodes are the nodes holding it, with what holds them ("is cordoned (spec.unschedulable)",
	// "has taint node.kubernetes.io/not-ready:NoSchedule"): the nodes its PVs pin it to, or,
	// for a Pod without pinned PVs, every held node its template admits.
	Nodes []planner.NodeWait
	// Reason is the scheduler's message with the nodes as they are now.
	Reason string
}

// volatileState says what of n's state can change before the apply without a configuration
// change ("" when nothing).
func volatileState(n *corev1.Node) string {
	var what []string
	if n.Spec.Unschedulable {
		what = append(what, "is cordoned (spec.unschedulable)")
	}
	for _, t := range n.Spec.Taints {
		if volatileTaints[t.Key] && t.Key != corev1.TaintNodeUnschedulable {
			what = append(what, "has taint "+t.ToString())
		}
	}
	return strings.Join(what, " and ")
}

// liftVolatile returns s with every node's volatile state lifted (uncordoned, without the
// volatile taints) and what was lifted per node; s itself is not changed.
func liftVolatile(s planner.Snapshot) (planner.Snapshot, map[string]string) {
	lifted := map[string]string{}
	var nodes []corev1.Node
	for i := range s.Nodes {
		what := volatileState(&s.Nodes[i])
		if what == "" {
			continue
		}
		if nodes == nil {
			nodes = slices.Clone(s.Nodes)
		}
		n := s.Nodes[i].DeepCopy()
		n.Spec.Unschedulable = false
		n.Spec.Taints = slices.DeleteFunc(n.Spec.Taints, func(t corev1.Taint) bool { return volatileTaints[t.Key] })
		nodes[i] = *n
		lifted[n.Name] = what
	}
	if nodes != nil {
		s.Nodes = nodes
	}
	return s, lifted
}

// heldOrdinals compares the plan judged with the nodes' volatile state lifted (planned) with the
// one judged on the nodes as they are (now): the ordinals planned placeable that are not now.
func heldOrdinals(s *planner.Snapshot, planned, now *Plan, lifted map[string]string) []HeldOrdinal {
	nowBy := map[int32]OrdinalPlan{}
	for _, o := range now.Ordinals {
		nowBy[o.Ordinal] = o
	}
	var out []HeldOrdinal
	for _, o := range planned.Ordinals {
		if (o.Action != ActionCreate && o.Action != ActionRecreate) || !o.Schedulable {
			continue
		}
		n, ok := nowBy[o.Ordinal]
		if !ok || n.Schedulable {
			continue
		}
		h := HeldOrdinal{Ordinal: o.Ordinal, Pod: o.Pod, Action: o.Action, Reason: n.Reason}
		seen := map[string]bool{}
		for _, v := range o.Volumes {
			if what, ok := lifted[v.PinnedNode]; ok && !seen[v.PinnedNode] {
				seen[v.PinnedNode] = true
				h.Nodes = append(h.Nodes, planner.NodeWait{Node: v.PinnedNode, Reason: what})
			}
		}
		if len(h.Nodes) == 0 && !pinned(o.Volumes) && s.Desired != nil {
			placement := planner.NewPodPlacement(&s.Desired.Spec.Template)
			for _, node := range s.Nodes {
				what, ok := lifted[node.Name]
				if !ok {
					continue
				}
				if f, _ := planner.JudgeNode(placement.Req, nil, &node, planner.CheckMatch); f == planner.FailNone {
					h.Nodes = append(h.Nodes, planner.NodeWait{Node: node.Name, Reason: what})
				}
			}
			sort.Slice(h.Nodes, func(i, j int) bool { return h.Nodes[i].Node < h.Nodes[j].Node })
		}
		out = append(out, h)
	}
	return out
}

// placesNewPods reports whether p creates or recreates an ordinal it places: the only ones a
// node's volatile state can hold (PlanRollout judges the plan a second time only then).
func placesNewPods(p *Plan) bool {
	for _, o := range p.Ordinals {
		if (o.Action == ActionCreate || o.Action == ActionRecreate) && o.Schedulable {
			return true
		}
	}
	return false
}

func pinned(vols []planner.Volume) bool {
	for _, v := range vols {
		if v.PinnedNode != "" {
			return true
		}
	}
	return false
}

// DescribeHeld is one line per held ordinal: the nodes and what holds them, then the scheduler.
func DescribeHeld(h HeldOrdinal) string {
	var nodes []string
	for _, n := range h.Nodes {
		nodes = append(nodes, fmt.Sprintf("node %s %s", n.Node, n.Reason))
	}
	who := "its nodes are held"
	if len(nodes) > 0 {
		who = strings.Join(nodes, "; ")
	}
	return fmt.Sprintf("ordinal %d (Pod %s, %s): %s, so its new Pod would stay Pending until that clears; the scheduler says: %s",
		h.Ordinal, h.Pod, h.Action, who, strings.TrimSpace(h.Reason))
}
