package gkerules

import (
	"fmt"

	"github.com/olapgke/terraform-provider-olapgke/internal/stsutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	resourcehelper "k8s.io/component-helpers/resource"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
)

// NodePoolLabel is the label GKE puts on every node with its pool's name.
const NodePoolLabel = stsutil.LabelNodePool

// Demand is the ephemeral-storage demand of the Pods that target one node pool.
type Demand struct {
	// PerNodeGiB is the demand per node: the larger of the busiest current node's requests and
	// the pool-wide requests spread over the planned node count.
	PerNodeGiB float64
	// Pods is how many Pods were counted.
	Pods int
	// Source says where the figure comes from, for the plan.
	Source string
}

// PoolDemand sums the ephemeral-storage requests (as the scheduler counts them:
// k8s.io/component-helpers/resource.PodRequests) of running or pending Pods that are on the
// pool's nodes or, unscheduled, whose required node affinity / nodeSelector accepts a node of
// the pool (a real pool node, or one with the pool's labels when none exists yet).
// Tolerations are not considered: a Pod that does not tolerate the pool's taints is counted.
func PoolDemand(pool string, poolLabels map[string]string, nodes []corev1.Node, pods []corev1.Pod, plannedNodes int) Demand {
	onPool := map[string]bool{}
	for _, n := range nodes {
		onPool[n.Name] = true
	}
	probe := corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "probe", Labels: map[string]string{NodePoolLabel: pool}}}
	for k, v := range poolLabels {
		probe.Labels[k] = v
	}
	if len(nodes) > 0 {
		probe = nodes[0]
	}
	perNode := map[string]float64{}
	var total float64
	count := 0
	for i := range pods {
		p := &pods[i]
		if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed || p.DeletionTimestamp != nil {
			continue
		}
		switch {
		case p.Spec.NodeName != "" && !onPool[p.Spec.NodeName]:
			continue
		case p.Spec.NodeName == "":
			if ok, _ := nodeaffinity.GetRequiredNodeAffinity(p).Match(&probe); !ok || !selectsPool(p, pool) {
				continue
			}
		}
		req := resourcehelper.PodRequests(p, resourcehelper.PodResourcesOptions{})
		q, ok := req[corev1.ResourceEphemeralStorage]
		if !ok {
			continue
		}
		g := float64(q.Value()) / gib
		total += g
		count++
		if p.Spec.NodeName != "" {
			perNode[p.Spec.NodeName] += g
		}
	}
	d := Demand{Pods: count}
	for _, g := range perNode {
		d.PerNodeGiB = max(d.PerNodeGiB, g)
	}
	if plannedNodes > 0 {
		d.PerNodeGiB = max(d.PerNodeGiB, total/float64(plannedNodes))
	}
	d.Source = fmt.Sprintf("ephemeral-storage requests of %d Pod(s) targeting node pool %s", count, pool)
	return d
}

// selectsPool reports whether an unscheduled Pod's placement constraints mention the pool at all:
// a Pod with no node constraints could land anywhere and is not counted against this pool.
func selectsPool(p *corev1.Pod, pool string) bool {
	if p.Spec.NodeSelector[NodePoolLabel] == pool {
		return true
	}
	a := p.Spec.Affinity
	if a == nil || a.NodeAffinity == nil || a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return len(p.Spec.NodeSelector) > 0
	}
	return true
}
