package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/olapgke/terraform-provider-olapgke/internal/fixture"
)

// BatchNS is the namespace of the batched-migration scenario's StatefulSet.
const BatchNS = "batch"

// BatchResult is olapgke_statefulset_migration with max_unavailable = k moving every ordinal of
// one StatefulSet between the pools, for each k: the span against ceil(N/k) x the round's mean
// per-ordinal cluster latency (what the cluster allows k at a time), and the most ordinals ever
// down at once (from the Pod watch: a move is down from its Pod terminating to its new Pod
// Ready), which must not exceed k.
type BatchResult struct {
	Ordinals int
	Rounds   []BatchRound
	Err      string
}

// BatchRound is one k.
type BatchRound struct {
	K        int
	To       string
	Stats    MoveStats
	MaxDown  int
	Wall     time.Duration
	Expected time.Duration // ceil(N/k) x Stats.Sum/N
}

// Ratio is the span over the expected span.
func (b BatchRound) Ratio() float64 {
	if b.Expected <= 0 {
		return 0
	}
	return float64(b.Stats.Span) / float64(b.Expected)
}

// maxConcurrent is the most moves in progress at once.
func maxConcurrent(moves []Move) int {
	type ev struct {
		at    time.Time
		delta int
	}
	var evs []ev
	for _, m := range moves {
		evs = append(evs, ev{m.Deleting, 1}, ev{m.Ready, -1})
	}
	sort.Slice(evs, func(i, j int) bool {
		if evs[i].at.Equal(evs[j].at) {
			return evs[i].delta < evs[j].delta // a Ready before a delete at the same instant
		}
		return evs[i].at.Before(evs[j].at)
	})
	cur, top := 0, 0
	for _, e := range evs {
		cur += e.delta
		top = max(top, cur)
	}
	return top
}

// BatchScenario creates a StatefulSet of n ordinals and moves it pool-a -> pool-b -> pool-a ...
// once per k in ks.
func BatchScenario(ctx context.Context, sb *Sandbox, tfBin, providerDir, dir string, n int, ks []int, logf func(string, ...any)) BatchResult {
	r := BatchResult{Ordinals: n}
	fail := func(format string, a ...any) BatchResult {
		r.Err = fmt.Sprintf(format, a...)
		logf("batch: %s", r.Err)
		return r
	}
	set := fixture.Historical{Namespace: BatchNS, Name: MigSet, Replicas: int32(n), Pool: "pool-a", Claim: Claim, StorageClass: StorageClass, Size: "1Gi"}.StatefulSet()
	if err := createReadySet(ctx, sb, set); err != nil {
		return fail("%v", err)
	}
	tl, err := WatchPods(ctx, sb.Kube, BatchNS)
	if err != nil {
		return fail("%v", err)
	}
	defer tl.Stop()
	header := fmt.Sprintf(tfHeader, ProviderSource, directKube(sb))
	to := "pool-a"
	for _, k := range ks {
		to = map[string]string{"pool-a": "pool-b", "pool-b": "pool-a"}[to]
		if err := switchPoolIn(ctx, sb.Kube, BatchNS, to, n); err != nil {
			return fail("%v", err)
		}
		old := tl.Current()
		rdir := filepath.Join(dir, fmt.Sprintf("k%d-to-%s", k, to))
		if err := os.MkdirAll(rdir, 0o755); err != nil {
			return fail("%v", err)
		}
		body := fmt.Sprintf(`
resource "olapgke_statefulset_migration" "hist" {
  namespace       = %q
  statefulset     = %q
  max_unavailable = %d
  ordinal_timeout = "5m"
}
`, BatchNS, MigSet, k)
		if err := writeFile(filepath.Join(rdir, "main.tf"), header+body); err != nil {
			return fail("%v", err)
		}
		tf := &Terraform{Bin: tfBin, Dir: rdir, ProviderDir: providerDir, Env: sb.Env}
		ap, err := tf.Exec(ctx, "apply.log", "apply", "-auto-approve", "-input=false", "-no-color")
		if err != nil || ap.ExitCode != 0 {
			return fail("max_unavailable = %d (to %s): exit %d, %v\n%s", k, to, ap.ExitCode, err, tail(ap.Output, 40))
		}
		moves, err := tl.Moves(old)
		if err != nil {
			return fail("max_unavailable = %d to %s: %v", k, to, err)
		}
		st := Stats(moves)
		b := BatchRound{K: k, To: to, Stats: st, MaxDown: maxConcurrent(moves), Wall: ap.Wall}
		if st.N > 0 {
			b.Expected = time.Duration((n+k-1)/k) * (st.Sum / time.Duration(st.N))
		}
		r.Rounds = append(r.Rounds, b)
		logf("batch k=%d to %s: span %s, expected %s (x%.3f), at most %d down", k, to, st.Span.Round(time.Millisecond), b.Expected.Round(time.Millisecond), b.Ratio(), b.MaxDown)
	}
	return r
}
