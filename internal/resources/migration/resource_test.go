package migration

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/types"
	appsv1 "k8s.io/api/apps/v1"

	"github.com/olapgke/terraform-provider-olapgke/internal/diagnostics/diagtest"
	"github.com/olapgke/terraform-provider-olapgke/internal/engine"
	"github.com/olapgke/terraform-provider-olapgke/internal/planner"
	"github.com/olapgke/terraform-provider-olapgke/internal/planner/gates"
	planmigration "github.com/olapgke/terraform-provider-olapgke/internal/planner/migration"
)

func TestSchemaIsValid(t *testing.T) {
	t.Parallel()
	r := NewStatefulSetMigrationResource()
	var resp resource.SchemaResponse
	r.Schema(context.Background(), resource.SchemaRequest{}, &resp)
	if resp.Diagnostics.HasError() {
		t.Fatalf("schema: %v", resp.Diagnostics)
	}
	if d := resp.Schema.ValidateImplementation(context.Background()); d.HasError() {
		t.Fatalf("schema implementation: %v", d)
	}
	// The model's attribute types must match the schema (a mismatch only shows at runtime).
	for name, typ := range map[string]types.ObjectType{"moves": moveType, "completed": completedType} {
		if got := resp.Schema.Attributes[name].GetType(); !got.Equal(types.ListType{ElemType: typ}) {
			t.Errorf("%s: schema type %s, model type %s", name, got, typ)
		}
	}
}

func TestMergeCompleted(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	var list []completedModel
	for _, o := range []int32{2, 0, 1, 2} {
		list = mergeCompleted(list, engine.MigratedOrdinal{Ordinal: o, Pod: "hist", PodUID: "u", Node: "n", Duration: 1500 * time.Millisecond, Finished: at})
	}
	var got []int64
	for _, c := range list {
		got = append(got, c.Ordinal)
	}
	if d := cmp.Diff([]int64{0, 1, 2}, got); d != "" {
		t.Errorf("ordinals (-want +got):\n%s", d)
	}
	if list[0].DurationSeconds != 1.5 || list[0].FinishedAt != "2026-11-29T12:00:00Z" || list[0].PVs == nil {
		t.Errorf("record: %+v", list[0])
	}
}

func TestDecodeManifest(t *testing.T) {
	t.Parallel()
	set, err := decodeManifest(`{"apiVersion":"apps/v1","kind":"StatefulSet","metadata":{"name":"hist"},"spec":{"template":{"spec":{"nodeSelector":{"cloud.google.com/gke-nodepool":"pool-b"}}}}}`, "olap", "hist")
	if err != nil {
		t.Fatal(err)
	}
	if set.Namespace != "olap" || set.Spec.Template.Spec.NodeSelector["cloud.google.com/gke-nodepool"] != "pool-b" {
		t.Errorf("decoded %+v", set)
	}
	for js, want := range map[string]string{
		`{"kind":"Deployment"}`:          "not StatefulSet",
		`{"metadata":{"name":"other"}}`:  `statefulset = "hist"`,
		`{"metadata":{"namespace":"x"}}`: `namespace = "olap"`,
		`[1]`:                            "not a StatefulSet as JSON",
	} {
		if _, err := decodeManifest(js, "olap", "hist"); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err %v, want %q", js, err, want)
		}
	}
}

func TestMigrationDiagnostic(t *testing.T) {
	t.Parallel()
	done := []completedModel{{Ordinal: 2, DurationSeconds: 1.4, Node: "gke-olap-pool-b-1"}}
	d := migrationDiagnostic("olap", "hist", []int32{2, 1, 0}, done, &engine.MigrationError{
		Ordinal: 1, Pod: "hist-1", Phase: "wait", Reason: "waiting for Pod hist-1 to be scheduled: unschedulable for 20s",
		Source: "condition PodScheduled of Pod hist-1", Quote: "0/6 nodes are available: 3 node(s) were unschedulable.",
		Cause: planner.CauseUnschedulable,
	})
	if d.Summary() != "Moved Pod Cannot Be Scheduled" {
		t.Errorf("summary %q", d.Summary())
	}
	for _, want := range []string{"Ordinal 1 (Pod hist-1)", `"0/6 nodes are available: 3 node(s) were unschedulable."`,
		"2 (1.4s on gke-olap-pool-b-1)", "resumes with ordinal 1", "were not touched"} {
		if !strings.Contains(d.Detail(), want) {
			t.Errorf("detail does not contain %q:\n%s", want, d.Detail())
		}
	}
	p := migrationDiagnostic("olap", "hist", []int32{1}, nil, &engine.PreconditionError{Msg: "no node can take the moved Pods"})
	if p.Summary() != "Migration Precondition Failed" || !strings.Contains(p.Detail(), "Nothing was deleted") {
		t.Errorf("precondition diagnostic: %s / %s", p.Summary(), p.Detail())
	}
}

