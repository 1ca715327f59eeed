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
//
// KWOK v0.8.0 skips no Pod for its node's Lease in some of its starts (about 1 in 4 here): it
// starts its stage controllers in map order (Controller.Start ranges over LocalStages), and when
// the Pod controller starts before initNodeLeaseController sets readOnlyFunc, the Pod controller
// keeps a nil one (sigs.k8s.io/kwok pkg/kwok/controllers controller.go, pod_controller.go
// readOnly) and plays every Pod at once. Then the race the starter makes up for cannot happen in
// that sandbox, nor this scenario: the test skips. The starter waits startAfter (5 s) before it
// writes anything, so a Pod Running sooner was played by KWOK alone.
func TestKWOKSkippedPod_StarterWritesStartTimeOnce(t *testing.T) {
	ns := newNamespace(t)
	const node, pod = "starter-skipped-n0", "skipped"
	created := skippedPodOnForeignLease(t, ns, node, pod)
	var startTime *metav1.Time
	playedByKWOK := false
	poll(t, 30*time.Second, "the starter wrote status.startTime of the Pod KWOK skipped", func(ctx context.Context) (bool, error) {
		p, err := kube.CoreV1().Pods(ns).Get(ctx, pod, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		startTime = p.Status.StartTime
		switch {
		case p.Status.Phase != corev1.PodPending && time.Since(created) < 4*time.Second:
			playedByKWOK = true // before the starter could act
			return true, nil
		case startTime == nil:
			return false, fmt.Errorf("pod %s without startTime", p.Status.Phase)
		case p.Status.Phase != corev1.PodPending:
			l, err := kube.CoordinationV1().Leases(corev1.NamespaceNodeLease).Get(ctx, node, metav1.GetOptions{})
			holder := fmt.Sprint(err)
			if err == nil {
				holder = ptr.Deref(l.Spec.HolderIdentity, "<none>")
			}
			return false, fmt.Errorf("pod %s (startTime %v): KWOK played it after the starter's write; the node's Lease holder: %s", p.Status.Phase, startTime, holder)
		}
		return true, nil
	})
	if playedByKWOK {
		t.Skipf("KWOK played Pod %s at once although its node's Lease names another holder: this sandbox's KWOK started its Pod controller first and skips no Pod (see the comment)", pod)
	}
	holds(t, 7*time.Second, "the Pod is written once: startTime and phase unchanged", func(ctx context.Context) error {
		p, err := kube.CoreV1().Pods(ns).Get(ctx, pod, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if p.Status.StartTime == nil || !p.Status.StartTime.Equal(startTime) || p.Status.Phase != corev1.PodPending {
			return fmt.Errorf("startTime %v (was %v), phase %s", p.Status.StartTime, startTime, p.Status.Phase)
		}
		return nil
	})
}

// skippedPodOnForeignLease creates node's Lease held by another holder, the KWOK node, and a Pod
// bound to it; it returns when the Pod was created.
func skippedPodOnForeignLease(t *testing.T, ns, node, pod string) time.Time {
	t.Helper()
	ctx := t.Context()
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
		ObjectMeta: metav1.ObjectMeta{Name: pod, Namespace: ns},
		Spec: corev1.PodSpec{NodeName: node, Tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
			Containers: []corev1.Container{{Name: "c", Image: "registry.k8s.io/pause:3.10"}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return time.Now()
}
