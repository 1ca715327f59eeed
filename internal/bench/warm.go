package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"

	"github.com/olapgke/terraform-provider-olapgke/internal/fixture"
	planmigration "github.com/olapgke/terraform-provider-olapgke/internal/planner/migration"
	"github.com/olapgke/terraform-provider-olapgke/internal/stsutil"
)

// Warm scenario (issue 46): olapgke_statefulset_migration switching the same ordinals between
// the pools warm (a `copy` block: each ordinal's volume copied to the target node by two copier
// Pods before the cut-over) and cold (no copy: new, empty claims), ABBA in one session. The
// sandbox plays the same readiness delay for every Pod of the StatefulSet (its template's
// sandbox.olapgke.io/ready-after) and a copy of a few seconds (the copiers'
// sandbox.olapgke.io/run-for): what differs between the modes is the provider's work.
const WarmNS = "warm"

// The sandbox's Pod annotations (the sandbox module's kwoknodes/podstages.go, which this module
// does not import): a Pod's readiness delay, and how long a restartPolicy Never Pod runs and
// with which exit code.
const (
	sandboxReadyAfter = "sandbox.olapgke.io/ready-after"
	sandboxRunFor     = "sandbox.olapgke.io/run-for"
	sandboxExitCode   = "sandbox.olapgke.io/exit-code"
)

// warmApplies bounds the `terraform apply` runs of one round: the first and its resumptions.
const warmApplies = 4

// WarmResult is the warm-against-cold cell.
type WarmResult struct {
	// Ordinals are moved each round (0 .. Ordinals-1); Replicas - Ordinals more ordinals of the
	// same StatefulSet stay where they are (bystanders: their Pods and PVCs must not change).
	Ordinals, Replicas int
	// ReadyAfter is the Pods' readiness delay; CopyFor how long the sandbox runs each sink.
	ReadyAfter, CopyFor time.Duration
	Rounds              []WarmRound
	Err                 string
}

// WarmRound is one `terraform apply` moving every ordinal to one pool, warm or cold.
type WarmRound struct {
	Mode, To string // Mode: "warm" or "cold"
	// Moves are the ordinals' moves from the Pod watch: Latency() is the ordinal's downtime,
	// old Pod seen terminating -> new Pod seen Ready.
	Moves []Move
	// Copies are the warm round's copies (source copier first seen -> sink seen Succeeded).
	Copies    []Copy
	Wall, CPU time.Duration // the whole `terraform apply`
	// Requests are the apply's API requests, at the counting proxy.
	Requests Requests
	// Problems are what the round's checks found: a bystander's Pod or PVC changed, a moved
	// ordinal not on the target pool, a warm ordinal's claim not bound to a volume made before
	// its new Pod (the copy), a cold one bound to a volume older than its Pod, copiers left.
	Problems []string
}

// Copy is one ordinal's copy in a warm move.
type Copy struct {
	Pod         string
	Start, Done time.Time
}

// Duration is the copy's time, which the ordinal serves through.
func (c Copy) Duration() time.Duration { return c.Done.Sub(c.Start) }

// Copies returns, for each Pod in pods, the copy of its warm move made after after: its source
// copier first seen -> its sink first seen Succeeded. An error names the Pods without one.
func (t *Timeline) Copies(pods []string, after time.Time) ([]Copy, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []Copy
	var missing []string
	for _, pod := range pods {
		src, sink := planmigration.CopierPodName(pod, planmigration.CopierSource), planmigration.CopierPodName(pod, planmigration.CopierSink)
		var c Copy
		for _, pt := range t.pods {
			if pt.added.Before(after) {
				continue
			}
			if pt.name == src && (c.Start.IsZero() || pt.added.Before(c.Start)) {
				c.Start = pt.added
			}
			if pt.name == sink && !pt.succeeded.IsZero() && (c.Done.IsZero() || pt.succeeded.Before(c.Done)) {
				c.Done = pt.succeeded
			}
		}
		if c.Start.IsZero() || c.Done.IsZero() || c.Done.Before(c.Start) {
			missing = append(missing, pod)
			continue
		}
		c.Pod = pod
		out = append(out, c)
	}
	if len(missing) > 0 {
		return out, fmt.Errorf("copies not seen complete for Pods %v", missing)
	}
	return out, nil
}

