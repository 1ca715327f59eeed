package vgbootstrap_test

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/olapgke/terraform-provider-olapgke/internal/topolvm"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/olapgke/terraform-provider-olapgke/internal/acctest"
	"github.com/olapgke/terraform-provider-olapgke/internal/stsutil"
)

// The sandbox's simulated bootstrap reads this node fact (internal/sandbox/topolvm
// AnnForeignVolumeGroup): the node's Local SSDs already hold volume group "data".
const annForeignVolumeGroup = "sandbox.olapgke.io/foreign-volume-group"

const poolHCL = `
resource "olapgke_local_ssd_node_pool" "pool" {
  name                  = "vgb-pool"
  machine_type          = "n2-standard-8"
  local_nvme_ssd_count  = 2
  node_count            = 2
  storage_startup_taint = true
  deletion_protection   = false
}
`

const bootstrapHCL = `
resource "olapgke_volume_group_bootstrap" "this" {
  image = "registry.example/olapgke-vg-bootstrap:1"
}
`

// TestAccVolumeGroupBootstrap walks a Local-SSD pool through the stages it goes through on GKE.
// The pool is created with the start-up taint: its nodes have no volume group and no TopoLVM
// capacity. One node's Local SSDs already hold another tool's volume group. The bootstrap is
// installed by Terraform: the other node gets its volume group, TopoLVM publishes capacity, the
// taint goes; the foreign node is left alone with Warning Events and the apply names it. A
// historical set then lands and binds on the prepared node. GKE recreates that node's VM under
// the same name (empty disks): the bootstrap creates the group again and the next plan reports
// the ordinals' local data lost. Import finds the same configuration; destroy removes the objects.

// TestMain stops the package's sandbox when the tests end and shows its log tail when one
// failed (acctest.Main), as every acceptance package does.
func TestMain(m *testing.M) { acctest.Main(m) }

