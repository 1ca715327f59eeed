// Package stsutil is olapgke's one vocabulary for StatefulSet, GKE and TopoLVM facts, as the
// upstream StatefulSet controller keeps its in stateful_set_utils.go: names derived from ordinals,
// the ordinal range, readiness, the label and annotation keys. Every package uses these; none
// spells them out again.
package stsutil

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Label and annotation keys.
const (
	// LabelNodePool is the GKE node pool label on Nodes.
	LabelNodePool = "cloud.google.com/gke-nodepool"
	// LabelTopoLVMNode pins TopoLVM PVs to their node (topology key of the CSI driver).
	LabelTopoLVMNode = "topology.topolvm.io/node"
	// LabelControllerRevision is the revision label the StatefulSet controller sets on Pods.
	LabelControllerRevision = appsv1.ControllerRevisionHashLabelKey
	// AnnotationCapacityPrefix + device class: TopoLVM's free bytes on a Node.
	AnnotationCapacityPrefix = "capacity.topolvm.io/"
	// DefaultDeviceClassKey is the capacity annotation suffix of the default device class.
	DefaultDeviceClassKey = "00default"
	// ParamDeviceClass is the StorageClass parameter naming the device class.
	ParamDeviceClass = "topolvm.io/device-class"
	// ProvisionerTopoLVM and ProvisionerTopoLVMLegacy are TopoLVM's CSI driver names.
	ProvisionerTopoLVM       = "topolvm.io"
	ProvisionerTopoLVMLegacy = "topolvm.cybozu.com"
	// TaintStorageNotReady is the start-up taint a node carries until its local storage is
	// ready (any effect): node pools with storage_startup_taint set it, the volume-group
	// bootstrap (examples/topolvm-gke/vg-bootstrap.sh) removes it once the volume group exists.
	TaintStorageNotReady = "olapgke.io/storage-not-ready"
	// AnnotationVolumeGroup is the Node annotation the volume-group bootstrap writes:
	// "<vg> created|adopted <time> on <devices>".
	AnnotationVolumeGroup = "olapgke.io/volume-group"
	// AnnotationGatesPending, on the StatefulSet, lists the ordinals (comma-separated) whose
	// migration step has begun or ended but whose hydration gates have not been seen to pass:
	// set before the step's first deletion, cleared when its gates pass, so a run that fails
	// or is killed during the wait resumes at the gates instead of skipping them.
	AnnotationGatesPending = "olapgke.io/gates-pending"
	// FieldManagerMigration is the field manager of what the migration writes on the StatefulSet
	// (the pending-gates annotation), apart from olapgke_statefulset's "olapgke", so neither
	// sees the other's fields as drift.
	FieldManagerMigration = "olapgke-migration"
	// AnnotationRestart, on the StatefulSet, is a restart the action olapgke_restart_ordinals
	// requested: JSON {"requested_at": RFC 3339, "pods": {"<pod>": "<uid>"}}, the Pods to
	// replace by UID. A Pod whose UID is listed is replaced; its successor (another UID) is not,
	// so a killed run resumes without restarting again what it already restarted, and no clock
	// is compared. Removed when the restart ends.
	AnnotationRestart = "olapgke.io/restart"
	// TaintEvacuating (effect NoSchedule, value: the node pool) marks the nodes the action
	// olapgke_evacuate_node_pool empties. The migration planner treats a tainted node as one the
	// template no longer admits, so an ordinal whose PVs are pinned there moves, also in a run
	// that resumes after a kill.
	TaintEvacuating = "olapgke.io/evacuating"
)

// RestartRequest is the value of AnnotationRestart.
type RestartRequest struct {
	RequestedAt string `json:"requested_at"`
	// Pods maps each Pod to restart to the UID it had when the restart was requested.
	Pods map[string]string `json:"pods"`
}

// ReadRestart decodes AnnotationRestart of set (nil when absent or not valid JSON: a
// malformed value restarts nothing).
func ReadRestart(set *appsv1.StatefulSet) *RestartRequest {
	if set == nil || set.Annotations[AnnotationRestart] == "" {
		return nil
	}
	var r RestartRequest
	if err := json.Unmarshal([]byte(set.Annotations[AnnotationRestart]), &r); err != nil || len(r.Pods) == 0 {
		return nil
	}
	return &r
}

