package statefulset

import (
	"encoding/json"
	"testing"

	"github.com/olapgke/terraform-provider-olapgke/internal/k8sfeatures"
)

func jsonMap(t *testing.T, s string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func TestGatedFieldsAreNotDrift(t *testing.T) {
	prior := jsonMap(t, `{"spec":{"replicas":3,"updateStrategy":{"type":"RollingUpdate","rollingUpdate":{"maxUnavailable":2}}}}`)
	live := jsonMap(t, `{"spec":{"replicas":3,"updateStrategy":{"type":"RollingUpdate","rollingUpdate":{"partition":0}}}}`)
	v135 := k8sfeatures.Server{Version: k8sfeatures.Version{Major: 1, Minor: 35}}
	v137 := k8sfeatures.Server{Version: k8sfeatures.Version{Major: 1, Minor: 37}}

	if d := userFieldDiffs(prior, withGatedKept(prior, live, v135)); len(d) != 0 {
		t.Errorf("1.35: dropped maxUnavailable shows as drift: %v", d)
	}
	if d := userFieldDiffs(prior, withGatedKept(prior, live, v137)); len(d) != 1 || d[0].Path != "spec.updateStrategy.rollingUpdate.maxUnavailable" {
		t.Errorf("1.37: a missing maxUnavailable is drift, got %v", d)
	}
	if _, ok := live["spec"].(map[string]any)["updateStrategy"].(map[string]any)["rollingUpdate"].(map[string]any)["maxUnavailable"]; ok {
		t.Error("withGatedKept modified its input")
	}

	diffs := userFieldDiffs(prior, live)
	if got := withoutGatedDiffs(diffs, droppedGated(prior, live)); len(got) != 0 {
		t.Errorf("post-apply comparison keeps the dropped field: %v", got)
	}
	changed := jsonMap(t, `{"spec":{"replicas":2,"updateStrategy":{"type":"RollingUpdate","rollingUpdate":{"partition":0}}}}`)
	if got := withoutGatedDiffs(userFieldDiffs(prior, changed), droppedGated(prior, changed)); len(got) != 1 || got[0].Path != "spec.replicas" {
		t.Errorf("other differences must stay: %v", got)
	}
}
