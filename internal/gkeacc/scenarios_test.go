package gkeacc

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/olapgke/terraform-provider-olapgke/internal/engine"
	planmigration "github.com/olapgke/terraform-provider-olapgke/internal/planner/migration"
	"github.com/olapgke/terraform-provider-olapgke/internal/stsutil"
)

const set = "hist"

// TestAccGKE_IncidentRefused: the README's incident on real nodes. A RollingUpdate StatefulSet on
// pool a, its PVs pinned to pool a's nodes by TopoLVM; switching its node selector to pool b is
// refused at plan, naming every ordinal, before anything is changed.
func TestAccGKE_IncidentRefused(t *testing.T) {
	c := setup(t)
	pools := c.poolHCL("a", false, "") + c.poolHCL("b", false, "")
	tf := c.terraform(pools, nil)
	c.apply(tf, pools)
	c.waitStorageReady(c.pool("a"))
	c.waitStorageReady(c.pool("b"))

	c.apply(tf, pools+c.stsHCL(set, "a", imageV1, "{type: RollingUpdate}", 2))
	before := c.ordinals(set, 2)

	out := c.planRefused(tf, pools+c.stsHCL(set, "b", imageV1, "{type: RollingUpdate}", 2), "Ordinals Would Stay Pending")
	for _, o := range []string{"- " + set + "-0", "- " + set + "-1"} {
		if !strings.Contains(out, o) {
			t.Errorf("the refusal does not name %s:\n%s", o, out)
		}
	}
	if after := c.ordinals(set, 2); !equal(before, after) {
		t.Errorf("a refused plan changed the cluster: before %+v, after %+v", before, after)
	}
}

// TestAccGKE_PoolMoveOneOrdinal: the safe move, one ordinal. The template switches to pool b under
// OnDelete and olapgke_statefulset_migration moves ordinal 1 only: its PVC is replaced by one
// pinned on pool b, ordinal 0 keeps its Pod and PVC on pool a.
func TestAccGKE_PoolMoveOneOrdinal(t *testing.T) {
	c := setup(t)
	pools := c.poolHCL("a", false, "") + c.poolHCL("b", false, "")
	tf := c.terraform(pools, nil)
	c.apply(tf, pools)
	c.waitStorageReady(c.pool("a"))
	c.waitStorageReady(c.pool("b"))

	c.apply(tf, pools+c.stsHCL(set, "a", imageV1, "{type: OnDelete}", 2))
	before := c.ordinals(set, 2)

	c.apply(tf, pools+c.stsHCL(set, "b", imageV1, "{type: OnDelete}", 2)+`
resource "olapgke_statefulset_migration" "move" {
  namespace        = olapgke_statefulset.hist.namespace
  statefulset      = olapgke_statefulset.hist.name
  planned_manifest = jsonencode(olapgke_statefulset.hist.manifest)
  volume_claims    = ["cache"]
  ordinals         = [1]
  ordinal_timeout  = "15m"
}
`)
	after := c.ordinals(set, 2)
	if after[0] != before[0] {
		t.Errorf("ordinal 0 was not asked to move but changed: before %+v, after %+v", before[0], after[0])
	}
	if after[1].pool != c.pool("b") {
		t.Errorf("ordinal 1 runs on pool %q, want %q", after[1].pool, c.pool("b"))
	}
	if after[1].pvcUID == before[1].pvcUID {
		t.Errorf("ordinal 1 kept PVC %s: a move must replace it with one pinned on pool b", before[1].pvcUID)
	}
}

// TestAccGKE_DayTwoImageBump: an image change under RollingUpdate restarts every Pod in place (same
// node, PV pinned there) and replaces no PVC.
func TestAccGKE_DayTwoImageBump(t *testing.T) {
	c := setup(t)
	pools := c.poolHCL("a", false, "")
	tf := c.terraform(pools, nil)
	c.apply(tf, pools)
	c.waitStorageReady(c.pool("a"))

	c.apply(tf, pools+c.stsHCL(set, "a", imageV1, "{type: RollingUpdate}", 2))
	before := c.ordinals(set, 2)
	c.apply(tf, pools+c.stsHCL(set, "a", imageV2, "{type: RollingUpdate}", 2))
	after := c.ordinals(set, 2)
	for o, b := range before {
		a := after[o]
		if a.podUID == b.podUID {
			t.Errorf("ordinal %d: Pod not restarted by the image change", o)
		}
		if a.pvcUID != b.pvcUID {
			t.Errorf("ordinal %d: PVC replaced (%s -> %s): an image change must keep the data", o, b.pvcUID, a.pvcUID)
		}
		if a.node != b.node {
			t.Errorf("ordinal %d: moved from node %s to %s: a restart stays where its PV is pinned", o, b.node, a.node)
		}
	}
}

// TestAccGKE_NodePoolReplacementGuard: changing local_nvme_ssd_count replaces the node pool (new
// VMs, empty Local SSDs); while an ordinal's PV is pinned to one of its nodes the data-loss guard
// refuses it at plan. allow_local_data_loss is set before the test's destroy.
func TestAccGKE_NodePoolReplacementGuard(t *testing.T) {
	c := setup(t)
	guarded := c.poolHCL("a", true, "")
	var cfg string
	tf := c.terraform(guarded, func() string {
		return strings.Replace(cfg, "allow_local_data_loss = false", "allow_local_data_loss = true", 1)
	})
	cfg = guarded
	c.apply(tf, cfg)
	c.waitStorageReady(c.pool("a"))

	cfg = guarded + c.stsHCL(set, "a", imageV1, "{type: OnDelete}", 1)
	c.apply(tf, cfg)
	before := c.ordinals(set, 1)

	replaced := strings.Replace(guarded, "local_nvme_ssd_count  = 2", "local_nvme_ssd_count  = 4", 1) + c.stsHCL(set, "a", imageV1, "{type: OnDelete}", 1)
	out := c.planRefused(tf, replaced, "Local Data Would Be Lost")
	if !strings.Contains(out, "ordinal(s) 0") {
		t.Errorf("the refusal does not name ordinal 0:\n%s", out)
	}
	if after := c.ordinals(set, 1); !equal(before, after) {
		t.Errorf("a refused plan changed the cluster: before %+v, after %+v", before, after)
	}
}

