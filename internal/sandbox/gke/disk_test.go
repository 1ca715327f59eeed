package gke

import (
	"context"
	"strings"
	"testing"
	"time"

	"cloud.google.com/go/container/apiv1/containerpb"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
)

// runningPod creates a Running, Ready Pod bound to node.
func runningPod(t *testing.T, e *env, node, name string, priority int32, usedBytes string, created time.Time) *corev1.Pod {
	t.Helper()
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "olap", CreationTimestamp: metav1.NewTime(created)},
		Spec:       corev1.PodSpec{NodeName: node, Priority: &priority, Containers: []corev1.Container{{Name: "historical", Image: "druid"}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning,
			Conditions:        []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}, {Type: corev1.ContainersReady, Status: corev1.ConditionTrue}},
			ContainerStatuses: []corev1.ContainerStatus{{Name: "historical", Ready: true, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(created)}}}}},
	}
	if usedBytes != "" {
		p.Annotations = map[string]string{AnnotationEphemeralUsed: usedBytes}
	}
	p, err := e.kube.CoreV1().Pods("olap").Create(t.Context(), p, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestSetDiskThresholds: the shim's kubelet judges GKE's hard nodefs.available<10% of the node's
// ephemeral-storage capacity, plus the pool's soft thresholds (kubelet's own parser); bad input
// is refused.
func TestSetDiskThresholds(t *testing.T) {
	t.Parallel()
	e := start(t, func(o *Options) {
		np := defaultPool()
		np.Name, np.InitialNodeCount = "soft", 1
		np.Config.KubeletConfig = &containerpb.NodeKubeletConfig{
			EvictionSoft:            &containerpb.EvictionSignals{NodefsAvailable: "20%", ImagefsAvailable: "25%"},
			EvictionSoftGracePeriod: &containerpb.EvictionGracePeriod{NodefsAvailable: "1m", ImagefsAvailable: "1m"},
		}
		o.Clusters[0].Pools = append(o.Clusters[0].Pools, np)
	})
	hard := e.poolNodes(t, "pool-a")[0]
	capacity := hard.Status.Capacity[corev1.ResourceEphemeralStorage]
	// GKE's node sizing page: a 100 GiB boot disk gives capacity 98831908Ki.
	if capacity.Cmp(resource.MustParse("98831908Ki")) != 0 {
		t.Fatalf("capacity %s", capacity.String())
	}
	c := capacity.Value()
	// kubelet's percentage: capacity x float32 percent (eviction/api GetThresholdQuantity), so
	// 10% of this node is 151 bytes more than c/10.
	pct := func(p float32) int64 { return int64(float64(c) * float64(p)) }
	rep, err := e.s.SetDisk(t.Context(), hard.Name, DiskUsage{NodefsUsedBytes: 10 << 30, ImagefsUsedBytes: 20 << 30})
	if err != nil {
		t.Fatal(err)
	}
	want := []DiskThreshold{{Signal: "nodefs.available", Bytes: pct(0.1)}}
	if rep.CapacityBytes != c || rep.AvailableBytes != c-30<<30 || len(rep.Thresholds) != 1 || rep.Thresholds[0] != want[0] {
		t.Errorf("report %+v: want capacity %d, available %d, thresholds %+v", rep, c, c-30<<30, want)
	}
	// Free space just below 10%: met.
	rep, err = e.s.SetDisk(t.Context(), hard.Name, DiskUsage{NodefsUsedBytes: c - pct(0.1) + 1})
	if err != nil || !rep.Thresholds[0].Met {
		t.Errorf("report %+v, %v: want nodefs.available met", rep, err)
	}

	soft := e.poolNodes(t, "soft")[0]
	rep, err = e.s.SetDisk(t.Context(), soft.Name, DiskUsage{NodefsUsedBytes: c - pct(0.2) + 1})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]DiskThreshold{}
	for _, th := range rep.Thresholds {
		got[th.Signal+map[bool]string{true: " soft"}[th.Soft]] = th
	}
	if len(got) != 3 || got["nodefs.available"].Bytes != pct(0.1) || got["nodefs.available"].Met ||
		got["nodefs.available soft"].Bytes != pct(0.2) || !got["nodefs.available soft"].Met || got["imagefs.available soft"].Bytes != pct(0.25) {
		t.Errorf("soft pool thresholds %+v", rep.Thresholds)
	}

	for name, tc := range map[string]struct {
		node string
		u    DiskUsage
		code codes.Code
	}{
		"unknown node": {"gke-x", DiskUsage{}, codes.NotFound},
		"negative":     {hard.Name, DiskUsage{ImagefsUsedBytes: -1}, codes.InvalidArgument},
	} {
		if _, err := e.s.SetDisk(t.Context(), tc.node, tc.u); status.Code(err) != tc.code {
			t.Errorf("%s: %v, want %s", name, err, tc.code)
		}
	}
}

