package sandboxtest

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// TestTaintEviction_NoExecuteEvictsUntoleratedPods: the sandbox runs
// kube-controller-manager's taint-eviction controller, as GKE does, so a
// NoExecute taint on a node deletes the Pods there that do not tolerate it and
// leaves those that do.
func TestTaintEviction_NoExecuteEvictsUntoleratedPods(t *testing.T) {
	ns := newNamespace(t)
	nodes, err := kube.CoreV1().Nodes().List(t.Context(), metav1.ListOptions{LabelSelector: poolLabel + "=pool-b"})
	if err != nil || len(nodes.Items) == 0 {
		t.Fatalf("pool-b nodes: %v (%d)", err, len(nodes.Items))
	}
	node := nodes.Items[0].Name
	grace := int64(1)
	pod := func(name string, tolerate bool) *corev1.Pod {
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Spec: corev1.PodSpec{
				NodeName:                      node,
				TerminationGracePeriodSeconds: &grace,
				Containers:                    []corev1.Container{{Name: "c", Image: "registry.k8s.io/pause:3.10"}},
			},
		}
		if tolerate {
			p.Spec.Tolerations = []corev1.Toleration{{Key: "olapgke.io/test-evict", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute}}
		}
		return p
	}
	for _, p := range []*corev1.Pod{pod("evicted", false), pod("tolerating", true)} {
		if _, err := kube.CoreV1().Pods(ns).Create(t.Context(), p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	poll(t, 30*time.Second, "both Pods Ready", func(ctx context.Context) (bool, error) {
		for _, n := range []string{"evicted", "tolerating"} {
			p, err := kube.CoreV1().Pods(ns).Get(ctx, n, metav1.GetOptions{})
			if err != nil || !isReady(p) {
				return false, nil //nolint:nilerr // not there yet: ask again
			}
		}
		return true, nil
	})

	setTaints := func(ctx context.Context, taints []corev1.Taint) error {
		patch, _ := json.Marshal(map[string]any{"spec": map[string]any{"taints": taints}})
		_, err := kube.CoreV1().Nodes().Patch(ctx, node, types.StrategicMergePatchType, patch, metav1.PatchOptions{})
		return err
	}
	orig := nodes.Items[0].Spec.Taints
	t.Cleanup(func() {
		if err := setTaints(context.Background(), orig); err != nil {
			t.Errorf("restore taints of %s: %v", node, err)
		}
	})
	if err := setTaints(t.Context(), append(append([]corev1.Taint{}, orig...), corev1.Taint{Key: "olapgke.io/test-evict", Value: "x", Effect: corev1.TaintEffectNoExecute})); err != nil {
		t.Fatal(err)
	}
	poll(t, 30*time.Second, "the untolerating Pod evicted", func(ctx context.Context) (bool, error) {
		p, err := kube.CoreV1().Pods(ns).Get(ctx, "evicted", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return err == nil && p.DeletionTimestamp != nil, err
	})
	p, err := kube.CoreV1().Pods(ns).Get(t.Context(), "tolerating", metav1.GetOptions{})
	if err != nil || p.DeletionTimestamp != nil {
		t.Errorf("the tolerating Pod was evicted too: %v %v", err, p.GetDeletionTimestamp())
	}
}
