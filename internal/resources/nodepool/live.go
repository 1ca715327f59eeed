package nodepool

import (
	"context"
	"fmt"
	"sort"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"

	olapkube "github.com/olapgke/terraform-provider-olapgke/internal/kube"
	"github.com/olapgke/terraform-provider-olapgke/internal/stsutil"
)

// clusterState is what the plan-time checks read from the Kubernetes API: one LIST per kind, so
// the number of calls does not grow with the number of ordinals.
type clusterState struct {
	Nodes        []corev1.Node // nodes of this pool
	PVs          []corev1.PersistentVolume
	PVCs         []corev1.PersistentVolumeClaim
	Pods         []corev1.Pod
	StatefulSets []appsv1.StatefulSet
}

// poolNodes lists the Nodes of a pool (label cloud.google.com/gke-nodepool), sorted by name.
func poolNodes(ctx context.Context, kc kubernetes.Interface, pool string) ([]corev1.Node, error) {
	sel := labels.SelectorFromSet(labels.Set{stsutil.LabelNodePool: pool}).String()
	l, err := olapkube.List(ctx, kc.CoreV1().Nodes().List, metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		return nil, fmt.Errorf("listing Nodes with %s: %w", sel, err)
	}
	sort.Slice(l.Items, func(i, j int) bool { return l.Items[i].Name < l.Items[j].Name })
	return l.Items, nil
}

func nodeNames(nodes []corev1.Node) []string {
	out := make([]string, 0, len(nodes))
	for _, n := range nodes {
		out = append(out, n.Name)
	}
	return out
}

// activePods selects the Pods that are not terminated.
const activePods = "status.phase!=Succeeded,status.phase!=Failed"

// readClusterState lists the pool's Nodes and, when withVolumes, every PV, PVC, Pod and
// StatefulSet; Pods are always listed (ephemeral demand).
func readClusterState(ctx context.Context, kc kubernetes.Interface, pool string, withVolumes bool) (*clusterState, error) {
	s := &clusterState{}
	var err error
	if s.Nodes, err = poolNodes(ctx, kc, pool); err != nil {
		return nil, err
	}
	// Running and pending Pods only: terminated ones hold no ephemeral storage and no volume.
	pods, err := olapkube.List(ctx, kc.CoreV1().Pods(metav1.NamespaceAll).List, metav1.ListOptions{FieldSelector: activePods})
	if err != nil {
		return nil, fmt.Errorf("listing Pods: %w", err)
	}
	s.Pods = pods.Items
	if !withVolumes {
		return s, nil
	}
	pvs, err := olapkube.List(ctx, kc.CoreV1().PersistentVolumes().List, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing PersistentVolumes: %w", err)
	}
	pvcs, err := olapkube.List(ctx, kc.CoreV1().PersistentVolumeClaims(metav1.NamespaceAll).List, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing PersistentVolumeClaims: %w", err)
	}
	sets, err := olapkube.List(ctx, kc.AppsV1().StatefulSets(metav1.NamespaceAll).List, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing StatefulSets: %w", err)
	}
	s.PVs, s.PVCs, s.StatefulSets = pvs.Items, pvcs.Items, sets.Items
	return s, nil
}

// nodesOutside lists the cluster's nodes that are not in pool (label selector `!=`, which also
// matches nodes without the label).
func nodesOutside(ctx context.Context, kc kubernetes.Interface, pool string) ([]corev1.Node, error) {
	l, err := olapkube.List(ctx, kc.CoreV1().Nodes().List, metav1.ListOptions{LabelSelector: stsutil.LabelNodePool + "!=" + pool})
	if err != nil {
		return nil, err
	}
	return l.Items, nil
}