func TestAccVolumeGroupBootstrap(t *testing.T) {
	env := acctest.Sandbox(t)
	ctx := t.Context()
	tf := acctest.NewTF(t, poolHCL)
	t.Cleanup(func() { _, _ = tf.Run("destroy", "-auto-approve") })
	if out, err := tf.Apply(); err != nil {
		t.Fatalf("apply pool: %v\n%s", err, out)
	}
	nodes := poolNodes(t, env, "vgb-pool")
	if len(nodes) != 2 {
		t.Fatalf("pool nodes %v", nodes)
	}
	foreign, good := nodes[0], nodes[1]
	for _, n := range nodes {
		node := getNode(t, env, n)
		if !tainted(node) || node.Annotations[stsutil.AnnotationCapacityPrefix+"00default"] != "" {
			t.Fatalf("node %s before the bootstrap: taints %v annotations %v", n, node.Spec.Taints, node.Annotations)
		}
	}
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{annForeignVolumeGroup: "data"}}})
	if _, err := env.Kube.CoreV1().Nodes().Patch(ctx, foreign, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}

	tf.Write(poolHCL + bootstrapHCL)
	out, err := tf.Apply()
	if err != nil {
		t.Fatalf("apply bootstrap: %v\n%s", err, out)
	}
	flat := strings.Join(strings.Fields(out), " ")
	for _, want := range []string{
		"Warning: Volume Group Not Created On Some Nodes",
		"- " + foreign + ": VolumeGroupNotCreated: no empty Local SSD matches",
		"/dev/nvme0n1 holds data (foreign-pv), not created by olapgke-vg-bootstrap: left untouched",
	} {
		if !strings.Contains(flat, want) {
			t.Errorf("apply output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(flat, "- "+good+":") || strings.Contains(flat, "Still Running") {
		t.Errorf("apply output names the prepared node or is still waiting:\n%s", out)
	}
	// Apply returned once the good node was ready: no waiting here.
	g := getNode(t, env, good)
	if tainted(g) || !strings.HasPrefix(g.Annotations[topolvm.AnnBootstrapVolumeGroup], "vg-ssd created ") {
		t.Errorf("prepared node: taints %v annotations %v", g.Spec.Taints, g.Annotations)
	}
	if !waitCapacity(ctx, env, good) {
		t.Errorf("prepared node %s: TopoLVM published no capacity", good)
	}
	if f := getNode(t, env, foreign); !tainted(f) || f.Annotations[topolvm.AnnBootstrapVolumeGroup] != "" {
		t.Errorf("foreign node was touched: taints %v annotations %v", f.Spec.Taints, f.Annotations)
	}
	ds, err := env.Kube.AppsV1().DaemonSets("olapgke-system").Get(ctx, "vg-bootstrap", metav1.GetOptions{})
	if err != nil || ds.Spec.Template.Spec.Containers[0].Image != "registry.example/olapgke-vg-bootstrap:1" {
		t.Fatalf("DaemonSet: %v", err)
	}
	if cm, err := env.Kube.CoreV1().ConfigMaps("olapgke-system").Get(ctx, "vg-bootstrap-script", metav1.GetOptions{}); err != nil || !strings.Contains(cm.Data["vg-bootstrap.sh"], "untaint_and_annotate") {
		t.Fatalf("script ConfigMap: %v", err)
	}
	tf.PlanEmpty()

	// Import finds what the configuration says.
	if out, err := tf.Run("state", "rm", "olapgke_volume_group_bootstrap.this"); err != nil {
		t.Fatalf("state rm: %v\n%s", err, out)
	}
	if out, err := tf.Run("import", "olapgke_volume_group_bootstrap.this", "olapgke-system"); err != nil {
		t.Fatalf("import: %v\n%s", err, out)
	}
	tf.PlanEmpty()

	// A historical set lands and binds on the prepared node.
	ns := "vgb-hist"
	if _, err := env.Kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Kube.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{}) })
	cfg := poolHCL + bootstrapHCL + strings.Replace(acctest.HistoricalStatefulSetHCL(ns, "vgb-pool", "olap:1"),
		`resource "olapgke_statefulset" "hist" {`, `resource "olapgke_statefulset" "hist" {
  depends_on = [olapgke_volume_group_bootstrap.this]`, 1)
	tf.Write(cfg)
	if out, err := tf.Apply(); err != nil {
		t.Fatalf("apply historicals: %v\n%s", err, out)
	}
	for o := int32(0); o < 3; o++ {
		p, err := env.Kube.CoreV1().Pods(ns).Get(ctx, stsutil.PodName("hist", o), metav1.GetOptions{})
		if err != nil || p.Spec.NodeName != good {
			t.Fatalf("ordinal %d: node %q (%v), want %s", o, p.Spec.NodeName, err, good)
		}
		c, err := env.Kube.CoreV1().PersistentVolumeClaims(ns).Get(ctx, fmt.Sprintf("cache-hist-%d", o), metav1.GetOptions{})
		if err != nil || c.Status.Phase != corev1.ClaimBound {
			t.Fatalf("claim of ordinal %d: %v %v", o, c.Status.Phase, err)
		}
	}
	// A refresh with every ordinal Ready records the node's VM identity (private state).
	tf.PlanEmpty()

	// GKE recreates the VM under the same name: empty Local SSDs.
	before := getNode(t, env, good).Annotations[topolvm.AnnBootstrapVolumeGroup]
	if err := env.RecreateNode(ctx, good, acctest.RecreateSameName); err != nil {
		t.Fatal(err)
	}
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		n, err := env.Kube.CoreV1().Nodes().Get(ctx, good, metav1.GetOptions{})
		if err != nil {
			return false, nil //nolint:nilerr // transient: ask again
		}
		return n.Annotations["sandbox.olapgke.io/bootstrap-system-uuid"] == n.Status.NodeInfo.SystemUUID &&
			n.Annotations[topolvm.AnnBootstrapVolumeGroup] != before && stsutil.NodeReady(n) == corev1.ConditionTrue, nil
	})
	if err != nil {
		n := getNode(t, env, good)
		t.Fatalf("volume group not created again on %s (%v): annotations %v", good, err, n.Annotations)
	}
	if !eventCount(ctx, t, env, good, "VolumeGroupCreated", 2) {
		t.Errorf("node %s: want a second VolumeGroupCreated event", good)
	}
	out, _ = tf.Run("plan")
	flat = strings.Join(strings.Fields(out), " ")
	// The bootstrap's annotation dates the new volume group after the volumes: the loss is
	// judged on the disks themselves, before olapgke's record of the VM.
	for _, want := range []string{"Warning: Local Data Lost Outside Terraform", "the volume group on node " + good + "'s Local SSDs was created after the volume"} {
		if !strings.Contains(flat, want) {
			t.Errorf("plan after the VM recreation lacks %q:\n%s", want, out)
		}
	}

	tf.Write(poolHCL)
	if out, err := tf.Apply(); err != nil {
		t.Fatalf("destroy bootstrap: %v\n%s", err, out)
	}
	if _, err := env.Kube.AppsV1().DaemonSets("olapgke-system").Get(ctx, "vg-bootstrap", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("DaemonSet after destroy: %v", err)
	}
	if n, err := env.Kube.CoreV1().Namespaces().Get(ctx, "olapgke-system", metav1.GetOptions{}); err == nil && n.DeletionTimestamp == nil {
		t.Errorf("namespace olapgke-system not deleted")
	}
}

