package kwoknodes

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
)

// startAfter is how long a Pod bound to a KWOK node may stay Pending before
// the starter resyncs it. KWOK's pod-ready stage has no delay, so a Pod it
// plays is Running within milliseconds; 5 s is far above that even on a
// loaded machine.
const startAfter = 5 * time.Second

// The starter makes up for a race in KWOK v0.8.0 (pkg/kwok/controllers): a
// Pod bound to a node before KWOK holds the node's Lease is skipped as "read
// only" (PodController.watchResources), and the one resync KWOK does once it
// holds the Lease (Controller.podsOnNodeSyncWorker) asks the same question of
// its Lease *cache*, which may not have seen the Lease KWOK just created. Such
// a Pod stays Pending for good: KWOK has no periodic resync. A kubelet has
// one (its pod workers sync every Pod on the node periodically), so the
// sandbox plays it for the Pods KWOK left behind: it writes
// status.startTime, which a kubelet sets when it first syncs a Pod, and the
// resulting watch event makes KWOK play the Pod again, its Lease now cached.
// Seen in CI as a differential-test world whose Pod, created right after its
// nodes, stayed Pending.

// waitingToStart reports whether pod is one KWOK's pod-ready stage would play
// (not being deleted, Pending, not Ready) on a simulated node.
func waitingToStart(pod *corev1.Pod, simulated bool) bool {
	if !simulated || pod.Spec.NodeName == "" || pod.DeletionTimestamp != nil || pod.Status.Phase != corev1.PodPending {
		return false
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
			return false
		}
	}
	return true
}

// observeStart queues a check of a Pod that waits to start.
func (t *terminator) observeStart(pod *corev1.Pod) {
	if waitingToStart(pod, true) {
		t.starts.AddAfter(podKey{pod.Namespace, pod.Name, pod.UID}, startAfter)
	}
}

// processNextStart checks one queued Pod: if it still waits to start on a
// simulated node, its status.startTime is written (the event KWOK needs).
func (t *terminator) processNextStart(ctx context.Context) bool {
	key, shutdown := t.starts.Get()
	if shutdown {
		return false
	}
	defer t.starts.Done(key)
	// From the informer: one GET per Pod created would load the API server
	// for the rare Pod KWOK skipped.
	pod, err := t.pods.Pods(key.Namespace).Get(key.Name)
	if err != nil || pod.UID != key.UID {
		return true // gone, or replaced by a new Pod of the same name
	}
	if !waitingToStart(pod, t.simulated(pod.Spec.NodeName)) {
		return true
	}
	// Once per Pod: a Pod KWOK keeps skipping after that (a node whose Lease
	// it does not hold) is not rewritten every startAfter.
	t.mu.Lock()
	done := t.resynced[pod.UID]
	t.resynced[pod.UID] = true
	t.mu.Unlock()
	if done {
		return true
	}
	uid := pod.UID
	patch := fmt.Sprintf(`{"metadata":{"uid":%q},"status":{"startTime":%q}}`, uid, t.now().UTC().Format(time.RFC3339))
	_, err = t.kube.CoreV1().Pods(key.Namespace).Patch(ctx, key.Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}, "status")
	switch {
	case err == nil:
		klog.InfoS("starter: Pod still Pending on a simulated node, resynced for KWOK", "pod", key.Namespace+"/"+key.Name, "node", pod.Spec.NodeName)
	case apierrors.IsNotFound(err), apierrors.IsConflict(err):
	default:
		klog.V(2).InfoS("starter: patch pod status", "pod", key.Namespace+"/"+key.Name, "err", err)
		t.mu.Lock()
		delete(t.resynced, pod.UID)
		t.mu.Unlock()
		t.starts.AddAfter(key, time.Second)
	}
	return true
}
