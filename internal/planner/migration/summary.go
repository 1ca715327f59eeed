package migration

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/olapgke/terraform-provider-olapgke/internal/planner"
)

// MigrationSummaryInput is what olapgke_statefulset_migration's plan_summary
// says besides the moves: the configuration and the estimates of earlier runs.
type MigrationSummaryInput struct {
	// Replicas is the number of ordinals in the set's range.
	Replicas int
	// PoolOf names the node pool of a node ("" when unknown).
	PoolOf func(node string) string
	// Parallelism is how many ordinals move at once.
	Parallelism int
	// SoakSeconds is min_ready_seconds.
	SoakSeconds int64
	// Gates are the names of the gates each step waits for.
	Gates []string
	// Estimate is the expected time of one step of an action, gates included
	// (EstimateStep over the resource's recorded steps); ok false when none
	// was recorded.
	Estimate func(MigrationAction) (seconds float64, ok bool)
	// OthersReady is require_others_ready: the apply refuses or waits while an
	// ordinal it leaves alone is not Ready, so only the moving batch is down.
	OthersReady bool
	// CopyBandwidth bounds a warm move's copy (bytes per second; 0: unbounded).
	CopyBandwidth int64
}

// MigrationSummary is olapgke_statefulset_migration's plan_summary for moves,
// e.g. "move 3 of 3 ordinals (2,1,0) historical-a -> historical-b, 1 at a
// time, soak 60s, gate segments-loaded, about 54m; Ready never below 2".
func MigrationSummary(moves []Move, target string, in MigrationSummaryInput) string {
	if len(moves) == 0 {
		return "nothing to move"
	}
	counts := map[MigrationAction]int{}
	ords := make([]int32, 0, len(moves))
	from := map[string]bool{}
	for _, m := range moves {
		counts[m.Action]++
		ords = append(ords, m.Ordinal)
		if m.Action == MigrationMove && m.FromNode != "" && in.PoolOf != nil {
			if p := in.PoolOf(m.FromNode); p != "" {
				from[p] = true
			}
		}
	}
	var verbs []string
	for _, a := range []struct {
		action MigrationAction
		verb   string
	}{{MigrationMove, "move"}, {MigrationRestart, "restart"}, {MigrationGate, "finish the gates of"}} {
		if n := counts[a.action]; n > 0 {
			verbs = append(verbs, fmt.Sprintf("%s %d", a.verb, n))
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s of %s (%s)", strings.Join(verbs, " and "), planner.Plural(in.Replicas, "ordinal", "ordinals"), planner.CompactOrdinals(ords))
	if counts[MigrationMove] > 0 && target != "" {
		pools := make([]string, 0, len(from))
		for p := range from {
			pools = append(pools, p)
		}
		sort.Strings(pools)
		if len(pools) > 0 {
			fmt.Fprintf(&b, " %s -> %s", strings.Join(pools, ","), target)
		} else {
			fmt.Fprintf(&b, " to %s", target)
		}
	}
	par := in.Parallelism
	if par < 1 {
		par = 1
	}
	fmt.Fprintf(&b, ", %d at a time", par)
	if in.SoakSeconds > 0 {
		fmt.Fprintf(&b, ", soak %ds", in.SoakSeconds)
	}
	if len(in.Gates) > 0 {
		fmt.Fprintf(&b, ", %s %s", map[bool]string{true: "gate", false: "gates"}[len(in.Gates) == 1], strings.Join(in.Gates, ","))
	}
	if c := warmSummary(moves, in.CopyBandwidth); c != "" {
		b.WriteString(", " + c)
	}
	if total, ok := migrationEstimate(moves, par, len(in.Gates) > 0, in.Estimate); ok {
		b.WriteString(", about " + roughDuration(total))
	}
	if in.OthersReady && in.Replicas > 0 {
		floor := in.Replicas - min(par, len(moves))
		fmt.Fprintf(&b, "; Ready never below %d", max(floor, 0))
	}
	return b.String()
}

// warmSummary says what the warm moves copy: "warm: copy up to 100Gi per ordinal at 200Mi/s
// (at most 9m each) while it serves"; "" without warm moves.
func warmSummary(moves []Move, bandwidth int64) string {
	var most int64
	for _, m := range moves {
		most = max(most, m.CopyBytes)
	}
	if most == 0 {
		return ""
	}
	s := "warm: copy up to " + resource.NewQuantity(most, resource.BinarySI).String() + " per ordinal"
	if secs, ok := CopyMaxSeconds(most, bandwidth); ok {
		s += fmt.Sprintf(" at %s/s (at most %s each)", resource.NewQuantity(bandwidth, resource.BinarySI), roughDuration(secs))
	}
	return s + " while it serves"
}

// migrationEstimate is the expected time of all moves through the executor's window of par
// ordinals: each move takes the slot that frees first; with gates, batches of par run one after
// the other, each as long as its longest step. ok is false when a step has no estimate.
func migrationEstimate(moves []Move, par int, gated bool, est func(MigrationAction) (float64, bool)) (float64, bool) {
	if est == nil {
		return 0, false
	}
	slots := make([]float64, par)
	for i, m := range moves {
		s, ok := est(m.Action)
		if !ok {
			return 0, false
		}
		if gated && i%par == 0 {
			end := slices.Max(slots)
			for j := range slots {
				slots[j] = end
			}
		}
		j := slices.Index(slots, slices.Min(slots))
		slots[j] += s
	}
	return slices.Max(slots), true
}

// roughDuration is "45s", "6m" or "1h20m": the precision an estimate has.
func roughDuration(seconds float64) string {
	if seconds < 90 {
		return fmt.Sprintf("%ds", int(math.Round(seconds)))
	}
	m := int(math.Round(seconds / 60))
	if m < 60 {
		return fmt.Sprintf("%dm", m)
	}
	if m%60 == 0 {
		return fmt.Sprintf("%dh", m/60)
	}
	return fmt.Sprintf("%dh%dm", m/60, m%60)
}
