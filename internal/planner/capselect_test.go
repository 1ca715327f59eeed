package planner

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// TestCapacitiesSelectingAgreesWithLabelSelectors: the indexed lookup gives, for every node, the
// objects metav1.LabelSelectorAsSelector says select it: one-label topologies (the indexed
// path), several labels, expressions, no topology and an invalid one.
func TestCapacitiesSelectingAgreesWithLabelSelectors(t *testing.T) {
	topo := func(ml map[string]string, ex ...metav1.LabelSelectorRequirement) *metav1.LabelSelector {
		return &metav1.LabelSelector{MatchLabels: ml, MatchExpressions: ex}
	}
	caps := []*metav1.LabelSelector{
		topo(map[string]string{"topology.topolvm.io/node": "a"}),
		topo(map[string]string{"topology.topolvm.io/node": "b"}),
		topo(map[string]string{"topology.topolvm.io/node": "a"}), // a second object for a
		topo(map[string]string{"zone": "z1", "pool": "p"}),
		topo(nil, metav1.LabelSelectorRequirement{Key: "pool", Operator: metav1.LabelSelectorOpIn, Values: []string{"p", "q"}}),
		topo(map[string]string{"zone": "z2"}, metav1.LabelSelectorRequirement{Key: "pool", Operator: metav1.LabelSelectorOpDoesNotExist}),
		nil,
		topo(map[string]string{"bad key!": "x"}),
		topo(map[string]string{}),
	}
	s := &Snapshot{}
	for i, c := range caps {
		s.Capacities = append(s.Capacities, storagev1.CSIStorageCapacity{
			ObjectMeta:       metav1.ObjectMeta{Name: string(rune('a' + i)), Namespace: "topolvm-system"},
			StorageClassName: "sc", NodeTopology: c,
		})
	}
	nodes := []map[string]string{
		{"topology.topolvm.io/node": "a", "zone": "z1", "pool": "p"},
		{"topology.topolvm.io/node": "b", "zone": "z2"},
		{"topology.topolvm.io/node": "c", "zone": "z1", "pool": "q"},
		{},
	}
	for i, l := range nodes {
		s.Nodes = append(s.Nodes, corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: string(rune('m' + i)), Labels: l}})
	}
	ix := NewIndex(s)
	for i := range s.Nodes {
		n := &s.Nodes[i]
		var want []string
		for j := range s.Capacities {
			c := &s.Capacities[j]
			if c.NodeTopology == nil {
				continue
			}
			if sel, err := metav1.LabelSelectorAsSelector(c.NodeTopology); err == nil && sel.Matches(labels.Set(n.Labels)) {
				want = append(want, c.Name)
			}
		}
		var got []string
		for _, c := range ix.capacitiesSelecting(n, "sc") {
			got = append(got, c.Name)
		}
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Errorf("node %v: selecting %v, label selectors say %v", n.Labels, got, want)
		}
		if len(ix.capacitiesSelecting(n, "other")) != 0 {
			t.Errorf("node %v: objects of another StorageClass", n.Labels)
		}
	}
}
