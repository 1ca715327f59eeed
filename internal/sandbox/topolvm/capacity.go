package topolvm

import (
	"math"
	"strconv"

	corev1 "k8s.io/api/core/v1"
)

// volume is one logical volume the simulator accounts for, keyed by PV name.
type volume struct {
	node  string
	class string
	bytes int64
}

// nodeVolumeGroup returns the volume group name and size the node's raw-block Local SSDs form,
// or size 0 when the node has none (annotation missing, not a number, or <= 0) or its volume
// group is not created yet (startup taint, bootstrap not run: see bootstrap.go).
func nodeVolumeGroup(node *corev1.Node) (string, int64) {
	if !volumeGroupCreated(node) {
		return "", 0
	}
	return localSSDVolumeGroup(node)
}

// localSSDVolumeGroup is the volume group the node's Local SSDs form once it is created.
func localSSDVolumeGroup(node *corev1.Node) (string, int64) {
	n, err := strconv.Atoi(node.Annotations[AnnSSDCount])
	if err != nil || n <= 0 {
		return "", 0
	}
	vg := node.Annotations[AnnVolumeGroup]
	if vg == "" {
		vg = DefaultVolumeGroup
	}
	return vg, int64(n) * LocalSSDBytes
}

// classCapacity is what lvmd reports as free for class dc on a volume group of vgBytes holding
// the given volumes (all on that node). Thick: VG size - thick usage - spare. Thin: floor((VG
// size - spare) * overprovision-ratio) - virtual size of the thin volumes in the same pool.
// Volumes whose class is no longer configured count as thick usage (the LV still occupies the VG).
// Never negative.
func classCapacity(dc DeviceClass, classes []DeviceClass, vgBytes int64, vols []volume) int64 {
	var used int64
	for _, v := range vols {
		vc, ok := findClass(classes, v.class)
		if !ok {
			vc = DeviceClass{Name: v.class}
		}
		switch {
		case dc.IsThin() && vc.IsThin() && vc.ThinPool != nil && vc.ThinPool.Name == dc.ThinPool.Name && vc.VolumeGroup == dc.VolumeGroup:
			used += v.bytes
		case !dc.IsThin() && !vc.IsThin():
			used += v.bytes
		}
	}
	base := vgBytes - dc.SpareBytes()
	if base <= 0 {
		return 0
	}
	var free int64
	if dc.IsThin() {
		free = int64(math.Floor(dc.ThinPool.OverprovisionRatio*float64(base))) - used
	} else {
		free = base - used
	}
	return max(free, 0)
}

// nodeCapacities returns free bytes per device class applicable on a node whose volume group is
// vg of vgBytes (classes whose volume-group matches). Empty when the node has no volume group.
func nodeCapacities(classes []DeviceClass, vg string, vgBytes int64, vols []volume) map[string]int64 {
	out := map[string]int64{}
	if vgBytes <= 0 {
		return out
	}
	for _, dc := range classes {
		if dc.VolumeGroup != vg {
			continue
		}
		out[dc.Name] = classCapacity(dc, classes, vgBytes, vols)
	}
	return out
}

// roundUpGiB rounds a request up to whole GiB, at least 1 GiB.
func roundUpGiB(b int64) int64 {
	const gib = 1 << 30
	if b <= 0 {
		return gib
	}
	return (b + gib - 1) / gib * gib
}

// pinnedNode returns the node a TopoLVM PV is pinned to by its required node affinity
// (topology.topolvm.io/node In [node]), or "".
func pinnedNode(pv *corev1.PersistentVolume) string {
	if pv.Spec.NodeAffinity == nil || pv.Spec.NodeAffinity.Required == nil {
		return ""
	}
	for _, term := range pv.Spec.NodeAffinity.Required.NodeSelectorTerms {
		for _, req := range term.MatchExpressions {
			if req.Key == TopologyKey && req.Operator == corev1.NodeSelectorOpIn && len(req.Values) == 1 {
				return req.Values[0]
			}
		}
	}
	return ""
}

// isTopoLVMPV reports whether pv is a CSI volume of the topolvm.io driver.
func isTopoLVMPV(pv *corev1.PersistentVolume) bool {
	return pv.Spec.CSI != nil && pv.Spec.CSI.Driver == DriverName
}

// volumeOf extracts the accounting record of a TopoLVM PV; ok is false for other PVs or PVs not
// pinned to a node.
func volumeOf(pv *corev1.PersistentVolume) (volume, bool) {
	if !isTopoLVMPV(pv) {
		return volume{}, false
	}
	node := pinnedNode(pv)
	if node == "" {
		return volume{}, false
	}
	q := pv.Spec.Capacity[corev1.ResourceStorage]
	return volume{node: node, class: pv.Spec.CSI.VolumeAttributes[DeviceClassParam], bytes: q.Value()}, true
}