// FormatRestart is AnnotationRestart's value for r.
func FormatRestart(r RestartRequest) string {
	b, _ := json.Marshal(r) // a struct of strings: never fails
	return string(b)
}

// GatesPending reads AnnotationGatesPending of set: the ordinals in ascending order (entries
// that are not ordinals are ignored).
func GatesPending(set *appsv1.StatefulSet) []int32 {
	if set == nil {
		return nil
	}
	v := set.Annotations[AnnotationGatesPending]
	var out []int32
	seen := map[int32]bool{}
	for _, f := range strings.Split(v, ",") {
		n, err := strconv.ParseInt(strings.TrimSpace(f), 10, 32)
		if err != nil || n < 0 || seen[int32(n)] {
			continue
		}
		seen[int32(n)] = true
		out = append(out, int32(n))
	}
	slices.Sort(out)
	return out
}

// FormatGatesPending is the annotation value for ordinals ("" for none), ascending.
func FormatGatesPending(ordinals []int32) string {
	s := slices.Clone(ordinals)
	slices.Sort(s)
	s = slices.Compact(s)
	parts := make([]string, len(s))
	for i, o := range s {
		parts[i] = strconv.Itoa(int(o))
	}
	return strings.Join(parts, ",")
}

// AppliedBy reports whether field manager fm owns fields of obj through server-side apply: the
// object was written by that manager (managedFields record it; kubectl, Helm and controllers
// write under their own names).
func AppliedBy(obj metav1.Object, fm string) bool {
	for _, e := range obj.GetManagedFields() {
		if e.Manager == fm && e.Operation == metav1.ManagedFieldsOperationApply {
			return true
		}
	}
	return false
}

// PodName is the name of ordinal o's Pod: <set>-<ordinal>.
func PodName(set string, o int32) string { return set + "-" + strconv.Itoa(int(o)) }

// ClaimPVCName is the name of ordinal o's PVC of claim template claim: <claim>-<set>-<ordinal>.
func ClaimPVCName(claim, set string, o int32) string {
	return claim + "-" + set + "-" + strconv.Itoa(int(o))
}

// OrdinalOf parses the ordinal from a StatefulSet Pod name (<set>-<ordinal>, optionally
// namespace/-qualified), -1 when the name has none.
func OrdinalOf(podName string) int32 {
	i := strings.LastIndexByte(podName, '-')
	if i < 0 {
		return -1
	}
	v, err := strconv.ParseInt(podName[i+1:], 10, 32)
	if err != nil || v < 0 {
		return -1
	}
	return int32(v)
}

// ClaimOrdinal parses the ordinal of a PVC named by claim template claim of set (the
// controller's <claim>-<set>-<ordinal>); ok is false for any other name.
func ClaimOrdinal(pvcName, claim, set string) (int32, bool) {
	rest, ok := strings.CutPrefix(pvcName, claim+"-"+set+"-")
	if !ok {
		return 0, false
	}
	v, err := strconv.ParseInt(rest, 10, 32)
	if err != nil || v < 0 {
		return 0, false
	}
	return int32(v), true
}

// Start is the first ordinal of set (spec.ordinals.start, default 0).
func Start(set *appsv1.StatefulSet) int32 {
	if set.Spec.Ordinals != nil {
		return set.Spec.Ordinals.Start
	}
	return 0
}

// Replicas is spec.replicas (default 1, as the API server defaults it).
func Replicas(set *appsv1.StatefulSet) int32 {
	if set.Spec.Replicas != nil {
		return *set.Spec.Replicas
	}
	return 1
}

// InRange reports whether ordinal o is one of set's.
func InRange(set *appsv1.StatefulSet, o int32) bool {
	return o >= Start(set) && o < Start(set)+Replicas(set)
}

// OrdinalRange returns the ordinals of set: [start, start+replicas).
func OrdinalRange(set *appsv1.StatefulSet) []int32 {
	start, n := Start(set), Replicas(set)
	out := make([]int32, 0, n)
	for i := int32(0); i < n; i++ {
		out = append(out, start+i)
	}
	return out
}

