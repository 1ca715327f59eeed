package kwoknodes

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/kwok/pkg/utils/gotpl"

	nodeheartbeat "sigs.k8s.io/kwok/kustomize/stage/node/heartbeat-with-lease"
)

// TestHeartbeatStage renders the sandbox's node heartbeat stage with KWOK's own renderer: a
// DiskPressure condition that is True (the eviction shim's) is kept with its reason, message and
// transition time; every other condition, and a DiskPressure that is False or Unknown, is what
// KWOK's own heartbeat-with-lease stage writes.
func TestHeartbeatStage(t *testing.T) {
	if nodeHeartbeatKeepingDiskPressure == nodeheartbeat.DefaultNodeHeartbeatWithLease {
		t.Fatal("the heartbeat stage is KWOK's unchanged: its conditions template was not found (KWOK's stage changed?)")
	}
	stages, err := localStages()
	if err != nil {
		t.Fatal(err)
	}
	var tmpl string
	for _, ss := range stages {
		for _, s := range ss {
			if s.Name == "node-heartbeat-with-lease" {
				tmpl = s.Spec.Steps[0].Patch.Template
			}
		}
	}
	if tmpl == "" {
		t.Fatal("no node-heartbeat-with-lease stage among the sandbox's stages")
	}
	funcs := gotpl.FuncMap{"NodeIP": func() string { return "10.0.0.1" }, "NodeName": func() string { return "n" }, "NodePort": func() int { return 10250 }}
	r := gotpl.NewRenderer(funcs)
	since := metav1.NewTime(time.Date(2026, 12, 5, 6, 0, 0, 0, time.UTC))
	render := func(t *testing.T, disk corev1.ConditionStatus) map[corev1.NodeConditionType]corev1.NodeCondition {
		t.Helper()
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", CreationTimestamp: metav1.NewTime(since.Add(-time.Hour))},
			Status: corev1.NodeStatus{Phase: corev1.NodeRunning, Conditions: []corev1.NodeCondition{
				{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady"},
				{Type: corev1.NodeDiskPressure, Status: disk, Reason: "KubeletHasDiskPressure", Message: "kubelet has disk pressure", LastTransitionTime: since},
			}}}
		out, err := r.ToJSON(tmpl, n)
		if err != nil {
			t.Fatal(err)
		}
		var st corev1.NodeStatus
		if err := json.Unmarshal(out, &st); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		got := map[corev1.NodeConditionType]corev1.NodeCondition{}
		for _, c := range st.Conditions {
			got[c.Type] = c
		}
		if len(got) != 5 || got[corev1.NodeReady].Status != corev1.ConditionTrue || got[corev1.NodeMemoryPressure].Status != corev1.ConditionFalse {
			t.Errorf("conditions %+v: want KWOK's five, Ready True, MemoryPressure False", st.Conditions)
		}
		return got
	}
	t.Run("pressure kept", func(t *testing.T) {
		c := render(t, corev1.ConditionTrue)[corev1.NodeDiskPressure]
		if c.Status != corev1.ConditionTrue || c.Reason != "KubeletHasDiskPressure" || c.Message != "kubelet has disk pressure" || !c.LastTransitionTime.Equal(&since) {
			t.Errorf("DiskPressure %+v: want the node's True condition kept", c)
		}
		if c.LastHeartbeatTime.Before(&since) {
			t.Errorf("DiskPressure heartbeat %v: want renewed", c.LastHeartbeatTime)
		}
	})
	for _, s := range []corev1.ConditionStatus{corev1.ConditionFalse, corev1.ConditionUnknown} {
		t.Run("no pressure "+strings.ToLower(string(s)), func(t *testing.T) {
			c := render(t, s)[corev1.NodeDiskPressure]
			if c.Status != corev1.ConditionFalse || c.Reason != "KubeletHasNoDiskPressure" {
				t.Errorf("DiskPressure %+v: want KWOK's healthy False", c)
			}
		})
	}
}
