package expect

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func decode(t *testing.T, s string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatal(err)
	}
	return v
}

const live = `{"metadata":{"name":"hist"},"spec":{"replicas":3,
  "updateStrategy":{"type":"RollingUpdate","rollingUpdate":{"partition":0}},
  "template":{"spec":{"nodeSelector":{"cloud.google.com/gke-nodepool":"pool-a"},
    "containers":[{"name":"historical","image":"druid:31"}]}}}}`

func TestCompare(t *testing.T) {
	t.Parallel()
	type row struct{ Path, Expected, Actual string }
	for name, tc := range map[string]struct {
		expect string
		want   []row
	}{
		"holds":           {expect: `{"spec":{"replicas":3,"template":{"spec":{"nodeSelector":{"cloud.google.com/gke-nodepool":"pool-a"}}}}}`},
		"number forms":    {expect: `{"spec":{"replicas":3.0}}`},
		"strategy":        {expect: `{"spec":{"updateStrategy":{"type":"OnDelete"}}}`, want: []row{{"spec.updateStrategy.type", `"OnDelete"`, `"RollingUpdate"`}}},
		"missing key":     {expect: `{"spec":{"minReadySeconds":30}}`, want: []row{{"spec.minReadySeconds", "30", ""}}},
		"list element":    {expect: `{"spec":{"template":{"spec":{"containers":[{"image":"druid:32"}]}}}}`, want: []row{{"spec.template.spec.containers[0].image", `"druid:32"`, `"druid:31"`}}},
		"list length":     {expect: `{"spec":{"template":{"spec":{"containers":[{},{}]}}}}`, want: []row{{"spec.template.spec.containers", `[{},{}]`, `[{"image":"druid:31","name":"historical"}]`}}},
		"object vs value": {expect: `{"spec":{"replicas":{"x":1}}}`, want: []row{{"spec.replicas", `{"x":1}`, "3"}}},
		"several sorted": {expect: `{"spec":{"updateStrategy":{"type":"OnDelete"},"replicas":4}}`,
			want: []row{{"spec.replicas", "4", "3"}, {"spec.updateStrategy.type", `"OnDelete"`, `"RollingUpdate"`}}},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var got []row
			for _, m := range Compare(decode(t, tc.expect), decode(t, live)) {
				got = append(got, row{m.Path, m.Expected, m.Actual})
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}
}

func TestOwners(t *testing.T) {
	t.Parallel()
	managed := []metav1.ManagedFieldsEntry{
		{Manager: "kube-controller-manager", FieldsV1: metav1.NewFieldsV1(`{"f:status":{"f:replicas":{}}}`)},
		{Manager: "druid-operator", FieldsV1: metav1.NewFieldsV1(`{"f:spec":{"f:replicas":{},"f:updateStrategy":{"f:type":{}},
		  "f:template":{"f:spec":{"f:containers":{"k:{\"name\":\"historical\"}":{".":{},"f:image":{}}}}}}}`)},
		{Manager: "kubectl-edit", FieldsV1: metav1.NewFieldsV1(`{"f:spec":{"f:template":{"f:spec":{"f:nodeSelector":{}}}}}`)},
	}
	ms := Compare(decode(t, `{"spec":{"updateStrategy":{"type":"OnDelete"},
	  "template":{"spec":{"containers":[{"image":"druid:32"}],"nodeSelector":{"pool":"b"}}},"minReadySeconds":5}}`), decode(t, live))
	Owners(ms, managed, decode(t, live))
	got := map[string]string{}
	for _, m := range ms {
		got[m.Path] = m.Manager
	}
	want := map[string]string{
		"spec.updateStrategy.type":               "druid-operator",
		"spec.template.spec.containers[0].image": "druid-operator",
		"spec.template.spec.nodeSelector.pool":   "kubectl-edit",
		"spec.minReadySeconds":                   "druid-operator", // nearest owned parent: spec
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
}
