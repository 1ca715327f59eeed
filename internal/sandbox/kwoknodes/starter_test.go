package kwoknodes

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	corelisters "k8s.io/client-go/listers/core/v1"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
)

func TestWaitingToStart(t *testing.T) {
	t.Parallel()
	now := metav1.Now()
	pending := func(mut func(*corev1.Pod)) *corev1.Pod {
		p := &corev1.Pod{Spec: corev1.PodSpec{NodeName: "n1"}, Status: corev1.PodStatus{Phase: corev1.PodPending}}
		if mut != nil {
			mut(p)
		}
		return p
	}
	tests := map[string]struct {
		pod       *corev1.Pod
		simulated bool
		want      bool
	}{
		"bound, Pending, simulated node": {pending(nil), true, true},
		"node not simulated":             {pending(nil), false, false},
		"not bound":                      {pending(func(p *corev1.Pod) { p.Spec.NodeName = "" }), true, false},
		"being deleted":                  {pending(func(p *corev1.Pod) { p.DeletionTimestamp = &now }), true, false},
		"Running":                        {pending(func(p *corev1.Pod) { p.Status.Phase = corev1.PodRunning }), true, false},
		"Pending but Ready": {pending(func(p *corev1.Pod) {
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
		}), true, false},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if got := waitingToStart(tc.pod, tc.simulated); got != tc.want {
				t.Errorf("waitingToStart = %v, want %v", got, tc.want)
			}
		})
	}
}

// A Pod KWOK left Pending on a simulated node gets status.startTime written (the event that makes
// KWOK play it again); a Pod that started, or one on a node KWOK does not manage, is left alone.
func TestProcessNextStart(t *testing.T) {
	t.Parallel()
	nodes := []*corev1.Node{
		{ObjectMeta: metav1.ObjectMeta{Name: "kwok", Annotations: map[string]string{Annotation: AnnotationValue}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "real"}},
	}
	pod := func(name, node string, phase corev1.PodPhase) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("uid-" + name)},
			Spec: corev1.PodSpec{NodeName: node}, Status: corev1.PodStatus{Phase: phase}}
	}
	pods := []*corev1.Pod{pod("stuck", "kwok", corev1.PodPending), pod("running", "kwok", corev1.PodRunning), pod("elsewhere", "real", corev1.PodPending)}
	kube := fake.NewClientset()
	nodeIdx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	podIdx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	for _, n := range nodes {
		_ = nodeIdx.Add(n)
	}
	for _, p := range pods {
		_ = podIdx.Add(p)
		if _, err := kube.CoreV1().Pods("ns").Create(context.Background(), p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	kube.ClearActions()
	now := time.Date(2026, 12, 4, 6, 0, 0, 0, time.UTC)
	tm := &terminator{kube: kube, nodes: corelisters.NewNodeLister(nodeIdx), pods: corelisters.NewPodLister(podIdx),
		starts: workqueue.NewTypedDelayingQueue[podKey](), now: func() time.Time { return now }, resynced: map[types.UID]bool{}}
	defer tm.starts.ShutDown()
	// Twice each: the second check of the stuck Pod writes nothing more.
	for range 2 {
		for _, p := range pods {
			tm.starts.Add(podKey{p.Namespace, p.Name, p.UID})
			tm.processNextStart(context.Background())
		}
	}
	var patched []string
	for _, a := range kube.Actions() {
		if pa, ok := a.(k8stesting.PatchAction); ok && pa.GetSubresource() == "status" {
			patched = append(patched, pa.GetName())
		}
	}
	if len(patched) != 1 || patched[0] != "stuck" {
		t.Fatalf("status patches for %v, want only [stuck]", patched)
	}
	got, err := kube.CoreV1().Pods("ns").Get(context.Background(), "stuck", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Status.StartTime == nil || !got.Status.StartTime.Time.Equal(now) {
		t.Errorf("startTime %v, want %v", got.Status.StartTime, now)
	}
}
