package topolvm

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

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
	lvs := []LogicalVolume{{Name: "pv-lv", DeviceClass: "fast", VolumeID: "h-lv"}, {Name: "pv-other", DeviceClass: "ssd", VolumeID: "h-other"}}
	got := ClassUsage("fast", "", []storagev1.StorageClass{topoSC("topolvm-fast", "fast")}, lvs, pvs, pvcs, nil)
	want := []VolumeUse{
		{Namespace: "olap", PVC: "data-ch-0", PV: "pv-sc", StorageClass: "topolvm-fast", Ordinal: -1},
		{Namespace: "olap", PVC: "data-ch-1", PV: "pv-lv", StorageClass: "deleted-sc", Ordinal: -1},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	// Without the LogicalVolumes (no CRD), the PV whose StorageClass is gone is not found.
	if got := ClassUsage("fast", "", []storagev1.StorageClass{topoSC("topolvm-fast", "fast")}, nil, pvs, pvcs, nil); len(got) != 2 || got[1].PV != "pv-other" {
		t.Errorf("without LogicalVolumes: %+v", got)
	}
}
