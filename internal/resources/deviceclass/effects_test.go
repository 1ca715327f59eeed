package deviceclass

import (
	"context"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/types"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apiresource "k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/olapgke/terraform-provider-olapgke/internal/lvmdconf"
)

var ref = cmRef{DefaultNamespace, DefaultConfigMapName, DefaultConfigKey}

const worldLVMD = "socket-name: /run/topolvm/lvmd.sock\ndevice-classes:\n- name: ssd\n  volume-group: vg-ssd\n  default: true\n"

// TestWriteClassRetriesConflict: another writer adds a class between our read and our update;
// the update conflicts, is retried on a fresh read, and both classes end up in the file.
func TestWriteClassRetriesConflict(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	kube := fake.NewClientset(&corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: ref.Namespace, Name: ref.Name, ResourceVersion: "1"},
		Data:       map[string]string{ref.Key: worldLVMD, "other-key": "kept"},
	})
	updates := 0
	kube.PrependReactor("update", "configmaps", func(a k8stesting.Action) (bool, runtime.Object, error) {
		updates++
		if updates > 1 {
			return false, nil, nil
		}
		// Someone else's write lands first.
		cur, _ := kube.Tracker().Get(schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, ref.Namespace, ref.Name)
		cm := cur.(*corev1.ConfigMap).DeepCopy()
		cm.Data[ref.Key] += "- name: theirs\n  volume-group: vg-other\n"
		cm.ResourceVersion = "2"
		if err := kube.Tracker().Update(schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, cm, ref.Namespace); err != nil {
			t.Fatal(err)
		}
		return true, nil, apierrors.NewConflict(schema.GroupResource{Resource: "configmaps"}, ref.Name, nil)
	})
	text, changed, err := writeClass(ctx, kube, ref, "", &lvmdconf.DeviceClass{Name: "fast", VolumeGroup: "vg-ssd", Type: "thin", ThinPool: &lvmdconf.ThinPool{Name: "p", OverprovisionRatio: 2}})
	if err != nil || !changed {
		t.Fatalf("writeClass: changed=%v err=%v", changed, err)
	}
	if updates != 2 {
		t.Errorf("updates = %d, want 2 (one conflict, one retry)", updates)
	}
	cm, _ := kube.CoreV1().ConfigMaps(ref.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
	if cm.Data[ref.Key] != text || cm.Data["other-key"] != "kept" {
		t.Fatalf("stored data %v, returned text %q", cm.Data, text)
	}
	cfg, err := lvmdconf.Parse(text)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []string{"ssd", "theirs", "fast"} {
		if _, ok := cfg.Get(c); !ok {
			t.Errorf("class %s missing after the retried write:\n%s", c, text)
		}
	}
	if !strings.Contains(text, "socket-name: /run/topolvm/lvmd.sock") {
		t.Errorf("socket-name lost:\n%s", text)
	}

	// Writing the same class again changes nothing; removing it leaves the others.
	if _, changed, err := writeClass(ctx, kube, ref, "fast", &lvmdconf.DeviceClass{Name: "fast", VolumeGroup: "vg-ssd", Type: "thin", ThinPool: &lvmdconf.ThinPool{Name: "p", OverprovisionRatio: 2}}); err != nil || changed {
		t.Errorf("idempotent write: changed=%v err=%v", changed, err)
	}
	text, changed, err = writeClass(ctx, kube, ref, "fast", nil)
	if err != nil || !changed || strings.Contains(text, "fast") || !strings.Contains(text, "theirs") {
		t.Errorf("remove: changed=%v err=%v text=%q", changed, err, text)
	}
}

func TestWriteClassRefusesConflictingTarget(t *testing.T) {
	t.Parallel()
	kube := fake.NewClientset(&corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: ref.Namespace, Name: ref.Name},
		Data:       map[string]string{ref.Key: worldLVMD},
	})
	_, _, err := writeClass(context.Background(), kube, ref, "", &lvmdconf.DeviceClass{Name: "dup", VolumeGroup: "vg-ssd"})
	if err == nil || !strings.Contains(err.Error(), `"ssd" and "dup" both use volume group "vg-ssd"`) {
		t.Fatalf("err = %v", err)
	}
}

