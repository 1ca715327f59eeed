// Package gkeacc is the third test tier: the scenarios the sandbox proves (the incident refused
// at plan, a pool move, a day-2 image bump, the node-pool data-loss guard), run through the real
// terraform CLI against a real GKE cluster. It is opt-in and costs money: each test creates its
// own Local-SSD node pools (a few minutes of n2-standard-8 VMs with 2 x 375 GiB Local SSD each)
// and a namespace, and destroys them in t.Cleanup.
//
// Needs: TF_ACC=1, OLAPGKE_GKE_PROJECT, OLAPGKE_GKE_LOCATION, OLAPGKE_GKE_CLUSTER, Google
// credentials the provider's usual way (GOOGLE_OAUTH_ACCESS_TOKEN, GOOGLE_CREDENTIALS or
// Application Default Credentials), and a cluster prepared as the guide "Running on real GKE"
// says: the volume-group bootstrap (examples/topolvm-gke) and TopoLVM installed, and a TopoLVM
// StorageClass (OLAPGKE_GKE_STORAGE_CLASS, default olap-cache). `make testacc-gke` runs it.
package gkeacc

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/olapgke/terraform-provider-olapgke/internal/acctest"
	"github.com/olapgke/terraform-provider-olapgke/internal/provider"
	"github.com/olapgke/terraform-provider-olapgke/internal/stsutil"
)

// Environment variables of this tier.
const (
	EnvProject      = "OLAPGKE_GKE_PROJECT"
	EnvLocation     = "OLAPGKE_GKE_LOCATION"
	EnvCluster      = "OLAPGKE_GKE_CLUSTER"
	EnvStorageClass = "OLAPGKE_GKE_STORAGE_CLASS" // default olap-cache
	EnvMachineType  = "OLAPGKE_GKE_MACHINE_TYPE"  // default n2-standard-8
	EnvNodeZone     = "OLAPGKE_GKE_NODE_ZONE"     // one zone for the test pools (recommended on regional clusters)
	EnvImageType    = "OLAPGKE_GKE_IMAGE_TYPE"    // default UBUNTU_CONTAINERD (ships lvm2 for lvmd)
)

// StartupTaint is the taint the test pools are created with (storage_startup_taint) and the
// bootstrap removes.
const StartupTaint = stsutil.TaintStorageNotReady

// Timeouts on a real cluster: node pool creation alone takes minutes.
var (
	storageReadyTimeout = 15 * time.Minute
	pollInterval        = 10 * time.Second
)

// skipReason is why the tier does not run here, or "" when it does.
var skipReason string

func TestMain(m *testing.M) {
	var missing []string
	for _, k := range []string{EnvProject, EnvLocation, EnvCluster} {
		if os.Getenv(k) == "" {
			missing = append(missing, k)
		}
	}
	switch {
	case os.Getenv("TF_ACC") == "":
		skipReason = "real-GKE tier: set TF_ACC=1 and " + EnvProject + ", " + EnvLocation + ", " + EnvCluster +
			" (plus Google credentials: GOOGLE_OAUTH_ACCESS_TOKEN, GOOGLE_CREDENTIALS or Application Default Credentials) to run it; it creates node pools and costs money (make testacc-gke)"
	case len(missing) > 0:
		skipReason = "real-GKE tier: " + strings.Join(missing, ", ") + " not set; set " + EnvProject + ", " + EnvLocation + ", " + EnvCluster +
			" (plus Google credentials: GOOGLE_OAUTH_ACCESS_TOKEN, GOOGLE_CREDENTIALS or Application Default Credentials) to run it (make testacc-gke)"
	default:
		// The provider under test finds the cluster through its default path (GKE GetCluster),
		// never through a sandbox's emulator or a kubeconfig left in the environment.
		for _, k := range []string{"OLAPGKE_CONTAINER_ENDPOINT", "OLAPGKE_CONTAINER_INSECURE", "OLAPGKE_SANDBOX_CONTROL",
			"KUBE_HOST", "KUBE_TOKEN", "KUBE_CLUSTER_CA_CERT_DATA", "KUBE_CONFIG_PATH", "KUBE_CTX"} {
			_ = os.Unsetenv(k)
		}
		_ = os.Setenv(provider.EnvProject, os.Getenv(EnvProject))
		_ = os.Setenv(provider.EnvLocation, os.Getenv(EnvLocation))
		_ = os.Setenv(provider.EnvCluster, os.Getenv(EnvCluster))
	}
	os.Exit(m.Run())
}

// cluster is one test's view of the real cluster: a Kubernetes client built the way the provider
// builds it, and names with a random suffix.
type cluster struct {
	t      *testing.T
	kube   kubernetes.Interface
	suffix string
	ns     string
}

