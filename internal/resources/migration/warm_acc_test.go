package migration_test

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
	corev1 "k8s.io/api/core/v1"
	k8sresource "k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/util/retry"

	"github.com/olapgke/terraform-provider-olapgke/internal/acctest"
	"github.com/olapgke/terraform-provider-olapgke/internal/engine"
	planmigration "github.com/olapgke/terraform-provider-olapgke/internal/planner/migration"
	"github.com/olapgke/terraform-provider-olapgke/internal/stsutil"
)

// warmCopyHCL is a copy block whose copiers the sandbox plays: KWOK runs no containers, so the
// sink ends after sandbox.olapgke.io/run-for with the annotated exit code (kwoknodes
// podstages.go), and the source runs until it is deleted; the sink's log is the default sink's
// (a claim marker and rsync's progress2 records over 1 GiB, kwoknodes podlogs.go).
func warmCopyHCL(exitCode int, message string, extra ...string) string {
	return warmCopyHCLFor("2s", exitCode, message, extra...)
}

func warmCopyHCLFor(runFor string, exitCode int, message string, extra ...string) string {
	return fmt.Sprintf(`  copy = {
    image   = "registry.example/rsync:3"
    timeout = "2m"
%s
    pod_annotations = {
      "sandbox.olapgke.io/run-for"             = %q
      "sandbox.olapgke.io/exit-code"           = "%d"
      "sandbox.olapgke.io/termination-message" = %q
      "sandbox.olapgke.io/copy-bytes"          = "1073741824"
    }
  }`, strings.Join(extra, "\n"), runFor, exitCode, message)
}

// copierSeen is what a watch saw of the copier Pods during an apply.
type copierSeen struct {
	mu   sync.Mutex
	pods map[string]*corev1.Pod // by name, as created
}

func watchCopiers(t *testing.T, env *acctest.Env, ns string) *copierSeen {
	t.Helper()
	seen := &copierSeen{pods: map[string]*corev1.Pod{}}
	w, err := env.Kube.CoreV1().Pods(ns).Watch(t.Context(), metav1.ListOptions{LabelSelector: planmigration.LabelWarmMove})
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		for ev := range w.ResultChan() {
			if p, ok := ev.Object.(*corev1.Pod); ok && ev.Type == watch.Added {
				seen.mu.Lock()
				seen.pods[p.Name] = p.DeepCopy()
				seen.mu.Unlock()
			}
		}
	}()
	t.Cleanup(w.Stop)
	return seen
}

// A warm pool switch of 3 ordinals: per ordinal, the copiers are created with the right claims,
// nodes and arguments; the ordinal's claim ends bound to a PV created before its new Pod (on the
// target node, before the old Pod was deleted); the old PVs are deleted; nothing of the copy is
// left; the plan said mode = warm.
func TestAccStatefulSetMigration_WarmMove(t *testing.T) {
	t.Parallel() // its own namespace and set; overlaps the other warm tests at the package's end
	env := acctest.Sandbox(t)
	ensurePool(t, env, "pool-b", 3)
	f := newSet(t, env, "mig-warm", 3, "pool-a", "1Gi")
	f.switchPool(t, "pool-b")
	seen := watchCopiers(t, env, f.ns)
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories,
		Steps: []resource.TestStep{{
			Config: testAccStatefulSetMigrationConfig_basic(f.ns, warmCopyHCL(0, "", "    final_sync = true", `    bandwidth  = "1Mi"`)),
			ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
				plancheck.ExpectKnownValue(res, tfjsonpath.New("moves").AtSliceIndex(0).AtMapKey("mode"), knownvalue.StringExact("warm")),
				plancheck.ExpectKnownValue(res, tfjsonpath.New("moves"), expectOrdinals(2, 1, 0)),
				// The copy takes the claim's 1Gi on the target; at 1Mi/s at most 1,024 s.
				plancheck.ExpectKnownValue(res, tfjsonpath.New("moves").AtSliceIndex(2).AtMapKey("copy_bytes"), knownvalue.Int64Exact(1<<30)),
				plancheck.ExpectKnownValue(res, tfjsonpath.New("moves").AtSliceIndex(2).AtMapKey("copy_max_seconds"), knownvalue.Float64Exact(1024)),
				plancheck.ExpectKnownValue(res, tfjsonpath.New("plan_summary"),
					knownvalue.StringRegexp(regexp.MustCompile(`warm: copy up to 1Gi per ordinal at 1Mi/s \(at most 17m each\) while it serves`))),
			}},
			Check: func(*terraformState) error {
				f.checkMoved(t, "pool-b", 0, 1, 2)
				f.checkWarm(t, seen, 0, 1, 2)
				checkCopyProgressEvents(t, env, f, 0, 1, 2)
				seen.mu.Lock()
				defer seen.mu.Unlock()
				for _, o := range []int32{0, 1, 2} {
					pod, claim := f.get(t, o)
					final := seen.pods[planmigration.CopierPodName(stsutil.PodName(f.name, o), planmigration.CopierFinal)]
					if final == nil || final.Spec.NodeName != pod.Spec.NodeName ||
						final.Spec.Volumes[0].PersistentVolumeClaim.ClaimName != planmigration.NextClaimName(claim.Name) {
						t.Errorf("ordinal %d: final pass %+v, want one on %s mounting the copy", o, final, pod.Spec.NodeName)
					}
				}
				return nil
			},
		}},
	})
}

