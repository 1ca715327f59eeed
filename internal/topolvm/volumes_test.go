package topolvm

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/olapgke/terraform-provider-olapgke/internal/stsutil"
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
			Driver: stsutil.ProvisionerTopoLVM, VolumeHandle: handle, VolumeAttributes: map[string]string{"topolvm.io/lv-name": handle}}},
	}}
	if attr != "" {
		pv.Spec.CSI.VolumeAttributes[stsutil.ParamDeviceClass] = attr
	}
	return pv
}

func topoSC(name, class string) storagev1.StorageClass {
	sc := storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Provisioner: stsutil.ProvisionerTopoLVM}
	if class != "" {
		sc.Parameters = map[string]string{stsutil.ParamDeviceClass: class}
	}
	return sc
}

func TestVolumesByClassSources(t *testing.T) {
	t.Parallel()
	scs := []storagev1.StorageClass{
		topoSC("sc-fast", "fast"),
		topoSC("sc-default", ""),
		{ObjectMeta: metav1.ObjectMeta{Name: "sc-pd"}, Provisioner: "pd.csi.storage.gke.io", Parameters: map[string]string{stsutil.ParamDeviceClass: "fast"}},
	}
	tests := map[string]struct {
		pv           corev1.PersistentVolume
		lvs          []LogicalVolume
		defaultClass string
		want         string
		from         string
	}{
		"StorageClass parameter (real TopoLVM PV)":        {pv: topoPV("pv", "h1", "sc-fast", ""), want: "fast", from: FromStorageClass},
		"StorageClass without parameter: default":         {pv: topoPV("pv", "h1", "sc-default", ""), defaultClass: "ssd", want: "ssd", from: FromStorageClass},
		"StorageClass without parameter, default unknown": {pv: topoPV("pv", "h1", "sc-default", ""), want: ""},
		"StorageClass of another provisioner":             {pv: topoPV("pv", "h1", "sc-pd", ""), want: ""},
		"StorageClass deleted, LogicalVolume names it": {pv: topoPV("pv", "h1", "gone", ""),
			lvs: []LogicalVolume{{Name: "pv", DeviceClass: "fast", VolumeID: "h1"}}, want: "fast", from: FromLogicalVolume},
		"LogicalVolume wins over a StorageClass replaced since": {pv: topoPV("pv", "h1", "sc-fast", ""),
			lvs: []LogicalVolume{{Name: "pv", DeviceClass: "slow", VolumeID: "h1"}}, want: "slow", from: FromLogicalVolume},
		"LogicalVolume of the default class (empty deviceClass)": {pv: topoPV("pv", "h1", "sc-fast", ""), defaultClass: "ssd",
			lvs: []LogicalVolume{{Name: "pv", VolumeID: "h1"}}, want: "ssd", from: FromLogicalVolume},
		"LogicalVolume of another volume is not used": {pv: topoPV("pv", "h1", "gone", ""),
			lvs: []LogicalVolume{{Name: "other", DeviceClass: "fast", VolumeID: "h2"}}, want: ""},
		"volume attribute (simulator), StorageClass deleted": {pv: topoPV("pv", "h1", "gone", "fast"), want: "fast", from: FromAttributes},
		"volume attribute wins over the StorageClass":        {pv: topoPV("pv", "h1", "sc-default", "fast"), defaultClass: "ssd", want: "fast", from: FromAttributes},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got := VolumesByClass([]corev1.PersistentVolume{tc.pv}, scs, tc.lvs, tc.defaultClass)
			if diff := cmp.Diff(map[string][]string{tc.want: {"pv"}}, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			scByName := map[string]*storagev1.StorageClass{}
			for i := range scs {
				scByName[scs[i].Name] = &scs[i]
			}
			lvByID := map[string]LogicalVolume{}
			for _, lv := range tc.lvs {
				lvByID[lv.VolumeID] = lv
			}
			if _, from := ClassOf(&tc.pv, scByName, lvByID, tc.defaultClass); from != tc.from {
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
	legacy.Spec.CSI.Driver = stsutil.ProvisionerTopoLVMLegacy
	got := VolumesByClass([]corev1.PersistentVolume{pd, legacy, topoPV("b", "h3", "sc-fast", ""), topoPV("a", "h4", "sc-fast", "")},
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
	want := LogicalVolume{Name: "pvc-1", DeviceClass: "fast", Node: "n1", VolumeID: "0b1c"}
	if diff := cmp.Diff(want, LogicalVolumeFrom(u)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}
