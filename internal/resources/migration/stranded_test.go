package migration

import (
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/types"
	appsv1 "k8s.io/api/apps/v1"

	"github.com/olapgke/terraform-provider-olapgke/internal/clients"
	planmigration "github.com/olapgke/terraform-provider-olapgke/internal/planner/migration"
)

// The migration warns for the ordinals olapgke_statefulset stranded in this run (it gave no
// warning for them) that its moves leave out, and is silent when it moves them all.
func TestStrandedWarning(t *testing.T) {
	t.Parallel()
	c := &clients.Clients{}
	c.RecordPlannedStatefulSet("olap", "hist", clients.PlannedStatefulSet{Set: &appsv1.StatefulSet{}, Stranded: []clients.StrandedOrdinal{
		{Ordinal: 0, Pod: "hist-0", Reason: "ordinal 0: PV pinned to a pool-a node"}, {Ordinal: 2, Pod: "hist-2", Reason: "PV pinned to a pool-a node"},
	}})
	m := resourceModel{Namespace: types.StringValue("olap"), StatefulSet: types.StringValue("hist")}
	moves := func(os ...int32) []planmigration.Move {
		var out []planmigration.Move
		for _, o := range os {
			out = append(out, planmigration.Move{Ordinal: o, Action: planmigration.MigrationMove})
		}
		return out
	}
	if w := strandedWarning(c, m, moves(2, 1, 0)); w != nil {
		t.Errorf("all stranded ordinals moved: got %q, want no warning", w.Summary())
	}
	w := strandedWarning(c, m, moves(2))
	if w == nil || w.Summary() != "Stale Ordinals Not Moved" {
		t.Fatalf("canary moving ordinal 2 only: got %v, want Stale Ordinals Not Moved", w)
	}
	for _, want := range []string{"- hist-0: PV pinned to a pool-a node"} {
		if !strings.Contains(w.Detail(), want) {
			t.Errorf("detail does not say %q:\n%s", want, w.Detail())
		}
	}
	if strings.Contains(w.Detail(), "hist-2") {
		t.Errorf("detail names the moved ordinal 2:\n%s", w.Detail())
	}
	other := resourceModel{Namespace: types.StringValue("olap"), StatefulSet: types.StringValue("other")}
	if w := strandedWarning(c, other, nil); w != nil {
		t.Errorf("another StatefulSet: got %q, want no warning", w.Summary())
	}
}
