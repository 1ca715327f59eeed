package statefulset_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/olapgke/terraform-provider-olapgke/internal/acctest"
	"github.com/olapgke/terraform-provider-olapgke/internal/stsutil"
)

// TestAccLocalDataLostOutsideTerraform: GKE recreates the VMs of two historicals on its own (the
// sandbox's auto-repair, in its two modes). The next plan warns "Local Data Lost Outside
// Terraform", naming ordinal, PVC, PV, node and what happened, and the ordinals data source
// reports the node that is gone.
func TestAccLocalDataLostOutsideTerraform(t *testing.T) {
	env := acctest.Sandbox(t)
	ns := namespace(t, env.Kube, "lost-data")
	cfg := acctest.HistoricalStatefulSetHCL(ns, "pool-b", "olap:1")
	tf := acctest.NewTF(t, cfg)
	t.Cleanup(func() { _, _ = tf.Run("destroy", "-auto-approve") })
	if out, err := tf.Apply(); err != nil {
		t.Fatalf("apply: %v\n%s", err, out)
	}
	// A refresh with every ordinal Ready records the nodes (UID, boot ID) in private state.
	out, err := tf.Run("plan", "-detailed-exitcode")
	if err != nil || strings.Contains(out, "Local Data Lost") {
		t.Fatalf("plan of a healthy set: %v\n%s", err, out)
	}

	nodeOf := func(o int32) string {
		p, err := env.Kube.CoreV1().Pods(ns).Get(t.Context(), stsutil.PodName("hist", o), metav1.GetOptions{})
		if err != nil || p.Spec.NodeName == "" {
			t.Fatalf("Pod of ordinal %d: %v", o, err)
		}
		return p.Spec.NodeName
	}
	sameName, newName := nodeOf(1), nodeOf(2)
	if sameName == newName {
		t.Fatalf("ordinals 1 and 2 share node %s; the test needs them apart", sameName)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	// TopoLVM's node finalizer deletes the claims of a deleted node, so such an ordinal usually
	// comes back by itself on a new, empty volume. While its claim still exists (here a
	// finalizer holds it, as a backup tool's would) the ordinal is pinned to a node that is gone.
	const hold = "olapgke.io/test-hold"
	patchFinalizers := func(ctx context.Context, fins []string) error {
		b, _ := json.Marshal(map[string]any{"metadata": map[string]any{"finalizers": fins}})
		_, err := env.Kube.CoreV1().PersistentVolumeClaims(ns).Patch(ctx, "cache-hist-2", types.MergePatchType, b, metav1.PatchOptions{})
		return err
	}
	if err := patchFinalizers(ctx, []string{"kubernetes.io/pvc-protection", hold}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = patchFinalizers(context.Background(), []string{"kubernetes.io/pvc-protection"}) })
	if err := env.RecreateNode(ctx, sameName, acctest.RecreateSameName); err != nil {
		t.Fatal(err)
	}
	if err := env.RecreateNode(ctx, newName, acctest.RecreateNewName); err != nil {
		t.Fatal(err)
	}
	// The same-name node is back (same Node object) once it is Ready again.
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		n, err := env.Kube.CoreV1().Nodes().Get(ctx, sameName, metav1.GetOptions{})
		return err == nil && stsutil.NodeReady(n) == corev1.ConditionTrue, nil //nolint:nilerr // not back yet: ask again
	}); err != nil {
		t.Fatalf("node %s not Ready again: %v", sameName, err)
	}

	tf.Write(cfg + `
data "olapgke_statefulset_ordinals" "hist" {
  namespace  = "` + ns + `"
  name       = "hist"
  depends_on = [olapgke_statefulset.hist]
}
`)
	out, _ = tf.Run("plan")
	flat := strings.Join(strings.Fields(out), " ")
	for _, want := range []string{
		"Warning: Local Data Lost Outside Terraform",
		"ordinal 1: PVC cache-hist-1",
		"pinned to node " + sameName + ": node " + sameName + " kept its name and Node object but runs on a new VM",
		"ordinal 2: PVC cache-hist-2",
		"node " + newName + " no longer exists",
		"olapgke_statefulset_migration",
	} {
		if !strings.Contains(flat, want) {
			t.Errorf("plan output lacks %q:\n%s", want, out)
		}
	}
	if t.Failed() {
		pvcs, _ := env.Kube.CoreV1().PersistentVolumeClaims(ns).List(context.Background(), metav1.ListOptions{})
		for _, c := range pvcs.Items {
			t.Logf("PVC %s volume=%s deleting=%v annotations=%v", c.Name, c.Spec.VolumeName, c.DeletionTimestamp != nil, c.Annotations)
			if pv, err := env.Kube.CoreV1().PersistentVolumes().Get(context.Background(), c.Spec.VolumeName, metav1.GetOptions{}); err == nil {
				t.Logf("  PV %s pinned to %s", pv.Name, stsutil.TopoLVMPinnedNode(pv))
			}
		}
	}
	if strings.Contains(flat, "ordinal 0: PVC") {
		t.Errorf("ordinal 0 kept its node but is reported lost:\n%s", out)
	}
	// The data source has no record of boot IDs: it reports only the node that is gone.
	js, _ := tf.Run("plan", "-json")
	var fromDataSource string
	for _, line := range strings.Split(js, "\n") {
		var msg struct {
			Diagnostic struct {
				Summary, Detail, Address string
			} `json:"diagnostic"`
		}
		if json.Unmarshal([]byte(line), &msg) == nil && msg.Diagnostic.Summary == "Local Data Lost Outside Terraform" &&
			msg.Diagnostic.Address == "data.olapgke_statefulset_ordinals.hist" {
			fromDataSource = msg.Diagnostic.Detail
		}
	}
	if !strings.Contains(fromDataSource, "ordinal 2: PVC cache-hist-2") || strings.Contains(fromDataSource, "ordinal 1:") {
		t.Errorf("the data source's warning should name ordinal 2 only:\n%s", fromDataSource)
	}
}