// setup skips unless the tier is configured, then creates the test's namespace (deleted last,
// after the test's terraform destroy).
func setup(t *testing.T) *cluster {
	t.Helper()
	if skipReason != "" {
		t.Skip(skipReason)
	}
	ctx := t.Context()
	c, err := provider.ClientsFromEnvironment(ctx, "gkeacc")
	if err != nil {
		t.Fatalf("provider clients from the environment: %v", err)
	}
	kube, err := c.Kube(ctx)
	if err != nil {
		t.Fatalf("Kubernetes client for %s/%s/%s: %v", c.Project, c.Location, c.Cluster, err)
	}
	b := make([]byte, 3)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	cl := &cluster{t: t, kube: kube, suffix: hex.EncodeToString(b)}
	cl.ns = "gkeacc-" + cl.suffix
	if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: cl.ns}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("creating namespace %s: %v", cl.ns, err)
	}
	t.Cleanup(func() {
		if err := kube.CoreV1().Namespaces().Delete(context.Background(), cl.ns, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("deleting namespace %s: %v (delete it by hand)", cl.ns, err)
		}
	})
	return cl
}

// terraform prepares the CLI harness on config and registers its destroy (runs before the
// namespace's deletion: cleanups run last-in first-out). final, when set, is applied before the
// destroy (e.g. allow_local_data_loss on a pool the guard protects).
func (c *cluster) terraform(config string, final func() string) *acctest.TF {
	c.t.Helper()
	tf := acctest.NewTF(c.t, config)
	c.t.Cleanup(func() {
		if final != nil {
			tf.Write(final())
			if out, err := tf.Apply(); err != nil {
				c.t.Logf("apply before destroy: %v\n%s", err, out)
			}
		}
		if out, err := tf.Run("destroy", "-auto-approve"); err != nil {
			c.t.Errorf("terraform destroy failed: %v\n%s\nNode pools gkeacc-%s-* may be left in the cluster: delete them (they cost money).", err, out, c.suffix)
		}
	})
	return tf
}

// apply applies config, which must succeed, and checks the next plan is empty.
func (c *cluster) apply(tf *acctest.TF, config string) {
	c.t.Helper()
	tf.Write(config)
	out, err := tf.Apply()
	if err != nil {
		c.t.Fatalf("apply failed: %v\n%s", err, out)
	}
	for _, bad := range acctest.ProviderBugTexts {
		if strings.Contains(out, bad) {
			c.t.Fatalf("apply printed %q:\n%s", bad, out)
		}
	}
	tf.PlanEmpty()
}

// planRefused plans config, which must fail with olapgke's diagnostic summary.
func (c *cluster) planRefused(tf *acctest.TF, config, summary string) string {
	c.t.Helper()
	tf.Write(config)
	out, err := tf.Run("plan")
	if err == nil {
		c.t.Fatalf("plan succeeded; want it refused with %q:\n%s", summary, out)
	}
	if got := acctest.ClearError(c.t, out); got != summary {
		c.t.Fatalf("plan refused with %q, want %q:\n%s", got, summary, out)
	}
	return out
}

// pool is the name of the test's node pool key.
func (c *cluster) pool(key string) string { return "gkeacc-" + c.suffix + "-" + key }

