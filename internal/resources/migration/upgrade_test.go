package migration_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/olapgke/terraform-provider-olapgke/internal/acctest"
)

// A version 0 state (written before moves[*].name, completed[*].name and plan_summary) after a
// run that moved ordinal 1 and restarted ordinal 0 (gates recorded for the move only).
const migrationStateV0 = `{
  "id": "olap/historical", "namespace": "olap", "statefulset": "historical", "ordinals": null, "order": "descending",
  "volume_claims": ["cache"], "max_unavailable": 1, "min_ready_seconds": 0, "require_others_ready": true,
  "force_delete_on_unreachable_nodes": false, "ordinal_timeout": "10m", "unschedulable_timeout": "20s",
  "planned_manifest": null, "triggers": null, "update_revision": "historical-new", "gate": [], "timeouts": null,
  "moves": [
    {"ordinal": 1, "pod": "historical-1", "action": "move", "from_node": "n-a-1", "to_pool_or_selector": "historical-b",
     "volumes": [{"claim": "cache", "pvc": "cache-historical-1", "pv": "pv-1", "pinned_node": "n-a-1"}],
     "reason": "Pod historical-1 runs on node n-a-1, which fails the template placement historical-b", "gates": [], "estimated_seconds": null},
    {"ordinal": 0, "pod": "historical-0", "action": "restart", "from_node": "n-b-1", "to_pool_or_selector": "historical-b",
     "volumes": [], "reason": "not at the update revision", "gates": [], "estimated_seconds": 12.5}
  ],
  "completed": [
    {"ordinal": 0, "action": "restart", "pod": "historical-0", "pod_uid": "u0", "node": "n-b-1", "pvs": ["pv-0"],
     "duration_seconds": 12.5, "finished_at": "2026-12-01T10:00:00Z", "gates": null},
    {"ordinal": 1, "action": "move", "pod": "historical-1", "pod_uid": "u1", "node": "n-b-2", "pvs": ["pv-9"],
     "duration_seconds": 80, "finished_at": "2026-12-01T10:02:00Z", "gates": [{"name": "loaded", "seconds": 30, "polls": 4}]}
  ]
}`

func TestUnitMigration_UpgradeStateV0(t *testing.T) {
	got := acctest.UpgradeState(t, "olapgke_statefulset_migration", 0, migrationStateV0)
	names := func(attr string) []any {
		var out []any
		for _, e := range got[attr].([]any) {
			out = append(out, e.(map[string]any)["name"])
		}
		return out
	}
	if d := cmp.Diff([]any{"historical-1", "historical-0"}, names("moves")); d != "" {
		t.Errorf("moves[*].name (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]any{"historical-0", "historical-1"}, names("completed")); d != "" {
		t.Errorf("completed[*].name (-want +got):\n%s", d)
	}
	if got["plan_summary"] != nil {
		t.Errorf("plan_summary = %v, want null until the next refresh", got["plan_summary"])
	}
	m0 := got["moves"].([]any)[0].(map[string]any)
	if m0["from_node"] != "n-a-1" || m0["estimated_seconds"] != nil || len(m0["volumes"].([]any)) != 1 {
		t.Errorf("moves[0] = %v, want the version 0 values kept", m0)
	}
	c1 := got["completed"].([]any)[1].(map[string]any)
	if c1["duration_seconds"] != 80.0 || len(c1["gates"].([]any)) != 1 || got["update_revision"] != "historical-new" {
		t.Errorf("completed[1] = %v, update_revision = %v, want the version 0 values kept", c1, got["update_revision"])
	}
}

// A version 1 state written before the copy block and moves[*].mode existed decodes as it is:
// both null (Terraform hands the stored JSON to the provider's schema of the same version).
func TestUnitMigration_StateV1WithoutCopy(t *testing.T) {
	v1 := strings.Replace(strings.Replace(migrationStateV0, `"moves": [`, `"plan_summary": null, "moves": [`, 1),
		`{"ordinal": 1, "pod"`, `{"name": "historical-1", "ordinal": 1, "pod"`, 1)
	v1 = strings.Replace(v1, `{"ordinal": 0, "pod": "historical-0", "action": "restart", "from_node"`, `{"name": "historical-0", "ordinal": 0, "pod": "historical-0", "action": "restart", "from_node"`, 1)
	v1 = strings.ReplaceAll(v1, `{"ordinal": 0, "action"`, `{"name": "historical-0", "ordinal": 0, "action"`)
	v1 = strings.ReplaceAll(v1, `{"ordinal": 1, "action"`, `{"name": "historical-1", "ordinal": 1, "action"`)
	got := acctest.DecodeState(t, "olapgke_statefulset_migration", 1, v1)
	if got["copy"] != nil {
		t.Errorf("copy = %v, want null", got["copy"])
	}
	for _, m := range got["moves"].([]any) {
		if mode, ok := m.(map[string]any)["mode"]; !ok || mode != nil {
			t.Errorf("moves[].mode = %v (present %v), want null", mode, ok)
		}
	}
}
