// Package planstability holds the plan-stability harness (issue 23) and the saved-plan tests:
// Terraform plans every resource again during apply and refuses the apply when a value known in
// the first plan differs ("Provider produced inconsistent final plan"), a provider bug as users
// see it. For every resource and data source, the harness plans the same change twice with the
// cluster perturbed in between — a transient error on the first read, a Pod restarted, a node
// cordoned or added, a Pod not Ready — and asserts that every value known in the first plan is
// equal in the second (or that the second refuses with olapgke's own diagnostic). Then it
// applies the first plan, saved before the perturbation: it applies, or stops with olapgke's
// diagnostic with nothing deleted; never "Provider produced inconsistent ...". Every
// perturbation runs with allow_unschedulable = false (a held ordinal refuses) and true (the
// plan goes on and warns).
package planstability

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/olapgke/terraform-provider-olapgke/internal/acctest"
	"github.com/olapgke/terraform-provider-olapgke/internal/faultproxy"
	"github.com/olapgke/terraform-provider-olapgke/internal/stsutil"
)

func TestMain(m *testing.M) {
	// Every Local-SSD node's set-up carves the thin pools of the thin classes here (planstab-thin and the module's planstab-mod),
	// 100 GiB each: lvmd exits "Thin pool not found" on a node without them, also on the nodes
	// of pools the tests create.
	if err := os.Setenv("OLAPGKE_SANDBOX_THIN_POOLS", "planstab-modpool=107374182400,planstab-pool=107374182400"); err != nil {
		panic(err)
	}
	acctest.MainWithWorld(m, acctest.TwoPoolWorld)
}

const ns = "planstab"

// config is every resource and data source of the provider: a node pool, a device class, an
// OnDelete StatefulSet with its migration (planned_manifest), a RollingUpdate StatefulSet, and
// both data sources. change is the edit the harness plans twice: a new pool, the device class's
// spare_gb, an image bump of both sets (restarts in place for the OnDelete one, controller waves
// for the RollingUpdate one). allow is both sets' allow_unschedulable.
func config(change, allow bool) string {
	image, spare, pool := "olap:1", 10, ""
	if change {
		image, spare = "olap:2", 12
		pool = `
resource "olapgke_local_ssd_node_pool" "c" {
  name                 = "planstab-c"
  machine_type         = "n2-standard-8"
  local_nvme_ssd_count = 2
  node_count           = 1
  deletion_protection  = false
}
`
	}
	return fmt.Sprintf(`%[4]s
resource "olapgke_topolvm_device_class" "thin" {
  name         = "planstab-thin"
  volume_group = "vg-ssd"
  type         = "thin"
  thin_pool    = { name = "planstab-pool", overprovision_ratio = 4 }
  spare_gb     = %[2]d
  force_destroy = true
  storage_class = { name = "planstab-thin" }
}

%[1]s

%[3]s

resource "olapgke_statefulset_migration" "hist" {
  namespace        = %[5]q
  statefulset      = "hist"
  planned_manifest = jsonencode(olapgke_statefulset.hist.manifest)
  ordinal_timeout  = "3m"
  depends_on       = [olapgke_statefulset.hist]
}

data "olapgke_statefulset_ordinals" "hist" {
  namespace  = %[5]q
  name       = "hist"
  depends_on = [olapgke_statefulset.hist]
}

data "olapgke_cluster" "this" {}

%[6]s
`, set("hist", "OnDelete", image, allow), spare, set("roll", "RollingUpdate", image, allow), pool, ns,
		module(image, allow))
}

// module is modules/olap-historical as a team uses it (its own Local SSD pool, device class,
// OnDelete StatefulSet and migration), with the same image bump as the two sets: the harness
// holds its planned values to the same rule as the resources' own.
func module(image string, allow bool) string {
	return fmt.Sprintf(`
module "mod" {
  source = %q

  name         = "modh"
  namespace    = %q
  image        = %q
  replicas     = 2
  cache_size   = "1Gi"
  device_class = {
    name          = "planstab-mod"
    type          = "thin"
    thin_pool     = { name = "planstab-modpool", overprovision_ratio = 4 }
    force_destroy = true
  }
  pools = {
    a = { node_count = 2, deletion_protection = false, allow_local_data_loss = true }
  }
  active_pool                      = "a"
  allow_unschedulable              = %v
  termination_grace_period_seconds = 1
  migration                        = { ordinal_timeout = "3m", timeout = "10m" }
}
`, filepath.Join(acctest.RepoRoot(), "modules", "olap-historical"), ns, image, allow)
}

