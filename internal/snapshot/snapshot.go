// Package snapshot reads what the planner needs from a cluster. Every read is
// one LIST call per kind, so the number of API requests does not depend on the
// number of ordinals; the planner gets plain objects and stays pure. A LIST
// that meets a transient error (429, 5xx, dropped connection) is retried a few
// times (kube.RetryRead) before the plan fails.
package snapshot

import (
	"context"
	"fmt"
	"sync"

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
//
// The reads are concurrent, as an informer factory starts its informers together: the plan waits
// for the slowest LIST (the Nodes, at thousands of nodes), not for the sum of them. Only the
// ControllerRevisions wait, for the live object's selector. The requests are the same 12; the
// first error in the order above is returned.
func Read(ctx context.Context, kube kubernetes.Interface, desired *appsv1.StatefulSet, namespace, name string) (*planner.Snapshot, error) {
	s := &planner.Snapshot{Desired: desired}
	errs := make([]error, 12)
	var wg sync.WaitGroup
	read := func(i int, f func() error) {
		wg.Go(func() { errs[i] = f() })
	}

	// The Kubernetes version decides which StatefulSet controller the
	// planner simulates (k8sfeatures). One GET, not a LIST.
	read(0, func() error {
		info, err := olapkube.ServerVersion(ctx, kube)
		if err != nil {
			return fmt.Errorf("reading the API server's version: %w", err)
		}
		s.Server.Version = k8sfeatures.FromInfo(info)
		return nil
	})
	// Every Pod of the cluster, for the scheduling simulation (what other workloads use on each
	// node); the StatefulSet's own are picked below, once its selector is known.
	read(2, func() error {
		all, err := list(ctx, kube.CoreV1().Pods(metav1.NamespaceAll).List, metav1.ListOptions{})
		if err != nil {
			return fmt.Errorf("listing Pods: %w", err)
		}
		s.AllPods = all.Items
		return nil
	})
	read(1, func() error {
		sets, err := list(ctx, kube.AppsV1().StatefulSets(namespace).List, metav1.ListOptions{
			FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String(),
		})
		if err != nil {
			return fmt.Errorf("listing StatefulSet %s/%s: %w", namespace, name, err)
		}
		for i := range sets.Items {
			if sets.Items[i].Name == name { // fake clients ignore field selectors
				s.Live = &sets.Items[i]
			}
		}
		sel, err := selectorOf(s, namespace, name)
		if err != nil || sel == nil {
			return err
		}
		revs, err := list(ctx, kube.AppsV1().ControllerRevisions(namespace).List, metav1.ListOptions{LabelSelector: sel.String()})
		if err != nil {
			errs[3] = fmt.Errorf("listing ControllerRevisions of StatefulSet %s/%s: %w", namespace, name, err)
			return nil
		}
		s.Revisions = revs.Items
		return nil
	})
	read(4, func() error {
		pvcs, err := list(ctx, kube.CoreV1().PersistentVolumeClaims(namespace).List, metav1.ListOptions{})
		if err != nil {
			return fmt.Errorf("listing PersistentVolumeClaims in %s: %w", namespace, err)
		}
		s.PVCs = pvcs.Items
		return nil
	})
	read(5, func() error {
		pvs, err := list(ctx, kube.CoreV1().PersistentVolumes().List, metav1.ListOptions{})
		if err != nil {
			return fmt.Errorf("listing PersistentVolumes: %w", err)
		}
		s.PVs = pvs.Items
		return nil
	})
	read(6, func() error {
		nodes, err := list(ctx, kube.CoreV1().Nodes().List, metav1.ListOptions{})
		if err != nil {
			return fmt.Errorf("listing Nodes: %w", err)
		}
		s.Nodes = nodes.Items
		return nil
	})
	read(7, func() error {
		scs, err := list(ctx, kube.StorageV1().StorageClasses().List, metav1.ListOptions{})
		if err != nil {
			return fmt.Errorf("listing StorageClasses: %w", err)
		}
		s.StorageClasses = scs.Items
		return nil
	})
	read(8, func() error {
		caps, err := list(ctx, kube.StorageV1().CSIStorageCapacities(metav1.NamespaceAll).List, metav1.ListOptions{})
		if err != nil {
			return fmt.Errorf("listing CSIStorageCapacities: %w", err)
		}
		s.Capacities = caps.Items
		return nil
	})
	read(9, func() error {
		drivers, err := list(ctx, kube.StorageV1().CSIDrivers().List, metav1.ListOptions{})
		if err != nil {
			return fmt.Errorf("listing CSIDrivers: %w", err)
		}
		s.CSIDrivers = drivers.Items
		return nil
	})
	read(10, func() error {
		csiNodes, err := list(ctx, kube.StorageV1().CSINodes().List, metav1.ListOptions{})
		if err != nil {
			return fmt.Errorf("listing CSINodes: %w", err)
		}
		s.CSINodes = csiNodes.Items
		return nil
	})
	read(11, func() error {
		pdbs, err := list(ctx, kube.PolicyV1().PodDisruptionBudgets(namespace).List, metav1.ListOptions{})
		if err != nil {
			return fmt.Errorf("listing PodDisruptionBudgets in %s: %w", namespace, err)
		}
		s.PDBs = pdbs.Items
		return nil
	})
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	// The StatefulSet's own Pods: those of its namespace its selector matches.
	if sel, _ := selectorOf(s, namespace, name); sel != nil {
		for i := range s.AllPods {
			p := &s.AllPods[i]
			if p.Namespace == namespace && sel.Matches(labels.Set(p.Labels)) {
				s.Pods = append(s.Pods, *p)
			}
		}
	}
	return s, nil
}

// selector is the label selector of the StatefulSet's Pods and ControllerRevisions: the live
// object's, else the desired one's; nil when neither has one.
func selectorOf(s *planner.Snapshot, namespace, name string) (labels.Selector, error) {
	of := s.Desired
	if s.Live != nil {
		of = s.Live
	}
	if of == nil || of.Spec.Selector == nil {
		return nil, nil
	}
	sel, err := metav1.LabelSelectorAsSelector(of.Spec.Selector)
	if err != nil {
		return nil, fmt.Errorf("StatefulSet %s/%s has an invalid selector: %w", namespace, name, err)
	}
	if sel.Empty() {
		return nil, nil
	}
	return sel, nil
}

// list is one LIST, retried on transient errors.
func list[T any](ctx context.Context, do func(context.Context, metav1.ListOptions) (T, error), opts metav1.ListOptions) (T, error) {
	return olapkube.List(ctx, do, opts)
}
