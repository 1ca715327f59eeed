package sandboxtest

import (
	"context"
	"fmt"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// TestKWOKSkippedPod_StarterWritesStartTimeOnce: a Pod that KWOK skips as "read only" (bound to a
// node whose Lease KWOK does not hold: here held by another holder, in CI KWOK's Lease cache not
// yet holding the Lease KWOK had just created) gets status.startTime written by the sandbox's
// starter (kwoknodes/starter.go), the event that makes KWOK play it again, and only once: a Pod
// KWOK keeps skipping is not rewritten every few seconds.
func TestKWOKSkippedPod_StarterWritesStartTimeOnce(t *testing.T) {
	ns := newNamespace(t)
	ctx := t.Context()
	node := "starter-skipped-n0"
	lease := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: node, Namespace: corev1.NamespaceNodeLease},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("someone-else"), LeaseDurationSeconds: ptr.To[int32](3600),
			RenewTime: ptr.To(metav1.NewMicroTime(time.Now()))},
	}
	if _, err := kube.CoordinationV1().Leases(corev1.NamespaceNodeLease).Create(ctx, lease, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = kube.CoreV1().Nodes().Delete(context.Background(), node, metav1.DeleteOptions{})
		_ = kube.CoordinationV1().Leases(corev1.NamespaceNodeLease).Delete(context.Background(), node, metav1.DeleteOptions{})
	})
	res := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("16Gi"), corev1.ResourcePods: resource.MustParse("110")}
	if _, err := kube.CoreV1().Nodes().Create(ctx, &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: node, Labels: map[string]string{"kubernetes.io/hostname": node},
			Annotations: map[string]string{"kwok.x-k8s.io/node": "fake"}},
		Status: corev1.NodeStatus{Allocatable: res, Capacity: res},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := kube.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "skipped", Namespace: ns},
		Spec: corev1.PodSpec{NodeName: node, Tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
			Containers: []corev1.Container{{Name: "c", Image: "registry.k8s.io/pause:3.10"}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var startTime *metav1.Time
	poll(t, 30*time.Second, "the starter wrote status.startTime of the Pod KWOK skipped", func(ctx context.Context) (bool, error) {
		p, err := kube.CoreV1().Pods(ns).Get(ctx, "skipped", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		startTime = p.Status.StartTime
		return startTime != nil && p.Status.Phase == corev1.PodPending, nil
	})
	holds(t, 7*time.Second, "the Pod is written once: startTime and phase unchanged", func(ctx context.Context) error {
		p, err := kube.CoreV1().Pods(ns).Get(ctx, "skipped", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if p.Status.StartTime == nil || !p.Status.StartTime.Equal(startTime) || p.Status.Phase != corev1.PodPending {
			return fmt.Errorf("startTime %v (was %v), phase %s", p.Status.StartTime, startTime, p.Status.Phase)
		}
		return nil
	})
}