func poolNodes(t *testing.T, env *acctest.Env, pool string) []string {
	t.Helper()
	l, err := env.Kube.CoreV1().Nodes().List(t.Context(), metav1.ListOptions{LabelSelector: "cloud.google.com/gke-nodepool=" + pool})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, n := range l.Items {
		names = append(names, n.Name)
	}
	slices.Sort(names)
	return names
}

func getNode(t *testing.T, env *acctest.Env, name string) *corev1.Node {
	t.Helper()
	n, err := env.Kube.CoreV1().Nodes().Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func tainted(n *corev1.Node) bool {
	return slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == stsutil.TaintStorageNotReady })
}

// waitCapacity waits for TopoLVM's capacity annotation on the node.
func waitCapacity(ctx context.Context, env *acctest.Env, node string) bool {
	return wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		n, err := env.Kube.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		return err == nil && n.Annotations[stsutil.AnnotationCapacityPrefix+"00default"] != "", nil
	}) == nil
}

// eventCount waits until the bootstrap's Events of reason about node add up to want.
func eventCount(ctx context.Context, t *testing.T, env *acctest.Env, node, reason string, want int32) bool {
	t.Helper()
	return wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		l, err := env.Kube.CoreV1().Events("").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + node + ",reason=" + reason})
		if err != nil {
			return false, nil //nolint:nilerr // transient: ask again
		}
		var n int32
		for _, e := range l.Items {
			n += max(e.Count, 1)
		}
		return n >= want, nil
	}) == nil
}

// TestAccVolumeGroupBootstrap_SetBeforeStorage: a Local-SSD pool with the start-up taint and a
// historical set on it, in one apply, while nothing prepares the nodes yet (the bootstrap is
// installed elsewhere, later). When the set is applied its nodes carry the taint, so TopoLVM
// is not ready there: that is a wait, not a refusal. The apply warns "Waiting For TopoLVM On
// Target Nodes" and leaves the Pods Pending (wait_for_rollout = false here); once the bootstrap
// prepared the nodes, every ordinal lands and binds there.
func TestAccVolumeGroupBootstrap_SetBeforeStorage(t *testing.T) {
	env := acctest.Sandbox(t)
	ctx := t.Context()
	ns := "vgb-set-first"
	if _, err := env.Kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Kube.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{}) })
	pool := strings.ReplaceAll(poolHCL, "vgb-pool", "vgb-first")
	// The set selects the pool once its nodes are known, as modules/olap-historical does: its
	// placement check runs when it is applied, right after the pool.
	set := strings.Replace(acctest.HistoricalStatefulSetHCL(ns, "vgb-first", "olap:1"),
		`"cloud.google.com/gke-nodepool" = "vgb-first"`,
		`"cloud.google.com/gke-nodepool" = length(olapgke_local_ssd_node_pool.pool.nodes) >= 0 ? olapgke_local_ssd_node_pool.pool.name : null`, 1)
	set = strings.Replace(set, `resource "olapgke_statefulset" "hist" {`, `resource "olapgke_statefulset" "hist" {
  wait_for_rollout = false`, 1)
	if !strings.Contains(set, "olapgke_local_ssd_node_pool.pool.nodes") || !strings.Contains(set, "wait_for_rollout") {
		t.Fatal("HistoricalStatefulSetHCL changed: node selector or wait_for_rollout not inserted")
	}
	tf := acctest.NewTF(t, pool+set)
	t.Cleanup(func() { _, _ = tf.Run("destroy", "-auto-approve") })
	out, err := tf.Apply()
	if err != nil {
		t.Fatalf("apply pool and set: %v\n%s", err, out)
	}
	flat := strings.Join(strings.Fields(out), " ")
	if !strings.Contains(flat, "Warning: Waiting For TopoLVM On Target Nodes") || !strings.Contains(flat, "carries the start-up taint olapgke.io/storage-not-ready") {
		t.Errorf("apply did not say it waits for TopoLVM:\n%s", out)
	}
	nodes := poolNodes(t, env, "vgb-first")
	for _, n := range nodes {
		if !tainted(getNode(t, env, n)) {
			t.Fatalf("node %s lost the start-up taint before any bootstrap", n)
		}
	}

	tf.Write(pool + set + bootstrapHCL)
	if out, err := tf.Apply(); err != nil {
		t.Fatalf("apply bootstrap: %v\n%s", err, out)
	}
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		for o := int32(0); o < 3; o++ {
			p, err := env.Kube.CoreV1().Pods(ns).Get(ctx, stsutil.PodName("hist", o), metav1.GetOptions{})
			if err != nil || !slices.Contains(nodes, p.Spec.NodeName) || !stsutil.PodReady(p) {
				return false, nil //nolint:nilerr // not there yet: ask again
			}
		}
		return true, nil
	})
	if err != nil {
		t.Fatalf("ordinals not Ready on %v after the bootstrap: %v", nodes, err)
	}
	tf.PlanEmpty()
}
