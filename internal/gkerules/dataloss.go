package gkerules

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/olapgke/terraform-provider-olapgke/internal/stsutil"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
)

// LossKind is why nodes go away.
type LossKind string

const (
	LossDestroy   LossKind = "destroy"         // the pool is destroyed
	LossReplace   LossKind = "replace"         // the pool is deleted and created again
	LossRecreate  LossKind = "recreate"        // an update recreates every VM
	LossShrink    LossKind = "shrink"          // fewer nodes; GKE picks which ones go
	LossZones     LossKind = "zone-removal"    // node_locations lose zones; their nodes go
	LossAutoscale LossKind = "autoscale-limit" // autoscaling max below the current size
	// LossEvict: taints add or change a NoExecute taint on every node; Pods that do not tolerate
	// it are evicted and, their PVs pinned to the node, stay Pending (see taints.go). The nodes
	// and their data stay.
	LossEvict LossKind = "noexecute-taint"
)

// GuardInput is the cluster state the data-loss guard looks at.
type GuardInput struct {
	Kind LossKind
	// Nodes are the nodes that may go away (for a shrink: every node of the pool, since GKE
	// picks the victims).
	Nodes []corev1.Node
	// Removed is how many of Nodes go away (a shrink: old size - new size); 0 means all of them.
	Removed      int
	PVs          []corev1.PersistentVolume
	PVCs         []corev1.PersistentVolumeClaim
	Pods         []corev1.Pod
	StatefulSets []appsv1.StatefulSet
	// NoExecuteTaints are the taints a LossEvict change adds to every node
	// (NoExecuteTaintsAdded). Only volumes whose Pods do not tolerate them are at risk.
	NoExecuteTaints []corev1.Taint
}

// AtRisk is one volume whose data lives on a node that may go away.
type AtRisk struct {
	Node string
	PV   string
	// PVC is namespace/name.
	PVC string
	// StatefulSet is namespace/name, empty when the PVC does not belong to one.
	StatefulSet string
	// Ordinal is the StatefulSet ordinal, -1 when unknown.
	Ordinal int
	// Pod is namespace/name of a Pod using the PVC, if any.
	Pod string
	// ScaledDown is true for a PVC the StatefulSet kept (whenScaled: Retain)
	// for an ordinal outside its range: no Pod uses it and no migration moves
	// it; only a later scale-up would.
	ScaledDown bool
	// Evicted says why the Pod is evicted (LossEvict): the taint it does not tolerate, or
	// tolerates for tolerationSeconds only.
	Evicted string
}

func (a AtRisk) String() string {
	who := "PVC " + a.PVC
	if a.StatefulSet != "" && a.Ordinal >= 0 {
		who = fmt.Sprintf("StatefulSet %s ordinal %d (PVC %s)", a.StatefulSet, a.Ordinal, a.PVC)
		if a.ScaledDown {
			who = fmt.Sprintf("StatefulSet %s scaled-down ordinal %d (PVC %s retained, no Pod uses it)", a.StatefulSet, a.Ordinal, a.PVC)
		}
	}
	s := fmt.Sprintf("%s: PV %s on node %s", who, a.PV, a.Node)
	if a.Evicted != "" {
		s += "; " + a.Evicted
	}
	return s
}

// Verdict is the guard's answer.
type Verdict struct {
	Kind   LossKind
	AtRisk []AtRisk
	// Certain is true when every listed volume is lost (destroy, replace, recreate, zone removal);
	// false for a shrink, where GKE picks Removed of the nodes and any listed volume may be lost.
	Certain bool
	Removed int
	Nodes   int
}

// ScaledDown reports whether some volume at risk is a retained PVC of a scaled-down ordinal.
func (v Verdict) ScaledDown() bool {
	for _, a := range v.AtRisk {
		if a.ScaledDown {
			return true
		}
	}
	return false
}

// Loses reports whether anything lives on the nodes.
func (v Verdict) Loses() bool { return len(v.AtRisk) > 0 }

// Ordinals summarises the StatefulSet ordinals at risk: "olap/cache-hist: 0, 2".
func (v Verdict) Ordinals() string {
	by := map[string][]int{}
	var other []string
	for _, a := range v.AtRisk {
		if a.StatefulSet != "" && a.Ordinal >= 0 {
			if !containsInt(by[a.StatefulSet], a.Ordinal) {
				by[a.StatefulSet] = append(by[a.StatefulSet], a.Ordinal)
			}
		} else {
			other = append(other, "PVC "+a.PVC)
		}
	}
	var parts []string
	for s, ords := range by {
		sort.Ints(ords)
		o := make([]string, len(ords))
		for i, n := range ords {
			o[i] = strconv.Itoa(n)
		}
		parts = append(parts, fmt.Sprintf("StatefulSet %s ordinal(s) %s", s, strings.Join(o, ", ")))
	}
	sort.Strings(parts)
	sort.Strings(other)
	return strings.Join(append(parts, other...), "; ")
}

