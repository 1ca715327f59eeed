package planner

import (
	"github.com/olapgke/terraform-provider-olapgke/internal/topolvm"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/olapgke/terraform-provider-olapgke/internal/stsutil"
)

func lostWorld(t0 time.Time) (*appsv1.StatefulSet, *Snapshot) {
	set := &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: "hist", Namespace: "olap", UID: "set-uid"},
		Spec: appsv1.StatefulSetSpec{
			Replicas:             ptr.To[int32](2),
			VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Name: "cache"}}},
		},
	}
	s := &Snapshot{Live: set}
	for o, node := range []string{"n0", "n1"} {
		s.Nodes = append(s.Nodes, corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: node, UID: types.UID(node + "-uid"), CreationTimestamp: metav1.NewTime(t0),
				Annotations: map[string]string{AnnInstanceID: node + "-instance-1"}},
			Status: corev1.NodeStatus{NodeInfo: corev1.NodeSystemInfo{BootID: node + "-boot-1", SystemUUID: node + "-uuid-1", MachineID: node + "-machine-1"}},
		})
		pv := "pv-" + node
		s.PVs = append(s.PVs, corev1.PersistentVolume{
			ObjectMeta: metav1.ObjectMeta{Name: pv, CreationTimestamp: metav1.NewTime(t0.Add(time.Minute))},
			Spec: corev1.PersistentVolumeSpec{NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
				MatchExpressions: []corev1.NodeSelectorRequirement{{Key: stsutil.LabelTopoLVMNode, Operator: corev1.NodeSelectorOpIn, Values: []string{node}}},
			}}}}},
		})
		s.PVCs = append(s.PVCs, corev1.PersistentVolumeClaim{
			ObjectMeta: metav1.ObjectMeta{Name: stsutil.ClaimPVCName("cache", "hist", int32(o)), Namespace: "olap"},
			Spec:       corev1.PersistentVolumeClaimSpec{VolumeName: pv},
		})
		s.Pods = append(s.Pods, corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: stsutil.PodName("hist", int32(o)), Namespace: "olap",
				OwnerReferences: []metav1.OwnerReference{{Kind: "StatefulSet", Name: "hist", UID: "set-uid", Controller: ptr.To(true)}}},
			Spec:   corev1.PodSpec{NodeName: node},
			Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}},
		})
	}
	return set, s
}

