package statefulset_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/olapgke/terraform-provider-olapgke/internal/acctest"
)

// A version 0 state (written before ordinals[*].name and plan_summary), as Terraform stores it:
// the manifest as a dynamic value with its type, timeouts null.
const statefulSetStateV0 = `{
  "id": "olap/historical", "namespace": "olap", "name": "historical", "uid": "u-1", "update_revision": "historical-abc",
  "service_name": "historical", "force_conflicts": false, "manage_service": true, "allow_unschedulable": false,
  "wait_for_rollout": true, "pod_disruption_budget": null, "timeouts": null,
  "manifest": {"value": {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "historical", "namespace": "olap"}},
    "type": ["object", {"apiVersion": "string", "kind": "string", "metadata": ["object", {"name": "string", "namespace": "string"}]}]},
  "ordinals": [
    {"ordinal": 0, "pod": "historical-0", "node": "n-a-1", "action": "create", "wave": 1, "schedulable": true, "reason": "",
     "blocked": false, "pvcs_after": "", "volumes": [{"claim": "cache", "pvc": "cache-historical-0", "pv": "", "pinned_node": ""}]},
    {"ordinal": 1, "pod": "historical-1", "node": "n-a-2", "action": "create", "wave": 2, "schedulable": true, "reason": "",
     "blocked": false, "pvcs_after": "", "volumes": []}
  ],
  "rollout": {"current_revision": "historical-abc", "update_revision": "historical-abc", "replicas": 2, "ready_replicas": 2,
    "updated_replicas": 2, "current_replicas": 2, "stalled": false, "stuck": []}
}`

func TestUnitStatefulSet_UpgradeStateV0(t *testing.T) {
	got := acctest.UpgradeState(t, "olapgke_statefulset", 0, statefulSetStateV0)
	var names []any
	for _, o := range got["ordinals"].([]any) {
		names = append(names, o.(map[string]any)["name"])
	}
	if d := cmp.Diff([]any{"historical-0", "historical-1"}, names); d != "" {
		t.Errorf("ordinals[*].name (-want +got):\n%s", d)
	}
	if got["plan_summary"] != nil {
		t.Errorf("plan_summary = %v, want null until the next refresh", got["plan_summary"])
	}
	// Everything else is carried over as it was.
	if d := cmp.Diff(map[string]any{"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": map[string]any{"name": "historical", "namespace": "olap"}},
		got["manifest"]); d != "" {
		t.Errorf("manifest (-want +got):\n%s", d)
	}
	o1 := got["ordinals"].([]any)[1].(map[string]any)
	if o1["node"] != "n-a-2" || o1["wave"] != 2.0 || o1["action"] != "create" {
		t.Errorf("ordinals[1] = %v, want the version 0 values kept", o1)
	}
	if got["uid"] != "u-1" || got["rollout"].(map[string]any)["ready_replicas"] != 2.0 {
		t.Errorf("state = %v, want the version 0 values kept", got)
	}
}
