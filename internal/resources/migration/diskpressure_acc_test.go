package migration_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/olapgke/terraform-provider-olapgke/internal/acctest"
)

// TestAccDiskPressure_SeedIncident (#40 item 4) is the seed incident's first failure, end to
// end: a historical on a pool whose Local SSDs are TopoLVM's (raw block) and whose 100 GiB boot
// disk holds every node's ephemeral storage. olapgke_local_ssd_node_pool (the pool imported, only
// planned) warns "Nodes Will Hit DiskPressure" for an expected demand just over its headroom and
// not for one just under it; the sandbox's kubelet (kubelet's own eviction manager) judges the
// same filesystem with the same threshold: with GKE's reservation and the demand just under
// written to the node's disk it is not met, just over it is. Then the node posts DiskPressure,
// the node lifecycle controller taints it disk-pressure:NoSchedule, the kubelet evicts the
// historical (Failed, reason Evicted), the StatefulSet controller creates it again, and the new
// Pod stays Pending: its volume pins it to that node, which the scheduler now refuses.
func TestAccDiskPressure_SeedIncident(t *testing.T) {
	env := acctest.Sandbox(t)
	ensurePool(t, env, "diskp", 1)
	ns := "disk-pressure"
	f := newSet(t, env, ns, 1, "diskp", "1Gi")
	old, pvc := f.get(t, 0)
	node := old.Spec.NodeName
	ctx := t.Context()

	// The pool resource's arithmetic and warning, at a demand of 1 GiB to read its figures.
	tf := acctest.NewTF(t, diskPoolHCL(1))
	e, out := planEphemeral(t, tf)
	if strings.Contains(out, "Nodes Will Hit DiskPressure") {
		t.Fatalf("DiskPressure warning at 1 GiB of demand:\n%s", out)
	}
	headroomAtZero := e.HeadroomGiB + 1
	under, over := math.Floor(headroomAtZero)-1, math.Ceil(headroomAtZero)+1
	tf.Write(diskPoolHCL(under))
	eu, out := planEphemeral(t, tf)
	if strings.Contains(out, "Nodes Will Hit DiskPressure") || eu.HeadroomGiB < 0 {
		t.Fatalf("demand %g GiB (headroom %g): want no DiskPressure warning:\n%s", under, eu.HeadroomGiB, out)
	}
	tf.Write(diskPoolHCL(over))
	if _, out := planEphemeral(t, tf); !strings.Contains(out, "Nodes Will Hit DiskPressure") {
		t.Fatalf("demand %g GiB: want the DiskPressure warning:\n%s", over, out)
	}

	// The same filesystem and threshold in the node's kubelet: the system's reservation is
	// written outside the images, the demand is images.
	gib := func(g float64) int64 { return int64(g * (1 << 30)) }
	rep, err := env.SetDisk(ctx, node, gib(e.ReservedGiB), gib(under))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = env.SetDisk(context.Background(), node, 0, 0) })
	if len(rep.Thresholds) != 1 || rep.Thresholds[0].Signal != "nodefs.available" {
		t.Fatalf("kubelet thresholds %+v: want GKE's nodefs.available", rep.Thresholds)
	}
	th := rep.Thresholds[0]
	if d := math.Abs(float64(th.Bytes)/(1<<30) - e.EvictionThresholdGiB); d > 0.005 || math.Abs(float64(rep.CapacityBytes)/(1<<30)-e.CapacityGiB) > 0.005 {
		t.Errorf("kubelet: filesystem %d bytes, threshold %d bytes; the pool resource: capacity %g GiB, threshold %g GiB (%s)",
			rep.CapacityBytes, th.Bytes, e.CapacityGiB, e.EvictionThresholdGiB, e.EvictionSignal)
	}
	if th.Met {
		t.Fatalf("kubelet: %s met at %d bytes free with %g GiB of demand, which the pool resource says fits", th.Signal, rep.AvailableBytes, under)
	}
	rep, err = env.SetDisk(ctx, node, gib(e.ReservedGiB), gib(over))
	if err != nil || !rep.Thresholds[0].Met {
		t.Fatalf("kubelet with %g GiB of demand: %+v %v: want the threshold met, as the pool resource warns", over, rep, err)
	}

	// The incident: evicted, recreated by the controller, Pending on the taint.
	var evicted bool
	err = wait.PollUntilContextTimeout(ctx, time.Second, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		evs, err := env.Kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + old.Name})
		if err != nil {
			return false, client(err)
		}
		for _, ev := range evs.Items {
			evicted = evicted || ev.Reason == "Evicted" && ev.InvolvedObject.UID == old.UID && ev.Source.Component == "kubelet" &&
				strings.HasPrefix(ev.Message, "The node was low on resource: ephemeral-storage.")
		}
		n, err := env.Kube.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			return false, client(err)
		}
		p, err := env.Kube.CoreV1().Pods(ns).Get(ctx, old.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, nil // between the controller's delete and create
		}
		if err != nil {
			return false, client(err)
		}
		return evicted && diskTainted(n) && p.UID != old.UID && pendingOnDiskPressure(p), nil
	})
	if err != nil {
		n, _ := env.Kube.CoreV1().Nodes().Get(context.Background(), node, metav1.GetOptions{})
		p, _ := env.Kube.CoreV1().Pods(ns).Get(context.Background(), old.Name, metav1.GetOptions{})
		t.Fatalf("after DiskPressure on %s: evicted event %v, node taints %v conditions %v, Pod %v: %v", node, evicted, n.Spec.Taints, n.Status.Conditions, p, err)
	}
	if _, c := f.get(t, 0); c.UID != pvc.UID || c.Spec.VolumeName != f.pvs[0] {
		t.Errorf("ordinal 0's claim changed: %s/%s, was %s/%s", c.UID, c.Spec.VolumeName, pvc.UID, f.pvs[0])
	}
}

