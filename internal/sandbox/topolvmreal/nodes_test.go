package topolvmreal

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestDaemonPodFits(t *testing.T) {
	taint := func(e corev1.TaintEffect) []corev1.Taint {
		return []corev1.Taint{{Key: "dedicated", Value: "olap", Effect: corev1.TaintEffectNoSchedule}, {Key: TaintStorageNotReady, Value: "true", Effect: e}}
	}
	tolerateStartup := []corev1.Toleration{{Key: TaintStorageNotReady, Operator: corev1.TolerationOpEqual, Value: "true", Effect: corev1.TaintEffectNoSchedule}}
	for name, tc := range map[string]struct {
		taints      []corev1.Taint
		tolerations []corev1.Toleration
		run, keep   bool
	}{
		"untainted":                             {nil, nil, true, true},
		"other taints are taken as tolerated":   {taint(corev1.TaintEffectNoSchedule)[:1], nil, true, true},
		"startup taint, not tolerated":          {taint(corev1.TaintEffectNoSchedule), nil, false, true},
		"startup taint, tolerated":              {taint(corev1.TaintEffectNoSchedule), tolerateStartup, true, true},
		"NoExecute, not tolerated":              {taint(corev1.TaintEffectNoExecute), tolerateStartup, false, false},
		"PreferNoSchedule keeps new agents off": {taint(corev1.TaintEffectPreferNoSchedule), nil, false, true},
		"tolerated by operator Exists":          {taint(corev1.TaintEffectNoExecute), []corev1.Toleration{{Operator: corev1.TolerationOpExists}}, true, true},
	} {
		n := &corev1.Node{Spec: corev1.NodeSpec{Taints: tc.taints}}
		run, keep := daemonPodFits(n, tc.tolerations)
		if run != tc.run || keep != tc.keep {
			t.Errorf("%s: daemonPodFits = %v, %v; want %v, %v", name, run, keep, tc.run, tc.keep)
		}
	}
}

func TestVolumeGroupPresent(t *testing.T) {
	startup := []corev1.Taint{{Key: TaintStorageNotReady, Value: "true", Effect: corev1.TaintEffectNoSchedule}}
	node := func(ann map[string]string, vm string, taints []corev1.Taint) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Annotations: ann}, Spec: corev1.NodeSpec{Taints: taints},
			Status: corev1.NodeStatus{NodeInfo: corev1.NodeSystemInfo{SystemUUID: vm, BootID: "boot-of-" + vm}}}
	}
	created := map[string]string{AnnBootstrapVolumeGroup: "vg-ssd created 2026-12-01T00:00:00Z on /dev/nvme0n1", AnnBootstrapVM: "b1"}
	rebooted := node(created, "b1", nil)
	rebooted.Status.NodeInfo.BootID = "a-new-boot"
	for name, tc := range map[string]struct {
		n    *corev1.Node
		want bool
	}{
		"registered without the taint (node set-up)": {node(nil, "b1", nil), true},
		"startup taint, not bootstrapped":            {node(nil, "b1", startup), false},
		"bootstrapped, taint still there":            {node(created, "b1", startup), true},
		"bootstrapped":                               {node(created, "b1", nil), true},
		"VM recreated, bootstrap not yet run again":  {node(created, "b2", nil), false},
		"VM rebooted (new boot ID, same VM)":         {rebooted, true},
		"foreign volume group":                       {node(map[string]string{AnnForeignVolumeGroup: "data"}, "b1", nil), false},
	} {
		if got := volumeGroupPresent(tc.n); got != tc.want {
			t.Errorf("%s: volumeGroupPresent = %v, want %v", name, got, tc.want)
		}
	}
}
