package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"

	"github.com/olapgke/terraform-provider-olapgke/internal/fixture"
	"github.com/olapgke/terraform-provider-olapgke/internal/stsutil"
)

// Names the scenarios use in the sandbox.
const (
	StorageClass = "topolvm-provisioner"
	PlanNS       = "bench"
	PlanSet      = "olap"
	MigNS        = "mig"
	MigSet       = "hist"
	Claim        = "data"
)

// PlanResult is one (nodes, ordinals) cell of the plan table.
type PlanResult struct {
	Nodes, Ordinals int
	// ProviderMS: the provider's own ModifyPlan time per `terraform plan -refresh=false` run.
	ProviderMS []float64
	// ProviderCPUMS: the provider process's CPU over the same span per run (none where the
	// provider's platform does not count it).
	ProviderCPUMS []float64
	// SandboxCores: the sandbox's CPU time over each run's wall time (cores it kept busy beside
	// the provider on the same machine: the API server, the controllers, every KWOK node).
	SandboxCores []float64
	// Phases: where each run's ProviderMS went (its last `olapgke plan phases` line).
	Phases []PlanPhases
	// Wall: the whole `terraform plan -refresh=false` per run.
	Wall []time.Duration
	// Requests per `plan -refresh=false` run (the per-ordinal plan path only).
	Requests []Requests
	// QuietWall: one more `terraform plan -refresh=false` with no TF_LOG* (as a user runs it;
	// the runs above log the provider's DEBUG lines for its timing).
	QuietWall time.Duration
	// RefreshRequests: a full `terraform plan` (refresh = the resource's Read, then the plan).
	RefreshRequests Requests
	RefreshWall     time.Duration
	// ReadyAtPlan is how many of the Pods were Ready when the plans ran (all were Running).
	ReadyAtPlan int
	// ProviderRSSMiB is the provider process's highest peak RSS over the plan runs.
	ProviderRSSMiB int
	Err            string

	lastOutput string // the last `plan -refresh=false` output (SeedSelfCheck compares them)
}

// planManifest is the StatefulSet the plan scenario applies: Parallel (so N Pods start together),
// RollingUpdate, one 1 GiB TopoLVM claim, pinned to pool-a. rev goes into a template annotation:
// changing it makes every ordinal a recreate the planner has to place.
func planManifest(replicas int, rev string) map[string]any {
	labels := map[string]any{"app": PlanSet}
	return map[string]any{
		"apiVersion": "apps/v1", "kind": "StatefulSet",
		"metadata": map[string]any{"name": PlanSet, "namespace": PlanNS},
		"spec": map[string]any{
			"serviceName": PlanSet, "replicas": replicas, "podManagementPolicy": "Parallel",
			"selector": map[string]any{"matchLabels": labels},
			"template": map[string]any{
				"metadata": map[string]any{"labels": labels, "annotations": map[string]any{"bench.olapgke.io/rev": rev}},
				"spec": map[string]any{
					"terminationGracePeriodSeconds": 1,
					"nodeSelector":                  map[string]any{stsutil.LabelNodePool: "pool-a"},
					"containers": []any{map[string]any{"name": "olap", "image": "olap/historical:1",
						"volumeMounts": []any{map[string]any{"name": Claim, "mountPath": "/data"}}}},
				},
			},
			"volumeClaimTemplates": []any{map[string]any{
				"metadata": map[string]any{"name": Claim},
				"spec": map[string]any{"accessModes": []any{"ReadWriteOnce"}, "storageClassName": StorageClass,
					"resources": map[string]any{"requests": map[string]any{"storage": "1Gi"}}},
			}},
		},
	}
}

const tfHeader = `terraform {
  required_providers {
    olapgke = { source = %q }
  }
}

provider "olapgke" {
  kubernetes {
%s
  }
}
`

