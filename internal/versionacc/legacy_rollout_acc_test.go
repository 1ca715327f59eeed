package versionacc

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	"github.com/olapgke/terraform-provider-olapgke/internal/acctest"
	"github.com/olapgke/terraform-provider-olapgke/internal/stsutil"
)

// Kubernetes 1.35: MaxUnavailableStatefulSet is beta and off by default.
func TestMain(m *testing.M) { acctest.MainAtVersion(m, "1.35", "") }

func rollingHCL(ns, image string) string {
	return fmt.Sprintf(`
resource "olapgke_statefulset" "hist" {
  manifest = {
    apiVersion = "apps/v1"
    kind       = "StatefulSet"
    metadata   = { name = "hist", namespace = %[1]q }
    spec = {
      replicas            = 3
      serviceName         = "hist"
      podManagementPolicy = "Parallel"
      updateStrategy      = { type = "RollingUpdate", rollingUpdate = { maxUnavailable = 2 } }
      selector            = { matchLabels = { app = "hist" } }
      template = {
        metadata = { labels = { app = "hist" } }
        spec = {
          terminationGracePeriodSeconds = 1
          nodeSelector                  = { "cloud.google.com/gke-nodepool" = "pool-a" }
          containers = [{
            name         = "historical"
            image        = %[2]q
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
`, ns, image)
}

