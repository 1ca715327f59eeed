package sandboxtest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	podutil "k8s.io/kubernetes/pkg/api/v1/pod"
)

// setKubelet calls the control endpoint's POST /v1/nodes/{node}:kubelet.
func setKubelet(ctx context.Context, control, node, state string) error {
	if b, err := postControl(ctx, control, "/v1/nodes/"+node+":kubelet", map[string]string{"state": state}); err != nil {
		return fmt.Errorf("kubelet %s %s: %v: %s", node, state, err, b)
	}
	return nil
}

// nodeUnreachable reports whether the node lifecycle controller took n's kubelet as gone: Ready
// Unknown and the node.kubernetes.io/unreachable NoExecute taint.
func nodeUnreachable(n *corev1.Node) bool {
	unknown, tainted := false, false
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady && c.Status == corev1.ConditionUnknown {
			unknown = true
		}
	}
	for _, t := range n.Spec.Taints {
		if t.Key == corev1.TaintNodeUnreachable && t.Effect == corev1.TaintEffectNoExecute {
			tainted = true
		}
	}
	return unknown && tainted
}

// nodeNotReady reports whether n reads as a kubelet without its runtime: Ready False (not
// Unknown: the kubelet still posts) and the node.kubernetes.io/not-ready NoExecute taint.
func nodeNotReady(n *corev1.Node) bool {
	falseReady, tainted := false, false
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady && c.Status == corev1.ConditionFalse && strings.Contains(c.Message, "container runtime is down") {
			falseReady = true
		}
	}
	for _, t := range n.Spec.Taints {
		if t.Key == corev1.TaintNodeNotReady && t.Effect == corev1.TaintEffectNoExecute {
			tainted = true
		}
	}
	return falseReady && tainted
}