// A cancelled apply (Ctrl-C, a cancelled HCP run) says so and where it stopped, not "Migration
// Failed ... context canceled"; the same wait ended by the timeout (context deadline) is not a
// cancellation.
func TestMigrationDiagnosticCancelled(t *testing.T) {
	t.Parallel()
	stopped := func(cause error) error {
		return &engine.MigrationError{Ordinal: 1, Pod: "hist-1", Phase: "wait", Reason: "still waiting for Pod hist-1 to be Ready",
			Timeout: true, Deleted: []string{"PVC cache-hist-1", "Pod hist-1"}, Err: cause}
	}
	done := []completedModel{{Ordinal: 2, DurationSeconds: 1.4, Node: "gke-olap-pool-b-1"}}
	d := migrationDiagnostic("olap", "hist", []int32{2, 1, 0}, done, stopped(context.Canceled))
	if d.Summary() != "Migration Cancelled" {
		t.Fatalf("summary %q:\n%s", d.Summary(), d.Detail())
	}
	flat := strings.Join(strings.Fields(d.Detail()), " ")
	for _, want := range []string{"cancelled at ordinal 1 (Pod hist-1), step wait", "deleted PVC cache-hist-1 and Pod hist-1",
		"waiting for Pod hist-1 to be Ready", "OlapgkeCancelled", "2 (1.4s on gke-olap-pool-b-1)"} {
		if !strings.Contains(flat, want) {
			t.Errorf("detail does not contain %q:\n%s", want, d.Detail())
		}
	}
	if strings.Contains(d.Detail(), "context canceled") {
		t.Errorf("detail quotes the context:\n%s", d.Detail())
	}
	for _, p := range diagtest.Problems(d) {
		t.Error(p)
	}
	if d := migrationDiagnostic("olap", "hist", []int32{1}, nil, stopped(context.DeadlineExceeded)); d.Summary() != "Moved Pod Not Ready In Time" {
		t.Errorf("deadline: summary %q", d.Summary())
	}
	gate := &engine.GateError{Ordinal: 0, Pod: "hist-0", Gate: "loaded", Polls: 3, Err: context.Canceled}
	if d := migrationDiagnostic("olap", "hist", []int32{0}, nil, gate); d.Summary() != "Migration Cancelled" ||
		!strings.Contains(strings.Join(strings.Fields(d.Detail()), " "), "waiting for gate loaded after 3 polls") {
		t.Errorf("cancelled at a gate: %s\n%s", d.Summary(), d.Detail())
	}
}

// TestMovesShowGatesAndEstimates: each planned step lists its gates for its ordinal (a move's
// node is left as a placeholder until apply) and, from earlier records, an estimate per action;
// a gate-only resume merges into the record of the step it belongs to.
func TestMovesShowGatesAndEstimates(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	gates := []gates.Gate{{Name: "loaded", Timeout: time.Minute, Interval: time.Second,
		HTTP: &gates.HTTPGate{URL: "http://c/{pod}/{node}", Method: "GET", ExpectStatus: 200}}}
	var history []completedModel
	history = mergeCompleted(history, engine.MigratedOrdinal{Ordinal: 2, Action: planmigration.MigrationMove, Pod: "hist-2", PodUID: "u2",
		Duration: 20 * time.Second, Gates: []engine.GateResult{{Name: "loaded", Duration: 40 * time.Second, Polls: 9}}})
	history = mergeCompleted(history, engine.MigratedOrdinal{Ordinal: 1, Action: planmigration.MigrationRestart, Pod: "hist-1", PodUID: "u1",
		Duration: 6 * time.Second})
	// A later gate-only wait of ordinal 1's same Pod adds its gates to the restart's record.
	history = mergeCompleted(history, engine.MigratedOrdinal{Ordinal: 1, Action: planmigration.MigrationGate, Pod: "hist-1", PodUID: "u1",
		Gates: []engine.GateResult{{Name: "loaded", Duration: 4 * time.Second, Polls: 2}}})
	if len(history) != 2 || history[0].Action.ValueString() != "restart" || len(history[0].gateResults()) != 1 {
		t.Fatalf("records %+v, want the restart record kept with its gate added", history)
	}
	l, diags := flattenMoves(ctx, []planmigration.Move{
		{Ordinal: 0, Pod: "hist-0", Action: planmigration.MigrationMove, FromNode: "a-0"},
		{Ordinal: 3, Pod: "hist-3", Action: planmigration.MigrationRestart, FromNode: "a-3"},
		{Ordinal: 4, Pod: "hist-4", Action: planmigration.MigrationGate, FromNode: "b-4"},
	}, moveContext{namespace: "olap", statefulset: "hist", gates: gates, history: stepHistory(history)})
	if diags.HasError() {
		t.Fatal(diags)
	}
	var got []moveModel
	if d := l.ElementsAs(ctx, &got, false); d.HasError() {
		t.Fatal(d)
	}
	type row struct {
		Gate     string
		Estimate float64
	}
	var rows []row
	for _, m := range got {
		rows = append(rows, row{strings.Join(m.Gates, "; "), m.Estimate.ValueFloat64()})
	}
	want := []row{
		{"loaded: GET http://c/hist-0/{node} answers 200", 60},
		{"loaded: GET http://c/hist-3/a-3 answers 200", 10},
		{"loaded: GET http://c/hist-4/b-4 answers 200", 22},
	}
	if d := cmp.Diff(want, rows); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
}