// waitStorageReady waits until every node of pool has the bootstrap's annotation, no startup
// taint, and TopoLVM capacity published: what a pool must reach before a historical can land.
func (c *cluster) waitStorageReady(pool string) {
	c.t.Helper()
	var last string
	err := wait.PollUntilContextTimeout(c.t.Context(), pollInterval, storageReadyTimeout, true, func(ctx context.Context) (bool, error) {
		nodes, err := c.kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: "cloud.google.com/gke-nodepool=" + pool})
		if err != nil {
			last = err.Error()
			return false, nil //nolint:nilerr // a failed read is retried until the timeout, which reports it
		}
		if len(nodes.Items) == 0 {
			last = "no nodes yet"
			return false, nil
		}
		caps, err := c.kube.StorageV1().CSIStorageCapacities("").List(ctx, metav1.ListOptions{})
		if err != nil {
			last = err.Error()
			return false, nil //nolint:nilerr // a failed read is retried until the timeout, which reports it
		}
		for _, n := range nodes.Items {
			if n.Annotations["olapgke.io/volume-group"] == "" {
				last = "node " + n.Name + ": no olapgke.io/volume-group annotation (is the bootstrap DaemonSet installed?)"
				return false, nil
			}
			for _, taint := range n.Spec.Taints {
				if taint.Key == StartupTaint {
					last = "node " + n.Name + ": startup taint still present"
					return false, nil
				}
			}
			published := false
			for _, cp := range caps.Items {
				if cp.NodeTopology != nil && cp.NodeTopology.MatchLabels["topology.topolvm.io/node"] == n.Name && cp.Capacity != nil && !cp.Capacity.IsZero() {
					published = true
				}
			}
			if !published {
				last = "node " + n.Name + ": no CSIStorageCapacity from TopoLVM yet"
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		c.t.Fatalf("pool %s: storage not ready after %s: %s", pool, storageReadyTimeout, last)
	}
}

// ordinal is what the checks compare before and after a change.
type ordinal struct {
	podUID, pvcUID, node, pool string
}

// ordinals reads every ordinal's Pod and PVC (the claim "cache") of set, all Ready.
func (c *cluster) ordinals(set string, replicas int) map[int32]ordinal {
	c.t.Helper()
	ctx := c.t.Context()
	out := map[int32]ordinal{}
	for o := int32(0); o < int32(replicas); o++ {
		p, err := c.kube.CoreV1().Pods(c.ns).Get(ctx, stsutil.PodName(set, o), metav1.GetOptions{})
		if err != nil {
			c.t.Fatalf("ordinal %d: %v", o, err)
		}
		if !stsutil.PodReady(p) {
			c.t.Fatalf("ordinal %d: Pod %s not Ready", o, p.Name)
		}
		pvc, err := c.kube.CoreV1().PersistentVolumeClaims(c.ns).Get(ctx, stsutil.ClaimPVCName("cache", set, o), metav1.GetOptions{})
		if err != nil {
			c.t.Fatalf("ordinal %d: %v", o, err)
		}
		n, err := c.kube.CoreV1().Nodes().Get(ctx, p.Spec.NodeName, metav1.GetOptions{})
		if err != nil {
			c.t.Fatalf("ordinal %d: node %s: %v", o, p.Spec.NodeName, err)
		}
		out[o] = ordinal{podUID: string(p.UID), pvcUID: string(pvc.UID), node: n.Name, pool: n.Labels["cloud.google.com/gke-nodepool"]}
	}
	return out
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

// poolHCL is a Local-SSD node pool of one node per zone, created with the startup taint the
// bootstrap removes. Every test pool allows local data loss unless guarded is set (the guard
// scenario), so the test's destroy is never refused.
func (c *cluster) poolHCL(key string, guarded bool, extra string) string {
	zones := ""
	if z := os.Getenv(EnvNodeZone); z != "" {
		zones = fmt.Sprintf("node_locations = [%q]", z)
	}
	return fmt.Sprintf(`
resource "olapgke_local_ssd_node_pool" %[1]q {
  name                  = %[2]q
  machine_type          = %[3]q
  image_type            = %[4]q
  local_nvme_ssd_count  = 2
  node_count            = 1
  %[5]s
  storage_startup_taint = true
  deletion_protection   = false
  allow_local_data_loss = %[6]t
  %[7]s
}
`, key, c.pool(key), envOr(EnvMachineType, "n2-standard-8"), envOr(EnvImageType, "UBUNTU_CONTAINERD"), zones, !guarded, extra)
}

// stsHCL is the incident's StatefulSet (the shape of the statefulset package's acceptance
// tests): replicas Pods on pool key's nodes, each with a TopoLVM volume "cache". The node
// selector references the pool resource, so Terraform destroys the set before its pool.
func (c *cluster) stsHCL(set, poolKey, image, strategy string, replicas int) string {
	return fmt.Sprintf(`
resource "olapgke_statefulset" "hist" {
  manifest = yamldecode(<<-EOT
    apiVersion: apps/v1
    kind: StatefulSet
    metadata:
      name: %[1]s
      namespace: %[2]s
    spec:
      serviceName: %[1]s
      replicas: %[6]d
      persistentVolumeClaimRetentionPolicy: {whenDeleted: Delete, whenScaled: Retain}
      selector:
        matchLabels: {app: %[1]s}
      updateStrategy: %[5]s
      template:
        metadata:
          labels: {app: %[1]s}
        spec:
          terminationGracePeriodSeconds: 5
          nodeSelector:
            cloud.google.com/gke-nodepool: ${olapgke_local_ssd_node_pool.%[3]s.name}
          containers:
          - name: olap
            image: %[4]s
            resources:
              requests: {cpu: 100m, memory: 64Mi}
            volumeMounts:
            - {name: cache, mountPath: /cache}
      volumeClaimTemplates:
      - metadata: {name: cache}
        spec:
          accessModes: [ReadWriteOnce]
          storageClassName: %[7]s
          volumeMode: Filesystem
          resources: {requests: {storage: 10Gi}}
    EOT
  )
}
`, set, c.ns, poolKey, image, strategy, replicas, envOr(EnvStorageClass, "olap-cache"))
}

const (
	imageV1 = "registry.k8s.io/pause:3.9"
	imageV2 = "registry.k8s.io/pause:3.10"
)