func nodeBack(n *corev1.Node) bool {
	for _, t := range n.Spec.Taints {
		if t.Key == corev1.TaintNodeUnreachable || t.Key == corev1.TaintNodeNotReady {
			return false
		}
	}
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// TestRealTopoLVM_KubeletNotReadyThenDead: first :kubelet not-ready (a
// kubelet whose container runtime is down): Ready=False at once and the real node lifecycle
// controller's not-ready NoExecute taint within seconds, the Lease still renewed (so never
// Unknown), a Pod deleted there Terminating while TopoLVM's agent keeps running; alive
// finishes the deletion and the StatefulSet's Pod comes back there. Then :kubelet
// dead stops a node's kubelet. The real node lifecycle controller marks it Ready Unknown and
// taints it node.kubernetes.io/unreachable:NoExecute after node-monitor-grace-period (50 s);
// real TopoLVM's agent there stops; a Pod deleted there stays Terminating (the near miss: a Pod
// deleted on a live node is gone at once). alive brings it back: Ready, no taint, the Terminating
// Pod's deletion finishes, the agent starts again over the same disks (its volumes still
// counted in the capacity annotation).
func TestRealTopoLVM_KubeletNotReadyThenDead(t *testing.T) {
	t.Parallel() // own sandbox, waits on its controllers: beside the others that do (CI time, issue 44)
	topolvmBin := topolvmBinOrSkip(t)
	p := startRealProcess(t, `
clusters:
- name: olap
  location: us-central1-a
  nodePools:
  - name: pool-a
topolvm:
  bringUp:
    capacityPoll: 3s
`, topolvmBin, nil)
	kube := kubernetes.NewForConfigOrDie(p.rest)
	control := p.env["OLAPGKE_SANDBOX_CONTROL"]
	ns, sts := runOrdinals(t, kube)
	podOn := func(name string) *corev1.Pod {
		pod, err := kube.CoreV1().Pods(ns).Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return pod
	}
	dead := podOn(sts.Name + "-0")
	node := dead.Spec.NodeName
	logPath := filepath.Join(p.dir, "sandbox.log")
	agentLines := func(what string) int {
		b, err := os.ReadFile(logPath)
		if err != nil {
			t.Fatal(err)
		}
		return strings.Count(string(b), `"node agent `+what+`" node="`+node+`"`)
	}
	gone := func(ctx context.Context, name string, uid types.UID) (bool, error) {
		got, err := kube.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		if err != nil {
			return false, err
		}
		return got.UID != uid, nil
	}

	// not-ready: the kubelet posts Ready=False itself and keeps its Lease.
	if err := setKubelet(t.Context(), control, node, "not-ready"); err != nil {
		t.Fatal(err)
	}
	poll(t, time.Minute, "node "+node+" Ready False with the not-ready NoExecute taint", func(ctx context.Context) (bool, error) {
		n, err := kube.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return nodeNotReady(n), nil
	})
	leaseRenewal := func(ctx context.Context) (time.Time, error) {
		l, err := kube.CoordinationV1().Leases(corev1.NamespaceNodeLease).Get(ctx, node, metav1.GetOptions{})
		if err != nil || l.Spec.RenewTime == nil {
			return time.Time{}, fmt.Errorf("Lease of %s: %v", node, err)
		}
		return l.Spec.RenewTime.Time, nil
	}
	first, err := leaseRenewal(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	poll(t, 30*time.Second, "Lease of not-ready node "+node+" renewed", func(ctx context.Context) (bool, error) {
		r, err := leaseRenewal(ctx)
		return r.After(first), err
	})
	stoppedBefore := agentLines("stopped")
	if err := kube.CoreV1().Pods(ns).Delete(t.Context(), dead.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	holds(t, 10*time.Second, "Pod "+dead.Name+" Terminating on not-ready node "+node+", node not Unknown, agent running", func(ctx context.Context) error {
		got, err := kube.CoreV1().Pods(ns).Get(ctx, dead.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if got.UID != dead.UID || got.DeletionTimestamp == nil {
			return fmt.Errorf("Pod %s: uid %s (was %s), deletionTimestamp %v", got.Name, got.UID, dead.UID, got.DeletionTimestamp)
		}
		n, err := kube.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if nodeUnreachable(n) {
			return fmt.Errorf("node %s went Unknown/unreachable: its Lease is renewed", node)
		}
		if agentLines("stopped") != stoppedBefore {
			return fmt.Errorf("TopoLVM's agent on %s stopped: a not-ready kubelet keeps running containers", node)
		}
		return nil
	})
	if err := setKubelet(t.Context(), control, node, "alive"); err != nil {
		t.Fatal(err)
	}
	poll(t, 2*time.Minute, "node "+node+" Ready again without the not-ready taint", func(ctx context.Context) (bool, error) {
		n, err := kube.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return nodeBack(n), nil
	})
	poll(t, time.Minute, "Pod "+dead.Name+"'s deletion finished on "+node, func(ctx context.Context) (bool, error) {
		return gone(ctx, dead.Name, dead.UID)
	})
	poll(t, 2*time.Minute, "Pod "+dead.Name+" back, Ready, on "+node, func(ctx context.Context) (bool, error) {
		got, err := kube.CoreV1().Pods(ns).Get(ctx, dead.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		dead = got
		return got.Spec.NodeName == node && podutil.IsPodReady(got), nil
	})

	// dead: nothing renews the Lease any more.
	var live *corev1.Pod
	for i := 1; i < int(*sts.Spec.Replicas) && live == nil; i++ {
		if p := podOn(fmt.Sprintf("%s-%d", sts.Name, i)); p.Spec.NodeName != node {
			live = p
		}
	}
	if live == nil {
		t.Fatalf("every ordinal runs on %s: no live node to compare with", node)
	}
	before, err := kube.CoreV1().Nodes().Get(t.Context(), node, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	capKey := capacityPrefix + "00default"

	if err := setKubelet(t.Context(), control, node, "dead"); err != nil {
		t.Fatal(err)
	}
	died := time.Now()
	poll(t, 3*time.Minute, "node "+node+" Ready Unknown with the unreachable NoExecute taint", func(ctx context.Context) (bool, error) {
		n, err := kube.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return nodeUnreachable(n), nil
	})
	t.Logf("node %s unreachable %s after its kubelet stopped", node, time.Since(died).Round(time.Second))
	if el := time.Since(died); el < 30*time.Second {
		t.Errorf("node %s unreachable after %s: before the node lifecycle controller's grace period", node, el)
	}
	poll(t, 30*time.Second, "TopoLVM agent of "+node+" stopped", func(context.Context) (bool, error) {
		return agentLines("stopped") > 0, nil
	})
	started := agentLines("started")

	// A Pod deleted on the dead node stays Terminating; one on a live node goes.
	for _, pod := range []*corev1.Pod{dead, live} {
		if err := kube.CoreV1().Pods(ns).Delete(t.Context(), pod.Name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	poll(t, 30*time.Second, "Pod "+live.Name+" on live node "+live.Spec.NodeName+" deleted", func(ctx context.Context) (bool, error) {
		return gone(ctx, live.Name, live.UID)
	})
	holds(t, 10*time.Second, "Pod "+dead.Name+" Terminating on dead node "+node, func(ctx context.Context) error {
		got, err := kube.CoreV1().Pods(ns).Get(ctx, dead.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if got.UID != dead.UID || got.DeletionTimestamp == nil {
			return fmt.Errorf("Pod %s: uid %s (was %s), deletionTimestamp %v", got.Name, got.UID, dead.UID, got.DeletionTimestamp)
		}
		return nil
	})

	if err := setKubelet(t.Context(), control, node, "alive"); err != nil {
		t.Fatal(err)
	}
	poll(t, 2*time.Minute, "node "+node+" Ready again without the unreachable taint", func(ctx context.Context) (bool, error) {
		n, err := kube.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return nodeBack(n), nil
	})
	poll(t, time.Minute, "Pod "+dead.Name+"'s deletion finished on "+node, func(ctx context.Context) (bool, error) {
		return gone(ctx, dead.Name, dead.UID)
	})
	poll(t, time.Minute, "TopoLVM agent of "+node+" started again", func(context.Context) (bool, error) {
		return agentLines("started") > started, nil
	})
	poll(t, time.Minute, "capacity annotation of "+node+" as before (same disks)", func(ctx context.Context) (bool, error) {
		n, err := kube.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if n.Annotations[capKey] != before.Annotations[capKey] {
			return false, fmt.Errorf("%s = %s, was %s", capKey, n.Annotations[capKey], before.Annotations[capKey])
		}
		return true, nil
	})
}