// TestProblemFoundAndDo: the Found of a planner problem says only what was found, the Do what to
// do; planned_manifest is advised only when it is not set and no olapgke_statefulset plan gives
// the StatefulSet, and never to an action.
func TestProblemFoundAndDo(t *testing.T) {
	t.Parallel()
	strategy := planmigration.MigrationProblem{Kind: planmigration.ProblemStrategy, Ordinal: -1,
		Message: "StatefulSet olap/hist uses RollingUpdate with partition 0: the controller itself replaces ordinals 0..2",
		Fix:     "set updateStrategy.type to OnDelete (or a partition above 2)"}
	pdb := planmigration.MigrationProblem{Kind: planmigration.ProblemPDB, Ordinal: -1,
		Message: "PodDisruptionBudget olap/hist selects the Pods and allows 0 disruptions now (2 of 3 desired healthy); moving a Ready Pod would exceed it"}
	ev := func(source string) *evaluation {
		e := &evaluation{plan: &planmigration.MigrationPlan{Target: "pool-b", Parallelism: 1,
			Problems: []planmigration.MigrationProblem{strategy, pdb}}, source: source}
		if source != "" {
			e.desired = &appsv1.StatefulSet{}
		}
		return e
	}
	unset := resourceModel{Namespace: types.StringValue("olap"), StatefulSet: types.StringValue("hist"), PlannedManifest: types.StringNull()}
	set := unset
	set.PlannedManifest = types.StringValue(`{"kind":"StatefulSet"}`)
	for name, tc := range map[string]struct {
		diags     diag.Diagnostics
		want, not string
	}{
		"no manifest":           {problemDiagnostics(unset, ev("")), "pass the StatefulSet manifest as planned_manifest", "olapgke_statefulset manifest"},
		"manifest set at apply": {problemDiagnostics(set, ev("")), "that planned_manifest passes", "pass the StatefulSet manifest"},
		"planned_manifest":      {problemDiagnostics(set, ev("planned_manifest")), "that planned_manifest passes", "pass the StatefulSet manifest"},
		"olapgke_statefulset":   {problemDiagnostics(unset, ev("planned by olapgke_statefulset in this run")), "in the olapgke_statefulset manifest", "planned_manifest"},
		"action":                {problemsOf(unset, ev("")), "run the action again", "planned_manifest"},
	} {
		if len(tc.diags) != 2 {
			t.Fatalf("%s: %d diagnostics, want 2", name, len(tc.diags))
		}
		for _, d := range tc.diags {
			paras := strings.Split(d.Detail(), "\n\n")
			if len(paras) != 3 {
				t.Fatalf("%s: %s: want checked, found, do:\n%s", name, d.Summary(), d.Detail())
			}
			found, do := paras[1], strings.Join(strings.Fields(paras[2]), " ")
			for _, advice := range []string{"OnDelete", "Wait until", "relax", "Set updateStrategy"} {
				if strings.Contains(found, advice) {
					t.Errorf("%s: %s: the Found gives advice (%q): %q", name, d.Summary(), advice, found)
				}
			}
			if d.Summary() == "Update Strategy Would Roll Other Ordinals" {
				if !strings.HasPrefix(do, "Set updateStrategy.type to OnDelete (or a partition above 2)") ||
					!strings.Contains(do, tc.want) || strings.Contains(do, tc.not) {
					t.Errorf("%s: Do %q, want %q and not %q", name, do, tc.want, tc.not)
				}
			} else if !strings.HasPrefix(do, "Wait until every Pod the budget selects is Ready") {
				t.Errorf("%s: %s: Do %q", name, d.Summary(), do)
			}
			for _, p := range diagtest.Problems(d) {
				t.Errorf("%s: %s", name, p)
			}
		}
	}
}
