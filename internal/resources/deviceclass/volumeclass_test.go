package deviceclass

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// topoPV is a TopoLVM PV as real TopoLVM provisions it (no device-class volume attribute)
// unless attr is set.
func topoPV(name, handle, sc, attr string) corev1.PersistentVolume {
	pv := corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PersistentVolumeSpec{
		StorageClassName: sc,
		PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{
			Driver: Provisioner, VolumeHandle: handle, VolumeAttributes: map[string]string{"topolvm.io/lv-name": handle}}},
	}}
	if attr != "" {
		pv.Spec.CSI.VolumeAttributes[DeviceClassParam] = attr
	}
	return pv
}

func topoSC(name, class string) storagev1.StorageClass {
	sc := storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Provisioner: Provisioner}
	if class != "" {
		sc.Parameters = map[string]string{DeviceClassParam: class}
	}
	return sc
}

func TestVolumesByClassSources(t *testing.T) {
	t.Parallel()
	scs := []storagev1.StorageClass{
		topoSC("sc-fast", "fast"),
		topoSC("sc-default", ""),
		{ObjectMeta: metav1.ObjectMeta{Name: "sc-pd"}, Provisioner: "pd.csi.storage.gke.io", Parameters: map[string]string{DeviceClassParam: "fast"}},
	}
	tests := map[string]struct {
		pv           corev1.PersistentVolume
		lvs          []logicalVolume
		defaultClass string
		want         string
		from         string
	}{
		"StorageClass parameter (real TopoLVM PV)":        {pv: topoPV("pv", "h1", "sc-fast", ""), want: "fast", from: fromStorageClass},
		"StorageClass without parameter: default":         {pv: topoPV("pv", "h1", "sc-default", ""), defaultClass: "ssd", want: "ssd", from: fromStorageClass},
		"StorageClass without parameter, default unknown": {pv: topoPV("pv", "h1", "sc-default", ""), want: ""},
		"StorageClass of another provisioner":             {pv: topoPV("pv", "h1", "sc-pd", ""), want: ""},
		"StorageClass deleted, LogicalVolume names it": {pv: topoPV("pv", "h1", "gone", ""),
			lvs: []logicalVolume{{Name: "pv", DeviceClass: "fast", VolumeID: "h1"}}, want: "fast", from: fromLogicalVolume},
		"LogicalVolume wins over a StorageClass replaced since": {pv: topoPV("pv", "h1", "sc-fast", ""),
			lvs: []logicalVolume{{Name: "pv", DeviceClass: "slow", VolumeID: "h1"}}, want: "slow", from: fromLogicalVolume},
		"LogicalVolume of the default class (empty deviceClass)": {pv: topoPV("pv", "h1", "sc-fast", ""), defaultClass: "ssd",
			lvs: []logicalVolume{{Name: "pv", VolumeID: "h1"}}, want: "ssd", from: fromLogicalVolume},
		"LogicalVolume of another volume is not used": {pv: topoPV("pv", "h1", "gone", ""),
			lvs: []logicalVolume{{Name: "other", DeviceClass: "fast", VolumeID: "h2"}}, want: ""},
		"volume attribute (simulator), StorageClass deleted": {pv: topoPV("pv", "h1", "gone", "fast"), want: "fast", from: fromAttributes},
		"volume attribute wins over the StorageClass":        {pv: topoPV("pv", "h1", "sc-default", "fast"), defaultClass: "ssd", want: "fast", from: fromAttributes},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got := volumesByClass([]corev1.PersistentVolume{tc.pv}, scs, tc.lvs, tc.defaultClass)
			if diff := cmp.Diff(map[string][]string{tc.want: {"pv"}}, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			scByName := map[string]*storagev1.StorageClass{}
			for i := range scs {
				scByName[scs[i].Name] = &scs[i]
			}
			lvByID := map[string]logicalVolume{}
			for _, lv := range tc.lvs {
				lvByID[lv.VolumeID] = lv
			}
			if _, from := classOf(&tc.pv, scByName, lvByID, tc.defaultClass); from != tc.from {
				t.Errorf("found via %q, want %q", from, tc.from)
			}
		})
	}
}