// A copier that fails rolls back what the move made and stops the apply quoting it; the
// ordinal's Pod and claim are untouched, and so are the others.
func TestAccStatefulSetMigration_WarmMoveCopierFails(t *testing.T) {
	t.Parallel()
	env := acctest.Sandbox(t)
	ensurePool(t, env, "pool-b", 3)
	f := newSet(t, env, "mig-warm-fail", 2, "pool-a", "1Gi")
	f.switchPool(t, "pool-b")
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories,
		Steps: []resource.TestStep{{
			Config:      testAccStatefulSetMigrationConfig_basic(f.ns, warmCopyHCL(23, "rsync error: some files could not be transferred (code 23)")),
			ExpectError: regexp.MustCompile(`(?s)[Oo]rdinal\s+1.*copier.*code\s+23.*were\s+not\s+touched`),
		}},
	})
	f.checkUntouched(t, 0, 1)
	waitWarmLeftoversGone(t, env, f.ns)
}

// checkWarm checks what a warm move of each ordinal left and did.
func (f *setFixture) checkWarm(t *testing.T, seen *copierSeen, ordinals ...int32) {
	t.Helper()
	ctx := t.Context()
	seen.mu.Lock()
	defer seen.mu.Unlock()
	for _, o := range ordinals {
		pod, claim := f.get(t, o)
		podName := stsutil.PodName(f.name, o)
		src := seen.pods[planmigration.CopierPodName(podName, planmigration.CopierSource)]
		sink := seen.pods[planmigration.CopierPodName(podName, planmigration.CopierSink)]
		if src == nil || sink == nil {
			t.Errorf("ordinal %d: copiers seen: source %v, sink %v", o, src != nil, sink != nil)
			continue
		}
		if got := src.Spec.Volumes[0].PersistentVolumeClaim; got == nil || got.ClaimName != claim.Name || !got.ReadOnly {
			t.Errorf("ordinal %d: source mounts %+v, want %s read-only", o, got, claim.Name)
		}
		if got := sink.Spec.Volumes[0].PersistentVolumeClaim; got == nil || got.ClaimName != planmigration.NextClaimName(claim.Name) {
			t.Errorf("ordinal %d: sink mounts %+v, want %s", o, got, planmigration.NextClaimName(claim.Name))
		}
		if src.Spec.NodeName == pod.Spec.NodeName || sink.Spec.NodeName != pod.Spec.NodeName {
			t.Errorf("ordinal %d: source on %s, sink on %s, new Pod on %s", o, src.Spec.NodeName, sink.Spec.NodeName, pod.Spec.NodeName)
		}
		env := map[string]string{}
		for _, e := range sink.Spec.Containers[0].Env {
			env[e.Name] = e.Value
		}
		if env["OLAPGKE_SOURCE"] == "" || env["OLAPGKE_CLAIMS"] != "cache" || sink.Spec.Containers[0].Image != "registry.example/rsync:3" {
			t.Errorf("ordinal %d: sink env %v image %s", o, env, sink.Spec.Containers[0].Image)
		}
		pv, err := f.env.Kube.CoreV1().PersistentVolumes().Get(ctx, claim.Spec.VolumeName, metav1.GetOptions{})
		if err != nil {
			t.Errorf("ordinal %d: PV %s: %v", o, claim.Spec.VolumeName, err)
			continue
		}
		if !pv.CreationTimestamp.Before(&pod.CreationTimestamp) {
			t.Errorf("ordinal %d: PV %s created %s, not before the new Pod (%s)", o, pv.Name, pv.CreationTimestamp, pod.CreationTimestamp)
		}
		if pv.Spec.PersistentVolumeReclaimPolicy != corev1.PersistentVolumeReclaimDelete || pv.Annotations[planmigration.AnnWarmClaim] != "" {
			t.Errorf("ordinal %d: PV %s reclaim %s, annotations %v: the hand-over was not finished", o, pv.Name, pv.Spec.PersistentVolumeReclaimPolicy, pv.Annotations)
		}
		if _, err := f.env.Kube.CoreV1().PersistentVolumes().Get(ctx, f.pvs[o], metav1.GetOptions{}); err == nil {
			t.Errorf("ordinal %d: old PV %s still there", o, f.pvs[o])
		}
	}
	waitWarmLeftoversGone(t, f.env, f.ns)
}

