package schedsim

// Two result-preserving shortcuts that make VolumeBinding affordable on
// thousands of nodes. Neither replaces a plugin: every answer still comes
// from the framework's Filter plugins.
//
//  1. capacityLister: VolumeBinding's hasEnoughCapacity lists *all*
//     CSIStorageCapacity objects and builds a label selector for each one,
//     for every node it filters (O(nodes x capacities) per pod). While the
//     simulator runs Filter for node X, the lister returns only the
//     capacities whose NodeTopology selects X. hasEnoughCapacity asks "is
//     there one with this class, enough size and access to X"; objects
//     without access to X can never satisfy it, so the answer is unchanged.
//
//  2. pinnedNodes: a bound CSI/local PV with required node affinity can only
//     be used on nodes that match it (VolumeBinding checkBoundClaims uses
//     the same volume.CheckNodeAffinity). Those nodes are searched first;
//     the full pass over all nodes (for the exact FitError) only runs when
//     none of them is feasible.

import (
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/informers"
	storageinformers "k8s.io/client-go/informers/storage"
	storagev1informers "k8s.io/client-go/informers/storage/v1"
	storagelisters "k8s.io/client-go/listers/storage/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
)

// factory wraps the real SharedInformerFactory; only
// Storage().V1().CSIStorageCapacities().Lister() differs.
type factory struct {
	informers.SharedInformerFactory
	capLister *capacityLister
}

func (f *factory) Storage() storageinformers.Interface {
	return storageGroup{f.SharedInformerFactory.Storage(), f}
}

type storageGroup struct {
	storageinformers.Interface
	f *factory
}

func (g storageGroup) V1() storagev1informers.Interface { return storageV1{g.Interface.V1(), g.f} }

type storageV1 struct {
	storagev1informers.Interface
	f *factory
}

func (v storageV1) CSIStorageCapacities() storagev1informers.TypedCSIStorageCapacityInformer {
	return capInformer{v.Interface.CSIStorageCapacities(), v.f.capLister}
}

type capInformer struct {
	storagev1informers.TypedCSIStorageCapacityInformer
	l *capacityLister
}

func (c capInformer) Lister() storagelisters.CSIStorageCapacityLister { return c.l }

// capacityLister serves List() from a node -> capacities index while a node
// is being filtered, and from the informer's indexer otherwise.
type capacityLister struct {
	storagelisters.CSIStorageCapacityLister // the real one
	indexer                                 toolscache.Indexer
	currentNode                             string
	byNode                                  map[string][]string // node -> capacity keys
}

func (l *capacityLister) List(sel labels.Selector) ([]*storagev1.CSIStorageCapacity, error) {
	if l.currentNode == "" || l.byNode == nil {
		return l.CSIStorageCapacityLister.List(sel)
	}
	keys := l.byNode[l.currentNode]
	out := make([]*storagev1.CSIStorageCapacity, 0, len(keys))
	for _, k := range keys {
		obj, ok, _ := l.indexer.GetByKey(k)
		if !ok {
			continue
		}
		c, ok := obj.(*storagev1.CSIStorageCapacity)
		if !ok {
			continue
		}
		if sel.Matches(labels.Set(c.Labels)) {
			out = append(out, c)
		}
	}
	return out, nil
}

// buildIndex computes, once, which nodes each capacity's NodeTopology selects.
func (l *capacityLister) buildIndex(nodes []*corev1.Node, byLabel map[nodeLabel][]*corev1.Node) {
	l.byNode = map[string][]string{}
	for _, obj := range l.indexer.List() {
		c, ok := obj.(*storagev1.CSIStorageCapacity)
		if !ok || c.NodeTopology == nil {
			continue // nodeHasAccess() is false for every node
		}
		key, _ := toolscache.MetaNamespaceKeyFunc(c)
		if t := c.NodeTopology; len(t.MatchExpressions) == 0 && len(t.MatchLabels) == 1 {
			// One label (a CSI driver's topology segment, e.g. TopoLVM's node): the nodes carrying
			// it are exactly those the selector matches (a label no node can carry selects none,
			// as LabelSelectorAsSelector's error makes nodeHasAccess false everywhere).
			for k, v := range t.MatchLabels {
				for _, n := range byLabel[nodeLabel{k, v}] {
					l.byNode[n.Name] = append(l.byNode[n.Name], key)
				}
			}
			continue
		}
		sel, err := metav1.LabelSelectorAsSelector(c.NodeTopology)
		if err != nil {
			continue // nodeHasAccess() is false for every node
		}
		cands := nodes
		for k, v := range c.NodeTopology.MatchLabels {
			cands = byLabel[nodeLabel{k, v}]
			break
		}
		for _, n := range cands {
			if sel.Matches(labels.Set(n.Labels)) {
				l.byNode[n.Name] = append(l.byNode[n.Name], key)
			}
		}
	}
}

