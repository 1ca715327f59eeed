package planner

import (
	"fmt"
	"sort"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/olapgke/terraform-provider-olapgke/internal/stsutil"
)

// Local data lost outside Terraform: GKE recreates VMs on its own (auto-repair, auto-upgrade,
// host errors). A Local SSD does not survive its VM, so a TopoLVM volume pinned to the node
// (topology.topolvm.io/node) is gone, while its PV and PVC still pin the ordinal there: the Pod
// stays Pending (node gone) or ContainerCreating (same name, empty volume group; TopoLVM's
// NodePublishVolume answers "failed to find LV"). Nothing in the cluster records the loss, so
// the judgement compares durable facts (the pinned Node exists; it was registered before the
// PV was provisioned) and what olapgke last saw (NodeSeen: the node's UID and boot ID while the
// ordinal was Ready there).

// LossCause says how an ordinal's local data was lost.
type LossCause string

const (
	// LossNodeGone: the node the PV is pinned to no longer exists (GKE recreated the VM under a
	// new name, or the pool shrank or was deleted).
	LossNodeGone LossCause = "node_gone"
	// LossNodeRecreated: a Node of that name exists but it is not the one the volume was made
	// on (registered after the PV was provisioned, or a different UID than olapgke saw).
	LossNodeRecreated LossCause = "node_recreated"
	// LossVMRecreated: the same Node object, but the VM restarted with a new boot ID since
	// olapgke saw the ordinal Ready there: GKE recreated the VM under the same name (its Local
	// SSDs, and the volume group on them, are new).
	LossVMRecreated LossCause = "vm_recreated"
)

// NodeSeen is what olapgke recorded of the node an ordinal's volume PV lives on, while the
// ordinal's Pod was Ready there.
type NodeSeen struct {
	PV     string `json:"pv"`
	Node   string `json:"node"`
	UID    string `json:"uid"`
	BootID string `json:"boot_id,omitempty"`
}

// LostVolume is one ordinal's volume whose local data is gone.
type LostVolume struct {
	Ordinal int32
	PVC, PV string
	Node    string
	Cause   LossCause
	What    string // what happened, for people
}

// annSelectedNode is the node the scheduler picked for a WaitForFirstConsumer claim, which
// external-provisioner provisions on (k8s.io/component-helpers storage/volume).
const annSelectedNode = "volume.kubernetes.io/selected-node"

// pinnedVolumes calls f for every claim of every ordinal in set's range whose PVC is bound to a
// PV pinned to one node by TopoLVM. When that PV is already gone (TopoLVM's node finalizer
// deletes the claims of a deleted node), the claim's selected node stands for the pin and pv is
// a stub carrying only the name.
func pinnedVolumes(set *appsv1.StatefulSet, ix *Index, f func(o int32, pvc *corev1.PersistentVolumeClaim, pv *corev1.PersistentVolume, node string)) {
	for _, o := range stsutil.OrdinalRange(set) {
		for _, vct := range set.Spec.VolumeClaimTemplates {
			pvc := ix.PVC(set.Namespace, stsutil.ClaimPVCName(vct.Name, set.Name, o))
			if pvc == nil || pvc.Spec.VolumeName == "" {
				continue
			}
			pv := ix.PV(pvc.Spec.VolumeName)
			if pv == nil {
				if node := pvc.Annotations[annSelectedNode]; node != "" {
					stub := &corev1.PersistentVolume{}
					stub.Name, stub.CreationTimestamp = pvc.Spec.VolumeName, pvc.CreationTimestamp
					f(o, pvc, stub, node)
				}
				continue
			}
			if node := stsutil.TopoLVMPinnedNode(pv); node != "" {
				f(o, pvc, pv, node)
			}
		}
	}
}

// LostLocalData lists the volumes of set's ordinals whose local data is gone, by ordinal and
// claim. seen is what olapgke recorded (keyed by PV name; may be nil: then only the durable
// facts are judged).
func LostLocalData(set *appsv1.StatefulSet, s *Snapshot, seen map[string]NodeSeen) []LostVolume {
	lost, _ := JudgeLocalData(set, s, seen)
	return lost
}

