package migration_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/types"

	"github.com/olapgke/terraform-provider-olapgke/internal/acctest"
)

// operatorExample is the guide's example of a node-pool move of a StatefulSet an operator writes
// (templates/guides/adopting-an-existing-statefulset.md.tmpl).
const operatorExample = "examples/guides/adopting-an-existing-statefulset/operator-pool-move"

// TestAccStatefulSetMigration_OperatorPoolMoveExample applies the guide's example verbatim, as a
// child module, with the test playing the operator: it creates the StatefulSet as field manager
// druid-operator (OnDelete, on pool-a), then writes the new nodeSelector (pool-b) as the operator
// would after the custom resource changed. next_historical is that StatefulSet as `kubectl get -o
// json` prints it, without status and the server-set metadata, as the guide says to produce it.
// The plan shows every ordinal stranded (data source) and moved (migration); the apply moves them
// one at a time onto pool-b with new PVCs; the next plan is empty.
func TestAccStatefulSetMigration_OperatorPoolMoveExample(t *testing.T) {
	const ns, manager = "mig-operator-example", "druid-operator"
	env := acctest.Sandbox(t)
	acctest.PreCheck(t)
	ensurePool(t, env, "pool-b", 3)
	f := newSetAs(t, env, ns, 3, "pool-a", "1Gi", manager)
	oldPVCs := map[int32]types.UID{}
	for o := range f.n {
		_, c := f.get(t, o)
		oldPVCs[o] = c.UID
	}
	// The custom resource changed: the operator writes the new pool (OnDelete: nothing restarts).
	f.switchPoolAs(t, "pool-b", manager)

	raw, err := env.Kube.AppsV1().RESTClient().Get().Namespace(ns).Resource("statefulsets").Name(f.name).DoRaw(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var next map[string]any
	if err := json.Unmarshal(raw, &next); err != nil {
		t.Fatal(err)
	}
	delete(next, "status")
	meta := next["metadata"].(map[string]any)
	for _, k := range []string{"uid", "resourceVersion", "generation", "creationTimestamp", "managedFields"} {
		delete(meta, k)
	}
	if a, ok := meta["annotations"].(map[string]any); ok {
		delete(a, "kubectl.kubernetes.io/last-applied-configuration")
	}

	dir := t.TempDir()
	example := filepath.Join(dir, "operator-pool-move")
	if err := os.CopyFS(example, os.DirFS(filepath.Join(acctest.RepoRoot(), operatorExample))); err != nil {
		t.Fatal(err)
	}
	nextFile := filepath.Join(dir, "next_historical.json")
	b, _ := json.MarshalIndent(next, "", "  ")
	if err := os.WriteFile(nextFile, b, 0o600); err != nil {
		t.Fatal(err)
	}
	tf := acctest.NewTF(t, fmt.Sprintf(`
module "pool_move" {
  source = %q

  namespace         = %q
  name              = %q
  next_historical   = jsondecode(file(%q))
  min_ready_seconds = 0
}
`, example, ns, f.name, nextFile))
	if out, err := tf.Run("get"); err != nil {
		t.Fatalf("terraform get: %v\n%s", err, out)
	}
	t.Cleanup(func() {
		if out, err := tf.Run("destroy", "-auto-approve"); err != nil {
			t.Logf("destroy: %v\n%s", err, out)
		}
	})

	out, err := tf.Run("plan", "-out=tfplan")
	if err != nil {
		t.Fatalf("plan: %v\n%s", err, out)
	}
	t.Logf("plan:\n%s", out)
	checkOperatorPlan(t, tf, f.name)

	mon := f.monitor(t, []int32{2, 1, 0}, nil)
	if out, err := tf.Apply("tfplan"); err != nil {
		t.Fatalf("apply: %v\n%s", err, out)
	}
	mon.verify(t)
	f.checkMoved(t, "pool-b", 0, 1, 2)
	for o := range f.n {
		if _, c := f.get(t, o); c.UID == oldPVCs[o] {
			t.Errorf("ordinal %d: PVC %s has its old UID %s", o, c.Name, c.UID)
		}
	}
	tf.PlanEmpty()
}

// checkOperatorPlan reads the saved plan: the data source (read at plan, so in prior_state) has
// every ordinal stranded, the expectation is to be created, and the migration moves 2, 1, 0 to
// pool-b.
func checkOperatorPlan(t *testing.T, tf *acctest.TF, set string) {
	t.Helper()
	out, err := tf.Run("show", "-json", "tfplan")
	if err != nil {
		t.Fatalf("show: %v\n%s", err, out)
	}
	if i := strings.Index(out, "{"); i > 0 {
		out = out[i:]
	}
	type resourceValues struct {
		Address string         `json:"address"`
		Values  map[string]any `json:"values"`
	}
	var plan struct {
		PriorState struct {
			Values struct {
				RootModule struct {
					ChildModules []struct {
						Resources []resourceValues `json:"resources"`
					} `json:"child_modules"`
				} `json:"root_module"`
			} `json:"values"`
		} `json:"prior_state"`
		ResourceChanges []struct {
			Address string `json:"address"`
			Change  struct {
				Actions []string       `json:"actions"`
				After   map[string]any `json:"after"`
			} `json:"change"`
		} `json:"resource_changes"`
	}
	if err := json.Unmarshal([]byte(out), &plan); err != nil {
		t.Fatalf("plan JSON: %v\n%s", err, out)
	}
	var predicted []any
	for _, m := range plan.PriorState.Values.RootModule.ChildModules {
		for _, r := range m.Resources {
			if r.Address == "module.pool_move.data.olapgke_statefulset_plan.next" {
				predicted, _ = r.Values["ordinals"].([]any)
			}
		}
	}
	if len(predicted) != 3 {
		t.Errorf("data source: %d ordinals, want 3", len(predicted))
	}
	for _, o := range predicted {
		o := o.(map[string]any)
		if o["action"] != "stranded" {
			t.Errorf("data source: %v is %v, want stranded (%v)", o["name"], o["action"], o["reason"])
		}
	}
	seen := map[string][]string{}
	for _, rc := range plan.ResourceChanges {
		seen[rc.Address] = rc.Change.Actions
		if rc.Address != "module.pool_move.olapgke_statefulset_migration.pool_move" {
			continue
		}
		moves, _ := rc.Change.After["moves"].([]any)
		var got []string
		for _, m := range moves {
			m := m.(map[string]any)
			got = append(got, fmt.Sprintf("%v %v %v", m["name"], m["action"], m["to_pool_or_selector"]))
		}
		want := []string{set + "-2 move pool-b", set + "-1 move pool-b", set + "-0 move pool-b"}
		if strings.Join(got, "; ") != strings.Join(want, "; ") {
			t.Errorf("migration moves at plan: %q, want %q", got, want)
		}
	}
	for _, a := range []string{"module.pool_move.olapgke_statefulset_expectation.next", "module.pool_move.olapgke_statefulset_migration.pool_move"} {
		if strings.Join(seen[a], ",") != "create" {
			t.Errorf("%s: actions %v, want create", a, seen[a])
		}
	}
}