func TestLostLocalData(t *testing.T) {
	t0 := time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)
	set, s := lostWorld(t0)
	seen := ObserveNodes(set, s, nil)
	if len(seen) != 2 || seen["pv-n1"].BootID != "n1-boot-1" || seen["pv-n1"].UID != "n1-uid" ||
		seen["pv-n1"].InstanceID != "n1-instance-1" || seen["pv-n1"].SystemUUID != "n1-uuid-1" {
		t.Fatalf("ObserveNodes = %+v", seen)
	}
	if judged := JudgeLocalData(set, s, seen); len(judged.Lost) != 0 || len(judged.Restarted) != 0 {
		t.Fatalf("healthy world reports %+v", judged)
	}
	// A record written before olapgke kept the VM's identity (boot ID only).
	legacy := map[string]NodeSeen{}
	for k, v := range seen {
		legacy[k] = NodeSeen{PV: v.PV, Node: v.Node, UID: v.UID, BootID: v.BootID}
	}
	newVM := func(s *Snapshot) {
		s.Nodes[1].Status.NodeInfo.BootID = "n1-boot-2"
		s.Nodes[1].Status.NodeInfo.SystemUUID = "n1-uuid-2"
		s.Nodes[1].Status.NodeInfo.MachineID = "n1-machine-2"
		s.Nodes[1].Annotations[AnnInstanceID] = "n1-instance-2"
	}
	vgCreated := func(at time.Time) func(s *Snapshot) {
		return func(s *Snapshot) {
			s.Nodes[1].Annotations[topolvm.AnnBootstrapVolumeGroup] = "vg-ssd created " + at.UTC().Format(time.RFC3339) + " on /dev/nvme0n1"
		}
	}

	for name, tc := range map[string]struct {
		mutate    func(s *Snapshot)
		seen      map[string]NodeSeen
		want      LossCause
		restarted bool
	}{
		"node gone": {mutate: func(s *Snapshot) { s.Nodes = s.Nodes[:1] }, want: LossNodeGone},
		"node gone, its PV deleted by TopoLVM's node finalizer": {mutate: func(s *Snapshot) {
			s.Nodes, s.PVs = s.Nodes[:1], s.PVs[:1]
			s.PVCs[1].Annotations = map[string]string{"volume.kubernetes.io/selected-node": "n1"}
		}, want: LossNodeGone},
		"node registered after the volume": {mutate: func(s *Snapshot) {
			s.Nodes[1].UID, s.Nodes[1].CreationTimestamp = "n1-new", metav1.NewTime(t0.Add(time.Hour))
		}, want: LossNodeRecreated},
		"same name, new UID olapgke saw change":                             {mutate: func(s *Snapshot) { s.Nodes[1].UID = "n1-new" }, seen: seen, want: LossNodeRecreated},
		"same Node, new VM (instance ID, system UUID, machine ID, boot ID)": {mutate: newVM, seen: seen, want: LossVMRecreated},
		"same Node, new instance ID only":                                   {mutate: func(s *Snapshot) { s.Nodes[1].Annotations[AnnInstanceID] = "n1-instance-2" }, seen: seen, want: LossVMRecreated},
		"same Node, new system UUID only":                                   {mutate: func(s *Snapshot) { s.Nodes[1].Status.NodeInfo.SystemUUID = "n1-uuid-2" }, seen: seen, want: LossVMRecreated},
		// A reboot, a reset or a host-error restart: a new boot ID on the same VM keeps the data.
		"same VM, new boot ID (reboot)": {mutate: func(s *Snapshot) { s.Nodes[1].Status.NodeInfo.BootID = "n1-boot-2" }, seen: seen, restarted: true},
		// The machine ID comes from /etc/machine-id, which an image may regenerate at boot.
		"same VM, new boot and machine ID": {mutate: func(s *Snapshot) {
			s.Nodes[1].Status.NodeInfo.BootID, s.Nodes[1].Status.NodeInfo.MachineID = "n1-boot-2", "n1-machine-2"
		}, seen: seen, restarted: true},
		"new boot ID, record of the boot ID only": {mutate: func(s *Snapshot) { s.Nodes[1].Status.NodeInfo.BootID = "n1-boot-2" }, seen: legacy, restarted: true},
		"new VM, record of the boot ID only":      {mutate: newVM, seen: legacy, restarted: true},
		"new boot ID unknown without a record":    {mutate: func(s *Snapshot) { s.Nodes[1].Status.NodeInfo.BootID = "n1-boot-2" }},
		"volume group created after the volume":   {mutate: vgCreated(t0.Add(2 * time.Minute)), want: LossVolumeGroupRecreated},
		"volume group created after the volume, with a record": {mutate: func(s *Snapshot) {
			vgCreated(t0.Add(2 * time.Minute))(s)
			newVM(s)
		}, seen: seen, want: LossVolumeGroupRecreated},
		"volume group created before the volume":      {mutate: vgCreated(t0.Add(30 * time.Second))},
		"volume group created in the volume's second": {mutate: vgCreated(t0.Add(time.Minute))},
		"volume group adopted after the volume": {mutate: func(s *Snapshot) {
			s.Nodes[1].Annotations[topolvm.AnnBootstrapVolumeGroup] = "vg-ssd adopted " + t0.Add(time.Hour).Format(time.RFC3339) + " on /dev/nvme0n1"
		}},
	} {
		t.Run(name, func(t *testing.T) {
			set, s := lostWorld(t0)
			tc.mutate(s)
			judged := JudgeLocalData(set, s, tc.seen)
			lost := judged.Lost
			if tc.restarted != (len(judged.Restarted) == 1) || len(judged.Restarted) > 1 {
				t.Fatalf("restarted %+v, want restarted %v", judged.Restarted, tc.restarted)
			}
			if tc.restarted {
				r := judged.Restarted[0]
				if r.Ordinal != 1 || r.PVC != "cache-hist-1" || r.PV != "pv-n1" || r.Node != "n1" || !strings.Contains(r.What, "boot ID n1-boot-2, was n1-boot-1") {
					t.Errorf("restarted %+v", r)
				}
				// Once the ordinal is Ready again the record holds the new boot ID: the
				// restart is reported once.
				if again := JudgeLocalData(set, s, judged.Seen); len(again.Restarted) != 0 || len(again.Lost) != 0 {
					t.Errorf("after the next observation: %+v", again)
				}
			}
			if tc.want == "" {
				if len(lost) != 0 {
					t.Fatalf("lost %+v, want none", lost)
				}
				return
			}
			if len(lost) != 1 || lost[0].Ordinal != 1 || lost[0].PVC != "cache-hist-1" || lost[0].PV != "pv-n1" || lost[0].Node != "n1" || lost[0].Cause != tc.want {
				t.Fatalf("lost %+v, want ordinal 1 %s", lost, tc.want)
			}
			// The record of a lost volume is kept, so the loss is reported until the PVC is
			// recreated; the healthy one is refreshed.
			next := ObserveNodes(set, s, tc.seen)
			if tc.seen != nil && next["pv-n1"] != tc.seen["pv-n1"] {
				t.Errorf("record of the lost volume changed: %+v -> %+v", tc.seen["pv-n1"], next["pv-n1"])
			}
			if again := LostLocalData(set, s, next); len(again) != 1 {
				t.Errorf("the loss is not reported again after the next observation: %+v", again)
			}
		})
	}
}
