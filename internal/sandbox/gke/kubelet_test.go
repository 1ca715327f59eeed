package gke

import (
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestSetKubeletStates: each state writes what that kubelet would. not-ready: the Lease held by
// the sandbox's kubelet with the kubelet's 40 s duration and a fresh renewal, the annotation,
// and Ready=False with kubelet's own reason and the runtime's message (the node lifecycle
// controller taints from that); dead: the Lease held for good, Ready left as it was (a dead
// kubelet posts nothing; the controller marks it Unknown); alive: the Lease freed for KWOK and
// the annotation gone. A state the endpoint does not know is refused, as is an unknown node.
func TestSetKubeletStates(t *testing.T) {
	t.Parallel()
	e := start(t, nil)
	node := e.poolNodes(t, "pool-a")[0]
	ctx := t.Context()
	kwok := "kwok-controller"
	if _, err := e.kube.CoordinationV1().Leases(corev1.NamespaceNodeLease).Create(ctx, &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: node.Name, Namespace: corev1.NamespaceNodeLease},
		Spec:       coordinationv1.LeaseSpec{HolderIdentity: &kwok},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	get := func() (*corev1.Node, *coordinationv1.Lease) {
		t.Helper()
		n, err := e.kube.CoreV1().Nodes().Get(ctx, node.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		l, err := e.kube.CoordinationV1().Leases(corev1.NamespaceNodeLease).Get(ctx, node.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return n, l
	}
	ready := func(n *corev1.Node) *corev1.NodeCondition {
		for i := range n.Status.Conditions {
			if n.Status.Conditions[i].Type == corev1.NodeReady {
				return &n.Status.Conditions[i]
			}
		}
		return nil
	}

	if err := e.s.SetKubelet(ctx, node.Name, KubeletNotReady); err != nil {
		t.Fatal(err)
	}
	n, l := get()
	if h := l.Spec.HolderIdentity; h == nil || *h != NotReadyKubeletHolder || l.Spec.LeaseDurationSeconds == nil || *l.Spec.LeaseDurationSeconds != kubeletLeaseSeconds || l.Spec.RenewTime == nil {
		t.Errorf("not-ready Lease %+v: want held by %s for %d s, renewed", l.Spec, NotReadyKubeletHolder, kubeletLeaseSeconds)
	}
	if n.Annotations[AnnotationKubelet] != string(KubeletNotReady) {
		t.Errorf("annotations %v: want %s=%s", n.Annotations, AnnotationKubelet, KubeletNotReady)
	}
	if c := ready(n); c == nil || c.Status != corev1.ConditionFalse || c.Reason != "KubeletNotReady" || !strings.Contains(c.Message, "container runtime is down") {
		t.Errorf("Ready condition %+v: want False, KubeletNotReady, container runtime is down", c)
	}

	if err := e.s.SetKubelet(ctx, node.Name, KubeletDead); err != nil {
		t.Fatal(err)
	}
	n, l = get()
	if h := l.Spec.HolderIdentity; h == nil || *h != DeadKubeletHolder || *l.Spec.LeaseDurationSeconds != deadLeaseSeconds {
		t.Errorf("dead Lease %+v: want held by %s for good", l.Spec, DeadKubeletHolder)
	}
	if n.Annotations[AnnotationKubelet] != string(KubeletDead) {
		t.Errorf("annotations %v: want %s=%s", n.Annotations, AnnotationKubelet, KubeletDead)
	}

	if err := e.s.SetKubelet(ctx, node.Name, KubeletAlive); err != nil {
		t.Fatal(err)
	}
	n, l = get()
	if l.Spec.HolderIdentity != nil {
		t.Errorf("alive Lease holder %q: want none (KWOK takes it back)", *l.Spec.HolderIdentity)
	}
	if _, ok := n.Annotations[AnnotationKubelet]; ok {
		t.Errorf("annotations %v: want %s gone", n.Annotations, AnnotationKubelet)
	}
	// The not-ready kubelet stopped with the state: no loop left for the node.
	e.s.kubelets.mu.Lock()
	_, running := e.s.kubelets.cancel[node.Name]
	e.s.kubelets.mu.Unlock()
	if running {
		t.Error("the not-ready kubelet of the node still runs after alive")
	}

	if err := e.s.SetKubelet(ctx, node.Name, "asleep"); status.Code(err) != codes.InvalidArgument {
		t.Errorf("state asleep: %v, want InvalidArgument", err)
	}
	if err := e.s.SetKubelet(ctx, "no-such-node", KubeletNotReady); status.Code(err) != codes.NotFound {
		t.Errorf("unknown node: %v, want NotFound", err)
	}
}
