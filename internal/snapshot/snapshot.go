// Package snapshot reads what the planner needs from a cluster. Every read is
// one LIST call per kind, so the number of API requests does not depend on the
// number of ordinals; the planner gets plain objects and stays pure. A LIST
// that meets a transient error (429, 5xx, dropped connection) is retried a few
// times (kube.RetryRead) before the plan fails.
package snapshot

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"

	"github.com/olapgke/terraform-provider-olapgke/internal/k8sfeatures"
	olapkube "github.com/olapgke/terraform-provider-olapgke/internal/kube"
	"github.com/olapgke/terraform-provider-olapgke/internal/planner"
)

// Read gets the server's version and lists the live StatefulSet namespace/name, every Pod (the set's are
// those its selector matches in its namespace), its ControllerRevisions (by
// selector), PVCs in the namespace, every PV, Node, StorageClass,
// CSIStorageCapacity, CSIDriver and CSINode, and the namespace's PDBs. desired is
// the dry-run-defaulted object (nil on destroy); it is stored as is.
func Read(ctx context.Context, kube kubernetes.Interface, desired *appsv1.StatefulSet, namespace, name string) (*planner.Snapshot, error) {
	s := &planner.Snapshot{Desired: desired}

	// The Kubernetes version decides which StatefulSet controller the
	// planner simulates (k8sfeatures). One GET, not a LIST.
	info, err := olapkube.ServerVersion(ctx, kube)
	if err != nil {
		return nil, fmt.Errorf("reading the API server's version: %w", err)
	}
	s.Server.Version = k8sfeatures.FromInfo(info)

	sets, err := list(ctx, kube.AppsV1().StatefulSets(namespace).List, metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String(),
	})
	if err != nil {
		return nil, fmt.Errorf("listing StatefulSet %s/%s: %w", namespace, name, err)
	}
	for i := range sets.Items {
		if sets.Items[i].Name == name { // fake clients ignore field selectors
			s.Live = &sets.Items[i]
		}
	}

	selectorOf := desired
	if s.Live != nil {
		selectorOf = s.Live
	}
	podSelector := ""
	if selectorOf != nil && selectorOf.Spec.Selector != nil {
		sel, err := metav1.LabelSelectorAsSelector(selectorOf.Spec.Selector)
		if err != nil {
			return nil, fmt.Errorf("StatefulSet %s/%s has an invalid selector: %w", namespace, name, err)
		}
		podSelector = sel.String()
	}

	// Every Pod of the cluster, for the scheduling simulation (what other workloads use on each
	// node); the StatefulSet's own are those of its namespace its selector matches.
	all, err := list(ctx, kube.CoreV1().Pods(metav1.NamespaceAll).List, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing Pods: %w", err)
	}
	s.AllPods = all.Items
	if selectorOf != nil && podSelector != "" {
		sel, _ := metav1.LabelSelectorAsSelector(selectorOf.Spec.Selector)
		for i := range all.Items {
			p := &all.Items[i]
			if p.Namespace == namespace && sel.Matches(labels.Set(p.Labels)) {
				s.Pods = append(s.Pods, *p)
			}
		}
		revs, err := list(ctx, kube.AppsV1().ControllerRevisions(namespace).List, metav1.ListOptions{LabelSelector: podSelector})
		if err != nil {
			return nil, fmt.Errorf("listing ControllerRevisions of StatefulSet %s/%s: %w", namespace, name, err)
		}
		s.Revisions = revs.Items
	}

	pvcs, err := list(ctx, kube.CoreV1().PersistentVolumeClaims(namespace).List, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing PersistentVolumeClaims in %s: %w", namespace, err)
	}
	s.PVCs = pvcs.Items
	pvs, err := list(ctx, kube.CoreV1().PersistentVolumes().List, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing PersistentVolumes: %w", err)
	}
	s.PVs = pvs.Items
	nodes, err := list(ctx, kube.CoreV1().Nodes().List, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing Nodes: %w", err)
	}
	s.Nodes = nodes.Items
	scs, err := list(ctx, kube.StorageV1().StorageClasses().List, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing StorageClasses: %w", err)
	}
	s.StorageClasses = scs.Items
	caps, err := list(ctx, kube.StorageV1().CSIStorageCapacities(metav1.NamespaceAll).List, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing CSIStorageCapacities: %w", err)
	}
	s.Capacities = caps.Items
	drivers, err := list(ctx, kube.StorageV1().CSIDrivers().List, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing CSIDrivers: %w", err)
	}
	s.CSIDrivers = drivers.Items
	csiNodes, err := list(ctx, kube.StorageV1().CSINodes().List, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing CSINodes: %w", err)
	}
	s.CSINodes = csiNodes.Items
	pdbs, err := list(ctx, kube.PolicyV1().PodDisruptionBudgets(namespace).List, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing PodDisruptionBudgets in %s: %w", namespace, err)
	}
	s.PDBs = pdbs.Items
	return s, nil
}

// list is one LIST, retried on transient errors.
func list[T any](ctx context.Context, do func(context.Context, metav1.ListOptions) (T, error), opts metav1.ListOptions) (T, error) {
	return olapkube.List(ctx, do, opts)
}