// Guard lists the volumes pinned (by PV node affinity, e.g. topology.topolvm.io/node) to nodes
// that may go away, with the PVCs bound to them and the StatefulSet ordinals owning those PVCs.
// PVs not bound to an existing, non-terminating PVC hold nothing anyone uses and are skipped.
//
// For LossEvict the nodes stay, so a volume is listed only when the Pod that uses it (or, with
// no Pod at the moment, the Pod its StatefulSet recreates for an ordinal in range) does not
// tolerate in.NoExecuteTaints (evictedBy); scaled-down ordinals and PVCs no Pod and no
// StatefulSet uses have nothing to evict.
func Guard(in GuardInput) Verdict {
	v := Verdict{Kind: in.Kind, Certain: in.Kind != LossShrink && in.Kind != LossAutoscale, Removed: in.Removed, Nodes: len(in.Nodes)}
	pvcs := map[string]*corev1.PersistentVolumeClaim{}
	for i := range in.PVCs {
		c := &in.PVCs[i]
		pvcs[c.Namespace+"/"+c.Name] = c
	}
	users := map[string]string{} // ns/pvc -> ns/pod
	userPods := map[string]*corev1.Pod{}
	podOwner := map[string]string{}
	for i := range in.Pods {
		p := &in.Pods[i]
		for _, vol := range p.Spec.Volumes {
			if vol.PersistentVolumeClaim != nil {
				key := p.Namespace + "/" + vol.PersistentVolumeClaim.ClaimName
				users[key] = p.Namespace + "/" + p.Name
				userPods[key] = p
				if ref := ownerStatefulSet(p.OwnerReferences); ref != "" {
					podOwner[key] = p.Namespace + "/" + ref
				}
			}
		}
	}
	for i := range in.PVs {
		pv := &in.PVs[i]
		if pv.Spec.ClaimRef == nil || pv.Spec.NodeAffinity == nil || pv.Spec.NodeAffinity.Required == nil {
			continue
		}
		key := pv.Spec.ClaimRef.Namespace + "/" + pv.Spec.ClaimRef.Name
		pvc, ok := pvcs[key]
		if !ok || pvc.DeletionTimestamp != nil || pvc.Spec.VolumeName != pv.Name {
			continue
		}
		sel := nodeaffinity.NewLazyErrorNodeSelector(pv.Spec.NodeAffinity.Required)
	nodes:
		for j := range in.Nodes {
			n := &in.Nodes[j]
			if ok, _ := sel.Match(n); !ok {
				continue
			}
			var owner *appsv1.StatefulSet
			set, ord, scaledDown := "", -1, false
			if o, ok := stsutil.ClaimOwner(pvc, in.StatefulSets); ok && o.Set != nil {
				owner = o.Set
				set, ord, scaledDown = o.Namespace+"/"+o.Name, int(o.Ordinal), !stsutil.InRange(o.Set, o.Ordinal)
			}
			if set == "" && podOwner[key] != "" {
				set, ord = podOwner[key], int(stsutil.OrdinalOf(users[key]))
			}
			a := AtRisk{Node: n.Name, PV: pv.Name, PVC: key, StatefulSet: set, Ordinal: ord, Pod: users[key],
				ScaledDown: scaledDown && users[key] == ""}
			if in.Kind == LossEvict {
				var tolerations []corev1.Toleration
				switch {
				case userPods[key] != nil:
					tolerations = userPods[key].Spec.Tolerations
				case owner != nil && !scaledDown:
					tolerations = owner.Spec.Template.Spec.Tolerations
				default:
					break nodes // nothing runs, and nothing is recreated, on this volume
				}
				why, evicted := evictedBy(in.NoExecuteTaints, tolerations)
				if !evicted {
					break nodes
				}
				a.Evicted = why
			}
			v.AtRisk = append(v.AtRisk, a)
			break
		}
	}
	sort.Slice(v.AtRisk, func(i, j int) bool {
		a, b := v.AtRisk[i], v.AtRisk[j]
		if a.StatefulSet != b.StatefulSet {
			return a.StatefulSet < b.StatefulSet
		}
		if a.Ordinal != b.Ordinal {
			return a.Ordinal < b.Ordinal
		}
		return a.PVC < b.PVC
	})
	return v
}

func ownerStatefulSet(refs []metav1.OwnerReference) string {
	for _, r := range refs {
		if r.Kind == "StatefulSet" && r.Controller != nil && *r.Controller {
			return r.Name
		}
	}
	return ""
}

func containsInt(s []int, n int) bool {
	for _, x := range s {
		if x == n {
			return true
		}
	}
	return false
}

// Evacuable reports whether every volume v puts at risk could be moved off the nodes before
// they go: it belongs to an ordinal in range of a StatefulSet whose template's required
// placement (nodeSelector and node affinity) admits one of others, the nodes that stay. It is
// what olapgke_evacuate_node_pool (a before_destroy action_trigger) can do in the same run; the
// migration planner judges the moves themselves (room, capacity, PDBs) when it runs. A volume
// of no StatefulSet, or of a scaled-down ordinal, has nothing to move it.
func Evacuable(v Verdict, sets []appsv1.StatefulSet, others []corev1.Node) bool {
	if !v.Loses() {
		return true
	}
	byName := map[string]*appsv1.StatefulSet{}
	for i := range sets {
		byName[sets[i].Namespace+"/"+sets[i].Name] = &sets[i]
	}
	for _, a := range v.AtRisk {
		set := byName[a.StatefulSet]
		if set == nil || a.ScaledDown || a.Ordinal < 0 {
			return false
		}
		req := nodeaffinity.GetRequiredNodeAffinity(&corev1.Pod{Spec: set.Spec.Template.Spec})
		admitted := false
		for i := range others {
			if ok, err := req.Match(&others[i]); err == nil && ok {
				admitted = true
				break
			}
		}
		if !admitted {
			return false
		}
	}
	return true
}