// ObserveNodes is the next record of NodeSeen (see JudgeLocalData).
func ObserveNodes(set *appsv1.StatefulSet, s *Snapshot, prior map[string]NodeSeen) map[string]NodeSeen {
	_, next := JudgeLocalData(set, s, prior)
	return next
}

// JudgeLocalData returns the volumes whose local data is lost (as LostLocalData) and the next
// record of NodeSeen, from one index of the snapshot: a volume whose ordinal's Pod is Ready on
// the node the volume is pinned to is recorded with that node's UID and boot ID; a volume judged
// lost keeps its old record (so the loss is reported until the PVC is recreated); other volumes
// keep theirs; records of PVs no longer bound to the set are dropped.
func JudgeLocalData(set *appsv1.StatefulSet, s *Snapshot, prior map[string]NodeSeen) ([]LostVolume, map[string]NodeSeen) {
	next := map[string]NodeSeen{}
	if set == nil {
		return nil, next
	}
	ix := NewIndex(s)
	pods := ownedPods(set, s.Pods)
	var lost []LostVolume
	pinnedVolumes(set, ix, func(o int32, pvc *corev1.PersistentVolumeClaim, pv *corev1.PersistentVolume, node string) {
		n := ix.Node(node)
		was, known := prior[pv.Name]
		lv, isLost := judgeVolume(o, pvc, pv, node, n, was, known && was.Node == node)
		if known && (isLost || was.Node == node) {
			next[pv.Name] = was
		}
		if isLost {
			lost = append(lost, lv)
			return
		}
		p := pods[int(o)]
		if p == nil || n == nil || p.Spec.NodeName != node || p.DeletionTimestamp != nil || !stsutil.PodReady(p) {
			return
		}
		next[pv.Name] = NodeSeen{PV: pv.Name, Node: node, UID: string(n.UID), BootID: n.Status.NodeInfo.BootID}
	})
	sort.SliceStable(lost, func(i, j int) bool { return lost[i].Ordinal < lost[j].Ordinal })
	return lost, next
}

// judgeVolume says whether one pinned volume's data is lost, and how. n is the pinned node (nil:
// gone); was is olapgke's record of it, known when it is of the same node.
func judgeVolume(o int32, pvc *corev1.PersistentVolumeClaim, pv *corev1.PersistentVolume, node string, n *corev1.Node, was NodeSeen, known bool) (LostVolume, bool) {
	lv := LostVolume{Ordinal: o, PVC: pvc.Name, PV: pv.Name, Node: node}
	switch {
	case n == nil:
		lv.Cause = LossNodeGone
		lv.What = fmt.Sprintf("node %s no longer exists", node)
	case n.CreationTimestamp.After(pv.CreationTimestamp.Time):
		lv.Cause = LossNodeRecreated
		lv.What = fmt.Sprintf("node %s was registered again at %s, after the volume was made at %s (Node UID %s)",
			node, n.CreationTimestamp.UTC().Format("2006-01-02T15:04:05Z"), pv.CreationTimestamp.UTC().Format("2006-01-02T15:04:05Z"), n.UID)
	case known && was.UID != "" && was.UID != string(n.UID):
		lv.Cause = LossNodeRecreated
		lv.What = fmt.Sprintf("node %s is a new Node object (UID %s, was %s)", node, n.UID, was.UID)
	case known && was.BootID != "" && n.Status.NodeInfo.BootID != "" && was.BootID != n.Status.NodeInfo.BootID:
		lv.Cause = LossVMRecreated
		lv.What = fmt.Sprintf("node %s kept its name and Node object but its VM restarted (boot ID %s, was %s): GKE recreated the VM, its Local SSDs are new and the volume group on them empty",
			node, n.Status.NodeInfo.BootID, was.BootID)
	default:
		return lv, false
	}
	return lv, true
}