// Spread is the median and the largest of a set of durations.
type Spread struct {
	N           int
	Median, Max time.Duration
}

func spreadOf(d []time.Duration) Spread {
	s := Spread{N: len(d), Median: median(d)}
	for _, v := range d {
		s.Max = max(s.Max, v)
	}
	return s
}

// Downtime is the per-ordinal downtime of the mode's rounds (all their moves together).
func (r WarmResult) Downtime(mode string) Spread {
	var d []time.Duration
	for _, rd := range r.Rounds {
		if rd.Mode == mode {
			for _, m := range rd.Moves {
				d = append(d, m.Latency())
			}
		}
	}
	return spreadOf(d)
}

// CopyTime is the per-ordinal copy time of the warm rounds.
func (r WarmResult) CopyTime() Spread {
	var d []time.Duration
	for _, rd := range r.Rounds {
		for _, c := range rd.Copies {
			d = append(d, c.Duration())
		}
	}
	return spreadOf(d)
}

// DowntimeRatio is warm's median per-ordinal downtime over cold's (0 when either is missing).
func (r WarmResult) DowntimeRatio() float64 {
	w, c := r.Downtime("warm"), r.Downtime("cold")
	if w.N == 0 || c.N == 0 || c.Median <= 0 {
		return 0
	}
	return float64(w.Median) / float64(c.Median)
}

// Totals sums the mode's rounds: `terraform apply` wall time, span (first old Pod terminating
// -> last new Pod Ready) and, for warm, the copies.
func (r WarmResult) Totals(mode string) (wall, span, copies time.Duration, rounds int) {
	for _, rd := range r.Rounds {
		if rd.Mode != mode {
			continue
		}
		rounds++
		wall += rd.Wall
		span += Stats(rd.Moves).Span
		for _, c := range rd.Copies {
			copies += c.Duration()
		}
	}
	return wall, span, copies, rounds
}

// Problems are every round's check failures, prefixed with the round.
func (r WarmResult) Problems() []string {
	var out []string
	for i, rd := range r.Rounds {
		for _, p := range rd.Problems {
			out = append(out, fmt.Sprintf("round %d (%s to %s): %s", i+1, rd.Mode, rd.To, p))
		}
	}
	return out
}

// complete says whether the cell measured both modes both ways, every ordinal.
func (r WarmResult) complete() bool {
	if r.Err != "" || len(r.Rounds) != 4 {
		return false
	}
	for _, rd := range r.Rounds {
		if len(rd.Moves) != r.Ordinals || (rd.Mode == "warm" && len(rd.Copies) != r.Ordinals) {
			return false
		}
	}
	return true
}

// verdicts are the cell's rows of the Targets table. Issue 46 asks for the figures, not a bound:
// the downtime row (warm's median per-ordinal downtime against cold's) and the wall-time row (a
// warm switch's `terraform apply` against the cold switch's plus the copies') are "reported"
// once every round was measured (the hand-over's serial steps, release, reserve, the source's
// grace period, the claim's re-creation and binding, sit in warm's downtime window; the claims'
// provisioning and the copiers' start-up in its wall time; a bound picked to pass would say
// nothing). The correctness row is a target: warm claims end on the copy, cold ones on new
// volumes, every moved Pod on the target pool, the bystanders untouched, no copier left.
func (r WarmResult) verdicts() [][3]string {
	const (
		downtime = "warm move downtime per ordinal (median) against a cold move's (same readiness delay; no cache warm-up in the sandbox)"
		wallT    = "warm pool switch `terraform apply` against the cold switch + the copies, both directions summed"
		checks   = "warm/cold switches correct: warm claims bound to the copy (PV made before the new Pod), moved Pods on the target pool, 0 Pods/PVCs of ordinals not moved touched, no copier left"
	)
	w, c, cp := r.Downtime("warm"), r.Downtime("cold"), r.CopyTime()
	if w.N == 0 || c.N == 0 {
		why := "not measured"
		if r.Err != "" {
			why = "failed: " + oneLine(r.Err)
		}
		return [][3]string{{downtime, why, yes(false)}, {wallT, why, yes(false)}, {checks, why, yes(false)}}
	}
	// A cell that stopped early (an apply failed) shows what it measured; nothing of it holds.
	done, incomplete := r.complete(), ""
	if !done {
		incomplete = fmt.Sprintf("; incomplete: %d of 4 rounds", len(r.Rounds))
		if r.Err != "" {
			incomplete += ", " + oneLine(r.Err)
		}
	}
	ratio := r.DowntimeRatio()
	ww, _, copies, _ := r.Totals("warm")
	cw, _, _, _ := r.Totals("cold")
	bound := cw + copies
	wallRatio := 0.0
	if bound > 0 {
		wallRatio = float64(ww) / float64(bound)
	}
	problems := r.Problems()
	checked := fmt.Sprintf("%d rounds x %d ordinals, %d bystanders: no problem", len(r.Rounds), r.Ordinals, r.Replicas-r.Ordinals)
	if len(problems) > 0 {
		checked = fmt.Sprintf("%d problems: %s", len(problems), oneLine(strings.Join(problems, "; ")))
	}
	return [][3]string{
		{downtime, fmt.Sprintf("%ss vs %ss (x%.3f); max %ss vs %ss; copy %ss median, not downtime%s", secs(w.Median), secs(c.Median), ratio,
			secs(w.Max), secs(c.Max), secs(cp.Median), incomplete), reported(done && ratio > 0)},
		{wallT, fmt.Sprintf("%ss vs %ss + %ss of copies (x%.3f)%s", secs(ww), secs(cw), secs(copies), wallRatio, incomplete), reported(done && wallRatio > 0)},
		{checks, checked + incomplete, yes(done && len(problems) == 0)},
	}
}