// waitWarmLeftoversGone waits (up to a minute) until namespace ns holds no copier Pod and no
// copy claim (label olapgke.io/warm-move): nothing of a warm move is left.
func waitWarmLeftoversGone(t *testing.T, env *acctest.Env, ns string) {
	t.Helper()
	left := ""
	err := wait.PollUntilContextTimeout(t.Context(), time.Second, time.Minute, true, func(ctx context.Context) (bool, error) {
		sel := metav1.ListOptions{LabelSelector: planmigration.LabelWarmMove}
		pods, err := env.Kube.CoreV1().Pods(ns).List(ctx, sel)
		if err != nil {
			left = err.Error()
			return false, nil //nolint:nilerr // transient: poll again until the timeout
		}
		pvcs, err := env.Kube.CoreV1().PersistentVolumeClaims(ns).List(ctx, sel)
		if err != nil {
			left = err.Error()
			return false, nil //nolint:nilerr // transient: poll again until the timeout
		}
		left = fmt.Sprintf("%d copier Pods and %d copy claims left", len(pods.Items), len(pvcs.Items))
		return len(pods.Items)+len(pvcs.Items) == 0, nil
	})
	if err != nil {
		t.Errorf("namespace %s: %s: %v", ns, left, err)
	}
}

// A warm pool switch planned and saved, then ordinary drift (ordinal 0's container restarted,
// another workload's Pod placed on the target pool; a cordon of the shared target pool would
// disturb the package's parallel tests),
// then the saved plan applied: the apply's own plan computes the same warm moves (mode,
// copy_bytes, copy_max_seconds are known at plan: never Terraform's "inconsistent final plan"),
// and both ordinals move warm.
func TestAccStatefulSetMigration_WarmMoveSavedPlan(t *testing.T) {
	t.Parallel()
	env := acctest.Sandbox(t)
	ensurePool(t, env, "pool-b", 3)
	f := newSet(t, env, "mig-warm-saved", 2, "pool-a", "1Gi")
	f.switchPool(t, "pool-b")
	seen := watchCopiers(t, env, f.ns)
	tf := acctest.NewTF(t, testAccStatefulSetMigrationConfig_basic(f.ns, warmCopyHCL(0, "", `    bandwidth = "64Mi"`)))
	if out, err := tf.Run("plan", "-out=warm.tfplan"); err != nil {
		t.Fatalf("plan: %v\n%s", err, out)
	}
	show, err := tf.Run("show", "-json", "warm.tfplan")
	if err != nil {
		t.Fatalf("show: %v\n%s", err, show)
	}
	for _, want := range []string{`"mode":"warm"`, `"copy_bytes":1073741824`, `"copy_max_seconds":16`} {
		if !strings.Contains(show, want) {
			t.Errorf("the saved plan does not hold %s", want)
		}
	}

	// Drift: ordinal 0's container restarted (its Pod cannot be recreated: the template now
	// asks for pool-b, where its PVC cannot follow it: the incident itself), and a Pod of
	// another workload placed on a pool-b node.
	ctx := t.Context()
	old, _ := f.get(t, 0)
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		p, err := env.Kube.CoreV1().Pods(f.ns).Get(ctx, old.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		for i := range p.Status.ContainerStatuses {
			p.Status.ContainerStatuses[i].RestartCount++
		}
		_, err = env.Kube.CoreV1().Pods(f.ns).UpdateStatus(ctx, p, metav1.UpdateOptions{})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	nodes, err := env.Kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: labelPool + "=pool-b"})
	if err != nil || len(nodes.Items) == 0 {
		t.Fatalf("pool-b nodes: %v", err)
	}
	other := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "bystander", Namespace: f.ns},
		Spec: corev1.PodSpec{NodeName: nodes.Items[0].Name, Containers: []corev1.Container{{Name: "c", Image: "busybox",
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: k8sresource.MustParse("100m")}}}}}}
	if _, err := env.Kube.CoreV1().Pods(f.ns).Create(ctx, other, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	out, err := tf.Run("apply", "warm.tfplan")
	for _, bad := range acctest.ProviderBugTexts {
		if strings.Contains(out, bad) {
			t.Fatalf("apply printed %q:\n%s", bad, out)
		}
	}
	if err != nil {
		t.Fatalf("apply of the saved plan: %v\n%s", err, out)
	}
	f.checkMoved(t, "pool-b", 0, 1)
	f.checkWarm(t, seen, 0, 1)
}

