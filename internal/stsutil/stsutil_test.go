package stsutil

import (
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func TestAppliedBy(t *testing.T) {
	t.Parallel()
	set := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{ManagedFields: []metav1.ManagedFieldsEntry{
		{Manager: "kubectl-client-side-apply", Operation: metav1.ManagedFieldsOperationUpdate},
		{Manager: "olapgke-migration", Operation: metav1.ManagedFieldsOperationApply},
		{Manager: "olapgke", Operation: metav1.ManagedFieldsOperationUpdate},
	}}}
	if AppliedBy(set, "olapgke") {
		t.Error("an Update entry of olapgke counted as applied by olapgke")
	}
	if !AppliedBy(set, "olapgke-migration") {
		t.Error("the Apply entry of olapgke-migration not found")
	}
	set.ManagedFields = append(set.ManagedFields, metav1.ManagedFieldsEntry{Manager: "olapgke", Operation: metav1.ManagedFieldsOperationApply})
	if !AppliedBy(set, "olapgke") {
		t.Error("the Apply entry of olapgke not found")
	}
}

func TestNamesAndOrdinals(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]int32{"olap-0": 0, "my-set-12": 12, "olap": -1, "olap-x": -1, "olap--1": 1} {
		if got := OrdinalOf(in); got != want {
			t.Errorf("OrdinalOf(%q) = %d, want %d", in, got, want)
		}
	}
	if got := PodName("hist", 3); got != "hist-3" || OrdinalOf(got) != 3 {
		t.Errorf("PodName = %q", got)
	}
	name := ClaimPVCName("cache", "hist", 7)
	if o, ok := ClaimOrdinal(name, "cache", "hist"); name != "cache-hist-7" || !ok || o != 7 {
		t.Errorf("ClaimPVCName %q -> %d %v", name, o, ok)
	}
	if _, ok := ClaimOrdinal("cache-other-7", "cache", "hist"); ok {
		t.Error("another set's PVC parsed as ours")
	}
	set := &appsv1.StatefulSet{Spec: appsv1.StatefulSetSpec{Replicas: ptr.To[int32](3), Ordinals: &appsv1.StatefulSetOrdinals{Start: 5}}}
	if d := cmp.Diff([]int32{5, 6, 7}, OrdinalRange(set)); d != "" || !InRange(set, 7) || InRange(set, 8) || InRange(set, 4) {
		t.Errorf("range: %s", d)
	}
	if got := OrdinalRange(&appsv1.StatefulSet{}); len(got) != 1 || got[0] != 0 {
		t.Errorf("defaults: %v", got)
	}
}

func TestTopoLVMPinnedNode(t *testing.T) {
	pv := func(key string, op corev1.NodeSelectorOperator, values ...string) *corev1.PersistentVolume {
		return &corev1.PersistentVolume{Spec: corev1.PersistentVolumeSpec{NodeAffinity: &corev1.VolumeNodeAffinity{
			Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
				MatchExpressions: []corev1.NodeSelectorRequirement{{Key: key, Operator: op, Values: values}},
			}}},
		}}}
	}
	for name, tc := range map[string]struct {
		pv   *corev1.PersistentVolume
		want string
	}{
		"TopoLVM PV":       {pv(LabelTopoLVMNode, corev1.NodeSelectorOpIn, "n1"), "n1"},
		"two nodes":        {pv(LabelTopoLVMNode, corev1.NodeSelectorOpIn, "n1", "n2"), ""},
		"another key":      {pv("topology.kubernetes.io/zone", corev1.NodeSelectorOpIn, "z"), ""},
		"NotIn":            {pv(LabelTopoLVMNode, corev1.NodeSelectorOpNotIn, "n1"), ""},
		"no node affinity": {&corev1.PersistentVolume{}, ""},
		"nil PV":           {nil, ""},
	} {
		if got := TopoLVMPinnedNode(tc.pv); got != tc.want {
			t.Errorf("%s: got %q, want %q", name, got, tc.want)
		}
	}
}

func TestGatesPending(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{"": "", "2": "2", "3, 1,x,1,-4": "1,3", "0,10,2": "0,2,10"} {
		set := &appsv1.StatefulSet{}
		set.Annotations = map[string]string{AnnotationGatesPending: in}
		if got := FormatGatesPending(GatesPending(set)); got != want {
			t.Errorf("GatesPending(%q) = %q, want %q", in, got, want)
		}
	}
	if got := GatesPending(nil); got != nil {
		t.Errorf("GatesPending(nil) = %v", got)
	}
}

// ClaimOwner: owner references first (they resolve names that two sets' templates both
// produce), then the controller's naming; non-controlling references and other namespaces do
// not count.
func TestClaimOwner(t *testing.T) {
	t.Parallel()
	set := func(ns, name string, claims ...string) appsv1.StatefulSet {
		s := appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
		for _, c := range claims {
			s.Spec.VolumeClaimTemplates = append(s.Spec.VolumeClaimTemplates, corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: c}})
		}
		return s
	}
	// "c-a-b-0" is template c of set a-b and template c-a of set b.
	sets := []appsv1.StatefulSet{set("olap", "a-b", "c"), set("olap", "b", "c-a"), set("other", "historical", "cache")}
	pvc := func(name string, refs ...metav1.OwnerReference) *corev1.PersistentVolumeClaim {
		return &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "olap", Name: name, OwnerReferences: refs}}
	}
	ref := func(kind, name string, controller bool) metav1.OwnerReference {
		return metav1.OwnerReference{Kind: kind, Name: name, Controller: ptr.To(controller)}
	}
	for _, tc := range []struct {
		name    string
		pvc     *corev1.PersistentVolumeClaim
		want    string // namespace/set ordinal, set listed
		wantNot bool
	}{
		{"naming: the first set whose template produces it", pvc("c-a-b-0"), "olap/a-b 0 listed", false},
		{"StatefulSet owner reference decides", pvc("c-a-b-0", ref("StatefulSet", "b", true)), "olap/b 0 listed", false},
		{"Pod owner reference (whenScaled: Delete)", pvc("c-a-b-3", ref("Pod", "b-3", true)), "olap/b 3 listed", false},
		{"owner reference to a set not listed", pvc("cache-gone-2", ref("StatefulSet", "gone", true)), "olap/gone 2 unlisted", false},
		{"a reference that does not control is ignored", pvc("c-a-b-1", ref("StatefulSet", "b", false)), "olap/a-b 1 listed", false},
		{"other namespace's templates do not count", pvc("cache-historical-0"), "", true},
		{"no ordinal suffix", pvc("c-a-b-x"), "", true},
		{"a PVC of no StatefulSet", pvc("scratch"), "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, ok := ClaimOwner(tc.pvc, sets)
			if ok == tc.wantNot {
				t.Fatalf("ok = %v, want %v (%+v)", ok, !tc.wantNot, o)
			}
			if !ok {
				return
			}
			listed := "unlisted"
			if o.Set != nil {
				listed = "listed"
				if o.Set.Name != o.Name || o.Set.Namespace != o.Namespace {
					t.Errorf("Set %s/%s for owner %s/%s", o.Set.Namespace, o.Set.Name, o.Namespace, o.Name)
				}
			}
			if got := o.Namespace + "/" + o.Name + " " + strconv.Itoa(int(o.Ordinal)) + " " + listed; got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}
