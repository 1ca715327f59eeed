package migration

import (
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/olapgke/terraform-provider-olapgke/internal/planner"
	"github.com/olapgke/terraform-provider-olapgke/internal/stsutil"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/types"
)

// The day-2 verbs (the actions olapgke_restart_ordinals and olapgke_evacuate_node_pool) leave
// their request on the cluster, where every later look of a run, and a run that resumes after
// a kill, reads it: a restart annotation on the StatefulSet, an evacuation taint on the nodes.
// The functions here are the same requests applied to a snapshot, so that the plan judges the
// cluster as the run will find it once the request is written, with the migration's own
// decisions (need, NextStep, the placement simulation): nothing else decides.

// RestartRequestFor is the restart the action asks for: ordinals' Pods by their UIDs today
// (Pods that do not exist or are terminating need no request: the controller replaces them).
// When prior, the request a killed run left, names the same Pods, it is kept: Pods it already
// replaced have other UIDs and are not restarted again.
func RestartRequestFor(s *planner.Snapshot, ordinals []int32, prior *stsutil.RestartRequest, now time.Time) stsutil.RestartRequest {
	want := map[string]string{}
	if s.Live != nil {
		for i := range s.Pods {
			p := &s.Pods[i]
			o := stsutil.OrdinalOf(p.Name)
			if p.Namespace != s.Live.Namespace || stsutil.PodName(s.Live.Name, o) != p.Name || !slices.Contains(ordinals, o) || p.DeletionTimestamp != nil {
				continue
			}
			want[p.Name] = string(p.UID)
		}
	}
	if prior != nil && slices.Equal(slices.Sorted(maps.Keys(prior.Pods)), slices.Sorted(maps.Keys(want))) {
		return *prior
	}
	return stsutil.RestartRequest{RequestedAt: now.UTC().Format(time.RFC3339), Pods: want}
}

// WithRestart is s as it is once r is written on the live StatefulSet (s itself is not changed).
func WithRestart(s *planner.Snapshot, r stsutil.RestartRequest) *planner.Snapshot {
	if s.Live == nil {
		return s
	}
	c := *s
	live := s.Live.DeepCopy()
	if live.Annotations == nil {
		live.Annotations = map[string]string{}
	}
	live.Annotations[stsutil.AnnotationRestart] = stsutil.FormatRestart(r)
	c.Live = live
	return &c
}

// EvacuationTaint is the taint olapgke_evacuate_node_pool puts on the nodes of pool.
func EvacuationTaint(pool string) corev1.Taint {
	return corev1.Taint{Key: stsutil.TaintEvacuating, Value: pool, Effect: corev1.TaintEffectNoSchedule}
}

// WithEvacuation is s as it is once the named nodes are cordoned and carry pool's
// EvacuationTaint (s itself is not changed).
func WithEvacuation(s *planner.Snapshot, nodes []string, pool string) *planner.Snapshot {
	c := *s
	c.Nodes = slices.Clone(s.Nodes)
	for i := range c.Nodes {
		n := &c.Nodes[i]
		if !slices.Contains(nodes, n.Name) {
			continue
		}
		cp := n.DeepCopy()
		cp.Spec.Unschedulable = true
		if planner.Evacuating(cp) == "" {
			cp.Spec.Taints = append(cp.Spec.Taints, EvacuationTaint(pool))
		}
		c.Nodes[i] = *cp
	}
	return &c
}

// PinnedStatefulSets are the StatefulSets (namespace/name, sorted) with an ordinal's PVC bound
// to a PV pinned to one of nodes (its required node affinity names the node in an In term,
// as TopoLVM's topology.topolvm.io/node and local PVs' hostname terms do).
func PinnedStatefulSets(sets []appsv1.StatefulSet, pvs []corev1.PersistentVolume, nodes []string) []types.NamespacedName {
	claims := map[types.NamespacedName]bool{}
	for i := range pvs {
		pv := &pvs[i]
		if pv.Spec.ClaimRef == nil || pv.Spec.NodeAffinity == nil || pv.Spec.NodeAffinity.Required == nil {
			continue
		}
		pinned := false
		for _, t := range pv.Spec.NodeAffinity.Required.NodeSelectorTerms {
			for _, e := range t.MatchExpressions {
				if e.Operator == corev1.NodeSelectorOpIn && slices.ContainsFunc(e.Values, func(v string) bool { return slices.Contains(nodes, v) }) {
					pinned = true
				}
			}
		}
		if pinned {
			claims[types.NamespacedName{Namespace: pv.Spec.ClaimRef.Namespace, Name: pv.Spec.ClaimRef.Name}] = true
		}
	}
	var out []types.NamespacedName
	for i := range sets {
		set := &sets[i]
		found := false
		for _, o := range stsutil.OrdinalRange(set) {
			for _, vct := range set.Spec.VolumeClaimTemplates {
				if claims[types.NamespacedName{Namespace: set.Namespace, Name: stsutil.ClaimPVCName(vct.Name, set.Name, o)}] {
					found = true
				}
			}
		}
		if found {
			out = append(out, types.NamespacedName{Namespace: set.Namespace, Name: set.Name})
		}
	}
	slices.SortFunc(out, func(a, b types.NamespacedName) int { return strings.Compare(a.String(), b.String()) })
	return out
}

// TopoLVMClaims are the volumeClaimTemplates of set whose StorageClass (the cluster's default
// when none is named, as the API server's defaulting admission plugin resolves it) TopoLVM
// provisions: the claims `terraform query` adopts a StatefulSet for.
func TopoLVMClaims(set *appsv1.StatefulSet, scs []storagev1.StorageClass) []string {
	ix := planner.NewIndex(&planner.Snapshot{StorageClasses: scs})
	var out []string
	for _, vct := range set.Spec.VolumeClaimTemplates {
		if cls := ix.Scs[ix.StorageClassFor(vct.Spec.StorageClassName)]; cls != nil && stsutil.IsTopoLVM(cls.Provisioner) {
			out = append(out, vct.Name)
		}
	}
	return out
}