// reported is a figure row's third column: "reported" once measured in full, else **NO**.
func reported(measured bool) string {
	if measured {
		return "reported"
	}
	return yes(false)
}

// warmSet is the cell's StatefulSet: the migration fixture with every Pod's readiness delayed
// by readyAfter (the sandbox's readiness stage).
func warmSet(replicas int32, readyAfter time.Duration) *appsv1.StatefulSet {
	s := fixture.Historical{Namespace: WarmNS, Name: MigSet, Replicas: replicas, Pool: "pool-a",
		Claim: Claim, StorageClass: StorageClass, Size: "1Gi"}.StatefulSet()
	s.Spec.Template.Annotations = map[string]string{sandboxReadyAfter: readyAfter.String()}
	return s
}

// warmHCL is the migration of ordinals, warm with a copy block whose sink the sandbox runs for
// copyFor, cold without.
func warmHCL(header string, ordinals []int, warm bool, copyFor time.Duration) string {
	ords := make([]string, len(ordinals))
	for i, o := range ordinals {
		ords[i] = fmt.Sprint(o)
	}
	block := ""
	if warm {
		block = fmt.Sprintf(`
  copy = {
    image   = "registry.example/rsync:3"
    timeout = "5m"
    pod_annotations = {
      %q = %q
      %q = "0"
    }
  }`, sandboxRunFor, copyFor.String(), sandboxExitCode)
	}
	return header + fmt.Sprintf(`
resource "olapgke_statefulset_migration" "hist" {
  namespace       = %q
  statefulset     = %q
  ordinals        = [%s]
  ordinal_timeout = "5m"%s
}
`, WarmNS, MigSet, strings.Join(ords, ", "), block)
}