func TestEnsureStorageClass(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	reclaim := corev1.PersistentVolumeReclaimDelete
	binding := storagev1.VolumeBindingWaitForFirstConsumer
	expand := true
	want := func(fs string, labels map[string]string) *storagev1.StorageClass {
		return &storagev1.StorageClass{
			ObjectMeta:  metav1.ObjectMeta{Name: "topolvm-fast", Labels: labels},
			Provisioner: Provisioner, Parameters: map[string]string{DeviceClassParam: "fast", FSTypeParam: fs},
			ReclaimPolicy: &reclaim, VolumeBindingMode: &binding, AllowVolumeExpansion: &expand,
		}
	}
	kube := fake.NewClientset(&storagev1.StorageClass{
		ObjectMeta:  metav1.ObjectMeta{Name: "topolvm-fast", UID: "old", Labels: map[string]string{"theirs": "1", "mine": "a"}},
		Provisioner: Provisioner, Parameters: map[string]string{DeviceClassParam: "fast", FSTypeParam: "xfs"},
		ReclaimPolicy: &reclaim, VolumeBindingMode: &binding,
	})
	// Mutable change only: updated in place, foreign label kept, dropped managed label removed.
	replaced, err := ensureStorageClass(ctx, kube, want("xfs", map[string]string{"new": "b"}), map[string]string{"mine": "a"}, nil)
	if err != nil || replaced {
		t.Fatalf("in-place: replaced=%v err=%v", replaced, err)
	}
	got, _ := kube.StorageV1().StorageClasses().Get(ctx, "topolvm-fast", metav1.GetOptions{})
	if got.UID != "old" || got.Labels["theirs"] != "1" || got.Labels["new"] != "b" || got.Labels["mine"] != "" || !*got.AllowVolumeExpansion {
		t.Fatalf("in-place result: uid %s labels %v expand %v", got.UID, got.Labels, got.AllowVolumeExpansion)
	}
	// Parameter change: replaced.
	replaced, err = ensureStorageClass(ctx, kube, want("ext4", map[string]string{"new": "b"}), map[string]string{"new": "b"}, nil)
	if err != nil || !replaced {
		t.Fatalf("replace: replaced=%v err=%v", replaced, err)
	}
	got, _ = kube.StorageV1().StorageClasses().Get(ctx, "topolvm-fast", metav1.GetOptions{})
	if got.Parameters[FSTypeParam] != "ext4" || got.Labels["theirs"] != "1" {
		t.Fatalf("replaced object: %v %v", got.Parameters, got.Labels)
	}
}

func scObject(name, fs string) types.Object {
	return types.ObjectValueMust(scAttrTypes, map[string]attr.Value{
		"name": types.StringValue(name), "fs_type": types.StringValue(fs), "reclaim_policy": types.StringValue("Delete"),
		"allow_volume_expansion": types.BoolValue(true), "is_default": types.BoolValue(false),
		"volume_binding_mode": types.StringValue(bindingWaitForUser),
		"labels":              types.MapNull(types.StringType), "annotations": types.MapNull(types.StringType),
	})
}