// pinnedNodes returns the names of nodes that satisfy the required node
// affinity of every bound CSI/local PV of the pod, or nil if the pod has no
// such PV (or one we do not want to reason about, e.g. in-tree PVs that
// VolumeBinding would translate to CSI first).
func (s *Sim) pinnedNodes(pod *corev1.Pod) sets.Set[string] {
	var pvs []*corev1.PersistentVolume
	pvcIdx := s.informers.Core().V1().PersistentVolumeClaims().Informer().GetIndexer()
	pvIdx := s.informers.Core().V1().PersistentVolumes().Informer().GetIndexer()
	for _, v := range pod.Spec.Volumes {
		if v.PersistentVolumeClaim == nil {
			continue
		}
		obj, ok, _ := pvcIdx.GetByKey(pod.Namespace + "/" + v.PersistentVolumeClaim.ClaimName)
		if !ok {
			return nil
		}
		pvc, ok := obj.(*corev1.PersistentVolumeClaim)
		if !ok {
			return nil
		}
		if pvc.Spec.VolumeName == "" {
			continue
		}
		obj, ok, _ = pvIdx.GetByKey(pvc.Spec.VolumeName)
		if !ok {
			return nil
		}
		pv, ok := obj.(*corev1.PersistentVolume)
		if !ok || (pv.Spec.CSI == nil && pv.Spec.Local == nil) {
			return nil
		}
		if pv.Spec.NodeAffinity != nil && pv.Spec.NodeAffinity.Required != nil {
			pvs = append(pvs, pv)
		}
	}
	if len(pvs) == 0 {
		return nil
	}
	var out sets.Set[string]
	for _, pv := range pvs {
		// Same evaluation as volume.CheckNodeAffinity (MatchNodeSelectorTerms
		// = NewLazyErrorNodeSelector(...).Match), built once per PV and run
		// only on candidate nodes found via the label index.
		sel := nodeaffinity.NewLazyErrorNodeSelector(pv.Spec.NodeAffinity.Required)
		ok := sets.New[string]()
		for _, n := range s.candidateNodes(pv.Spec.NodeAffinity.Required) {
			if m, err := sel.Match(n); err == nil && m {
				ok.Insert(n.Name)
			}
		}
		if out == nil {
			out = ok
		} else {
			out = out.Intersection(ok)
		}
	}
	return out
}

// candidateNodes returns a superset of the nodes a NodeSelector can match:
// for each term whose first expression is "In", the nodes carrying one of
// the values; otherwise all nodes.
func (s *Sim) candidateNodes(ns *corev1.NodeSelector) []*corev1.Node {
	seen := sets.New[string]()
	var out []*corev1.Node
	for _, t := range ns.NodeSelectorTerms {
		if len(t.MatchExpressions) == 0 || t.MatchExpressions[0].Operator != corev1.NodeSelectorOpIn {
			return s.allNodes
		}
		e := t.MatchExpressions[0]
		for _, v := range e.Values {
			for _, n := range s.byLabel[nodeLabel{e.Key, v}] {
				if !seen.Has(n.Name) {
					seen.Insert(n.Name)
					out = append(out, n)
				}
			}
		}
	}
	return out
}

// nodeLabel is one label (key and value) in labelIndex.
type nodeLabel struct{ key, value string }

// labelIndex maps each label to the nodes carrying it.
func labelIndex(nodes []*corev1.Node) map[nodeLabel][]*corev1.Node {
	byLabel := map[nodeLabel][]*corev1.Node{}
	for _, n := range nodes {
		for k, v := range n.Labels {
			byLabel[nodeLabel{k, v}] = append(byLabel[nodeLabel{k, v}], n)
		}
	}
	return byLabel
}
