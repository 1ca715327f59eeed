package planner

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// The one-line plan summaries (`plan_summary` of olapgke_statefulset and
// olapgke_statefulset_migration): what a reviewer reads first in a plan. They
// are built only from values that are themselves known at plan and held to
// the same value at apply (the ordinals' actions, waves and verdicts; the
// moves, the configuration, the recorded step durations), so a summary known
// at plan holds at apply as well.

// compactOrdinals is "2,1,0": ordinals in the given order, no spaces, so the
// summary stays one short line.
func compactOrdinals(os []int32) string {
	parts := make([]string, len(os))
	for i, o := range os {
		parts[i] = strconv.Itoa(int(o))
	}
	return strings.Join(parts, ",")
}

func plural(n int, one, many string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, one)
	}
	return fmt.Sprintf("%d %s", n, many)
}

// RolloutSummary is olapgke_statefulset's plan_summary for p, e.g.
// "restart 3 ordinals in place (2,1,0), keep 3 PVCs". Ordinals are listed in
// the order the controller acts (wave, then highest ordinal first).
func RolloutSummary(p *Plan) string {
	if p == nil {
		return ""
	}
	ords := append([]OrdinalPlan(nil), p.Ordinals...)
	sort.SliceStable(ords, func(i, j int) bool {
		if ords[i].Wave != ords[j].Wave {
			return ords[i].Wave < ords[j].Wave
		}
		return ords[i].Ordinal > ords[j].Ordinal
	})
	var recreate, create, del, stale, pending, staleStuck, blocked []int32
	keep := 0
	retained, deleted := 0, 0
	for _, o := range ords {
		switch o.Action {
		case ActionRecreate:
			recreate = append(recreate, o.Ordinal)
			keep += len(o.Volumes)
		case ActionCreate:
			create = append(create, o.Ordinal)
		case ActionDelete:
			del = append(del, o.Ordinal)
			if o.PVCsAfter == PVCsDeleted {
				deleted += len(o.Volumes)
			} else {
				retained += len(o.Volumes)
			}
		case ActionStale:
			stale = append(stale, o.Ordinal)
		case ActionStranded:
			stale = append(stale, o.Ordinal)
			staleStuck = append(staleStuck, o.Ordinal)
		}
		if (o.Action == ActionRecreate || o.Action == ActionCreate) && !o.Schedulable {
			pending = append(pending, o.Ordinal)
		}
		if o.Blocked {
			blocked = append(blocked, o.Ordinal)
		}
	}
	var parts []string
	if r := p.Replace; r != nil {
		if r.Mode == RecreateForeground {
			parts = append(parts, "replace the StatefulSet (its Pods are deleted with it)")
		} else {
			parts = append(parts, "re-create the StatefulSet object without deleting a Pod")
		}
	}
	if len(recreate) > 0 {
		s := fmt.Sprintf("restart %s in place (%s)", plural(len(recreate), "ordinal", "ordinals"), compactOrdinals(recreate))
		if w := p.Disruption.Waves; w > 1 {
			s += fmt.Sprintf(" in %d waves", w)
		}
		if keep > 0 {
			s += ", keep " + plural(keep, "PVC", "PVCs")
		}
		parts = append(parts, s)
	}
	if len(create) > 0 {
		parts = append(parts, fmt.Sprintf("create %s (%s)", plural(len(create), "ordinal", "ordinals"), compactOrdinals(create)))
	}
	if len(del) > 0 {
		s := fmt.Sprintf("delete %s (%s)", plural(len(del), "ordinal", "ordinals"), compactOrdinals(del))
		if retained > 0 {
			s += ", retain " + plural(retained, "PVC", "PVCs")
		}
		if deleted > 0 {
			s += ", delete " + plural(deleted, "PVC", "PVCs")
		}
		parts = append(parts, s)
	}
	if len(stale) > 0 {
		s := fmt.Sprintf("leave %s on the old revision (%s)", plural(len(stale), "ordinal", "ordinals"), compactOrdinals(stale))
		if len(staleStuck) == len(stale) {
			s += " for olapgke_statefulset_migration to move: none could come back in place"
		} else if len(staleStuck) > 0 {
			s += fmt.Sprintf(", of which %s could not come back in place", compactOrdinals(staleStuck))
		}
		parts = append(parts, s)
	}
	if len(pending) > 0 {
		parts = append(parts, fmt.Sprintf("%s would stay Pending (%s)", plural(len(pending), "ordinal", "ordinals"), compactOrdinals(pending)))
	}
	if p.Stall != nil {
		s := fmt.Sprintf("the rollout stalls at wave %d", p.Stall.Wave)
		if len(blocked) > 0 {
			s += fmt.Sprintf(", never reaching %s", compactOrdinals(blocked))
		}
		parts = append(parts, s)
	}
	if len(parts) == 0 {
		return "no change to " + plural(len(p.Ordinals), "ordinal", "ordinals")
	}
	return strings.Join(parts, "; ")
}

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
	fmt.Fprintf(&b, "%s of %s (%s)", strings.Join(verbs, " and "), plural(in.Replicas, "ordinal", "ordinals"), compactOrdinals(ords))
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
	if total, ok := migrationEstimate(moves, par, len(in.Gates) > 0, in.Estimate); ok {
		b.WriteString(", about " + roughDuration(total))
	}
	if in.OthersReady && in.Replicas > 0 {
		floor := in.Replicas - min(par, len(moves))
		fmt.Fprintf(&b, "; Ready never below %d", max(floor, 0))
	}
	return b.String()
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
