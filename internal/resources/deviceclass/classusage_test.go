package deviceclass

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/olapgke/terraform-provider-olapgke/internal/topolvm"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
	lvs := []topolvm.LogicalVolume{{Name: "pv-lv", DeviceClass: "fast", VolumeID: "h-lv"}, {Name: "pv-other", DeviceClass: "ssd", VolumeID: "h-other"}}
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
