package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// ActionResult compares one ordinal's move by the action olapgke_move_ordinals
// (`terraform apply -invoke`) with the same move by olapgke_statefulset_migration (`ordinals =
// [o]`), side by side on the migration scenario's StatefulSet: ABBA rounds (resource, action,
// action, resource) so neither gets the easier direction.
type ActionResult struct {
	Ordinal int
	// Resource and Action are the summed wall times of each tool's `terraform apply` (CLI
	// start-up, plan and the move), and the moves the Pod watch saw.
	Resource, Action           time.Duration
	ResourceMoves, ActionMoves MoveStats
	Rounds                     []MigrationRound
	Err                        string
}

// Ratio is the action's wall time over the resource's (1 when they take the same).
func (a ActionResult) Ratio() float64 {
	if a.Resource <= 0 {
		return 0
	}
	return float64(a.Action) / float64(a.Resource)
}

// ActionScenario runs after MigrationScenario (its StatefulSet of n ordinals on pool-a, OnDelete)
// and moves ordinal n-1 between the pools four times. It needs a Terraform with actions (1.14+).
func ActionScenario(ctx context.Context, sb *Sandbox, proxy *Proxy, tfBin, providerDir, dir string, n int, logf func(string, ...any)) ActionResult {
	o := n - 1
	r := ActionResult{Ordinal: o}
	fail := func(format string, a ...any) ActionResult {
		r.Err = fmt.Sprintf(format, a...)
		logf("action: %s", r.Err)
		return r
	}
	tl, err := WatchPods(ctx, sb.Kube, MigNS)
	if err != nil {
		return fail("%v", err)
	}
	defer tl.Stop()
	token := sb.Token()
	header := fmt.Sprintf(tfHeader, ProviderSource, fmt.Sprintf("    host  = %q\n    token = %q", proxy.URL, token))
	for i, round := range []struct{ tool, to string }{{"resource", "pool-b"}, {"action", "pool-a"}, {"action", "pool-b"}, {"resource", "pool-a"}} {
		if err := switchPool(ctx, sb.Kube, round.to, n); err != nil {
			return fail("%v", err)
		}
		pod := fmt.Sprintf("%s-%d", MigSet, o)
		old := map[string]types.UID{pod: tl.Current()[pod]}
		rdir := filepath.Join(dir, fmt.Sprintf("%d-%s-to-%s", i+1, round.tool, round.to))
		if err := os.MkdirAll(rdir, 0o755); err != nil {
			return fail("%v", err)
		}
		body := fmt.Sprintf(`
resource "olapgke_statefulset_migration" "one" {
  namespace       = %q
  statefulset     = %q
  ordinals        = [%d]
  ordinal_timeout = "5m"
}
`, MigNS, MigSet, o)
		args := []string{"apply", "-auto-approve", "-input=false", "-no-color"}
		if round.tool == "action" {
			body = fmt.Sprintf(`
action "olapgke_move_ordinals" "one" {
  config {
    namespace       = %q
    statefulset     = %q
    ordinals        = [%d]
    ordinal_timeout = "5m"
  }
}
`, MigNS, MigSet, o)
			args = append(args, "-invoke=action.olapgke_move_ordinals.one")
		}
		if err := writeFile(filepath.Join(rdir, "main.tf"), header+body); err != nil {
			return fail("%v", err)
		}
		tf := &Terraform{Bin: tfBin, Dir: rdir, ProviderDir: providerDir, Env: sb.Env}
		ap, err := tf.Exec(ctx, "apply.log", args...)
		if err != nil || ap.ExitCode != 0 {
			return fail("%s (to %s): exit %d, %v\n%s", round.tool, round.to, ap.ExitCode, err, tail(ap.Output, 40))
		}
		moves, err := tl.Moves(old)
		if err != nil {
			return fail("%s to %s: %v", round.tool, round.to, err)
		}
		st := Stats(moves)
		if st.N != 1 {
			return fail("%s to %s moved %d ordinals, want 1", round.tool, round.to, st.N)
		}
		r.Rounds = append(r.Rounds, MigrationRound{Tool: round.tool, To: round.to, Stats: st, Wall: ap.Wall, CPU: ap.CPU})
		if round.tool == "action" {
			r.Action += ap.Wall
			r.ActionMoves = r.ActionMoves.Add(st)
		} else {
			r.Resource += ap.Wall
			r.ResourceMoves = r.ResourceMoves.Add(st)
		}
		logf("action round %d, %s to %s: wall %s, move %s", i+1, round.tool, round.to, ap.Wall.Round(time.Millisecond), st.Sum.Round(time.Millisecond))
	}
	return r
}