// PodReady reports whether the Pod's Ready condition is True.
func PodReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// PodRunningAndReady is the controller's isRunningAndReady: phase Running and Ready.
func PodRunningAndReady(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodRunning && PodReady(p)
}

// NodeReady is the status of the Node's Ready condition (Unknown when it has none).
func NodeReady(n *corev1.Node) corev1.ConditionStatus {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status
		}
	}
	return corev1.ConditionUnknown
}

// TopoLVMPinnedNode is the node a TopoLVM PV is pinned to: the value of its required node
// affinity's single-valued `topology.topolvm.io/node In [<node>]` requirement. external-
// provisioner writes it on every TopoLVM PV from the accessible topology TopoLVM's CreateVolume
// returns (the node's topology segment). "" for any other PV. The planner's Index.PinnedNode generalises this to any node
// affinity by matching it against the cluster's Nodes.
func TopoLVMPinnedNode(pv *corev1.PersistentVolume) string {
	if pv == nil || pv.Spec.NodeAffinity == nil || pv.Spec.NodeAffinity.Required == nil {
		return ""
	}
	for _, t := range pv.Spec.NodeAffinity.Required.NodeSelectorTerms {
		for _, r := range t.MatchExpressions {
			if r.Key == LabelTopoLVMNode && r.Operator == corev1.NodeSelectorOpIn && len(r.Values) == 1 {
				return r.Values[0]
			}
		}
	}
	return ""
}

// Owner is the StatefulSet ordinal a PVC belongs to (ClaimOwner).
type Owner struct {
	Namespace, Name string // the StatefulSet
	Ordinal         int32
	// Set is the StatefulSet among those ClaimOwner was given, nil when the PVC names one only
	// through its owner references and that set is not among them (deleted, or not listed).
	Set *appsv1.StatefulSet
}

// ClaimOwner is the one answer to "which StatefulSet ordinal does this PVC belong to": first
// the PVC's controlling owner reference, as the StatefulSet controller sets it for a
// persistentVolumeClaimRetentionPolicy of Delete (the StatefulSet for whenDeleted, the Pod
// <set>-<ordinal> for whenScaled: kubernetes pkg/controller/statefulset stateful_set_utils.go
// updateClaimOwnerRefForSetAndPod), then the controller's naming <claim>-<set>-<ordinal> against
// the volumeClaimTemplates of sets in the PVC's namespace. ok is false for a PVC of no
// StatefulSet.
func ClaimOwner(pvc *corev1.PersistentVolumeClaim, sets []appsv1.StatefulSet) (Owner, bool) {
	find := func(name string) *appsv1.StatefulSet {
		for i := range sets {
			if sets[i].Namespace == pvc.Namespace && sets[i].Name == name {
				return &sets[i]
			}
		}
		return nil
	}
	for _, ref := range pvc.OwnerReferences {
		if ref.Controller == nil || !*ref.Controller {
			continue
		}
		var name string
		var o int32
		switch ref.Kind {
		case "StatefulSet":
			name, o = ref.Name, OrdinalOf(pvc.Name)
			if s := find(name); s != nil { // the template names the ordinal exactly
				for _, t := range s.Spec.VolumeClaimTemplates {
					if c, ok := ClaimOrdinal(pvc.Name, t.Name, s.Name); ok {
						o = c
					}
				}
			}
		case "Pod":
			o = OrdinalOf(ref.Name)
			if o < 0 {
				continue
			}
			name = strings.TrimSuffix(ref.Name, "-"+strconv.Itoa(int(o)))
		default:
			continue
		}
		if o < 0 {
			continue
		}
		return Owner{Namespace: pvc.Namespace, Name: name, Ordinal: o, Set: find(name)}, true
	}
	for i := range sets {
		s := &sets[i]
		if s.Namespace != pvc.Namespace {
			continue
		}
		for _, t := range s.Spec.VolumeClaimTemplates {
			if o, ok := ClaimOrdinal(pvc.Name, t.Name, s.Name); ok {
				return Owner{Namespace: s.Namespace, Name: s.Name, Ordinal: o, Set: s}, true
			}
		}
	}
	return Owner{}, false
}
