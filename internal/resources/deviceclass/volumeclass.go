package deviceclass

import (
	"sort"

	"github.com/olapgke/terraform-provider-olapgke/internal/stsutil"
	"github.com/olapgke/terraform-provider-olapgke/internal/topolvm"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// logicalVolume is what the in-use guard reads of a TopoLVM LogicalVolume (topolvm.io/v1,
// cluster-scoped): the record topolvm-controller writes for every volume it provisions.
type logicalVolume struct {
	Name        string
	DeviceClass string // spec.deviceClass; empty for volumes of the default class
	Node        string // spec.nodeName
	VolumeID    string // status.volumeID: the PV's spec.csi.volumeHandle
}

// logicalVolumeFrom reads a LogicalVolume listed with the dynamic client.
func logicalVolumeFrom(u *unstructured.Unstructured) logicalVolume {
	lv := logicalVolume{Name: u.GetName()}
	lv.DeviceClass, _, _ = unstructured.NestedString(u.Object, "spec", "deviceClass")
	lv.Node, _, _ = unstructured.NestedString(u.Object, "spec", "nodeName")
	lv.VolumeID, _, _ = unstructured.NestedString(u.Object, "status", "volumeID")
	return lv
}

// Where a PV's device class was found (classOf), most authoritative first.
const (
	fromLogicalVolume = "LogicalVolume"
	fromAttributes    = "volumeAttributes"
	fromStorageClass  = "StorageClass"
)

// classOf is the device class of one TopoLVM PV and where it was found; "" when no source
// names one. Sources, in order:
//
//   - the LogicalVolume whose status.volumeID is the PV's volumeHandle: TopoLVM's own record,
//     written when the volume was created (its deviceClass empty means the default class);
//   - spec.csi.volumeAttributes["topolvm.io/device-class"], which some provisioners (and the
//     sandbox's simulator) write; real TopoLVM does not;
//   - the parameters of the PV's StorageClass (topolvm.io/device-class; absent or empty: the
//     default class). This is the live object: it can have been deleted or replaced since the
//     volume was provisioned, or the default moved to another class, so it comes last.
//
// defaultClass is the lvmd config's default class ("" when unknown: volumes of the default
// class are then attributed to none).
func classOf(pv *corev1.PersistentVolume, scs map[string]*storagev1.StorageClass, lvs map[string]logicalVolume, defaultClass string) (string, string) {
	if pv.Spec.CSI == nil || !stsutil.IsTopoLVM(pv.Spec.CSI.Driver) {
		return "", ""
	}
	orDefault := func(c string) string {
		if c == "" {
			return defaultClass
		}
		return c
	}
	if lv, ok := lvs[pv.Spec.CSI.VolumeHandle]; ok && pv.Spec.CSI.VolumeHandle != "" {
		return orDefault(lv.DeviceClass), fromLogicalVolume
	}
	if c := pv.Spec.CSI.VolumeAttributes[DeviceClassParam]; c != "" {
		return c, fromAttributes
	}
	if c := topolvm.ClassOfStorageClass(scs[pv.Spec.StorageClassName], defaultClass); c != "" {
		return c, fromStorageClass
	}
	return "", ""
}

// volumesByClass is the in-use guard's decision: the names of the TopoLVM PVs of each device
// class (sorted), judged by classOf. PVs whose class no source names are under "".
func volumesByClass(pvs []corev1.PersistentVolume, scs []storagev1.StorageClass, lvs []logicalVolume, defaultClass string) map[string][]string {
	scByName := make(map[string]*storagev1.StorageClass, len(scs))
	for i := range scs {
		scByName[scs[i].Name] = &scs[i]
	}
	lvByID := make(map[string]logicalVolume, len(lvs))
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
		c, _ := classOf(pv, scByName, lvByID, defaultClass)
		out[c] = append(out[c], pv.Name)
	}
	for _, names := range out {
		sort.Strings(names)
	}
	return out
}
