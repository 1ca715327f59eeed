package schedsim

// A third result-preserving shortcut, for Pods that cannot be placed. The scheduler's message for
// such a Pod counts the Filter reasons of every node, so each one costs a full pass over the
// cluster (~8 µs per node); a plan of 1,000 StatefulSet Pods that all stay Pending (the incident
// at scale) would run 5 million filters. Pods of one StatefulSet are alike: same template, claims
// of the same templates. For a Pod whose filters can only depend on the node's own state and on
// the Pod's spec — no inter-Pod affinity or topology spread on either side, no ReadWriteOncePod
// claim — a node's Filter status is the same for every Pod of its class, except on the nodes its
// bound PVs are pinned to, which are always evaluated afresh. Statuses are cached per class and
// node and dropped when a Pod is assumed on or removed from that node (resources, ports, volumes
// and capacity there change). The message is then the scheduler's histogram over the cached and
// fresh statuses; TestClassCacheIsResultPreserving compares it with framework.FitError.

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	fwk "k8s.io/kube-scheduler/framework"
)

type classCache struct {
	log     []int // positions (in Sim.nodes) of the nodes Pods were assumed on or removed from
	classes map[string]*classEntry
	// assumedPVCs are claims VolumeBinding assumed for a placed Pod (selected node, claimRef):
	// another Pod using one sees a different claim than its class says, so it is not cached.
	assumedPVCs sets.Set[string]
}

// classEntry holds, for one class, the Filter status of every node as a Pod of the class not
// pinned there sees it, synced with the log up to synced, and the histogram of their reasons.
type classEntry struct {
	status   []*fwk.Status // per node position; nil with known = success
	known    []bool
	synced   int
	hist     map[string]int
	feasible int
}

func newClassCache() *classCache {
	return &classCache{classes: map[string]*classEntry{}, assumedPVCs: sets.New[string]()}
}

func (s *Sim) touch(node string) {
	if s.classes == nil {
		return
	}
	if i, ok := s.nodeIndex[node]; ok {
		s.classes.log = append(s.classes.log, i)
	}
}

func (e *classEntry) forget(i int) {
	if !e.known[i] {
		return
	}
	e.known[i] = false
	if e.status[i].IsSuccess() {
		e.feasible--
		return
	}
	for _, r := range e.status[i].Reasons() {
		if e.hist[r]--; e.hist[r] == 0 {
			delete(e.hist, r)
		}
	}
}

func (e *classEntry) learn(i int, st *fwk.Status) {
	e.known[i], e.status[i] = true, st
	if st.IsSuccess() {
		e.feasible++
		return
	}
	for _, r := range st.Reasons() {
		e.hist[r]++
	}
}

// classKey returns the equivalence class of pod, "" when its filter results may depend on other
// Pods or on which PVs it has (then nothing is cached).
func (s *Sim) classKey(pod *corev1.Pod) string {
	if s.opts.NoShortcuts || s.classes == nil {
		return ""
	}
	if a := pod.Spec.Affinity; a != nil && (a.PodAffinity != nil || a.PodAntiAffinity != nil) {
		return ""
	}
	if len(pod.Spec.TopologySpreadConstraints) > 0 {
		return ""
	}
	if l, err := s.snapshot.HavePodsWithRequiredAntiAffinityList(); err != nil || len(l) > 0 {
		return ""
	}
	if l, err := s.snapshot.HavePodsWithAffinityList(); err != nil || len(l) > 0 {
		return ""
	}
	type claimSig struct {
		Bound        bool
		PVLabels     map[string]string `json:",omitempty"`
		Class        string            `json:",omitempty"`
		Request      string            `json:",omitempty"`
		Modes        []corev1.PersistentVolumeAccessMode
		Mode         string `json:",omitempty"`
		Unconstrined bool   `json:",omitempty"`
	}
	spec := pod.Spec.DeepCopy()
	spec.Volumes = nil
	var claims []claimSig
	pvcIdx := s.informers.Core().V1().PersistentVolumeClaims().Informer().GetIndexer()
	pvIdx := s.informers.Core().V1().PersistentVolumes().Informer().GetIndexer()
	for _, v := range pod.Spec.Volumes {
		if v.PersistentVolumeClaim == nil {
			spec.Volumes = append(spec.Volumes, v)
			continue
		}
		key := pod.Namespace + "/" + v.PersistentVolumeClaim.ClaimName
		obj, ok, _ := pvcIdx.GetByKey(key)
		if !ok || s.classes.assumedPVCs.Has(key) {
			return ""
		}
		pvc, ok := obj.(*corev1.PersistentVolumeClaim)
		if !ok {
			return ""
		}
		sig := claimSig{Modes: pvc.Spec.AccessModes}
		for _, m := range pvc.Spec.AccessModes {
			if m == corev1.ReadWriteOncePod {
				return ""
			}
		}
		if pvc.Spec.VolumeMode != nil {
			sig.Mode = string(*pvc.Spec.VolumeMode)
		}
		if pvc.Spec.StorageClassName != nil {
			sig.Class = *pvc.Spec.StorageClassName
		}
		if pvc.Spec.VolumeName != "" {
			obj, ok, _ := pvIdx.GetByKey(pvc.Spec.VolumeName)
			if !ok {
				return ""
			}
			pv, ok := obj.(*corev1.PersistentVolume)
			if !ok {
				return ""
			}
			if pv.Spec.CSI == nil && pv.Spec.Local == nil {
				return "" // in-tree volumes: zone labels, disk conflicts, attach limits by PV
			}
			sig.Bound, sig.PVLabels = true, pv.Labels
			sig.Unconstrined = pv.Spec.NodeAffinity == nil || pv.Spec.NodeAffinity.Required == nil
		} else if q, ok := pvc.Spec.Resources.Requests[corev1.ResourceStorage]; ok {
			sig.Request = q.String()
		}
		claims = append(claims, sig)
	}
	b, err := json.Marshal(struct {
		Namespace string
		Labels    map[string]string
		Spec      *corev1.PodSpec
		Claims    []claimSig
	}{pod.Namespace, pod.Labels, spec, claims})
	if err != nil {
		return ""
	}
	return string(b)
}

