package main

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/olapgke/terraform-provider-olapgke/internal/sandbox/kwoknodes"
)

// A KWOK node left without Ready=True is nudged once it has waited stallGrace, then at most once
// per stallGrace; a Ready node and a node KWOK does not manage never are.
func TestStalledNodesNudge(t *testing.T) {
	node := func(name string, kwok bool, ready corev1.ConditionStatus) *corev1.Node {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{}}}
		if kwok {
			n.Annotations[kwoknodes.Annotation] = kwoknodes.AnnotationValue
		}
		if ready != "" {
			n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: ready}}
		}
		return n
	}
	nodes := []*corev1.Node{node("stalled", true, ""), node("unknown", true, corev1.ConditionUnknown),
		node("ready", true, corev1.ConditionTrue), node("real", false, "")}
	var objs []runtime.Object
	for _, n := range nodes {
		objs = append(objs, n)
	}
	kube := fake.NewClientset(objs...)
	var patched []string
	kube.PrependReactor("patch", "nodes", func(a k8stesting.Action) (bool, runtime.Object, error) {
		patched = append(patched, a.(k8stesting.PatchAction).GetName())
		return false, nil, nil
	})
	s := stalledNodes{}
	t0 := time.Date(2026, 12, 5, 17, 0, 0, 0, time.UTC)
	for _, step := range []struct {
		after time.Duration
		want  int // patches so far
	}{{0, 0}, {30 * time.Second, 0}, {stallGrace + time.Second, 2}, {stallGrace + 30*time.Second, 2}, {2*stallGrace + 2*time.Second, 4}} {
		s.nudge(context.Background(), kube, nodes, t0.Add(step.after))
		if len(patched) != step.want {
			t.Fatalf("after %s: patched %v, want %d patches (stalled and unknown)", step.after, patched, step.want)
		}
	}
	for _, name := range patched {
		if name != "stalled" && name != "unknown" {
			t.Errorf("patched %s", name)
		}
	}
	n, err := kube.CoreV1().Nodes().Get(context.Background(), "stalled", metav1.GetOptions{})
	if err != nil || n.Annotations[AnnotationStageReplay] == "" {
		t.Errorf("stalled node carries no %s annotation: %v %v", AnnotationStageReplay, n.Annotations, err)
	}
}