// directKube is the provider's kubernetes block for cells that compare the provider's timing with
// the cluster's own (the restart roll against the controller, the batches against the per-ordinal
// latency): the sandbox's kubeconfig, straight to the API server as the controllers in the
// sandbox and the kubectl loop talk to it, not through the counting proxy, whose extra hop
// would delay every watch event and write of the provider's alone. Those cells count no
// requests.
func directKube(sb *Sandbox) string { return fmt.Sprintf("    config_path = %q", sb.Kubeconfig) }

func writeFile(path string, v any) error {
	var b []byte
	switch x := v.(type) {
	case string:
		b = []byte(x)
	default:
		var err error
		if b, err = json.MarshalIndent(v, "", "  "); err != nil {
			return err
		}
	}
	return os.WriteFile(path, b, 0o644)
}

func ensureNamespace(ctx context.Context, kube kubernetes.Interface, ns string) error {
	_, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	if err != nil && !strings.Contains(err.Error(), "already exists") {
		return err
	}
	return nil
}

// createReadySet creates set (and its namespace) and waits until all its replicas are Ready:
// where the migration, restart, batch and warm cells start from.
func createReadySet(ctx context.Context, sb *Sandbox, set *appsv1.StatefulSet) error {
	if err := ensureNamespace(ctx, sb.Kube, set.Namespace); err != nil {
		return err
	}
	if _, err := sb.Kube.AppsV1().StatefulSets(set.Namespace).Create(ctx, set, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating StatefulSet %s/%s: %v", set.Namespace, set.Name, err)
	}
	return waitSetReady(ctx, sb.Kube, set.Namespace, set.Name, int(*set.Spec.Replicas), 10*time.Minute, false)
}

// waitSetReady polls until the StatefulSet has observed its generation and all replicas are
// Ready at the update revision (or, with anyRevision, Ready at all).
func waitSetReady(ctx context.Context, kube kubernetes.Interface, ns, name string, replicas int, timeout time.Duration, anyRevision bool) error {
	var last string
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		s, err := kube.AppsV1().StatefulSets(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			last = err.Error()
			return false, nil //nolint:nilerr // polled again until the timeout, which reports last
		}
		st := s.Status
		last = fmt.Sprintf("observedGeneration %d/%d, ready %d, updated %d of %d", st.ObservedGeneration, s.Generation, st.ReadyReplicas, st.UpdatedReplicas, replicas)
		ok := st.ObservedGeneration >= s.Generation && int(st.ReadyReplicas) == replicas && int(st.Replicas) == replicas
		if !anyRevision {
			ok = ok && int(st.UpdatedReplicas) == replicas
		}
		return ok, nil
	})
	if err != nil {
		return fmt.Errorf("StatefulSet %s/%s not Ready after %s (%s): %w", ns, name, timeout, last, err)
	}
	return nil
}

// waitPodsPlaced polls until the StatefulSet has n Pods at the update revision, each bound to a
// node and Running (the planner's work depends on Pods, PVCs, PVs and nodes, not on readiness);
// it returns how many are Ready. Readiness is not required because on an overloaded machine
// the 500-node sandbox's heartbeats can lag, the node lifecycle controller then marks Pods not
// Ready, and KWOK does not mark them Ready again.
func waitPodsPlaced(ctx context.Context, kube kubernetes.Interface, ns, name string, n int, timeout time.Duration) (int, error) {
	var last string
	ready := 0
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		s, err := kube.AppsV1().StatefulSets(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			last = err.Error()
			return false, nil //nolint:nilerr // polled again until the timeout, which reports last
		}
		if s.Status.ObservedGeneration < s.Generation || int(s.Status.UpdatedReplicas) != n {
			last = fmt.Sprintf("observedGeneration %d/%d, updated %d of %d", s.Status.ObservedGeneration, s.Generation, s.Status.UpdatedReplicas, n)
			return false, nil
		}
		pods, err := kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=" + name})
		if err != nil {
			last = err.Error()
			return false, nil //nolint:nilerr // polled again until the timeout, which reports last
		}
		running := 0
		ready = 0
		for i := range pods.Items {
			p := &pods.Items[i]
			if p.Spec.NodeName != "" && p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
				running++
			}
			if stsutil.PodReady(p) {
				ready++
			}
		}
		last = fmt.Sprintf("%d of %d Pods Running (%d Ready)", running, n, ready)
		return running == n, nil
	})
	if err != nil {
		return ready, fmt.Errorf("StatefulSet %s/%s: Pods not placed after %s (%s): %w", ns, name, timeout, last, err)
	}
	return ready, nil
}