// ephemeral is the pool resource's ephemeral_storage block.
type ephemeral struct {
	CapacityGiB          float64 `json:"capacity_gib"`
	ReservedGiB          float64 `json:"reserved_gib"`
	EvictionThresholdGiB float64 `json:"eviction_threshold_gib"`
	EvictionSignal       string  `json:"eviction_signal"`
	HeadroomGiB          float64 `json:"headroom_gib"`
}

// diskPoolHCL imports the test's pool into olapgke_local_ssd_node_pool with an expected
// ephemeral demand per node (it is only planned, never applied).
func diskPoolHCL(demandGiB float64) string {
	return fmt.Sprintf(`
import {
  to = olapgke_local_ssd_node_pool.diskp
  id = "diskp"
}
resource "olapgke_local_ssd_node_pool" "diskp" {
  name                   = "diskp"
  machine_type           = "n2-standard-8"
  local_nvme_ssd_count   = 2
  node_count             = 1
  boot_disk              = { size_gb = 100 }
  expected_ephemeral_gib = %g
}
`, demandGiB)
}

// planEphemeral plans and returns the pool's planned ephemeral_storage and the plan's output.
func planEphemeral(t *testing.T, f *acctest.TF) (ephemeral, string) {
	t.Helper()
	out, err := f.Run("plan", "-out=disk.plan")
	if err != nil {
		t.Fatalf("plan: %v\n%s", err, out)
	}
	js, err := f.Run("show", "-json", "disk.plan")
	if err != nil {
		t.Fatalf("show: %v\n%s", err, js)
	}
	var p struct {
		PlannedValues struct {
			RootModule struct {
				Resources []struct {
					Address string `json:"address"`
					Values  struct {
						Ephemeral ephemeral `json:"ephemeral_storage"`
					} `json:"values"`
				} `json:"resources"`
			} `json:"root_module"`
		} `json:"planned_values"`
	}
	if err := json.Unmarshal([]byte(js[strings.Index(js, "{"):]), &p); err != nil {
		t.Fatalf("plan JSON: %v\n%s", err, js)
	}
	for _, r := range p.PlannedValues.RootModule.Resources {
		if r.Address == "olapgke_local_ssd_node_pool.diskp" {
			return r.Values.Ephemeral, out
		}
	}
	t.Fatalf("no olapgke_local_ssd_node_pool.diskp in the plan:\n%s", js)
	return ephemeral{}, ""
}

func diskTainted(n *corev1.Node) bool {
	for _, tt := range n.Spec.Taints {
		if tt.Key == corev1.TaintNodeDiskPressure && tt.Effect == corev1.TaintEffectNoSchedule {
			return true
		}
	}
	return false
}

// pendingOnDiskPressure: the scheduler refused the Pod for an untolerated taint (kube-scheduler
// v1.37 names no key: "1 node(s) had untolerated taint(s)"; the caller checks that the pinned
// node's taint is disk-pressure).
func pendingOnDiskPressure(p *corev1.Pod) bool {
	if p.Status.Phase != corev1.PodPending || p.Spec.NodeName != "" {
		return false
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable &&
			strings.Contains(c.Message, "1 node(s) had untolerated taint(s)") {
			return true
		}
	}
	return false
}