// TestAccRollingUpdateMaxUnavailableOn135 applies a RollingUpdate with
// maxUnavailable 2 on Kubernetes 1.35: the API server drops the field, so the
// apply warns (naming the gate and the version) instead of failing with
// "Applied StatefulSet Differs From Configuration", refresh shows no drift,
// and an image change is planned and carried out as the 1.35 controller does
// it: one Pod at a time from the highest ordinal.
func TestAccRollingUpdateMaxUnavailableOn135(t *testing.T) {
	env := acctest.Sandbox(t)
	ctx := t.Context()
	info, err := env.Kube.Discovery().ServerVersion()
	if err != nil {
		t.Fatal(err)
	}
	if info.EmulationMinor != "35" {
		t.Fatalf("sandbox emulates %s.%s, want 1.35", info.EmulationMajor, info.EmulationMinor)
	}
	const ns = "legacy-rollout"
	if _, err := env.Kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	tf := acctest.NewTF(t, rollingHCL(ns, "olap:1"))
	t.Cleanup(func() { _, _ = tf.Run("destroy", "-auto-approve") })
	out, err := tf.Apply()
	if err != nil {
		t.Fatalf("apply: %v\n%s", err, out)
	}
	flat := strings.Join(strings.Fields(out), " ") // Terraform wraps diagnostics
	for _, want := range []string{"Field Dropped: Feature Gate Off", "MaxUnavailableStatefulSet", "Kubernetes 1.35", "spec.updateStrategy.rollingUpdate.maxUnavailable"} {
		if !strings.Contains(flat, want) {
			t.Errorf("apply output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "Differs From Configuration") {
		t.Errorf("apply reports a false difference:\n%s", out)
	}
	tf.PlanEmpty() // refresh: the dropped field is not drift

	tf.Write(rollingHCL(ns, "olap:2"))
	if out, err := tf.Run("plan", "-out=p.tfplan"); err != nil {
		t.Fatalf("plan: %v\n%s", err, out)
	}
	show, err := tf.Run("show", "-json", "p.tfplan")
	if err != nil {
		t.Fatalf("show: %v\n%s", err, show)
	}
	waves := plannedWaves(t, show)
	// The legacy loop: 2, then 1, then 0, each alone.
	if want := map[int]int{2: 1, 1: 2, 0: 3}; !mapsEqual(waves, want) {
		t.Fatalf("planned waves %v, want %v (one at a time from the top)", waves, want)
	}

	rec := watchRollout(t, env.Kube, ns, "app=hist", 3)
	if out, err := tf.Apply("p.tfplan"); err != nil {
		t.Fatalf("apply saved plan: %v\n%s", err, out)
	}
	deleted, maxUnavailable := rec.stop()
	if maxUnavailable != 1 {
		t.Errorf("the 1.35 controller had %d Pods unavailable at once, want 1", maxUnavailable)
	}
	// The controller's order is the plan's: by wave.
	var byWave []int
	for o := range waves {
		byWave = append(byWave, o)
	}
	sort.Slice(byWave, func(i, j int) bool { return waves[byWave[i]] < waves[byWave[j]] })
	if !slices.Equal(deleted, byWave) {
		t.Errorf("controller deleted ordinals %v, plan said %v", deleted, byWave)
	}
	tf.PlanEmpty()
	_ = os.Remove(filepath.Join(tf.Dir, "p.tfplan"))
}

func mapsEqual(a, b map[int]int) bool {
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

// plannedWaves reads olapgke_statefulset.hist's planned ordinals (recreates).
func plannedWaves(t *testing.T, showJSON string) map[int]int {
	t.Helper()
	var plan struct {
		ResourceChanges []struct {
			Address string `json:"address"`
			Change  struct {
				After struct {
					Ordinals []struct {
						Ordinal int    `json:"ordinal"`
						Action  string `json:"action"`
						Wave    int    `json:"wave"`
					} `json:"ordinals"`
				} `json:"after"`
			} `json:"change"`
		} `json:"resource_changes"`
	}
	if err := json.Unmarshal([]byte(showJSON), &plan); err != nil {
		t.Fatalf("plan JSON: %v", err)
	}
	waves := map[int]int{}
	for _, rc := range plan.ResourceChanges {
		if rc.Address != "olapgke_statefulset.hist" {
			continue
		}
		for _, o := range rc.Change.After.Ordinals {
			if o.Action == "recreate" {
				waves[o.Ordinal] = o.Wave
			}
		}
	}
	return waves
}

// rolloutRecorder watches the StatefulSet's Pods: the order in which ordinals
// start terminating and the most that are unavailable at once.
type rolloutRecorder struct {
	mu       sync.Mutex
	pods     map[string]*corev1.Pod
	deleted  []int
	maxUnav  int
	replicas int
	cancel   context.CancelFunc
	done     chan struct{}
}

func watchRollout(t *testing.T, kube kubernetes.Interface, ns, selector string, replicas int) *rolloutRecorder {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	list, err := kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	w, err := kube.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{LabelSelector: selector, ResourceVersion: list.ResourceVersion})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	r := &rolloutRecorder{pods: map[string]*corev1.Pod{}, replicas: replicas, cancel: cancel, done: make(chan struct{})}
	for i := range list.Items {
		r.pods[list.Items[i].Name] = &list.Items[i]
	}
	go func() {
		defer close(r.done)
		defer w.Stop()
		for ev := range w.ResultChan() {
			p, ok := ev.Object.(*corev1.Pod)
			if !ok {
				continue
			}
			r.mu.Lock()
			old := r.pods[p.Name]
			switch ev.Type {
			case watch.Deleted:
				delete(r.pods, p.Name)
			case watch.Added, watch.Modified:
				r.pods[p.Name] = p
			}
			if p.DeletionTimestamp != nil && (old == nil || old.DeletionTimestamp == nil) {
				if o := stsutil.OrdinalOf(p.Name); o >= 0 {
					r.deleted = append(r.deleted, int(o))
				}
			}
			available := 0
			for _, q := range r.pods {
				if q.DeletionTimestamp == nil && stsutil.PodReady(q) {
					available++
				}
			}
			r.maxUnav = max(r.maxUnav, r.replicas-available)
			r.mu.Unlock()
		}
	}()
	return r
}

func (r *rolloutRecorder) stop() ([]int, int) {
	r.cancel()
	select {
	case <-r.done:
	case <-time.After(10 * time.Second): // the watch ends when its context does
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.deleted, r.maxUnav
}