// PlanScenario applies the plan StatefulSet at each ordinal count (ascending, scaling the same
// object), waits until its Pods are Ready, then measures `terraform plan` of a template change.
func PlanScenario(ctx context.Context, sb *Sandbox, proxy *Proxy, providerDir, dir string, nodes int, ordinals []int, runs int, logf func(string, ...any)) []PlanResult {
	return planScenario(ctx, sb, proxy, providerDir, dir, nodes, ordinals, runs, false, logf)
}

// SeededPlanScenario is PlanScenario with each ordinal's claim created and bound on a node of
// the pool before the StatefulSet is applied (seedClaims): the large cell's world, whose Pods the
// scheduler could not place in time otherwise. SeedSelfCheck compares it with PlanScenario.
func SeededPlanScenario(ctx context.Context, sb *Sandbox, proxy *Proxy, providerDir, dir string, nodes int, ordinals []int, runs int, logf func(string, ...any)) []PlanResult {
	return planScenario(ctx, sb, proxy, providerDir, dir, nodes, ordinals, runs, true, logf)
}

func planScenario(ctx context.Context, sb *Sandbox, proxy *Proxy, providerDir, dir string, nodes int, ordinals []int, runs int, seed bool, logf func(string, ...any)) []PlanResult {
	var out []PlanResult
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return []PlanResult{{Nodes: nodes, Err: err.Error()}}
	}
	if err := ensureNamespace(ctx, sb.Kube, PlanNS); err != nil {
		return []PlanResult{{Nodes: nodes, Err: err.Error()}}
	}
	token := sb.Token()
	tf := &Terraform{Dir: dir, ProviderDir: providerDir, Env: sb.Env}
	main := fmt.Sprintf(tfHeader, ProviderSource, fmt.Sprintf("    host  = %q\n    token = %q", proxy.URL, token)) + `
resource "olapgke_statefulset" "olap" {
  manifest         = jsondecode(file("${path.module}/set.json"))
  wait_for_rollout = false
}
`
	if err := writeFile(filepath.Join(dir, "main.tf"), main); err != nil {
		return []PlanResult{{Nodes: nodes, Err: err.Error()}}
	}
	for _, n := range ordinals {
		r := PlanResult{Nodes: nodes, Ordinals: n}
		fail := func(format string, a ...any) []PlanResult {
			r.Err = fmt.Sprintf(format, a...)
			logf("plan %d nodes x %d ordinals: %s", nodes, n, r.Err)
			return append(out, r)
		}
		if err := writeFile(filepath.Join(dir, "set.json"), planManifest(n, "1")); err != nil {
			return fail("%v", err)
		}
		t0 := time.Now()
		if seed {
			if err := seedClaims(ctx, sb.Rest, PlanNS, n, "pool-a", logf); err != nil {
				return fail("%v", err)
			}
		}
		ap, err := tf.Exec(ctx, "", "apply", "-auto-approve", "-input=false", "-no-color")
		if err != nil || ap.ExitCode != 0 {
			return fail("terraform apply (%d ordinals) failed: %v\n%s", n, err, tail(ap.Output, 40))
		}
		ready, err := waitPodsPlaced(ctx, sb.Kube, PlanNS, PlanSet, n, 15*time.Minute)
		if err != nil {
			return fail("%v", err)
		}
		r.ReadyAtPlan = ready
		logf("plan %d nodes: %d ordinals applied, Running with bound PVCs (%d Ready) in %s", nodes, n, ready, time.Since(t0).Round(time.Second))
		if err := writeFile(filepath.Join(dir, "set.json"), planManifest(n, "2")); err != nil {
			return fail("%v", err)
		}
		for i := 0; i < runs; i++ {
			proxy.Take()
			sbCPU := sb.CPU()
			pr, err := tf.Exec(ctx, fmt.Sprintf("plan-%d-%d.log", n, i), "plan", "-refresh=false", "-input=false", "-no-color", "-lock=false")
			reqs := proxy.Take()
			if pr.Wall > 0 {
				r.SandboxCores = append(r.SandboxCores, (sb.CPU()-sbCPU).Seconds()/pr.Wall.Seconds())
			}
			if err != nil || pr.ExitCode != 0 || len(pr.ProviderMS) == 0 {
				return fail("terraform plan -refresh=false: exit %d, %v, %d timing lines\n%s", pr.ExitCode, err, len(pr.ProviderMS), tail(pr.Output, 40))
			}
			if !strings.Contains(pr.Output, "Ordinals Will Be Recreated") {
				return fail("plan did not show the per-ordinal recreate warning:\n%s", tail(pr.Output, 40))
			}
			r.ProviderMS = append(r.ProviderMS, pr.ProviderMS[len(pr.ProviderMS)-1])
			if len(pr.ProviderCPUMS) > 0 {
				r.ProviderCPUMS = append(r.ProviderCPUMS, pr.ProviderCPUMS[len(pr.ProviderCPUMS)-1])
			}
			if len(pr.Phases) > 0 {
				r.Phases = append(r.Phases, pr.Phases[len(pr.Phases)-1])
			}
			r.ProviderRSSMiB = max(r.ProviderRSSMiB, pr.ProviderRSSMiB)
			r.Wall = append(r.Wall, pr.Wall)
			r.Requests = append(r.Requests, reqs)
			r.lastOutput = pr.Output
		}
		quiet, err := tf.Exec(ctx, "", "plan", "-refresh=false", "-input=false", "-no-color", "-lock=false")
		if err != nil || quiet.ExitCode != 0 {
			return fail("terraform plan -refresh=false (no TF_LOG): exit %d, %v\n%s", quiet.ExitCode, err, tail(quiet.Output, 40))
		}
		r.QuietWall = quiet.Wall
		proxy.Take()
		full, err := tf.Exec(ctx, fmt.Sprintf("plan-refresh-%d.log", n), "plan", "-input=false", "-no-color", "-lock=false")
		r.RefreshRequests = proxy.Take()
		r.RefreshWall = full.Wall
		if err != nil || full.ExitCode != 0 {
			return fail("terraform plan: exit %d, %v\n%s", full.ExitCode, err, tail(full.Output, 40))
		}
		logf("plan %d nodes x %d ordinals: provider ms %v (CPU %v), requests %d (refresh: %d), wall %v (no TF_LOG: %v)", nodes, n, r.ProviderMS, r.ProviderCPUMS, r.Requests[0].Total(), r.RefreshRequests.Total(), r.Wall, r.QuietWall)
		out = append(out, r)
	}
	return out
}