// TestSetDiskEvicts: past the threshold the node's kubelet posts DiskPressure and evicts in its
// order, one Pod at a time: the Pod using more than it requested first (whatever its priority),
// then the lowest priority; each ends Failed, reason Evicted, with kubelet's message and the
// DisruptionTarget condition.
func TestSetDiskEvicts(t *testing.T) {
	t.Parallel()
	e := start(t, nil)
	node := e.poolNodes(t, "pool-a")[0]
	t0 := time.Now().Add(-time.Hour)
	low := runningPod(t, e, node.Name, "low", 0, "", t0)
	big := runningPod(t, e, node.Name, "big", 1000, "2147483648", t0.Add(time.Minute))
	capacity := node.Status.Capacity[corev1.ResourceEphemeralStorage]
	c := capacity.Value()
	// Free space 1 GiB short of the 10% line once big's 2 GiB are freed: low goes next.
	used := c - c/10 + 1<<30
	rep, err := e.s.SetDisk(t.Context(), node.Name, DiskUsage{NodefsUsedBytes: used - 30<<30, ImagefsUsedBytes: 30 << 30})
	if err != nil || !rep.Thresholds[0].Met {
		t.Fatalf("report %+v, %v", rep, err)
	}
	failed := func(p *corev1.Pod) (*corev1.Pod, bool) {
		got, err := e.kube.CoreV1().Pods("olap").Get(t.Context(), p.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return got, got.Status.Phase == corev1.PodFailed
	}
	var bigAfter, lowAfter *corev1.Pod
	err = wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		var bigDone, lowDone bool
		lowAfter, lowDone = failed(low)
		if lowDone && bigAfter == nil {
			t.Fatalf("low was evicted before big: kubelet ranks usage above request first")
		}
		bigAfter, bigDone = failed(big)
		if !bigDone {
			bigAfter = nil
		}
		return bigDone && lowDone, nil
	})
	if err != nil {
		t.Fatalf("evictions: %v (big %+v, low %+v)", err, bigAfter, lowAfter)
	}
	for _, p := range []*corev1.Pod{bigAfter, lowAfter} {
		st := p.Status
		if st.Reason != "Evicted" || !strings.HasPrefix(st.Message, "The node was low on resource: ephemeral-storage. Threshold quantity: ") {
			t.Errorf("%s: reason %q message %q", p.Name, st.Reason, st.Message)
		}
		var disruption, ready bool
		for _, cond := range st.Conditions {
			disruption = disruption || cond.Type == corev1.DisruptionTarget && cond.Status == corev1.ConditionTrue && cond.Reason == corev1.PodReasonTerminationByKubelet
			ready = ready || cond.Type == corev1.PodReady && cond.Status == corev1.ConditionTrue
		}
		if !disruption || ready || st.ContainerStatuses[0].State.Terminated == nil {
			t.Errorf("%s: status %+v: want DisruptionTarget, not Ready, container terminated", p.Name, st)
		}
	}
	if !strings.Contains(bigAfter.Status.Message, "Container historical was using 2Gi, request is 0, has larger consumption of ephemeral-storage.") {
		t.Errorf("big's message %q: want kubelet's container usage", bigAfter.Status.Message)
	}
	// The status update posts the condition kubelet's setter writes.
	err = wait.PollUntilContextTimeout(t.Context(), 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		n, err := e.kube.CoreV1().Nodes().Get(ctx, node.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, cond := range n.Status.Conditions {
			if cond.Type == corev1.NodeDiskPressure {
				return cond.Status == corev1.ConditionTrue && cond.Reason == "KubeletHasDiskPressure" && cond.Message == "kubelet has disk pressure", nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("DiskPressure condition: %v", err)
	}
}