func TestVolumesByClassSkipsOtherDrivers(t *testing.T) {
	t.Parallel()
	pd := corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pd"}, Spec: corev1.PersistentVolumeSpec{StorageClassName: "sc-fast",
		PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: "pd.csi.storage.gke.io", VolumeHandle: "h"}}}}
	legacy := topoPV("legacy", "h2", "sc-fast", "")
	legacy.Spec.CSI.Driver = LegacyProvisioner
	got := volumesByClass([]corev1.PersistentVolume{pd, legacy, topoPV("b", "h3", "sc-fast", ""), topoPV("a", "h4", "sc-fast", "")},
		[]storagev1.StorageClass{topoSC("sc-fast", "fast")}, nil, "")
	if diff := cmp.Diff(map[string][]string{"fast": {"a", "b", "legacy"}}, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestLogicalVolumeFrom(t *testing.T) {
	t.Parallel()
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "topolvm.io/v1", "kind": "LogicalVolume",
		"metadata": map[string]any{"name": "pvc-1"},
		"spec":     map[string]any{"name": "pvc-1", "nodeName": "n1", "deviceClass": "fast", "size": "10Gi"},
		"status":   map[string]any{"volumeID": "0b1c"},
	}}
	want := logicalVolume{Name: "pvc-1", DeviceClass: "fast", Node: "n1", VolumeID: "0b1c"}
	if diff := cmp.Diff(want, logicalVolumeFrom(u)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// TestClassUsageRealTopoLVM: PVs without the volume attribute are found through their
// StorageClass or, with that gone, their LogicalVolume; their PVCs are listed with them.
func TestClassUsageRealTopoLVM(t *testing.T) {
	t.Parallel()
	str := func(s string) *string { return &s }
	pvs := []corev1.PersistentVolume{
		topoPV("pv-sc", "h-sc", "topolvm-fast", ""),
		topoPV("pv-lv", "h-lv", "deleted-sc", ""),
		topoPV("pv-other", "h-other", "topolvm-fast", ""), // its LogicalVolume says ssd
	}
	pvcs := []corev1.PersistentVolumeClaim{
		{ObjectMeta: metav1.ObjectMeta{Namespace: "olap", Name: "data-ch-0"}, Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: str("topolvm-fast"), VolumeName: "pv-sc"}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: "olap", Name: "data-ch-1"}, Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: str("deleted-sc"), VolumeName: "pv-lv"}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: "olap", Name: "data-ch-2"}, Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: str("topolvm-fast"), VolumeName: "pv-other"}},
	}
	lvs := []logicalVolume{{Name: "pv-lv", DeviceClass: "fast", VolumeID: "h-lv"}, {Name: "pv-other", DeviceClass: "ssd", VolumeID: "h-other"}}
	got := classUsage("fast", "", []storagev1.StorageClass{topoSC("topolvm-fast", "fast")}, lvs, pvs, pvcs, nil)
	want := []volumeUse{
		{Namespace: "olap", PVC: "data-ch-0", PV: "pv-sc", StorageClass: "topolvm-fast", Ordinal: -1},
		{Namespace: "olap", PVC: "data-ch-1", PV: "pv-lv", StorageClass: "deleted-sc", Ordinal: -1},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	// Without the LogicalVolumes (no CRD), the PV whose StorageClass is gone is not found.
	if got := classUsage("fast", "", []storagev1.StorageClass{topoSC("topolvm-fast", "fast")}, nil, pvs, pvcs, nil); len(got) != 2 || got[1].PV != "pv-other" {
		t.Errorf("without LogicalVolumes: %+v", got)
	}
}
