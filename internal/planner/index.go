package planner

import (
	"sort"
	"strings"

	"github.com/olapgke/terraform-provider-olapgke/internal/stsutil"
	"github.com/olapgke/terraform-provider-olapgke/internal/topolvm"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
)

// AnnotationDefaultClass marks the default StorageClass.
const AnnotationDefaultClass = "storageclass.kubernetes.io/is-default-class"

// Index is a read-only view of a Snapshot with lookups by name and by node
// label, plus caches of placement decisions. Build one per snapshot with
// NewIndex and reuse it for every predicate; it is not safe for concurrent use.
type Index struct {
	Nodes     []*corev1.Node
	NodeByNm  map[string]int
	byLabel   map[string]map[string][]int // label key -> value -> node indexes
	pvs       map[string]*corev1.PersistentVolume
	pvcs      map[string]*corev1.PersistentVolumeClaim // namespace/name
	Scs       map[string]*storagev1.StorageClass
	defaultSC string
	caps      map[string][]*storagev1.CSIStorageCapacity // by storage class
	capSels   map[string]*capSelectors                   // by storage class, built on first use

	pinCache   map[string]*pvPin
	placeCache map[string]*placement
	capCache   map[capKey]capInfo

	snap *Snapshot
	pl   *placer // the scheduling simulation, built on first use (scheduling.go)
}

type capKey struct {
	node int
	sc   string
}

type capInfo struct {
	Limited bool
	Bytes   int64 // total free
	maxVol  int64 // largest single volume, -1 when unknown
	Source  string
}

// NewIndex indexes s. It keeps pointers into s: do not change s afterwards.
func NewIndex(s *Snapshot) *Index {
	ix := &Index{
		NodeByNm:   make(map[string]int, len(s.Nodes)),
		byLabel:    map[string]map[string][]int{},
		pvs:        make(map[string]*corev1.PersistentVolume, len(s.PVs)),
		pvcs:       make(map[string]*corev1.PersistentVolumeClaim, len(s.PVCs)),
		Scs:        map[string]*storagev1.StorageClass{},
		caps:       map[string][]*storagev1.CSIStorageCapacity{},
		capSels:    map[string]*capSelectors{},
		pinCache:   map[string]*pvPin{},
		placeCache: map[string]*placement{},
		capCache:   map[capKey]capInfo{},
		snap:       s,
	}
	ix.Nodes = make([]*corev1.Node, len(s.Nodes))
	for i := range s.Nodes {
		n := &s.Nodes[i]
		ix.Nodes[i] = n
		ix.NodeByNm[n.Name] = i
		for k, v := range n.Labels {
			m := ix.byLabel[k]
			if m == nil {
				m = map[string][]int{}
				ix.byLabel[k] = m
			}
			m[v] = append(m[v], i)
		}
	}
	for i := range s.PVs {
		ix.pvs[s.PVs[i].Name] = &s.PVs[i]
	}
	for i := range s.PVCs {
		c := &s.PVCs[i]
		ix.pvcs[c.Namespace+"/"+c.Name] = c
	}
	for i := range s.StorageClasses {
		sc := &s.StorageClasses[i]
		ix.Scs[sc.Name] = sc
		if sc.Annotations[AnnotationDefaultClass] == "true" {
			ix.defaultSC = sc.Name
		}
	}
	for i := range s.Capacities {
		c := &s.Capacities[i]
		ix.caps[c.StorageClassName] = append(ix.caps[c.StorageClassName], c)
	}
	return ix
}

// Node returns the node named name, nil when absent.
func (ix *Index) Node(name string) *corev1.Node {
	if i, ok := ix.NodeByNm[name]; ok {
		return ix.Nodes[i]
	}
	return nil
}

// PV returns the PersistentVolume named name, nil when absent.
func (ix *Index) PV(name string) *corev1.PersistentVolume { return ix.pvs[name] }

// PVC returns the claim namespace/name, nil when absent.
func (ix *Index) PVC(namespace, name string) *corev1.PersistentVolumeClaim {
	return ix.pvcs[namespace+"/"+name]
}