// MigrationResult compares one migration by olapgke_statefulset_migration with the same moves
// made by a kubectl loop, both against the cluster's own latency.
type MigrationResult struct {
	Ordinals int
	Provider MoveStats
	// ProviderApply is the wall time of `terraform apply` (CLI start-up, refresh, plan included).
	ProviderApply    time.Duration
	ProviderRequests Requests
	Kubectl          MoveStats
	KubectlLoop      time.Duration
	// ProviderCPU and KubectlCPU are the tools' CPU times over their rounds.
	ProviderCPU, KubectlCPU time.Duration
	Rounds                  []MigrationRound
	Err                     string
}

// MigrationRound is one tool moving every ordinal to one pool.
type MigrationRound struct {
	Tool, To string
	Stats    MoveStats
	Wall     time.Duration
	// CPU is the tool's own CPU time (terraform + provider, or bash + kubectl), which it takes
	// from the cores the sandbox simulates the cluster on.
	CPU time.Duration
}

func migSet(replicas int32) *appsv1.StatefulSet {
	return fixture.Historical{Namespace: MigNS, Name: MigSet, Replicas: replicas, Pool: "pool-a",
		Claim: Claim, StorageClass: StorageClass, Size: "1Gi"}.StatefulSet()
}

// switchPool points the migration StatefulSet's template at pool and waits until the controller
// has observed it (OnDelete: no Pod changes).
func switchPool(ctx context.Context, kube kubernetes.Interface, pool string, replicas int) error {
	return switchPoolIn(ctx, kube, MigNS, pool, replicas)
}

