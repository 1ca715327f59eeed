package rollout

import (
	"fmt"
	"sort"
	"strings"

	"github.com/olapgke/terraform-provider-olapgke/internal/planner"
)

// The one-line plan summaries (`plan_summary` of olapgke_statefulset and
// olapgke_statefulset_migration): what a reviewer reads first in a plan. They
// are built only from values that are themselves known at plan and held to
// the same value at apply (the ordinals' actions, waves and verdicts; the
// moves, the configuration, the recorded step durations), so a summary known
// at plan holds at apply as well.

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
		s := fmt.Sprintf("restart %s in place (%s)", planner.Plural(len(recreate), "ordinal", "ordinals"), planner.CompactOrdinals(recreate))
		if w := p.Disruption.Waves; w > 1 {
			s += fmt.Sprintf(" in %d waves", w)
		}
		if keep > 0 {
			s += ", keep " + planner.Plural(keep, "PVC", "PVCs")
		}
		parts = append(parts, s)
	}
	if len(create) > 0 {
		parts = append(parts, fmt.Sprintf("create %s (%s)", planner.Plural(len(create), "ordinal", "ordinals"), planner.CompactOrdinals(create)))
	}
	if len(del) > 0 {
		s := fmt.Sprintf("delete %s (%s)", planner.Plural(len(del), "ordinal", "ordinals"), planner.CompactOrdinals(del))
		if retained > 0 {
			s += ", retain " + planner.Plural(retained, "PVC", "PVCs")
		}
		if deleted > 0 {
			s += ", delete " + planner.Plural(deleted, "PVC", "PVCs")
		}
		parts = append(parts, s)
	}
	if len(stale) > 0 {
		s := fmt.Sprintf("leave %s on the old revision (%s)", planner.Plural(len(stale), "ordinal", "ordinals"), planner.CompactOrdinals(stale))
		if len(staleStuck) == len(stale) {
			s += " for olapgke_statefulset_migration to move: none could come back in place"
		} else if len(staleStuck) > 0 {
			s += fmt.Sprintf(", of which %s could not come back in place", planner.CompactOrdinals(staleStuck))
		}
		parts = append(parts, s)
	}
	if len(pending) > 0 {
		parts = append(parts, fmt.Sprintf("%s would stay Pending (%s)", planner.Plural(len(pending), "ordinal", "ordinals"), planner.CompactOrdinals(pending)))
	}
	if p.Stall != nil {
		s := fmt.Sprintf("the rollout stalls at wave %d", p.Stall.Wave)
		if len(blocked) > 0 {
			s += fmt.Sprintf(", never reaching %s", planner.CompactOrdinals(blocked))
		}
		parts = append(parts, s)
	}
	if len(parts) == 0 {
		return "no change to " + planner.Plural(len(p.Ordinals), "ordinal", "ordinals")
	}
	return strings.Join(parts, "; ")
}