// pvPin is the set of nodes a PV's required node affinity admits.
type pvPin struct {
	Unconstrained bool
	Nodes         []int
	key           string // label key of the pinning term, for reasons
	value         string // pinned node name as written in the PV
	Desc          string // the PV's selector, for reasons
}

// Pin evaluates a PV's node affinity once. Candidate nodes come from the label
// index when a term has an In requirement (TopoLVM writes
// topology.topolvm.io/node In [<node>]); matching itself is
// component-helpers' nodeaffinity.
func (ix *Index) Pin(pv *corev1.PersistentVolume) *pvPin {
	if p, ok := ix.pinCache[pv.Name]; ok {
		return p
	}
	p := &pvPin{}
	ix.pinCache[pv.Name] = p
	if pv.Spec.NodeAffinity == nil || pv.Spec.NodeAffinity.Required == nil || len(pv.Spec.NodeAffinity.Required.NodeSelectorTerms) == 0 {
		p.Unconstrained = true
		return p
	}
	req := pv.Spec.NodeAffinity.Required
	p.Desc = describeNodeSelector(req)
	for _, t := range req.NodeSelectorTerms {
		for _, e := range t.MatchExpressions {
			if e.Operator == corev1.NodeSelectorOpIn && len(e.Values) == 1 && p.key == "" {
				p.key, p.value = e.Key, e.Values[0]
			}
		}
	}
	sel, err := nodeaffinity.NewNodeSelector(req)
	if err != nil {
		// An invalid selector matches nothing, as in the scheduler.
		return p
	}
	seen := map[int]bool{}
	scanAll := false
	var cands []int
	for _, t := range req.NodeSelectorTerms {
		var best []int
		found := false
		for _, e := range t.MatchExpressions {
			if e.Operator != corev1.NodeSelectorOpIn {
				continue
			}
			var c []int
			for _, v := range e.Values {
				c = append(c, ix.byLabel[e.Key][v]...)
			}
			if !found || len(c) < len(best) {
				best, found = c, true
			}
		}
		if !found {
			scanAll = true
			break
		}
		cands = append(cands, best...)
	}
	if scanAll {
		cands = cands[:0]
		for i := range ix.Nodes {
			cands = append(cands, i)
		}
	}
	for _, i := range cands {
		if seen[i] {
			continue
		}
		seen[i] = true
		if sel.Match(ix.Nodes[i]) {
			p.Nodes = append(p.Nodes, i)
		}
	}
	sort.Ints(p.Nodes)
	return p
}

// PinnedNode returns the node a PV is pinned to: the single node its required
// node affinity admits, or the value of its single-valued In term when no
// such node exists any more. "" when the PV is not pinned to one node.
func (ix *Index) PinnedNode(pv *corev1.PersistentVolume) string {
	if pv == nil {
		return ""
	}
	p := ix.Pin(pv)
	if p.Unconstrained {
		return ""
	}
	if len(p.Nodes) == 1 {
		return ix.Nodes[p.Nodes[0]].Name
	}
	if len(p.Nodes) == 0 {
		return p.value
	}
	return ""
}

// StorageClassFor returns the class a claim uses (explicit or default).
func (ix *Index) StorageClassFor(name *string) string {
	if name != nil {
		return *name
	}
	return ix.defaultSC
}

// Capacity returns how much a node can provision for a storage class:
// CSIStorageCapacity objects when the class has any (as the scheduler's
// volume binding does with storageCapacity: true), else TopoLVM's node
// annotation for the class's device class, else unlimited.
func (ix *Index) Capacity(node int, sc string) capInfo {
	k := capKey{node, sc}
	if c, ok := ix.capCache[k]; ok {
		return c
	}
	c := ix.computeCapacity(node, sc)
	ix.capCache[k] = c
	return c
}

