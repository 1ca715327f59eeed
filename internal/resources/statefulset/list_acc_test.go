package statefulset_test

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"

	"github.com/olapgke/terraform-provider-olapgke/internal/acctest"
	"github.com/olapgke/terraform-provider-olapgke/internal/fixture"
	"github.com/olapgke/terraform-provider-olapgke/internal/stsutil"
)

// TestAccQuery_StatefulSets: `terraform query` lists the StatefulSets on TopoLVM storage (two),
// not the one on other storage; -json carries each one's per-ordinal verdicts; the import
// blocks -generate-config-out writes plan as imports with no change.
func TestAccQuery_StatefulSets(t *testing.T) {
	env := acctest.Sandbox(t)
	acctest.PreCheck(t)
	acctest.RequireActions(t) // list resources came with actions: Terraform 1.14+
	ctx := t.Context()
	const ns = "query-sets"
	if _, err := env.Kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The sandbox is shared by the package's tests: wait until the namespace and its Pods are
	// gone, so that no later test finds a namespace being deleted (the GKE emulator's VM
	// recreation evicts Pods, which a terminating namespace refuses).
	t.Cleanup(func() {
		ctx := context.Background()
		_ = env.Kube.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{})
		err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
			_, err := env.Kube.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
			return apierrors.IsNotFound(err), nil
		})
		if err != nil {
			t.Errorf("namespace %s not gone: %v", ns, err)
		}
	})
	plain := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "query-plain"}, Provisioner: "kubernetes.io/no-provisioner",
		VolumeBindingMode: ptr.To(storagev1.VolumeBindingWaitForFirstConsumer)}
	if _, err := env.Kube.StorageV1().StorageClasses().Create(ctx, plain, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = env.Kube.StorageV1().StorageClasses().Delete(context.Background(), plain.Name, metav1.DeleteOptions{})
	})
	for _, h := range []fixture.Historical{
		{Namespace: ns, Name: "hist-a", Replicas: 2, Pool: "pool-a", Claim: "cache", StorageClass: "topolvm-provisioner", Size: "1Gi"},
		{Namespace: ns, Name: "hist-b", Replicas: 1, Pool: "pool-a", Claim: "cache", StorageClass: "topolvm-provisioner", Size: "1Gi"},
		{Namespace: ns, Name: "stray", Replicas: 0, Pool: "pool-a", Claim: "data", StorageClass: plain.Name, Size: "1Gi"},
	} {
		if _, err := env.Kube.AppsV1().StatefulSets(ns).Create(ctx, h.StatefulSet(), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		pods, err := env.Kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		ready := 0
		for i := range pods.Items {
			if stsutil.PodReady(&pods.Items[i]) {
				ready++
			}
		}
		return ready == 3, nil
	})
	if err != nil {
		t.Fatalf("the two TopoLVM StatefulSets' Pods not Ready: %v", err)
	}

	tf := acctest.NewTF(t, "")
	query := `
list "olapgke_statefulset" "olap" {
  provider         = olapgke
  include_resource = true
  config {
    namespace = "query-sets"
  }
}
`
	if err := os.WriteFile(filepath.Join(tf.Dir, "adopt.tfquery.hcl"), []byte(query), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := tf.Run("query", "-json")
	if err != nil {
		t.Fatalf("terraform query -json: %v\n%s", err, out)
	}
	listed := map[string]string{} // display name -> address
	verdicts := 0
	for _, r := range acctest.QueryResults(out) {
		listed[r.DisplayName] = r.Address
		if ords, ok := r.Resource["ordinals"].([]any); ok && len(ords) > 0 {
			if o, ok := ords[0].(map[string]any); ok && o["action"] != nil && o["schedulable"] != nil {
				verdicts++
			}
		}
	}
	if len(listed) != 2 || !hasKeyPrefix(listed, ns+"/hist-a (2 replicas") || !hasKeyPrefix(listed, ns+"/hist-b (1 replicas") {
		t.Fatalf("listed %v, want hist-a and hist-b only:\n%s", keys(listed), out)
	}
	if verdicts != 2 {
		t.Errorf("%d results carry per-ordinal verdicts (action, schedulable), want 2:\n%s", verdicts, out)
	}

	out, err = tf.Run("query", "-generate-config-out=generated.tf")
	if err != nil {
		t.Fatalf("terraform query -generate-config-out: %v\n%s", err, out)
	}
	gen, err := os.ReadFile(filepath.Join(tf.Dir, "generated.tf"))
	if err != nil {
		t.Fatal(err)
	}
	if n := len(regexp.MustCompile(`(?m)^import \{`).FindAll(gen, -1)); n != 2 || strings.Contains(string(gen), "stray") {
		t.Fatalf("generated.tf has %d import blocks (want 2, no stray):\n%s", n, gen)
	}
	// The generated configuration imports both and changes nothing.
	out, err = tf.Run("plan", "-detailed-exitcode")
	if !strings.Contains(out, "2 to import, 0 to add, 0 to change, 0 to destroy") {
		t.Errorf("plan of the generated imports (%v), want 2 to import and nothing else:\n%s\n%s", err, out, gen)
	}
}

func hasKeyPrefix(m map[string]string, prefix string) bool {
	for k := range m {
		if strings.HasPrefix(k, prefix) {
			return true
		}
	}
	return false
}

func keys(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