// histogramMessage is framework.FitError's message for Filter failures (no PreFilter message,
// no PostFilter message): "0/N nodes are available: <count> <reason>, ... ." It is written out
// here because the class cache keeps per-node statuses, not a NodeToStatus; the format is that
// of FitError.Error in k8s.io/kubernetes pkg/scheduler/framework/types.go (v1.37.2), and
// TestClassCacheIsResultPreserving holds the two equal.
func histogramMessage(numAll int, reasons map[string]int) string {
	msg := fmt.Sprintf("0/%v nodes are available:", numAll)
	parts := make([]string, 0, len(reasons))
	for k, v := range reasons {
		parts = append(parts, fmt.Sprintf("%v %v", v, k))
	}
	sort.Strings(parts)
	if len(parts) > 0 {
		msg += fmt.Sprintf(" %v.", strings.Join(parts, ", "))
	}
	return msg
}

// placeByClass is Place for a Pod with an equivalence class: every node's status from the class
// entry (brought up to date with the nodes touched since its last use), the nodes the Pod's PVs
// pin it to evaluated afresh; the first feasible node in name order, or the scheduler's message.
func (s *Sim) placeByClass(class string, pinned sets.Set[string], state fwk.CycleState, pod *corev1.Pod, numAll int) (string, string, error) {
	c := s.classes
	n := len(s.nodes)
	e := c.classes[class]
	if e == nil {
		e = &classEntry{status: make([]*fwk.Status, n), known: make([]bool, n), synced: len(c.log), hist: map[string]int{}}
		c.classes[class] = e
	}
	for _, i := range c.log[e.synced:] {
		e.forget(i)
	}
	e.synced = len(c.log)
	pinnedIdx := make([]int, 0, len(pinned))
	for name := range pinned {
		if i, ok := s.nodeIndex[name]; ok {
			pinnedIdx = append(pinnedIdx, i)
		}
	}
	sort.Ints(pinnedIdx)
	isPinned := func(i int) bool {
		j := sort.SearchInts(pinnedIdx, i)
		return j < len(pinnedIdx) && pinnedIdx[j] == i
	}
	// Fresh statuses of the pinned nodes, first in name order: the first feasible of them is the
	// first feasible overall (no other node can take the Pod's PVs).
	fresh := make([]*fwk.Status, len(pinnedIdx))
	for k, i := range pinnedIdx {
		st := s.filter(state, pod, s.nodes[i])
		if st.Code() == fwk.Error {
			return "", "", st.AsError()
		}
		if st.IsSuccess() {
			return s.nodes[i].Node().Name, "", nil
		}
		fresh[k] = st
	}
	// Every other node the class does not know (first use, or touched since).
	for i := 0; i < n; i++ {
		if e.known[i] || isPinned(i) {
			continue
		}
		st := s.filter(state, pod, s.nodes[i])
		if st.Code() == fwk.Error {
			return "", "", st.AsError()
		}
		e.learn(i, st)
	}
	if e.feasible > 0 {
		for i := 0; i < n; i++ {
			if e.known[i] && !isPinned(i) && e.status[i].IsSuccess() {
				return s.nodes[i].Node().Name, "", nil
			}
		}
	}
	reasons := make(map[string]int, len(e.hist)+2)
	for r, k := range e.hist {
		reasons[r] = k
	}
	for k, i := range pinnedIdx {
		if e.known[i] && !e.status[i].IsSuccess() {
			for _, r := range e.status[i].Reasons() {
				if reasons[r]--; reasons[r] == 0 {
					delete(reasons, r)
				}
			}
		}
		for _, r := range fresh[k].Reasons() {
			reasons[r]++
		}
	}
	return "", histogramMessage(numAll, reasons), nil
}