func (ix *Index) computeCapacity(node int, sc string) capInfo {
	n := ix.Nodes[node]
	if objs := ix.caps[sc]; len(objs) > 0 {
		c := capInfo{Limited: true, maxVol: -1, Source: "CSIStorageCapacity for storage class " + sc}
		for _, o := range ix.capacitiesSelecting(n, sc) {
			if o.Capacity != nil && o.Capacity.Value() > c.Bytes {
				c.Bytes = o.Capacity.Value()
			}
			if o.MaximumVolumeSize != nil && o.MaximumVolumeSize.Value() > c.maxVol {
				c.maxVol = o.MaximumVolumeSize.Value()
			}
		}
		return c
	}
	cls := ix.Scs[sc]
	if cls == nil || (cls.Provisioner != stsutil.ProvisionerTopoLVM && cls.Provisioner != stsutil.ProvisionerTopoLVMLegacy) {
		return capInfo{maxVol: -1}
	}
	key := stsutil.AnnotationCapacityPrefix + topolvm.ClassOfStorageClass(cls, stsutil.DefaultDeviceClassKey)
	c := capInfo{Limited: true, maxVol: -1, Source: "node annotation " + key}
	if v, ok := n.Annotations[key]; ok {
		if q, err := resource.ParseQuantity(v); err == nil {
			c.Bytes = q.Value()
		}
	}
	return c
}

func describeNodeSelector(ns *corev1.NodeSelector) string {
	var terms []string
	for _, t := range ns.NodeSelectorTerms {
		var parts []string
		for _, e := range t.MatchExpressions {
			parts = append(parts, describeRequirement(e))
		}
		for _, e := range t.MatchFields {
			parts = append(parts, "field "+describeRequirement(e))
		}
		terms = append(terms, strings.Join(parts, ", "))
	}
	return strings.Join(terms, " or ")
}

func describeRequirement(e corev1.NodeSelectorRequirement) string {
	switch e.Operator {
	case corev1.NodeSelectorOpExists, corev1.NodeSelectorOpDoesNotExist:
		return e.Key + " " + string(e.Operator)
	}
	return e.Key + " " + string(e.Operator) + " [" + strings.Join(e.Values, ", ") + "]"
}

func FormatBytes(b int64) string {
	return resource.NewQuantity(b, resource.BinarySI).String()
}

// capSelectors are one StorageClass's CSIStorageCapacity objects by the nodes they select: those
// whose topology is one label (external-provisioner's per-node segments, TopoLVM's
// topology.topolvm.io/node=<node>) by that label's key and value, the others with their parsed
// selector. Looking up a node then costs its labels, not a selector parse per object: a plan at
// 5,000 nodes asks this for every node.
type capSelectors struct {
	byLabel map[string]map[string][]*storagev1.CSIStorageCapacity
	general []selectingCapacity
}

type selectingCapacity struct {
	c   *storagev1.CSIStorageCapacity
	sel labels.Selector
}

// capacitiesSelecting are sc's CSIStorageCapacity objects whose node topology selects n (an
// object without topology, or with an invalid one, selects nothing).
func (ix *Index) capacitiesSelecting(n *corev1.Node, sc string) []*storagev1.CSIStorageCapacity {
	cs := ix.capSels[sc]
	if cs == nil {
		cs = &capSelectors{byLabel: map[string]map[string][]*storagev1.CSIStorageCapacity{}}
		for _, c := range ix.caps[sc] {
			t := c.NodeTopology
			switch {
			case t == nil:
			case len(t.MatchLabels) == 1 && len(t.MatchExpressions) == 0:
				for k, v := range t.MatchLabels {
					if cs.byLabel[k] == nil {
						cs.byLabel[k] = map[string][]*storagev1.CSIStorageCapacity{}
					}
					cs.byLabel[k][v] = append(cs.byLabel[k][v], c)
				}
			default:
				if sel, err := metav1.LabelSelectorAsSelector(t); err == nil {
					cs.general = append(cs.general, selectingCapacity{c, sel})
				}
			}
		}
		ix.capSels[sc] = cs
	}
	var out []*storagev1.CSIStorageCapacity
	for k, byValue := range cs.byLabel {
		if v, ok := n.Labels[k]; ok {
			out = append(out, byValue[v]...)
		}
	}
	for _, g := range cs.general {
		if g.sel.Matches(labels.Set(n.Labels)) {
			out = append(out, g.c)
		}
	}
	return out
}