func equal(a, b map[int32]ordinal) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// EnvCopyImage is the warm move's copier image on the real cluster (sh and rsync).
const EnvCopyImage = "OLAPGKE_GKE_COPY_IMAGE"

// TestAccGKE_WarmMoveKeepsData: a file written on ordinal 1's Local SSD volume before a warm move
// to pool b is read back, after the move, from the volume its new Pod uses on pool b.
func TestAccGKE_WarmMoveKeepsData(t *testing.T) {
	c := setup(t)
	pools := c.poolHCL("a", false, "") + c.poolHCL("b", false, "")
	tf := c.terraform(pools, nil)
	c.apply(tf, pools)
	c.waitStorageReady(c.pool("a"))
	c.waitStorageReady(c.pool("b"))
	c.apply(tf, pools+c.stsHCL(set, "a", imageV1, "{type: OnDelete}", 2))
	before := c.ordinals(set, 2)
	marker := "warm-" + c.suffix
	claim := stsutil.ClaimPVCName("cache", set, 1)
	if out := c.runOn(before[1].node, claim, "writer", "echo "+marker+" > /cache/marker && sync && cat /cache/marker"); strings.TrimSpace(out) != marker {
		t.Fatalf("writing the marker: %q", out)
	}
	c.apply(tf, pools+c.stsHCL(set, "b", imageV1, "{type: OnDelete}", 2)+fmt.Sprintf(`
resource "olapgke_statefulset_migration" "move" {
  namespace        = olapgke_statefulset.hist.namespace
  statefulset      = olapgke_statefulset.hist.name
  planned_manifest = jsonencode(olapgke_statefulset.hist.manifest)
  volume_claims    = ["cache"]
  ordinals         = [1]
  ordinal_timeout  = "20m"
  copy = {
    image   = %q
    timeout = "15m"
  }
}
`, envOr(EnvCopyImage, "docker.io/instrumentisto/rsync-ssh:latest")))
	after := c.ordinals(set, 2)
	if after[1].pool != c.pool("b") || after[1].pvcUID == before[1].pvcUID {
		t.Fatalf("ordinal 1 after the warm move: %+v (before %+v), want a new claim on pool b", after[1], before[1])
	}
	if after[0] != before[0] {
		t.Errorf("ordinal 0 changed: before %+v, after %+v", before[0], after[0])
	}
	if out := c.runOn(after[1].node, claim, "reader", "cat /cache/marker"); strings.TrimSpace(out) != marker {
		t.Errorf("the marker on pool b reads %q, want %q: the copy did not carry the data", out, marker)
	}
	// The real rsync's records, read from the sink's log through GKE's kubelet, made at least
	// the first progress Event (0%, read as soon as the sink runs).
	evs, err := c.kube.EventsV1().Events(c.ns).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sink := planmigration.CopierPodName(stsutil.PodName(set, 1), planmigration.CopierSink)
	progress := 0
	for _, e := range evs.Items {
		if e.Reason == engine.ReasonCopyProgress && e.Related != nil && e.Related.Name == sink && strings.Contains(e.Note, "copied (") {
			progress++
		}
	}
	if progress == 0 {
		t.Errorf("no %s Event for %s: the copy's progress was not read from its log", engine.ReasonCopyProgress, sink)
	}
}

// runOn runs script in a busybox Pod on node with claim mounted at /cache (ReadWriteOnce allows
// it next to the ordinal's Pod on the same node) and returns its output.
func (c *cluster) runOn(node, claim, name, script string) string {
	c.t.Helper()
	ctx := c.t.Context()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: c.ns, Name: name + "-" + c.suffix},
		Spec: corev1.PodSpec{NodeName: node, RestartPolicy: corev1.RestartPolicyNever,
			Tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
			Containers: []corev1.Container{{Name: "sh", Image: "registry.k8s.io/e2e-test-images/busybox:1.36.1-1",
				Command: []string{"sh", "-c", script}, VolumeMounts: []corev1.VolumeMount{{Name: "cache", MountPath: "/cache"}}}},
			Volumes: []corev1.Volume{{Name: "cache", VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}}}},
	}
	if _, err := c.kube.CoreV1().Pods(c.ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		c.t.Fatalf("creating Pod %s: %v", pod.Name, err)
	}
	defer func() { _ = c.kube.CoreV1().Pods(c.ns).Delete(context.Background(), pod.Name, metav1.DeleteOptions{}) }()
	err := wait.PollUntilContextTimeout(ctx, pollInterval/5, 5*time.Minute, true, func(ctx context.Context) (bool, error) {
		p, err := c.kube.CoreV1().Pods(c.ns).Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if p.Status.Phase == corev1.PodFailed {
			return false, fmt.Errorf("Pod %s failed: %s", p.Name, p.Status.Message)
		}
		return p.Status.Phase == corev1.PodSucceeded, nil
	})
	if err != nil {
		c.t.Fatalf("Pod %s on node %s: %v", pod.Name, node, err)
	}
	out, err := c.kube.CoreV1().Pods(c.ns).GetLogs(pod.Name, &corev1.PodLogOptions{}).DoRaw(ctx)
	if err != nil {
		c.t.Fatalf("logs of Pod %s: %v", pod.Name, err)
	}
	return string(out)
}
