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
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

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
	var r reads

	// The Kubernetes version decides which StatefulSet controller the
	// planner simulates (k8sfeatures). One GET, not a LIST.
	r.do(0, func() error {
		info, err := olapkube.ServerVersion(ctx, kube)
		if err != nil {
			return fmt.Errorf("reading the API server's version: %w", err)
		}
		s.Server.Version = k8sfeatures.FromInfo(info)
		return nil
	})
	// The live object, then its ControllerRevisions by its selector (slot 3), which also picks
	// the set's own Pods below.
	var podSel labels.Selector
	r.do(1, func() error {
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
		if podSel, err = selectorOf(s, namespace, name); err != nil || podSel == nil {
			return err
		}
		revs, err := list(ctx, kube.AppsV1().ControllerRevisions(namespace).List, metav1.ListOptions{LabelSelector: podSel.String()})
		if err != nil {
			r.errs[3] = fmt.Errorf("listing ControllerRevisions of StatefulSet %s/%s: %w", namespace, name, err)
			return nil
		}
		s.Revisions = revs.Items
		return nil
	})
	// Every Pod of the cluster, for the scheduling simulation (what other workloads use on each
	// node); the StatefulSet's own are picked below, once its selector is known.
	core, storage := kube.CoreV1().RESTClient(), kube.StorageV1().RESTClient()
	listInto(ctx, &r, 2, "Pods", core, "pods", metav1.NamespaceAll, kube.CoreV1().Pods(metav1.NamespaceAll).List, func(l *corev1.PodList) []corev1.Pod { return l.Items }, &s.AllPods)
	listInto(ctx, &r, 4, "PersistentVolumeClaims in "+namespace, core, "persistentvolumeclaims", namespace, kube.CoreV1().PersistentVolumeClaims(namespace).List, func(l *corev1.PersistentVolumeClaimList) []corev1.PersistentVolumeClaim { return l.Items }, &s.PVCs)
	listInto(ctx, &r, 5, "PersistentVolumes", core, "persistentvolumes", "", kube.CoreV1().PersistentVolumes().List, func(l *corev1.PersistentVolumeList) []corev1.PersistentVolume { return l.Items }, &s.PVs)
	listInto(ctx, &r, 6, "Nodes", core, "nodes", "", kube.CoreV1().Nodes().List, func(l *corev1.NodeList) []corev1.Node { return l.Items }, &s.Nodes)
	listInto(ctx, &r, 7, "StorageClasses", storage, "storageclasses", "", kube.StorageV1().StorageClasses().List, func(l *storagev1.StorageClassList) []storagev1.StorageClass { return l.Items }, &s.StorageClasses)
	listInto(ctx, &r, 8, "CSIStorageCapacities", storage, "csistoragecapacities", metav1.NamespaceAll, kube.StorageV1().CSIStorageCapacities(metav1.NamespaceAll).List, func(l *storagev1.CSIStorageCapacityList) []storagev1.CSIStorageCapacity { return l.Items }, &s.Capacities)
	listInto(ctx, &r, 9, "CSIDrivers", storage, "csidrivers", "", kube.StorageV1().CSIDrivers().List, func(l *storagev1.CSIDriverList) []storagev1.CSIDriver { return l.Items }, &s.CSIDrivers)
	listInto(ctx, &r, 10, "CSINodes", storage, "csinodes", "", kube.StorageV1().CSINodes().List, func(l *storagev1.CSINodeList) []storagev1.CSINode { return l.Items }, &s.CSINodes)
	listInto(ctx, &r, 11, "PodDisruptionBudgets in "+namespace, kube.PolicyV1().RESTClient(), "poddisruptionbudgets", namespace, kube.PolicyV1().PodDisruptionBudgets(namespace).List, func(l *policyv1.PodDisruptionBudgetList) []policyv1.PodDisruptionBudget { return l.Items }, &s.PDBs)
	if err := r.wait(); err != nil {
		return nil, err
	}
	// The StatefulSet's own Pods: those of its namespace its selector matches.
	if podSel != nil {
		for i := range s.AllPods {
			p := &s.AllPods[i]
			if p.Namespace == namespace && podSel.Matches(labels.Set(p.Labels)) {
				s.Pods = append(s.Pods, *p)
			}
		}
	}
	return s, nil
}

// reads runs Read's reads concurrently; each keeps its error in its own slot, so the first
// error in Read's order is the one returned whichever finished first.
type reads struct {
	wg   sync.WaitGroup
	errs [12]error
}

func (r *reads) do(slot int, f func() error) { r.wg.Go(func() { r.errs[slot] = f() }) }

// wait waits for every read and returns the first error in slot order.
func (r *reads) wait() error {
	r.wg.Wait()
	for _, err := range r.errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// listInto is one of Read's LISTs of every object of resource (in namespace; "" for all or a
// cluster-scoped resource) in slot, decoded item by item as it is read (kube.ListItems; typed and
// items answer for a fake clientset): into gets the items; a failure says what was listed.
func listInto[T any, PT interface {
	*T
	Unmarshal([]byte) error
}, L any](ctx context.Context, r *reads, slot int, what string, rc rest.Interface, resource, namespace string,
	typed func(context.Context, metav1.ListOptions) (L, error), items func(L) []T, into *[]T) {
	r.do(slot, func() error {
		l, err := olapkube.ListItems[T, PT](ctx, rc, resource, namespace, func(ctx context.Context, opts metav1.ListOptions) ([]T, error) {
			l, err := typed(ctx, opts)
			if err != nil {
				return nil, err
			}
			return items(l), nil
		})
		if err != nil {
			return fmt.Errorf("listing %s: %w", what, err)
		}
		*into = l
		return nil
	})
}

// selectorOf is the label selector of the StatefulSet's Pods and ControllerRevisions: the live
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
