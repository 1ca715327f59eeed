package rollout

import (
	"fmt"
	"testing"

	"github.com/olapgke/terraform-provider-olapgke/internal/planner"
	"github.com/olapgke/terraform-provider-olapgke/internal/planner/plannertest"
	"github.com/olapgke/terraform-provider-olapgke/internal/stsutil"
	appsv1 "k8s.io/api/apps/v1"
)

// summary renders a plan compactly: "<ordinal> <action> w<wave> ok|NO [blocked] [nopod] [pvcs]".
func summary(p *Plan) []string {
	var out []string
	for _, o := range p.Ordinals {
		s := fmt.Sprintf("%d %s w%d", o.Ordinal, o.Action, o.Wave)
		if o.Action != ActionDelete {
			if o.Schedulable {
				s += " ok"
			} else {
				s += " NO"
			}
		}
		if o.Blocked {
			s += " blocked"
		}
		if o.NoPod {
			s += " nopod"
		}
		if o.PVCsAfter != "" {
			s += " pvcs=" + o.PVCsAfter
		}
		out = append(out, s)
	}
	return out
}

// checkInvariants: one entry (so one Pod) per ordinal, ascending; ordinals
// outside old ∪ new range ∪ existing Pods never appear; only deletions
// outside the desired range; untouched actions have wave 0.
func checkInvariants(t *testing.T, s planner.Snapshot, p *Plan) {
	t.Helper()
	allowed := map[int32]bool{}
	addRange := func(set *appsv1.StatefulSet) {
		if set == nil {
			return
		}
		for o := startOf(set); o < startOf(set)+replicasOf(set); o++ {
			allowed[int32(o)] = true
		}
	}
	addRange(s.Desired)
	addRange(s.Live)
	for _, pod := range s.Pods {
		allowed[stsutil.OrdinalOf(pod.Name)] = true
	}
	prev := int32(-1)
	for _, o := range p.Ordinals {
		if o.Ordinal <= prev {
			t.Errorf("ordinal %d listed twice or out of order", o.Ordinal)
		}
		prev = o.Ordinal
		if !allowed[o.Ordinal] {
			t.Errorf("ordinal %d is outside the old and new range and has no Pod", o.Ordinal)
		}
		if s.Desired != nil {
			in := int(o.Ordinal) >= startOf(s.Desired) && int(o.Ordinal) < startOf(s.Desired)+replicasOf(s.Desired)
			if in == (o.Action == ActionDelete) {
				t.Errorf("ordinal %d: action %s does not fit the desired range", o.Ordinal, o.Action)
			}
		}
		if (o.Action == ActionUnchanged || o.Action == ActionStale || o.Action == ActionStranded) && o.Wave != 0 {
			t.Errorf("ordinal %d: %s with wave %d", o.Ordinal, o.Action, o.Wave)
		}
		if o.Blocked && p.Stall == nil {
			t.Errorf("ordinal %d blocked without a stall", o.Ordinal)
		}
		if o.Pod != fmt.Sprintf("%s-%d", plannertest.SetName, o.Ordinal) {
			t.Errorf("ordinal %d: pod name %q", o.Ordinal, o.Pod)
		}
		if !o.Schedulable && o.Reason == "" {
			t.Errorf("ordinal %d: unschedulable without a reason", o.Ordinal)
		}
	}
}