// switchPoolIn is switchPool for the StatefulSet MigSet of namespace ns.
func switchPoolIn(ctx context.Context, kube kubernetes.Interface, ns, pool string, replicas int) error {
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		s, err := kube.AppsV1().StatefulSets(ns).Get(ctx, MigSet, metav1.GetOptions{})
		if err != nil {
			return err
		}
		s = s.DeepCopy()
		s.Spec.Template.Spec.NodeSelector = map[string]string{stsutil.LabelNodePool: pool}
		_, err = kube.AppsV1().StatefulSets(ns).Update(ctx, s, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return err
	}
	return waitSetReady(ctx, kube, ns, MigSet, replicas, 2*time.Minute, true)
}

// MigrationScenario moves n ordinals between pool-a and pool-b four times: provider, kubectl loop
// (delete pvc --wait=false, delete pod, wait Ready), kubectl loop, provider, timing each against the
// moves the Pod watch saw. Totals per tool are sums over its two rounds.
func MigrationScenario(ctx context.Context, sb *Sandbox, proxy *Proxy, providerDir, kubectl, dir string, n int, logf func(string, ...any)) MigrationResult {
	r := MigrationResult{Ordinals: n}
	fail := func(format string, a ...any) MigrationResult {
		r.Err = fmt.Sprintf(format, a...)
		logf("migration: %s", r.Err)
		return r
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fail("%v", err)
	}
	if err := createReadySet(ctx, sb, migSet(int32(n))); err != nil {
		return fail("%v", err)
	}
	tl, err := WatchPods(ctx, sb.Kube, MigNS)
	if err != nil {
		return fail("%v", err)
	}
	defer tl.Stop()
	token := sb.Token()
	var ords []string
	for o := n - 1; o >= 0; o-- {
		ords = append(ords, fmt.Sprint(o))
	}
	// ABBA: each tool moves pool-a -> pool-b once and pool-b -> pool-a once, so neither gets
	// the easier direction (pool-b has 5 nodes, pool-a the rest).
	rounds := []struct {
		tool, to string
	}{{"provider", "pool-b"}, {"kubectl", "pool-a"}, {"kubectl", "pool-b"}, {"provider", "pool-a"}}
	for i, round := range rounds {
		if err := switchPool(ctx, sb.Kube, round.to, n); err != nil {
			return fail("%v", err)
		}
		old := tl.Current()
		rdir := filepath.Join(dir, fmt.Sprintf("%d-%s-to-%s", i+1, round.tool, round.to))
		if err := os.MkdirAll(rdir, 0o755); err != nil {
			return fail("%v", err)
		}
		var wall, cpu time.Duration
		if round.tool == "provider" {
			main := fmt.Sprintf(tfHeader, ProviderSource, fmt.Sprintf("    host  = %q\n    token = %q", proxy.URL, token)) + fmt.Sprintf(`
resource "olapgke_statefulset_migration" "hist" {
  namespace       = %q
  statefulset     = %q
  ordinal_timeout = "5m"
}
`, MigNS, MigSet)
			if err := writeFile(filepath.Join(rdir, "main.tf"), main); err != nil {
				return fail("%v", err)
			}
			proxy.Take()
			tf := &Terraform{Dir: rdir, ProviderDir: providerDir, Env: sb.Env}
			ap, err := tf.Exec(ctx, "apply.log", "apply", "-auto-approve", "-input=false", "-no-color")
			reqs := proxy.Take()
			if err != nil || ap.ExitCode != 0 {
				return fail("terraform apply of olapgke_statefulset_migration (to %s): exit %d, %v\n%s", round.to, ap.ExitCode, err, tail(ap.Output, 40))
			}
			wall, cpu = ap.Wall, ap.CPU
			r.ProviderApply += wall
			r.ProviderCPU += cpu
			if r.ProviderRequests == nil {
				r.ProviderRequests = Requests{}
			}
			for k, c := range reqs {
				r.ProviderRequests[k] += c
			}
		} else {
			// A human's loop: kubectl wait fails with NotFound until the controller has recreated
			// the Pod (the delete above returns once the old Pod is gone), so it is retried, bounded.
			script := fmt.Sprintf(`set -eu
for o in %s; do
  %[2]s -n %[3]s delete pvc %[4]s-%[5]s-$o --wait=false
  %[2]s -n %[3]s delete pod %[5]s-$o
  ok=
  for try in $(seq 1 200); do
    if %[2]s -n %[3]s wait --for=condition=Ready pod/%[5]s-$o --timeout=300s 2>/dev/null; then ok=1; break; fi
  done
  [ -n "$ok" ] || { echo "ordinal $o never Ready" >&2; exit 1; }
done
`, strings.Join(ords, " "), kubectl, MigNS, Claim, MigSet)
			if err := writeFile(filepath.Join(rdir, "kubectl-loop.sh"), script); err != nil {
				return fail("%v", err)
			}
			cmd := exec.CommandContext(ctx, "bash", filepath.Join(rdir, "kubectl-loop.sh"))
			cmd.Env = append(os.Environ(), "KUBECONFIG="+sb.Kubeconfig)
			t0 := time.Now()
			out, err := cmd.CombinedOutput()
			wall, cpu = time.Since(t0), processCPU(cmd.ProcessState)
			_ = os.WriteFile(filepath.Join(rdir, "kubectl-loop.out"), out, 0o644)
			if err != nil {
				return fail("kubectl loop (to %s): %v\n%s", round.to, err, tail(string(out), 40))
			}
			r.KubectlLoop += wall
			r.KubectlCPU += cpu
		}
		moves, err := tl.Moves(old)
		if err != nil {
			return fail("%s to %s: %v", round.tool, round.to, err)
		}
		st := Stats(moves)
		r.Rounds = append(r.Rounds, MigrationRound{Tool: round.tool, To: round.to, Stats: st, Wall: wall, CPU: cpu})
		if round.tool == "provider" {
			r.Provider = r.Provider.Add(st)
		} else {
			r.Kubectl = r.Kubectl.Add(st)
		}
		logf("migration round %d, %s to %s: wall %s, cpu %s, span %s, cluster latency sum %s", i+1, round.tool, round.to, wall.Round(time.Millisecond), cpu.Round(time.Millisecond), st.Span.Round(time.Millisecond), st.Sum.Round(time.Millisecond))
	}
	return r
}

func tail(s string, lines int) string { //nolint:unparam // a helper for any length
	l := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(l) > lines {
		l = l[len(l)-lines:]
	}
	return strings.Join(l, "\n")
}

func median[T int | float64 | time.Duration](v []T) T {
	if len(v) == 0 {
		return 0
	}
	c := append([]T(nil), v...)
	sort.Slice(c, func(i, j int) bool { return c[i] < c[j] })
	return c[len(c)/2]
}
