package planner

import (
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
			ObjectMeta: metav1.ObjectMeta{Name: node, UID: types.UID(node + "-uid"), CreationTimestamp: metav1.NewTime(t0)},
			Status:     corev1.NodeStatus{NodeInfo: corev1.NodeSystemInfo{BootID: node + "-boot-1"}},
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
	if len(seen) != 2 || seen["pv-n1"].BootID != "n1-boot-1" || seen["pv-n1"].UID != "n1-uid" {
		t.Fatalf("ObserveNodes = %+v", seen)
	}
	if lost := LostLocalData(set, s, seen); len(lost) != 0 {
		t.Fatalf("healthy world reports %+v", lost)
	}

	for name, tc := range map[string]struct {
		mutate func(s *Snapshot)
		seen   map[string]NodeSeen
		want   LossCause
	}{
		"node gone": {mutate: func(s *Snapshot) { s.Nodes = s.Nodes[:1] }, want: LossNodeGone},
		"node gone, its PV deleted by TopoLVM's node finalizer": {mutate: func(s *Snapshot) {
			s.Nodes, s.PVs = s.Nodes[:1], s.PVs[:1]
			s.PVCs[1].Annotations = map[string]string{"volume.kubernetes.io/selected-node": "n1"}
		}, want: LossNodeGone},
		"node registered after the volume": {mutate: func(s *Snapshot) {
			s.Nodes[1].UID, s.Nodes[1].CreationTimestamp = "n1-new", metav1.NewTime(t0.Add(time.Hour))
		}, want: LossNodeRecreated},
		"same name, new UID olapgke saw change": {mutate: func(s *Snapshot) { s.Nodes[1].UID = "n1-new" }, seen: seen, want: LossNodeRecreated},
		"same Node, new boot ID":                {mutate: func(s *Snapshot) { s.Nodes[1].Status.NodeInfo.BootID = "n1-boot-2" }, seen: seen, want: LossVMRecreated},
		"new boot ID unknown without a record":  {mutate: func(s *Snapshot) { s.Nodes[1].Status.NodeInfo.BootID = "n1-boot-2" }},
	} {
		t.Run(name, func(t *testing.T) {
			set, s := lostWorld(t0)
			tc.mutate(s)
			lost := LostLocalData(set, s, tc.seen)
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
