package topolvm

import (
	"sort"

	"github.com/olapgke/terraform-provider-olapgke/internal/stsutil"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// LogicalVolume is what olapgke reads of a TopoLVM LogicalVolume (topolvm.io/v1,
// cluster-scoped): the record topolvm-controller writes for every volume it provisions.
type LogicalVolume struct {
	Name        string
	DeviceClass string // spec.deviceClass; empty for volumes of the default class
	Node        string // spec.nodeName
	VolumeID    string // status.volumeID: the PV's spec.csi.volumeHandle
}

// LogicalVolumeFrom reads a LogicalVolume listed with the dynamic client.
func LogicalVolumeFrom(u *unstructured.Unstructured) LogicalVolume {
	lv := LogicalVolume{Name: u.GetName()}
	lv.DeviceClass, _, _ = unstructured.NestedString(u.Object, "spec", "deviceClass")
	lv.Node, _, _ = unstructured.NestedString(u.Object, "spec", "nodeName")
	lv.VolumeID, _, _ = unstructured.NestedString(u.Object, "status", "volumeID")
	return lv
}

// Where a PV's device class was found (ClassOf), most authoritative first.
const (
	FromLogicalVolume = "LogicalVolume"
	FromAttributes    = "volumeAttributes"
	FromStorageClass  = "StorageClass"
)

// ClassOf is the device class of one TopoLVM PV and where it was found; "" when no source
// names one. Sources, in order:
//
//   - the LogicalVolume whose status.volumeID is the PV's volumeHandle (lvs is keyed by
//     volume ID): TopoLVM's own record, written when the volume was created (its deviceClass
//     empty means the default class);
//   - spec.csi.volumeAttributes["topolvm.io/device-class"], which some provisioners (and the
//     sandbox's simulator) write; real TopoLVM does not;
//   - the parameters of the PV's StorageClass (ClassOfStorageClass; absent or empty: the
//     default class). This is the live object: it can have been deleted or replaced since the
//     volume was provisioned, or the default moved to another class, so it comes last.
//
// defaultClass is the lvmd config's default class ("" when unknown: volumes of the default
// class are then attributed to none).
func ClassOf(pv *corev1.PersistentVolume, scs map[string]*storagev1.StorageClass, lvs map[string]LogicalVolume, defaultClass string) (string, string) {
	if pv.Spec.CSI == nil || !stsutil.IsTopoLVM(pv.Spec.CSI.Driver) {
		return "", ""
	}
	if lv, ok := lvs[pv.Spec.CSI.VolumeHandle]; ok && pv.Spec.CSI.VolumeHandle != "" {
		if lv.DeviceClass == "" {
			return defaultClass, FromLogicalVolume
		}
		return lv.DeviceClass, FromLogicalVolume
	}
	if c := pv.Spec.CSI.VolumeAttributes[stsutil.ParamDeviceClass]; c != "" {
		return c, FromAttributes
	}
	if c := ClassOfStorageClass(scs[pv.Spec.StorageClassName], defaultClass); c != "" {
		return c, FromStorageClass
	}
	return "", ""
}

// VolumesByClass is the in-use guard's decision: the names of the TopoLVM PVs of each device
// class (sorted), judged by ClassOf. PVs whose class no source names are under "".
func VolumesByClass(pvs []corev1.PersistentVolume, scs []storagev1.StorageClass, lvs []LogicalVolume, defaultClass string) map[string][]string {
	scByName := make(map[string]*storagev1.StorageClass, len(scs))
	for i := range scs {
		scByName[scs[i].Name] = &scs[i]
	}
	lvByID := make(map[string]LogicalVolume, len(lvs))
	for _, lv := range lvs {
		if lv.VolumeID != "" {
			lvByID[lv.VolumeID] = lv
		}
	}
	out := map[string][]string{}
	for i := range pvs {
		pv := &pvs[i]
		if pv.Spec.CSI == nil || !stsutil.IsTopoLVM(pv.Spec.CSI.Driver) {
			continue
		}
		c, _ := ClassOf(pv, scByName, lvByID, defaultClass)
		out[c] = append(out[c], pv.Name)
	}
	for _, names := range out {
		sort.Strings(names)
	}
	return out
}