// objectVersions maps "pod/NAME" of the given ordinals to the Pod's UID and "pvc/NAME" to the
// PVC's UID and resourceVersion. A Pod's resourceVersion is left out: the sandbox's readiness
// stage writes the status of a Pod with a readiness delay again every few seconds (its Ready
// patch keeps the ContainersNotReady reason the stage selects on), so only a Pod replaced counts.
func objectVersions(ctx context.Context, kube kubernetes.Interface, ordinals []int) (map[string]string, error) {
	out := map[string]string{}
	for _, o := range ordinals {
		pod := stsutil.PodName(MigSet, int32(o))
		p, err := kube.CoreV1().Pods(WarmNS).Get(ctx, pod, metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		out["pod/"+pod] = string(p.UID)
		pvc := stsutil.ClaimPVCName(Claim, MigSet, int32(o))
		c, err := kube.CoreV1().PersistentVolumeClaims(WarmNS).Get(ctx, pvc, metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		out["pvc/"+pvc] = string(c.UID) + "@" + c.ResourceVersion
	}
	return out, nil
}

// changed lists the keys of before whose value after does not hold.
func changed(before, after map[string]string) []string {
	var out []string
	for k, v := range before {
		if after[k] != v {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// checkMoved checks each moved ordinal after a round: its Pod on a node of pool to, its claim
// Bound to a PV whose node affinity admits the Pod's node, and that PV made before the new Pod (warm: the copy, provisioned during the copy) or not
// (cold: provisioned for the new Pod). Creation timestamps have one-second resolution: a warm
// copy runs for seconds before the cut-over, a cold volume is made after its Pod is scheduled.
func checkMoved(ctx context.Context, kube kubernetes.Interface, ordinals []int, to string, warm bool) ([]string, error) {
	var problems []string
	for _, o := range ordinals {
		pod := stsutil.PodName(MigSet, int32(o))
		p, err := kube.CoreV1().Pods(WarmNS).Get(ctx, pod, metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		n, err := kube.CoreV1().Nodes().Get(ctx, p.Spec.NodeName, metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		if n.Labels[stsutil.LabelNodePool] != to {
			problems = append(problems, fmt.Sprintf("%s on node %s of %s, want %s", pod, n.Name, n.Labels[stsutil.LabelNodePool], to))
		}
		pvc := stsutil.ClaimPVCName(Claim, MigSet, int32(o))
		c, err := kube.CoreV1().PersistentVolumeClaims(WarmNS).Get(ctx, pvc, metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		if c.Status.Phase != corev1.ClaimBound || c.Spec.VolumeName == "" {
			problems = append(problems, fmt.Sprintf("%s %s", pvc, c.Status.Phase))
			continue
		}
		pv, err := kube.CoreV1().PersistentVolumes().Get(ctx, c.Spec.VolumeName, metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		if !volumeFitsNode(pv, n) {
			problems = append(problems, fmt.Sprintf("%s on node %s, its claim %s bound to PV %s pinned elsewhere", pod, n.Name, pvc, pv.Name))
		}
		if before := pv.CreationTimestamp.Before(&p.CreationTimestamp); before != warm {
			problems = append(problems, fmt.Sprintf("%s bound to PV %s created %s, Pod %s created %s (warm %v)", pvc, pv.Name,
				pv.CreationTimestamp.UTC().Format(time.TimeOnly), pod, p.CreationTimestamp.UTC().Format(time.TimeOnly), warm))
		}
		if warm && (pv.Spec.PersistentVolumeReclaimPolicy != corev1.PersistentVolumeReclaimDelete || pv.Annotations[planmigration.AnnWarmClaim] != "") {
			problems = append(problems, fmt.Sprintf("PV %s reclaim %s, warm annotation %q: hand-over not finished", pv.Name, pv.Spec.PersistentVolumeReclaimPolicy, pv.Annotations[planmigration.AnnWarmClaim]))
		}
	}
	return problems, nil
}

// volumeFitsNode says whether PV pv's node affinity admits node n (a PV without one does).
func volumeFitsNode(pv *corev1.PersistentVolume, n *corev1.Node) bool {
	if pv.Spec.NodeAffinity == nil || pv.Spec.NodeAffinity.Required == nil {
		return true
	}
	ok, err := nodeaffinity.NewLazyErrorNodeSelector(pv.Spec.NodeAffinity.Required).Match(n)
	return err == nil && ok
}

// waitCopiersGone waits (up to a minute) until the namespace holds no copier Pod and no copy
// claim; it returns what was left otherwise.
func waitCopiersGone(ctx context.Context, kube kubernetes.Interface) string {
	left := ""
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		sel := metav1.ListOptions{LabelSelector: planmigration.LabelWarmMove}
		pods, err := kube.CoreV1().Pods(WarmNS).List(ctx, sel)
		if err != nil {
			left = err.Error()
			return false, nil //nolint:nilerr // polled again until the timeout, which reports left
		}
		pvcs, err := kube.CoreV1().PersistentVolumeClaims(WarmNS).List(ctx, sel)
		if err != nil {
			left = err.Error()
			return false, nil //nolint:nilerr // polled again until the timeout, which reports left
		}
		left = fmt.Sprintf("%d copier Pods and %d copy claims left", len(pods.Items), len(pvcs.Items))
		return len(pods.Items)+len(pvcs.Items) == 0, nil
	})
	if err != nil {
		return left
	}
	return ""
}

// WarmScenario creates a StatefulSet of n+2 ordinals on pool-a (Pods Ready readyAfter after
// they start) and moves ordinals 0..n-1 between the pools four times: warm to pool-b, cold back,
// cold to pool-b, warm back, so each mode goes each way once. Ordinals n and n+1 stay.
func WarmScenario(ctx context.Context, sb *Sandbox, proxy *Proxy, tfBin, providerDir, dir string, n int, readyAfter, copyFor time.Duration, logf func(string, ...any)) WarmResult {
	replicas := n + 2
	r := WarmResult{Ordinals: n, Replicas: replicas, ReadyAfter: readyAfter, CopyFor: copyFor}
	fail := func(format string, a ...any) WarmResult {
		r.Err = fmt.Sprintf(format, a...)
		logf("warm: %s", r.Err)
		return r
	}
	if err := createReadySet(ctx, sb, warmSet(int32(replicas), readyAfter)); err != nil {
		return fail("%v", err)
	}
	tl, err := WatchPods(ctx, sb.Kube, WarmNS)
	if err != nil {
		return fail("%v", err)
	}
	defer tl.Stop()
	var moved, stay []int
	var movedPods []string
	for o := replicas - 1; o >= 0; o-- {
		if o < n {
			moved = append(moved, o)
			movedPods = append(movedPods, stsutil.PodName(MigSet, int32(o)))
		} else {
			stay = append(stay, o)
		}
	}
	header := fmt.Sprintf(tfHeader, ProviderSource, fmt.Sprintf("    host  = %q\n    token = %q", proxy.URL, sb.Token()))
	for i, round := range []struct{ mode, to string }{{"warm", "pool-b"}, {"cold", "pool-a"}, {"cold", "pool-b"}, {"warm", "pool-a"}} {
		if err := switchPoolIn(ctx, sb.Kube, WarmNS, round.to, replicas); err != nil {
			return fail("%v", err)
		}
		before, err := objectVersions(ctx, sb.Kube, stay)
		if err != nil {
			return fail("%v", err)
		}
		cur := tl.Current()
		old := map[string]types.UID{}
		for _, p := range movedPods {
			old[p] = cur[p]
		}
		rdir := filepath.Join(dir, fmt.Sprintf("%d-%s-to-%s", i+1, round.mode, round.to))
		if err := os.MkdirAll(rdir, 0o755); err != nil {
			return fail("%v", err)
		}
		warm := round.mode == "warm"
		if err := writeFile(filepath.Join(rdir, "main.tf"), warmHCL(header, moved, warm, copyFor)); err != nil {
			return fail("%v", err)
		}
		t0 := time.Now()
		tf := &Terraform{Bin: tfBin, Dir: rdir, ProviderDir: providerDir, Env: sb.Env}
		// A failed apply is a problem of the round; it is then resumed (up to warmApplies applies
		// in all), as the error tells the user to (the migration resumes from the step it
		// reached), so that the round's other ordinals are still measured. The round's wall time
		// and requests cover every apply.
		proxy.Take()
		var failures []string
		var wall, cpu time.Duration
		for attempt := 1; ; attempt++ {
			logName := "apply.log"
			if attempt > 1 {
				logName = fmt.Sprintf("apply-%d.log", attempt)
			}
			ap, err := tf.Exec(ctx, logName, "apply", "-auto-approve", "-input=false", "-no-color")
			wall, cpu = wall+ap.Wall, cpu+ap.CPU
			if err == nil && ap.ExitCode == 0 {
				break
			}
			failures = append(failures, fmt.Sprintf("terraform apply %d failed (exit %d, %v): %s", attempt, ap.ExitCode, err, applyError(ap.Output)))
			logf("warm cell round %d, %s to %s: %s", i+1, round.mode, round.to, failures[len(failures)-1])
			if attempt == warmApplies || ctx.Err() != nil {
				// The round's moves and copies the watches saw are kept (the section shows them);
				// the cell stops: the StatefulSet is as the failure left it.
				moves, _ := tl.Moves(old)
				rd := WarmRound{Mode: round.mode, To: round.to, Moves: moves, Wall: wall, CPU: cpu, Requests: proxy.Take(), Problems: failures}
				if warm {
					rd.Copies, _ = tl.Copies(movedPods, t0)
				}
				r.Rounds = append(r.Rounds, rd)
				return fail("%s to %s: exit %d, %v\n%s", round.mode, round.to, ap.ExitCode, err, tail(ap.Output, 40))
			}
		}
		reqs := proxy.Take()
		moves, err := tl.Moves(old)
		if err != nil {
			return fail("%s to %s: %v", round.mode, round.to, err)
		}
		rd := WarmRound{Mode: round.mode, To: round.to, Moves: moves, Wall: wall, CPU: cpu, Requests: reqs}
		if warm {
			if rd.Copies, err = tl.Copies(movedPods, t0); err != nil {
				return fail("%s to %s: %v", round.mode, round.to, err)
			}
		}
		var problems []string
		if problems, err = checkMoved(ctx, sb.Kube, moved, round.to, warm); err != nil {
			return fail("%s to %s: checking the moves: %v", round.mode, round.to, err)
		}
		rd.Problems = slices.Concat(failures, problems)
		if left := waitCopiersGone(ctx, sb.Kube); left != "" {
			rd.Problems = append(rd.Problems, left)
		}
		after, err := objectVersions(ctx, sb.Kube, stay)
		if err != nil {
			return fail("%v", err)
		}
		for _, k := range changed(before, after) {
			rd.Problems = append(rd.Problems, k+" of an ordinal not moved changed")
		}
		r.Rounds = append(r.Rounds, rd)
		d := make([]time.Duration, len(moves))
		for j, m := range moves {
			d[j] = m.Latency()
		}
		ds := spreadOf(d)
		var cs Spread
		if warm {
			cd := make([]time.Duration, len(rd.Copies))
			for j, c := range rd.Copies {
				cd[j] = c.Duration()
			}
			cs = spreadOf(cd)
		}
		logf("warm cell round %d, %s to %s: wall %s, span %s, downtime median %s max %s, copy median %s, problems %v", i+1, round.mode, round.to,
			wall.Round(time.Millisecond), Stats(moves).Span.Round(time.Millisecond), ds.Median.Round(time.Millisecond), ds.Max.Round(time.Millisecond),
			cs.Median.Round(time.Millisecond), rd.Problems)
	}
	return r
}

// applyError is the first sentence of the stopped ordinal's report in terraform's output
// ("Ordinal N (Pod P) stopped: ..."), else its last non-empty line.
func applyError(out string) string {
	text := strings.Join(strings.Fields(out), " ")
	if i := strings.Index(text, "stopped: "); i >= 0 {
		if j := strings.LastIndex(text[:i], "Ordinal "); j >= 0 {
			text = text[j:]
			if k := strings.Index(text, ". "); k >= 0 {
				text = text[:k+1]
			}
			return text
		}
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

// podDeletes counts the DELETE requests of single Pods among r.
func podDeletes(r Requests) int {
	n := 0
	for k, c := range r {
		if verb, path, _ := strings.Cut(k, " "); verb == "DELETE" && strings.Contains(path, "/pods/") {
			n += c
		}
	}
	return n
}

// byOrdinal maps each round's moves (downtime) and copies (copy time) to the moved Pod's name.
func (rd WarmRound) byOrdinal() (down, copies map[string]time.Duration) {
	down, copies = map[string]time.Duration{}, map[string]time.Duration{}
	for _, m := range rd.Moves {
		down[m.Pod] = m.Latency()
	}
	for _, c := range rd.Copies {
		copies[c.Pod] = c.Duration()
	}
	return down, copies
}

// markdown writes the cell's section body (render.go writes its heading).
func (r WarmResult) markdown(w func(string, ...any)) {
	if r.Err != "" && len(r.Rounds) == 0 {
		w("Failed: %s", fence(r.Err))
		return
	}
	w("One StatefulSet of %d ordinals (OnDelete, grace period 1 s, one 1 GiB TopoLVM claim each, every Pod Ready %s after it starts: the sandbox's readiness stage, the same for both modes) and `olapgke_statefulset_migration` with `ordinals` = the first %d (the other %d stay where they are: their Pods and PVCs must not change), four `terraform apply` in one session, ABBA so each mode goes each way once: warm to pool-b, cold to pool-a, cold to pool-b, warm to pool-a. *Warm* has a `copy` block: per ordinal a claim on the target node, a source copier Pod on the old node and a sink on the target, which the sandbox runs for %s (`sandbox.olapgke.io/run-for`; KWOK runs no containers), then the cut-over and the hand-over of the copy; *cold* has none (new, empty claims).",
		r.Replicas, r.ReadyAfter, r.Ordinals, r.Replicas-r.Ordinals, r.CopyFor)
	w("*Downtime* of an ordinal: old Pod seen terminating -> new Pod seen Ready, from the Pod watch. *Copy*: source copier first seen -> sink seen Succeeded; the ordinal serves meanwhile, so it is not downtime. *Span*: first old Pod terminating -> last new Pod Ready; *apply*: the whole `terraform apply`. The sandbox models no cache: a cold Pod on a real historical then loads its segments from deep storage (minutes to an hour) before it serves, which a warm one does not; here both are Ready after the same delay, so the comparison is of the downtime the provider's steps add, and warm pays for it in wall time by the copies. A warm ordinal's downtime includes its source copier's termination: the old claims go, and the controller recreates the ordinal's claim for the copy, only once the source is gone, and the sandbox's kubelet stand-in plays a Pod's whole termination grace period, 1 s for the copiers (a real rsync daemon exits on SIGTERM at once). A failed `terraform apply` is a problem of its round (last table) and is resumed by another apply (up to %d in all), as its error advises; the round's wall time, CPU and requests cover them all.", warmApplies)
	w("")
	w("| mode | ordinal moves | downtime median s | downtime max s | copy median s | copy max s | apply wall s (to pool-b / to pool-a) | span s (to pool-b / to pool-a) |")
	w("|---|---|---|---|---|---|---|---|")
	for _, mode := range []string{"warm", "cold"} {
		d := r.Downtime(mode)
		cm, cx := "-", "-"
		if mode == "warm" {
			c := r.CopyTime()
			cm, cx = secs(c.Median), secs(c.Max)
		}
		walls, spans := map[string]string{"pool-b": "-", "pool-a": "-"}, map[string]string{"pool-b": "-", "pool-a": "-"}
		for _, rd := range r.Rounds {
			if rd.Mode == mode {
				walls[rd.To], spans[rd.To] = secs(rd.Wall), secs(Stats(rd.Moves).Span)
			}
		}
		w("| %s | %d | %s | %s | %s | %s | %s / %s | %s / %s |", mode, d.N, secs(d.Median), secs(d.Max), cm, cx, walls["pool-b"], walls["pool-a"], spans["pool-b"], spans["pool-a"])
	}
	w("")
	w("Per ordinal, downtime s of each round (copy s in brackets), in the order run:")
	w("")
	head, sep := "| ordinal |", "|---|"
	var downs, copies []map[string]time.Duration
	for i, rd := range r.Rounds {
		head += fmt.Sprintf(" %d. %s to %s |", i+1, rd.Mode, rd.To)
		sep += "---|"
		d, c := rd.byOrdinal()
		downs, copies = append(downs, d), append(copies, c)
	}
	w("%s", head)
	w("%s", sep)
	for o := 0; o < r.Ordinals; o++ {
		pod := stsutil.PodName(MigSet, int32(o))
		row := fmt.Sprintf("| %d |", o)
		for i := range r.Rounds {
			cell := "-"
			if d, ok := downs[i][pod]; ok {
				cell = secs(d)
			}
			if c, ok := copies[i][pod]; ok {
				cell += " (" + secs(c) + ")"
			}
			row += " " + cell + " |"
		}
		w("%s", row)
	}
	w("")
	w("| round | mode | to | moves | span s | apply wall s | terraform + provider CPU s | API requests (DELETE pods) | checks |")
	w("|---|---|---|---|---|---|---|---|---|")
	for i, rd := range r.Rounds {
		checks := "ok"
		if len(rd.Problems) > 0 {
			checks = oneLine(strings.Join(rd.Problems, "; "))
		}
		w("| %d | %s | %s | %d | %s | %s | %s | %d (%d) | %s |", i+1, rd.Mode, rd.To, len(rd.Moves), secs(Stats(rd.Moves).Span), secs(rd.Wall), secs(rd.CPU),
			rd.Requests.Total(), podDeletes(rd.Requests), checks)
	}
	if r.Err != "" {
		w("")
		w("Error: %s", fence(r.Err))
	}
}
