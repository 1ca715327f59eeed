package deviceclass

import (
	"context"
	"github.com/olapgke/terraform-provider-olapgke/internal/topolvm"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/terraform-plugin-framework/path"
	fwresource "github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/types"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestSchemaValid(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var rs fwresource.SchemaResponse
	NewTopoLVMDeviceClassResource().Schema(ctx, fwresource.SchemaRequest{}, &rs)
	if rs.Diagnostics.HasError() {
		t.Fatal(rs.Diagnostics)
	}
	if d := rs.Schema.ValidateImplementation(ctx); d.HasError() {
		t.Fatal(d)
	}
	checks := map[string]types.ObjectType{
		"thin_pool": {AttrTypes: thinPoolAttrTypes}, "lvmd_config_map": {AttrTypes: cmAttrTypes}, "storage_class": {AttrTypes: scAttrTypes},
	}
	for name, want := range checks {
		if got := rs.Schema.Attributes[name].GetType(); !got.Equal(want) {
			t.Errorf("%s: schema type %s, model type %s", name, got, want)
		}
	}
	if got := rs.Schema.Attributes["volumes"].GetType(); !got.Equal(types.ListType{ElemType: types.ObjectType{AttrTypes: volumeAttrTypes}}) {
		t.Errorf("volumes: schema type %s", got)
	}
}

func TestParseImportID(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		id    string
		ref   cmRef
		class string
		ok    bool
	}{
		"bare class":   {id: "ssd", ref: cmRef{"topolvm-system", "topolvm-lvmd-0", "lvmd.yaml"}, class: "ssd", ok: true},
		"full":         {id: "ns/cm/fast", ref: cmRef{"ns", "cm", "lvmd.yaml"}, class: "fast", ok: true},
		"empty":        {id: "", ok: false},
		"two parts":    {id: "a/b", ok: false},
		"empty middle": {id: "ns//fast", ok: false},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ref, class, ok := parseImportID(tc.id)
			if ok != tc.ok || (ok && (ref != tc.ref || class != tc.class)) {
				t.Fatalf("parseImportID(%q) = %v %q %v, want %v %q %v", tc.id, ref, class, ok, tc.ref, tc.class, tc.ok)
			}
		})
	}
}

func TestClassUsage(t *testing.T) {
	t.Parallel()
	sc := func(s string) *string { return &s }
	pv := func(name, class, scName, node string) corev1.PersistentVolume {
		return corev1.PersistentVolume{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: corev1.PersistentVolumeSpec{
				StorageClassName: scName,
				Capacity:         corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
				PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{
					Driver: Provisioner, VolumeAttributes: map[string]string{DeviceClassParam: class},
				}},
				NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
					MatchExpressions: []corev1.NodeSelectorRequirement{{Key: TopologyKey, Operator: corev1.NodeSelectorOpIn, Values: []string{node}}},
				}}}},
			},
		}
	}
	pvc := func(ns, name, scName, volume string, owners ...metav1.OwnerReference) corev1.PersistentVolumeClaim {
		return corev1.PersistentVolumeClaim{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, OwnerReferences: owners},
			Spec:       corev1.PersistentVolumeClaimSpec{StorageClassName: sc(scName), VolumeName: volume},
		}
	}
	yes := true
	sets := []appsv1.StatefulSet{{
		ObjectMeta: metav1.ObjectMeta{Namespace: "olap", Name: "ch"},
		Spec:       appsv1.StatefulSetSpec{VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Name: "data"}}}},
	}}
	scs := []storagev1.StorageClass{
		{ObjectMeta: metav1.ObjectMeta{Name: "topolvm-fast"}, Provisioner: Provisioner, Parameters: map[string]string{DeviceClassParam: "fast"}},
		{ObjectMeta: metav1.ObjectMeta{Name: "topolvm-provisioner"}, Provisioner: Provisioner, Parameters: map[string]string{DeviceClassParam: "ssd"}},
	}
	got := topolvm.ClassUsage("fast", "", scs, nil,
		[]corev1.PersistentVolume{
			pv("pv-a", "fast", "topolvm-fast", "n1"),
			pv("pv-b", "fast", "gone-sc", "n2"), // attribute names the class, StorageClass deleted since
			pv("pv-c", "ssd", "topolvm-provisioner", "n1"),
			pv("pv-orphan", "fast", "topolvm-fast", "n3"),
		},
		[]corev1.PersistentVolumeClaim{
			pvc("olap", "data-ch-2", "topolvm-fast", "pv-a"),
			pvc("olap", "data-ch-10", "gone-sc", "pv-b"),
			pvc("olap", "pending", "topolvm-fast", ""),
			pvc("olap", "other", "topolvm-provisioner", "pv-c"),
			pvc("web", "cache-web-1", "topolvm-fast", "", metav1.OwnerReference{Kind: "Pod", Name: "web-1", Controller: &yes}),
		},
		sets)
	want := []topolvm.VolumeUse{
		{Namespace: "", PVC: "", PV: "pv-orphan", Node: "n3", StorageClass: "topolvm-fast", Ordinal: -1},
		{Namespace: "olap", PVC: "data-ch-10", PV: "pv-b", Node: "n2", StorageClass: "gone-sc", StatefulSet: "olap/ch", Ordinal: 10},
		{Namespace: "olap", PVC: "data-ch-2", PV: "pv-a", Node: "n1", StorageClass: "topolvm-fast", StatefulSet: "olap/ch", Ordinal: 2},
		{Namespace: "olap", PVC: "pending", StorageClass: "topolvm-fast", Ordinal: -1},
		{Namespace: "web", PVC: "cache-web-1", StorageClass: "topolvm-fast", StatefulSet: "web/web", Ordinal: 1},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	msg := inUse(pathName(), "fast", "destroys the class", got).Detail()
	for _, s := range []string{"olap/data-ch-2 (StatefulSet olap/ch ordinal 2, PV pv-a, node n1)", "olap/pending (not bound yet)", "olap/ch ordinals 2,10", "force_destroy"} {
		if !strings.Contains(msg, s) {
			t.Errorf("in-use detail lacks %q:\n%s", s, msg)
		}
	}
}

func TestMergeMeta(t *testing.T) {
	t.Parallel()
	got := mergeMeta(map[string]string{"theirs": "1", "old": "x", "keep": "a"}, map[string]string{"keep": "b", "new": "n"}, map[string]string{"old": "x", "keep": "a"})
	want := map[string]string{"theirs": "1", "keep": "b", "new": "n"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func pathName() path.Path { return path.Root("name") }