func set(name, strategy, image string, allow bool) string {
	return fmt.Sprintf(`
resource "olapgke_statefulset" %[1]q {
  allow_unschedulable = %[5]v
  manifest = {
    apiVersion = "apps/v1"
    kind       = "StatefulSet"
    metadata   = { name = %[1]q, namespace = %[4]q }
    spec = {
      replicas       = 3
      serviceName    = %[1]q
      updateStrategy = { type = %[2]q }
      selector       = { matchLabels = { app = %[1]q } }
      template = {
        metadata = { labels = { app = %[1]q } }
        spec = {
          terminationGracePeriodSeconds = 1
          nodeSelector = { "cloud.google.com/gke-nodepool" = "pool-a" }
          containers = [{
            name         = "olap"
            image        = %[3]q
            volumeMounts = [{ name = "cache", mountPath = "/cache" }]
          }]
        }
      }
      volumeClaimTemplates = [{
        metadata = { name = "cache" }
        spec = {
          accessModes      = ["ReadWriteOnce"]
          storageClassName = "topolvm-provisioner"
          resources        = { requests = { storage = "1Gi" } }
        }
      }]
    }
  }
}
`, name, strategy, image, ns, allow)
}

// harness is one sandbox namespace with the base config applied, a terraform runner whose
// provider reaches the API server through a fault proxy, and a watch of every deletion.
type harness struct {
	t       *testing.T
	env     *acctest.Env
	tf      *acctest.TF
	failPod atomic.Bool // the proxy answers cluster-wide Pod LISTs with 500
	mu      sync.Mutex
	deleted []string
	// cordoned is the node a perturbation cordoned, for its undo (the Pod that was on it may be
	// Pending by then).
	cordoned string
}