func TestPlanStorageClassWarnsOnReplacement(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	reclaim := corev1.PersistentVolumeReclaimDelete
	binding := storagev1.VolumeBindingWaitForFirstConsumer
	kube := fake.NewClientset(&storagev1.StorageClass{
		ObjectMeta:  metav1.ObjectMeta{Name: "topolvm-fast"},
		Provisioner: Provisioner, Parameters: map[string]string{DeviceClassParam: "fast", FSTypeParam: "xfs"},
		ReclaimPolicy: &reclaim, VolumeBindingMode: &binding,
	})
	tests := map[string]struct {
		state, plan types.Object
		want        string // "" = no warning
	}{
		"unchanged":     {state: scObject("topolvm-fast", "xfs"), plan: scObject("topolvm-fast", "xfs")},
		"fs type":       {state: scObject("topolvm-fast", "xfs"), plan: scObject("topolvm-fast", "ext4"), want: "immutable fields differ: parameters"},
		"renamed":       {state: scObject("topolvm-fast", "xfs"), plan: scObject("topolvm-fast2", "xfs"), want: `its name changes from "topolvm-fast" to "topolvm-fast2"`},
		"adopt differs": {state: types.ObjectNull(scAttrTypes), plan: scObject("topolvm-fast", "btrfs"), want: "immutable fields differ"},
	}
	r := &deviceClassResource{}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			state := &model{StorageClass: tc.state}
			plan := &model{StorageClass: tc.plan}
			var diags diag.Diagnostics
			r.planStorageClass(ctx, kube, state, plan, "fast", &diags)
			if tc.want == "" {
				if len(diags) != 0 {
					t.Fatalf("unexpected diagnostics %v", diags)
				}
				return
			}
			if len(diags) != 1 || diags[0].Severity() != diag.SeverityWarning || diags[0].Summary() != "StorageClass Will Be Replaced" ||
				!strings.Contains(diags[0].Detail(), tc.want) || !strings.Contains(diags[0].Detail(), "existing PVCs and PVs are unaffected") {
				t.Fatalf("diagnostics %v, want one warning mentioning %q", diags, tc.want)
			}
		})
	}
}

func TestCapacityFallsBackToCSIStorageCapacity(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	q := func(s string) *apiresource.Quantity { v := apiresource.MustParse(s); return &v }
	objs := []runtime.Object{
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}},
		&storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "topolvm-fast"}, Provisioner: Provisioner, Parameters: map[string]string{DeviceClassParam: "fast"}},
		&storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "other"}, Provisioner: Provisioner, Parameters: map[string]string{DeviceClassParam: "ssd"}},
		&storagev1.CSIStorageCapacity{ObjectMeta: metav1.ObjectMeta{Namespace: "topolvm-system", Name: "csisc-1"}, StorageClassName: "topolvm-fast",
			NodeTopology: &metav1.LabelSelector{MatchLabels: map[string]string{TopologyKey: "n1"}}, Capacity: q("100Gi")},
		&storagev1.CSIStorageCapacity{ObjectMeta: metav1.ObjectMeta{Namespace: "topolvm-system", Name: "csisc-2"}, StorageClassName: "other",
			NodeTopology: &metav1.LabelSelector{MatchLabels: map[string]string{TopologyKey: "n1"}}, Capacity: q("5Gi")},
	}
	got, err := capacity(ctx, fake.NewClientset(objs...), "fast", false)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got["n1"] != 100<<30 {
		t.Fatalf("capacity = %v, want n1=100Gi from CSIStorageCapacity", got)
	}
	// The node annotation wins when present.
	objs[0] = &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", Annotations: map[string]string{CapacityAnnPrefix + "fast": "42"}}}
	got, err = capacity(ctx, fake.NewClientset(objs...), "fast", false)
	if err != nil || got["n1"] != 42 {
		t.Fatalf("capacity = %v, %v; want n1=42 from the annotation", got, err)
	}
}

// TestConflictsOf: only the conflicts that involve the class are its own (a conflict between two
// other classes is reported for them, not for this one), told apart by the typed error's class
// names rather than by its message.
func TestConflictsOf(t *testing.T) {
	t.Parallel()
	classes := []lvmdconf.DeviceClass{
		{Name: "ssd", VolumeGroup: "vg1", Default: true},
		{Name: "ssd-2", VolumeGroup: "vg1"},
		{Name: "x", VolumeGroup: "vg2"},
		{Name: "x", VolumeGroup: "vg3"},
	}
	for name, want := range map[string]int{"ssd": 1, "ssd-2": 1, "x": 1, "other": 0} {
		others, defaults := conflictsOf(classes, name)
		if len(others) != want || defaults != nil {
			t.Errorf("conflictsOf(%q) = %v, %v; want %d conflict(s), no default error", name, others, defaults, want)
		}
	}
	if _, d := conflictsOf(classes[2:], "x"); d == nil {
		t.Error("no default class: want a DefaultCountError")
	}
}