// checkCopyProgressEvents: each ordinal's sink had its progress read from its log (the real
// API server's pods/log, the sandbox's kubelet endpoint) and recorded as an OlapgkeCopyProgress
// Event on the StatefulSet, related to the sink, saying bytes, rate and time left or done.
func checkCopyProgressEvents(t *testing.T, env *acctest.Env, f *setFixture, ordinals ...int32) {
	t.Helper()
	list, err := env.Kube.EventsV1().Events(f.ns).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	progress := regexp.MustCompile(`claim \S+ \(1 of 1\): [0-9.]+ (B|KiB|MiB|GiB) copied \([0-9]+%\), [0-9.]+ (B|KiB|MiB|GiB)/s, (about \S+ left|done)`)
	for _, o := range ordinals {
		sink := planmigration.CopierPodName(stsutil.PodName(f.name, o), planmigration.CopierSink)
		found := false
		for _, e := range list.Items {
			if e.Reason == engine.ReasonCopyProgress && e.Regarding.Name == f.name && e.Related != nil && e.Related.Name == sink {
				found = true
				if !progress.MatchString(e.Note) {
					t.Errorf("ordinal %d: progress Event %q does not say bytes, rate and time left", o, e.Note)
				}
			}
		}
		if !found {
			t.Errorf("ordinal %d: no %s Event related to %s", o, engine.ReasonCopyProgress, sink)
		}
	}
}

// A plan made while a copy runs (here beside the apply that started it, as after a killed
// apply) warns Warm Copy In Progress with the copy's progress read from the sink's log.
func TestAccStatefulSetMigration_WarmCopyProgressInPlan(t *testing.T) {
	t.Parallel()
	env := acctest.Sandbox(t)
	ensurePool(t, env, "pool-b", 3)
	f := newSet(t, env, "mig-warm-progress", 1, "pool-a", "1Gi")
	f.switchPool(t, "pool-b")
	tf := acctest.NewTF(t, testAccStatefulSetMigrationConfig_basic(f.ns, warmCopyHCLFor("40s", 0, "")))
	done := make(chan error, 1)
	var applyOut string
	go func() {
		out, err := tf.Run("apply", "-auto-approve")
		applyOut = out
		done <- err
	}()
	sink := planmigration.CopierPodName(stsutil.PodName(f.name, 0), planmigration.CopierSink)
	ctx := t.Context()
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		p, err := env.Kube.CoreV1().Pods(f.ns).Get(ctx, sink, metav1.GetOptions{})
		return err == nil && p.Status.Phase == corev1.PodRunning, nil
	}); err != nil {
		t.Fatalf("the sink %s never ran: %v", sink, err)
	}
	// The apply holds the state lock; the plan reads the cluster all the same.
	out, err := tf.Run("plan", "-lock=false")
	if err != nil {
		t.Fatalf("plan during the copy: %v\n%s", err, out)
	}
	want := regexp.MustCompile(`Warning: Warm Copy In Progress .*` + regexp.QuoteMeta(stsutil.PodName(f.name, 0)) + ` to node \S+ \(` +
		regexp.QuoteMeta(sink) + `\): claim ` + claimName + ` \(1 of 1\): [0-9.]+ (B|KiB|MiB|GiB) copied \([0-9]+%\)`)
	if !want.MatchString(strings.Join(strings.Fields(out), " ")) { // Terraform wraps diagnostics
		t.Errorf("the plan during the copy does not warn with its progress:\n%s", out)
	}
	if err := <-done; err != nil {
		t.Fatalf("apply: %v\n%s", err, applyOut)
	}
	f.checkMoved(t, "pool-b", 0)
}
