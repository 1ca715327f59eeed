package statefulset

import (
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/olapgke/terraform-provider-olapgke/internal/planner"
	"github.com/olapgke/terraform-provider-olapgke/internal/planner/rollout"
)

// A cordon between a saved plan and its apply: the planned ordinals stay as they were (every
// one schedulable), and the held ordinal is olapgke's error, or with allow_unschedulable a
// warning naming the node and what holds it.
func TestHeldDiagnostics(t *testing.T) {
	t.Parallel()
	m := &manifest{Namespace: "olap", Name: "roll"}
	p := &rollout.Plan{UpdateRevision: "roll-2", TemplateChanged: true}
	for o := int32(0); o < 3; o++ {
		p.Ordinals = append(p.Ordinals, rollout.OrdinalPlan{Ordinal: o, Pod: "roll-" + strconv.Itoa(int(o)),
			Action: rollout.ActionRecreate, Wave: int(3 - o), Schedulable: true})
	}
	p.Held = []rollout.HeldOrdinal{{Ordinal: 0, Pod: "roll-0", Action: rollout.ActionRecreate,
		Nodes:  []planner.NodeWait{{Node: "gke-olap-pool-a-1", Reason: "is cordoned (spec.unschedulable)"}},
		Reason: "0/6 nodes are available: 1 node(s) were unschedulable."}}
	for _, allow := range []bool{false, true} {
		d := verdictDiagnostics(m, p, allow)
		errs, warns := summaries(d)
		want, other := &errs, &warns
		if allow {
			want, other = &warns, &errs
		}
		if !slices.Contains(*want, "Ordinals Held By Node State") || slices.Contains(*other, "Ordinals Held By Node State") {
			t.Fatalf("allow_unschedulable = %v: errors %q, warnings %q", allow, errs, warns)
		}
		if slices.Contains(errs, "Ordinals Would Stay Pending") || slices.Contains(warns, "Ordinals Would Stay Pending") {
			t.Errorf("allow_unschedulable = %v: a held ordinal is not a doomed one: %q %q", allow, errs, warns)
		}
		for _, x := range d {
			if x.Summary() != "Ordinals Held By Node State" {
				continue
			}
			for _, s := range []string{"ordinal 0 (Pod roll-0, recreate)", "node gke-olap-pool-a-1 is cordoned", "kubectl uncordon", "1 node(s) were unschedulable"} {
				if !strings.Contains(x.Detail(), s) {
					t.Errorf("allow_unschedulable = %v: detail lacks %q:\n%s", allow, s, x.Detail())
				}
			}
			if allow != strings.Contains(x.Detail(), "the apply proceeds as planned") {
				t.Errorf("allow_unschedulable = %v: detail:\n%s", allow, x.Detail())
			}
		}
	}
	p.Held = nil
	if errs, _ := summaries(verdictDiagnostics(m, p, false)); len(errs) > 0 {
		t.Errorf("nothing held, yet errors %q", errs)
	}
}
