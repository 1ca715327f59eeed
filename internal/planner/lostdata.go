package planner

import (
	"fmt"
	"github.com/olapgke/terraform-provider-olapgke/internal/topolvm"
	"sort"
	"strings"
	"time"

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
// PV was provisioned; the volume-group bootstrap did not create the node's volume group after
// the PV) and what olapgke last saw (NodeSeen: the node's UID and VM identity while the ordinal
// was Ready there).
//
// A reboot is not a loss. Compute Engine keeps Local SSD data through a guest reboot, an
// `instances reset` and a host-error restart that recovers ("About Local SSD disks": data
// persists unless the VM is deleted, recreated, preempted or migrated without it), and each of
// them gives the node a new boot ID (the kubelet reads /proc/sys/kernel/random/boot_id). Only a
// new VM loses it: the Compute Engine instance ID (GKE's container.googleapis.com/instance_id
// annotation) and the SMBIOS system UUID (status.nodeInfo.systemUUID) are the VM's and change
// with it. The machine ID is not used: it comes from /etc/machine-id, which an image may
// regenerate at boot. So a new boot ID alone is reported as a restart with the data expected
// intact, never as a loss.

// LossCause says how an ordinal's local data was lost.
type LossCause string

const (
	// LossNodeGone: the node the PV is pinned to no longer exists (GKE recreated the VM under a
	// new name, or the pool shrank or was deleted).
	LossNodeGone LossCause = "node_gone"
	// LossNodeRecreated: a Node of that name exists but it is not the one the volume was made
	// on (registered after the PV was provisioned, or a different UID than olapgke saw).
	LossNodeRecreated LossCause = "node_recreated"
	// LossVMRecreated: the same Node object, but a new VM since olapgke saw the ordinal Ready
	// there (a new instance ID or system UUID): GKE recreated the VM under the same name (its
	// Local SSDs, and the volume group on them, are new).
	LossVMRecreated LossCause = "vm_recreated"
	// LossVolumeGroupRecreated: the volume-group bootstrap created the node's volume group after
	// the volume was made (its olapgke.io/volume-group annotation): the disks the volume was on
	// are gone, whatever olapgke recorded.
	LossVolumeGroupRecreated LossCause = "volume_group_recreated"
)

// NodeSeen is what olapgke recorded of the node an ordinal's volume PV lives on, while the
// ordinal's Pod was Ready there. Records written before InstanceID and SystemUUID existed hold
// only the boot ID: a changed boot ID is then a restart, not a loss (see above).
type NodeSeen struct {
	PV         string `json:"pv"`
	Node       string `json:"node"`
	UID        string `json:"uid"`
	BootID     string `json:"boot_id,omitempty"`
	InstanceID string `json:"instance_id,omitempty"`
	SystemUUID string `json:"system_uuid,omitempty"`
}

// AnnInstanceID is the Compute Engine instance ID GKE writes on every Node.
const AnnInstanceID = "container.googleapis.com/instance_id"

// seenOf is what olapgke records of node n for volume pv.
func seenOf(pv string, n *corev1.Node) NodeSeen {
	return NodeSeen{PV: pv, Node: n.Name, UID: string(n.UID), BootID: n.Status.NodeInfo.BootID,
		InstanceID: n.Annotations[AnnInstanceID], SystemUUID: n.Status.NodeInfo.SystemUUID}
}

// RestartedVolume is a volume whose node restarted on the same VM (a new boot ID; the same
// instance ID and system UUID) since olapgke saw its ordinal Ready there: the data is expected
// intact and the ordinal keeps its claim.
type RestartedVolume struct {
	Ordinal int32
	PVC, PV string
	Node    string
	What    string // what happened, for people
}

// LocalData is the judgement of a set's pinned volumes (JudgeLocalData).
type LocalData struct {
	Lost      []LostVolume
	Restarted []RestartedVolume
	// Seen is the next record of NodeSeen.
	Seen map[string]NodeSeen
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
	return JudgeLocalData(set, s, seen).Lost
}

// ObserveNodes is the next record of NodeSeen (see JudgeLocalData).
func ObserveNodes(set *appsv1.StatefulSet, s *Snapshot, prior map[string]NodeSeen) map[string]NodeSeen {
	return JudgeLocalData(set, s, prior).Seen
}

// JudgeLocalData returns the volumes whose local data is lost (as LostLocalData), those whose
// node restarted on the same VM since the record, and the next record of NodeSeen, from one
// index of the snapshot: a volume whose ordinal's Pod is Ready on the node the volume is pinned
// to is recorded with that node's UID and VM identity (so a restart is reported until that record
// is saved, by the next apply or refresh); a volume judged lost keeps its old record (so the loss is reported
// until the PVC is recreated); other volumes keep theirs; records of PVs no longer bound to the
// set are dropped.
func JudgeLocalData(set *appsv1.StatefulSet, s *Snapshot, prior map[string]NodeSeen) LocalData {
	out := LocalData{Seen: map[string]NodeSeen{}}
	if set == nil {
		return out
	}
	ix := NewIndex(s)
	pods := stsutil.OwnedPods(set, s.Pods)
	pinnedVolumes(set, ix, func(o int32, pvc *corev1.PersistentVolumeClaim, pv *corev1.PersistentVolume, node string) {
		n := ix.Node(node)
		was, known := prior[pv.Name]
		known = known && was.Node == node
		lv, isLost := judgeVolume(o, pvc, pv, node, n, was, known)
		if known {
			out.Seen[pv.Name] = was
		}
		if isLost {
			out.Lost = append(out.Lost, lv)
			return
		}
		if known && was.BootID != "" && n.Status.NodeInfo.BootID != "" && was.BootID != n.Status.NodeInfo.BootID {
			out.Restarted = append(out.Restarted, RestartedVolume{Ordinal: o, PVC: pvc.Name, PV: pv.Name, Node: node,
				What: fmt.Sprintf("node %s restarted (boot ID %s, was %s) on the same VM (instance ID and system UUID unchanged)",
					node, n.Status.NodeInfo.BootID, was.BootID)})
		}
		p := pods[int(o)]
		if p == nil || n == nil || p.Spec.NodeName != node || p.DeletionTimestamp != nil || !stsutil.PodReady(p) {
			return
		}
		out.Seen[pv.Name] = seenOf(pv.Name, n)
	})
	sort.SliceStable(out.Lost, func(i, j int) bool { return out.Lost[i].Ordinal < out.Lost[j].Ordinal })
	sort.SliceStable(out.Restarted, func(i, j int) bool { return out.Restarted[i].Ordinal < out.Restarted[j].Ordinal })
	return out
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
	case volumeGroupCreatedAfter(n, pv.CreationTimestamp.Time):
		lv.Cause = LossVolumeGroupRecreated
		lv.What = fmt.Sprintf("the volume group on node %s's Local SSDs was created after the volume was made at %s (%s: %s): the disks the volume was on are gone",
			node, pv.CreationTimestamp.UTC().Format("2006-01-02T15:04:05Z"), topolvm.AnnBootstrapVolumeGroup, n.Annotations[topolvm.AnnBootstrapVolumeGroup])
	case known && was.InstanceID != "" && n.Annotations[AnnInstanceID] != "" && was.InstanceID != n.Annotations[AnnInstanceID]:
		lv.Cause = LossVMRecreated
		lv.What = fmt.Sprintf("node %s kept its name and Node object but runs on a new VM (instance ID %s, was %s): GKE recreated the VM, its Local SSDs are new and the volume group on them empty",
			node, n.Annotations[AnnInstanceID], was.InstanceID)
	case known && was.SystemUUID != "" && n.Status.NodeInfo.SystemUUID != "" && was.SystemUUID != n.Status.NodeInfo.SystemUUID:
		lv.Cause = LossVMRecreated
		lv.What = fmt.Sprintf("node %s kept its name and Node object but runs on a new VM (system UUID %s, was %s): GKE recreated the VM, its Local SSDs are new and the volume group on them empty",
			node, n.Status.NodeInfo.SystemUUID, was.SystemUUID)
	default:
		return lv, false
	}
	return lv, true
}

// volumeGroupCreatedAfter reports whether the volume-group bootstrap recorded creating node n's
// volume group after t ("<vg> created <RFC 3339> on <devices>"; "adopted" groups existed before
// the script saw them and say nothing of when). The script writes the annotation again whenever
// it creates the group, as after a VM recreation (vg-bootstrap.sh untaint_and_annotate).
func volumeGroupCreatedAfter(n *corev1.Node, t time.Time) bool {
	f := strings.Fields(n.Annotations[topolvm.AnnBootstrapVolumeGroup])
	if len(f) < 3 || f[1] != "created" || t.IsZero() {
		return false
	}
	at, err := time.Parse(time.RFC3339, f[2])
	// Both times have one-second resolution: a group created in the same second as the volume
	// was there first (a volume needs the group).
	return err == nil && at.After(t.Truncate(time.Second))
}