func newHarness(t *testing.T) *harness {
	env := acctest.Sandbox(t)
	acctest.PreCheck(t)
	h := &harness{t: t, env: env}
	if _, err := env.Kube.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	p, err := faultproxy.New(env.REST, faultproxy.Config{
		Seed: 1, MaxFaults: 1 << 20, Rates: map[faultproxy.Kind]float64{faultproxy.InternalError: 1},
		Eligible: func(r *http.Request) bool {
			// The node pool's demand read (every running or pending Pod); the StatefulSet plans
			// list every Pod too, without a field selector, and are left alone.
			return h.failPod.Load() && r.Method == http.MethodGet && r.URL.Path == "/api/v1/pods" &&
				strings.Contains(r.URL.Query().Get("fieldSelector"), "status.phase")
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	h.tf = acctest.NewTF(t, config(false, false))
	if out, err := h.tf.Run("get"); err != nil {
		t.Fatalf("terraform get: %v\n%s", err, out)
	}
	h.tf.Env["KUBE_HOST"] = p.URL
	h.tf.Env["KUBE_TOKEN"] = env.Vars["GOOGLE_OAUTH_ACCESS_TOKEN"]
	h.tf.Env["KUBE_CLUSTER_CA_CERT_DATA"] = string(p.CAPEM)
	if out, err := h.tf.Apply(); err != nil {
		t.Fatalf("base apply: %v\n%s", err, out)
	}
	t.Cleanup(func() {
		h.tf.Write(config(false, false))
		if out, err := h.tf.Run("destroy", "-auto-approve"); err != nil {
			t.Logf("destroy: %v\n%s", err, out)
		}
	})
	h.watchDeletions()
	return h
}

func (h *harness) watchDeletions() {
	f := informers.NewSharedInformerFactoryWithOptions(h.env.Kube, 0, informers.WithNamespace(ns))
	gone := func(kind string) cache.ResourceEventHandlerFuncs {
		return cache.ResourceEventHandlerFuncs{DeleteFunc: func(obj any) {
			if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			if m, ok := obj.(metav1.Object); ok {
				h.mu.Lock()
				h.deleted = append(h.deleted, kind+"/"+m.GetName())
				h.mu.Unlock()
			}
		}}
	}
	if _, err := f.Core().V1().Pods().Informer().AddEventHandler(gone("pod")); err != nil {
		h.t.Fatal(err)
	}
	if _, err := f.Core().V1().PersistentVolumeClaims().Informer().AddEventHandler(gone("pvc")); err != nil {
		h.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	h.t.Cleanup(func() { cancel(); f.Shutdown() })
	f.Start(ctx.Done())
	f.WaitForCacheSync(ctx.Done())
}

func (h *harness) deletions() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := append([]string(nil), h.deleted...)
	h.deleted = nil
	return out
}

// plannedJSON is `terraform show -json` of a saved plan: resource address -> planned values and
// the unknown map.
type plannedJSON struct {
	ResourceChanges []struct {
		Address string `json:"address"`
		Mode    string `json:"mode"`
		Change  struct {
			Actions      []string `json:"actions"`
			After        any      `json:"after"`
			AfterUnknown any      `json:"after_unknown"`
		} `json:"change"`
	} `json:"resource_changes"`
}

// plan runs `terraform plan -out FILE` (extra flags before it); on success it returns the plan's
// JSON, on failure the output (and ok false).
func (h *harness) plan(file string, flags ...string) (*plannedJSON, string, bool) {
	h.t.Helper()
	out, err := h.tf.Run(append(append([]string{"plan"}, flags...), "-out="+file)...)
	if err != nil {
		return nil, out, false
	}
	js, err := h.tf.Run("show", "-json", file)
	if err != nil {
		h.t.Fatalf("show: %v\n%s", err, js)
	}
	var p plannedJSON
	if err := json.Unmarshal([]byte(js[strings.Index(js, "{"):]), &p); err != nil {
		h.t.Fatalf("decoding the plan: %v", err)
	}
	return &p, out, true
}

// changes reports whether p changes a managed resource whose address starts with prefix.
func changes(p *plannedJSON, prefix string) bool {
	for _, r := range p.ResourceChanges {
		if r.Mode == "managed" && strings.HasPrefix(r.Address, prefix) && !slices.Equal(r.Change.Actions, []string{"no-op"}) {
			return true
		}
	}
	return false
}

// knownDiffs lists every value known in a that differs (or is unknown) in b, by path, for the
// managed resources a changes: what Terraform's final-plan check compares when it plans them
// again during apply (no-op resources are not planned again).
func knownDiffs(a, b *plannedJSON) []string {
	type rc struct{ after, unknown any }
	index := func(p *plannedJSON, changedOnly bool) map[string]rc {
		m := map[string]rc{}
		for _, r := range p.ResourceChanges {
			if r.Mode != "managed" || (changedOnly && len(r.Change.Actions) == 1 && r.Change.Actions[0] == "no-op") {
				continue
			}
			m[r.Address] = rc{r.Change.After, r.Change.AfterUnknown}
		}
		return m
	}
	ia, ib := index(a, true), index(b, false)
	var out []string
	for addr, ra := range ia {
		rb, ok := ib[addr]
		if !ok {
			out = append(out, addr+": missing from the second plan")
			continue
		}
		walkKnown(addr, ra.after, ra.unknown, rb.after, rb.unknown, &out)
	}
	sort.Strings(out)
	return out
}

func walkKnown(path string, a, ua, b, ub any, out *[]string) {
	if u, ok := ua.(bool); ok && u {
		return // unknown in the first plan: anything goes
	}
	if u, ok := ub.(bool); ok && u {
		*out = append(*out, fmt.Sprintf("%s: known (%v) in the first plan, unknown in the second", path, short(a)))
		return
	}
	switch av := a.(type) {
	case map[string]any:
		bv, _ := b.(map[string]any)
		uam, _ := ua.(map[string]any)
		ubm, _ := ub.(map[string]any)
		for k, v := range av {
			walkKnown(path+"."+k, v, uam[k], bv[k], ubm[k], out)
		}
	case []any:
		bv, _ := b.([]any)
		uas, _ := ua.([]any)
		ubs, _ := ub.([]any)
		if len(av) != len(bv) {
			*out = append(*out, fmt.Sprintf("%s: %d elements in the first plan, %d in the second", path, len(av), len(bv)))
			return
		}
		for i := range av {
			var ue, ube any
			if i < len(uas) {
				ue = uas[i]
			}
			if i < len(ubs) {
				ube = ubs[i]
			}
			walkKnown(fmt.Sprintf("%s[%d]", path, i), av[i], ue, bv[i], ube, out)
		}
	default:
		if !reflect.DeepEqual(a, b) {
			*out = append(*out, fmt.Sprintf("%s: %v in the first plan, %v in the second", path, short(a), short(b)))
		}
	}
}

func short(v any) string {
	s := fmt.Sprint(v)
	if len(s) > 120 {
		s = s[:120] + "..."
	}
	return s
}

// perturbation changes the cluster between the two plans; undo puts it back after the apply.
type perturbation struct {
	name string
	// beforeFirst runs before the first plan (the transient error), do between the plans.
	beforeFirst, do func(h *harness)
	// recover runs after the second plan, before the saved plan is applied (a Pod Ready again);
	// undo after the apply.
	recover, undo func(h *harness)
	// mayRefuse: the second plan and the apply may stop with olapgke's diagnostic (the change
	// cannot land any more); otherwise both must succeed.
	mayRefuse bool
}

func (h *harness) pod(name string) *corev1.Pod {
	p, err := h.env.Kube.CoreV1().Pods(ns).Get(h.t.Context(), name, metav1.GetOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	return p
}

func (h *harness) waitReady(name string, notUID types.UID) {
	h.t.Helper()
	err := wait.PollUntilContextTimeout(h.t.Context(), 100*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		p, err := h.env.Kube.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return err == nil && p.UID != notUID && stsutil.PodReady(p) && p.Spec.NodeName != "", err
	})
	if err != nil {
		h.t.Fatalf("Pod %s Ready again: %v", name, err)
	}
}

// cordon sets or clears spec.unschedulable with a patch, as kubectl cordon does: a Get and
// Update raced the Node writes of TopoLVM's node agent and the node lifecycle controller (CI saw
// "the object has been modified").
func (h *harness) cordon(node string, on bool) {
	h.t.Helper()
	patch := fmt.Sprintf(`{"spec":{"unschedulable":%v}}`, on)
	if _, err := h.env.Kube.CoreV1().Nodes().Patch(h.t.Context(), node, types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		h.t.Fatal(err)
	}
}

// settle waits until the StatefulSets' rollouts are done: the controller observed the last
// generation, every replica is Ready, and under RollingUpdate every replica is at the update
// revision.
func settle(t *testing.T, kube kubernetes.Interface, namespace string, names ...string) {
	t.Helper()
	err := wait.PollUntilContextTimeout(t.Context(), 200*time.Millisecond, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		for _, name := range names {
			s, err := kube.AppsV1().StatefulSets(namespace).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			st, n := s.Status, *s.Spec.Replicas
			if st.ObservedGeneration < s.Generation || st.ReadyReplicas != n {
				return false, nil
			}
			if s.Spec.UpdateStrategy.Type != appsv1.OnDeleteStatefulSetStrategyType && (st.UpdatedReplicas != n || st.CurrentRevision != st.UpdateRevision) {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		t.Fatalf("StatefulSets %v settled: %v", names, err)
	}
}

// cordonPodNode cordons the node Pod name runs on and remembers it for the undo.
func (h *harness) cordonPodNode(name string) {
	h.t.Helper()
	h.cordoned = h.pod(name).Spec.NodeName
	h.cordon(h.cordoned, true)
}

func poolNodes(t *testing.T, kube kubernetes.Interface, pool string) []string {
	l, err := kube.CoreV1().Nodes().List(t.Context(), metav1.ListOptions{LabelSelector: "cloud.google.com/gke-nodepool=" + pool})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, n := range l.Items {
		out = append(out, n.Name)
	}
	sort.Strings(out)
	return out
}

// perturbedPods are the ordinals the Pod perturbations touch: one of each StatefulSet, the
// module's included.
var perturbedPods = []string{"hist-1", "roll-1", "modh-1"}

func perturbations() []perturbation {
	return []perturbation{
		{
			name:        "transient error on the first read",
			beforeFirst: func(h *harness) { h.failPod.Store(true) },
			do:          func(h *harness) { h.failPod.Store(false) },
		},
		{
			name: "Pod restarted",
			do: func(h *harness) {
				for _, name := range perturbedPods {
					p := h.pod(name)
					if err := h.env.Kube.CoreV1().Pods(ns).Delete(h.t.Context(), name, metav1.DeleteOptions{}); err != nil {
						h.t.Fatal(err)
					}
					h.waitReady(name, p.UID)
				}
			},
		},
		{
			name:      "node of an ordinal cordoned",
			do:        func(h *harness) { h.cordonPodNode("hist-1") },
			undo:      func(h *harness) { h.cordon(h.cordoned, false) },
			mayRefuse: true,
		},
		{
			// Issue 41: the RollingUpdate set recreates ordinal 0 last, on the node its PV pins
			// it to; kubectl cordon of that node between the plan and its apply.
			name:      "node of RollingUpdate ordinal 0 cordoned",
			do:        func(h *harness) { h.cordonPodNode("roll-0") },
			undo:      func(h *harness) { h.cordon(h.cordoned, false) },
			mayRefuse: true,
		},
		{
			name:      "node of a module ordinal cordoned",
			do:        func(h *harness) { h.cordonPodNode("modh-1") },
			undo:      func(h *harness) { h.cordon(h.cordoned, false) },
			mayRefuse: true,
		},
		{
			name: "unrelated node cordoned",
			do:   func(h *harness) { h.cordon(poolNodes(h.t, h.env.Kube, "pool-b")[0], true) },
			undo: func(h *harness) { h.cordon(poolNodes(h.t, h.env.Kube, "pool-b")[0], false) },
		},
		{
			name: "node added",
			do: func(h *harness) {
				n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "planstab-extra", Labels: map[string]string{
					"cloud.google.com/gke-nodepool": "pool-b", "kubernetes.io/hostname": "planstab-extra"},
					Annotations: map[string]string{"kwok.x-k8s.io/node": "fake"}}}
				if _, err := h.env.Kube.CoreV1().Nodes().Create(h.t.Context(), n, metav1.CreateOptions{}); err != nil {
					h.t.Fatal(err)
				}
			},
			undo: func(h *harness) {
				_ = h.env.Kube.CoreV1().Nodes().Delete(context.Background(), "planstab-extra", metav1.DeleteOptions{})
			},
		},
		{
			name: "Pod not Ready",
			do: func(h *harness) {
				for _, name := range perturbedPods {
					p := h.pod(name)
					for i := range p.Status.Conditions {
						if p.Status.Conditions[i].Type == corev1.PodReady || p.Status.Conditions[i].Type == corev1.ContainersReady {
							p.Status.Conditions[i].Status = corev1.ConditionFalse
						}
					}
					if _, err := h.env.Kube.CoreV1().Pods(ns).UpdateStatus(h.t.Context(), p, metav1.UpdateOptions{}); err != nil {
						h.t.Fatal(err)
					}
				}
			},
			recover: func(h *harness) {
				for _, name := range perturbedPods {
					p := h.pod(name)
					for i := range p.Status.Conditions {
						if p.Status.Conditions[i].Type == corev1.PodReady || p.Status.Conditions[i].Type == corev1.ContainersReady {
							p.Status.Conditions[i].Status = corev1.ConditionTrue
						}
					}
					_, _ = h.env.Kube.CoreV1().Pods(ns).UpdateStatus(context.Background(), p, metav1.UpdateOptions{})
				}
			},
		},
	}
}

// TestAccPlanStability is the harness: every perturbation, against every resource and data
// source at once (one config), then the saved first plan applied; all of it with
// allow_unschedulable false, then true. allow_unschedulable only decides how node state that
// holds ordinals is reported (rollout.PlanRollout's Held), so with true `make testacc` runs only the
// perturbations of node state (mayRefuse); OLAPGKE_PLANSTABILITY=full (`make planstability`)
// runs every one with both settings.
func TestAccPlanStability(t *testing.T) {
	h := newHarness(t)
	full := os.Getenv("OLAPGKE_PLANSTABILITY") == "full"
	for _, allow := range []bool{false, true} {
		t.Run(fmt.Sprintf("allow_unschedulable=%v", allow), func(t *testing.T) {
			h.t = t
			h.tf.Write(config(false, allow))
			if out, err := h.tf.Apply(); err != nil {
				t.Fatalf("base apply: %v\n%s", err, out)
			}
			for _, p := range perturbations() {
				t.Run(p.name, func(t *testing.T) {
					if allow && !p.mayRefuse && !full {
						t.Skip("allow_unschedulable = true changes nothing here but node state; OLAPGKE_PLANSTABILITY=full runs it")
					}
					h.run(t, p, allow)
				})
			}
		})
	}
}

// run plans the change, perturbs the cluster, plans again as Terraform does during apply,
// applies the saved first plan, and restores the base config.
func (h *harness) run(t *testing.T, p perturbation, allow bool) {
	h.t = t
	defer h.failPod.Store(false)
	h.tf.Write(config(true, allow))
	if p.beforeFirst != nil {
		p.beforeFirst(h)
	}
	first, out, ok := h.plan("p1.tfplan")
	if !ok {
		t.Fatalf("first plan failed:\n%s", out)
	}
	if !changes(first, "module.mod.olapgke_statefulset.") || !changes(first, "module.mod.olapgke_statefulset_migration.") {
		t.Fatalf("the first plan changes neither the module's StatefulSet nor its migration:\n%s", out)
	}
	if p.beforeFirst != nil && !strings.Contains(out, "Cluster Not Readable") {
		t.Errorf("the first plan does not warn that a read failed:\n%s", out)
	}
	p.do(h)
	// As Terraform plans again during apply: the first plan's prior state (no refresh),
	// the cluster as it is now.
	second, out, ok := h.plan("p2.tfplan", "-refresh=false")
	switch {
	case !ok && p.mayRefuse:
		t.Logf("second plan refused with %q", acctest.ClearError(t, out))
	case !ok:
		t.Fatalf("second plan failed:\n%s", out)
	default:
		for _, d := range knownDiffs(first, second) {
			t.Errorf("value known at the first plan changed: %s", d)
		}
	}
	if p.recover != nil {
		p.recover(h)
	}
	// The saved first plan, applied after the perturbation.
	h.deletions()
	out, err := h.tf.Run("apply", "p1.tfplan")
	deleted := h.deletions()
	switch {
	case err != nil && p.mayRefuse:
		summary := acctest.ClearError(t, out)
		t.Logf("apply of the saved plan stopped with %q; deleted: %v", summary, deleted)
		for _, d := range deleted {
			if strings.HasPrefix(d, "pvc/") {
				t.Errorf("%s deleted by an apply that stopped", d)
			}
		}
	case err != nil:
		t.Fatalf("apply of the saved plan failed:\n%s", out)
	}
	for _, bad := range acctest.ProviderBugTexts {
		if strings.Contains(out, bad) {
			t.Fatalf("apply printed %q:\n%s", bad, out)
		}
	}
	if p.undo != nil {
		p.undo(h)
	}
	if err != nil {
		// An apply that stopped mid-rollout (allow_unschedulable = true: a Pod Pending on the
		// cordoned node) leaves the controller at work once the node is back; the restore is
		// no perturbation under test, so it plans a settled cluster.
		settle(t, h.env.Kube, ns, "hist", "roll", "modh")
	}
	// Back to the base config for the next perturbation.
	h.tf.Write(config(false, allow))
	if out, err := h.tf.Apply(); err != nil {
		t.Fatalf("restoring the base config: %v\n%s", err, out)
	}
}

// A migration created in the same apply as the template change, without planned_manifest (as
// the docs' canary example is written, with depends_on): the plan judges what
// olapgke_statefulset plans in the same run, so it lists the restarts, and the saved plan
// applies after drift (a Pod restarted in between) with each ordinal restarted once and every
// PVC kept — never Terraform's inconsistency error.
func TestAccSavedPlan_MigrationCreatedWithTemplateChange(t *testing.T) {
	env := acctest.Sandbox(t)
	acctest.PreCheck(t)
	const ns2 = "planstab-canary"
	if _, err := env.Kube.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns2}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	sts := func(image string) string {
		return strings.ReplaceAll(set("canary", "OnDelete", image, false), ns, ns2)
	}
	migration := fmt.Sprintf(`
resource "olapgke_statefulset_migration" "canary" {
  namespace       = %q
  statefulset     = "canary"
  ordinal_timeout = "3m"
  depends_on      = [olapgke_statefulset.canary]
}
`, ns2)
	tf := acctest.NewTF(t, sts("olap:1"))
	if out, err := tf.Apply(); err != nil {
		t.Fatalf("base apply: %v\n%s", err, out)
	}
	t.Cleanup(func() {
		if out, err := tf.Run("destroy", "-auto-approve"); err != nil {
			t.Logf("destroy: %v\n%s", err, out)
		}
	})
	pvcs := func() map[string]types.UID {
		l, err := env.Kube.CoreV1().PersistentVolumeClaims(ns2).List(t.Context(), metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]types.UID{}
		for _, c := range l.Items {
			out[c.Name] = c.UID
		}
		return out
	}
	before := pvcs()
	tf.Write(sts("olap:2") + migration)
	out, err := tf.Run("plan", "-out=canary.tfplan")
	if err != nil {
		t.Fatalf("plan: %v\n%s", err, out)
	}
	js, err := tf.Run("show", "-json", "canary.tfplan")
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range []string{`"ordinal":2`, `"ordinal":1`, `"ordinal":0`} {
		if !strings.Contains(js, `"action":"restart"`) || !strings.Contains(js, o) {
			t.Fatalf("the plan does not list the restarts (%s):\n%s", o, out)
		}
	}
	// Drift: a Pod restarted in place between the plan and its apply.
	p, err := env.Kube.CoreV1().Pods(ns2).Get(t.Context(), "canary-1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := env.Kube.CoreV1().Pods(ns2).Delete(t.Context(), "canary-1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	err = wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		got, err := env.Kube.CoreV1().Pods(ns2).Get(ctx, "canary-1", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return err == nil && got.UID != p.UID && stsutil.PodReady(got), err
	})
	if err != nil {
		t.Fatal(err)
	}
	out, err = tf.Run("apply", "canary.tfplan")
	if err != nil {
		t.Fatalf("apply of the saved plan: %v\n%s", err, out)
	}
	for _, bad := range acctest.ProviderBugTexts {
		if strings.Contains(out, bad) {
			t.Fatalf("apply printed %q:\n%s", bad, out)
		}
	}
	if after := pvcs(); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Errorf("PVCs changed: %v -> %v", before, after)
	}
	for o := 0; o < 3; o++ {
		got, err := env.Kube.CoreV1().Pods(ns2).Get(t.Context(), fmt.Sprintf("canary-%d", o), metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got.Spec.Containers[0].Image != "olap:2" || !stsutil.PodReady(got) {
			t.Errorf("ordinal %d: image %s ready %v", o, got.Spec.Containers[0].Image, stsutil.PodReady(got))
		}
	}
	tf.PlanEmpty()
}

// Issue 41: a RollingUpdate image change planned and saved, then kubectl cordon of the node
// ordinal 0's PV pins it to, then the saved plan applied. The apply's own plan must compute the
// planned ordinals again (Terraform stopped with "Provider produced inconsistent final plan ...
// .ordinals[0].schedulable" when it judged the cordon): with allow_unschedulable = false it
// refuses with olapgke's error before anything is written; with true it warns and applies as
// planned (the rollout then stops at ordinal 0 with olapgke's diagnostic). No PVC is deleted.
func TestAccSavedPlan_CordonAfterPlan(t *testing.T) {
	env := acctest.Sandbox(t)
	acctest.PreCheck(t)
	const ns3 = "planstab-cordon"
	if _, err := env.Kube.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns3}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	sts := func(image string, allow bool) string {
		return strings.ReplaceAll(set("roll", "RollingUpdate", image, allow), ns, ns3)
	}
	tf := acctest.NewTF(t, sts("olap:1", false))
	t.Cleanup(func() {
		if out, err := tf.Run("destroy", "-auto-approve"); err != nil {
			t.Logf("destroy: %v\n%s", err, out)
		}
	})
	uids := func(list func() ([]metav1.Object, error)) map[string]types.UID {
		objs, err := list()
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]types.UID{}
		for _, o := range objs {
			out[o.GetName()] = o.GetUID()
		}
		return out
	}
	pvcs := func() map[string]types.UID {
		return uids(func() ([]metav1.Object, error) {
			l, err := env.Kube.CoreV1().PersistentVolumeClaims(ns3).List(t.Context(), metav1.ListOptions{})
			if err != nil {
				return nil, err
			}
			var out []metav1.Object
			for i := range l.Items {
				out = append(out, &l.Items[i])
			}
			return out, nil
		})
	}
	pods := func() map[string]types.UID {
		return uids(func() ([]metav1.Object, error) {
			l, err := env.Kube.CoreV1().Pods(ns3).List(t.Context(), metav1.ListOptions{})
			if err != nil {
				return nil, err
			}
			var out []metav1.Object
			for i := range l.Items {
				out = append(out, &l.Items[i])
			}
			return out, nil
		})
	}
	for _, allow := range []bool{false, true} {
		t.Run(fmt.Sprintf("allow_unschedulable=%v", allow), func(t *testing.T) {
			tf.Write(sts("olap:1", allow))
			if out, err := tf.Apply(); err != nil {
				t.Fatalf("base apply: %v\n%s", err, out)
			}
			settle(t, env.Kube, ns3, "roll")
			tf.Write(sts("olap:2", allow))
			if out, err := tf.Run("plan", "-out=cordon.tfplan"); err != nil {
				t.Fatalf("plan: %v\n%s", err, out)
			}
			p, err := env.Kube.CoreV1().Pods(ns3).Get(t.Context(), "roll-0", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			node := p.Spec.NodeName
			patch := func(on bool) {
				body := fmt.Sprintf(`{"spec":{"unschedulable":%v}}`, on)
				if _, err := env.Kube.CoreV1().Nodes().Patch(context.Background(), node, types.StrategicMergePatchType, []byte(body), metav1.PatchOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			patch(true)
			uncordoned := false
			defer func() {
				if !uncordoned {
					patch(false)
				}
			}()
			beforePVCs, beforePods := pvcs(), pods()
			out, err := tf.Run("apply", "cordon.tfplan")
			for _, bad := range acctest.ProviderBugTexts {
				if strings.Contains(out, bad) {
					t.Fatalf("apply printed %q:\n%s", bad, out)
				}
			}
			if after := pvcs(); fmt.Sprint(after) != fmt.Sprint(beforePVCs) {
				t.Errorf("PVCs changed: %v -> %v", beforePVCs, after)
			}
			held := "Ordinals Held By Node State"
			switch {
			case !allow:
				if err == nil || !strings.Contains(out, "Error: "+held) || !strings.Contains(out, node) {
					t.Fatalf("the apply did not stop with %q naming node %s:\n%s", held, node, out)
				}
				if after := pods(); fmt.Sprint(after) != fmt.Sprint(beforePods) {
					t.Errorf("an apply that refused changed Pods: %v -> %v", beforePods, after)
				}
			default:
				if !strings.Contains(out, "Warning: "+held) || !strings.Contains(out, node) {
					t.Errorf("the apply does not warn %q naming node %s:\n%s", held, node, out)
				}
				if err != nil {
					t.Logf("apply of the saved plan stopped with %q", acctest.ClearError(t, out))
				}
			}
			patch(false)
			uncordoned = true
			settle(t, env.Kube, ns3, "roll")
		})
	}
}