// TestAccLocalData_RebootKeepsTheData: a node of the set reboots (a guest reboot, a reset: the
// sandbox's reboot gives it a new boot ID on the same VM). Compute Engine keeps Local SSD data
// through that, so the next plan has no changes, reports the restart with the data expected
// intact and never advises a migration (which would delete the ordinal's PVC); the plan after it
// says nothing more. Then GKE recreates the same node's VM under the same name: that plan
// reports the loss. Near miss of TestAccLocalDataLostOutsideTerraform.
func TestAccLocalData_RebootKeepsTheData(t *testing.T) {
	env := acctest.Sandbox(t)
	ns := namespace(t, env.Kube, "reboot")
	cfg := acctest.HistoricalStatefulSetHCL(ns, "pool-b", "olap:1")
	tf := acctest.NewTF(t, cfg)
	t.Cleanup(func() { _, _ = tf.Run("destroy", "-auto-approve") })
	if out, err := tf.Apply(); err != nil {
		t.Fatalf("apply: %v\n%s", err, out)
	}
	// A refresh with every ordinal Ready records the nodes in private state.
	if out, err := tf.Run("plan", "-detailed-exitcode"); err != nil {
		t.Fatalf("plan of a healthy set: %v\n%s", err, out)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	p, err := env.Kube.CoreV1().Pods(ns).Get(ctx, stsutil.PodName("hist", 1), metav1.GetOptions{})
	if err != nil || p.Spec.NodeName == "" {
		t.Fatalf("Pod of ordinal 1: %v", err)
	}
	node := p.Spec.NodeName
	claim := func() *corev1.PersistentVolumeClaim {
		c, err := env.Kube.CoreV1().PersistentVolumeClaims(ns).Get(ctx, "cache-hist-1", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	before := claim()
	boot, err := env.RebootNode(ctx, node)
	if err != nil {
		t.Fatal(err)
	}

	out, err := tf.Run("plan", "-detailed-exitcode")
	flat := strings.Join(strings.Fields(out), " ")
	if err != nil {
		t.Fatalf("plan after a reboot of %s: want no changes and no error: %v\n%s", node, err, out)
	}
	for _, want := range []string{
		"Warning: Node Restarted, Local Data Expected Intact",
		"ordinal 1: PVC cache-hist-1",
		"node " + node + " restarted (boot ID " + boot,
		"node restarted, data expected intact",
		"Keep the PVCs",
	} {
		if !strings.Contains(flat, want) {
			t.Errorf("plan after the reboot lacks %q:\n%s", want, out)
		}
	}
	for _, never := range []string{"Local Data Lost", "olapgke_statefulset_migration"} {
		if strings.Contains(flat, never) {
			t.Errorf("plan after a reboot says %q:\n%s", never, out)
		}
	}
	// A plan keeps no state: the restart is recorded by the next apply, after which plans are
	// clean.
	if out, err := tf.Run("apply", "-refresh-only", "-auto-approve"); err != nil {
		t.Fatalf("apply -refresh-only: %v\n%s", err, out)
	}
	if out, err := tf.Run("plan", "-detailed-exitcode"); err != nil || strings.Contains(out, "Node Restarted") {
		t.Errorf("plan after the restart was recorded: want it clean: %v\n%s", err, out)
	}
	if after := claim(); after.UID != before.UID || after.Spec.VolumeName != before.Spec.VolumeName {
		t.Errorf("claim cache-hist-1 changed across the reboot: %s/%s -> %s/%s", before.UID, before.Spec.VolumeName, after.UID, after.Spec.VolumeName)
	}

	// The near miss: a new VM under the same name loses the data, and says so.
	if err := env.RecreateNode(ctx, node, acctest.RecreateSameName); err != nil {
		t.Fatal(err)
	}
	out, _ = tf.Run("plan")
	flat = strings.Join(strings.Fields(out), " ")
	for _, want := range []string{
		"Warning: Local Data Lost Outside Terraform",
		"ordinal 1: PVC cache-hist-1",
		"node " + node + " kept its name and Node object but runs on a new VM",
	} {
		if !strings.Contains(flat, want) {
			t.Errorf("plan after the same-name recreation lacks %q:\n%s", want, out)
		}
	}
}
