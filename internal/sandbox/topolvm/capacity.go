package topolvm

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

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
// the thin pools pools (name -> bytes) and the given volumes (all on that node), as lvmd v0.41.0's
// Watch computes it (internal/lvmd/vgservice.go send). Thick: VG size - thin pools - thick usage
// - spare. Thin: floor(pool size * overprovision-ratio) - virtual size of the thin volumes in the
// pool (no spare: ThinPoolUsage.FreeBytes); 0 when the pool does not exist (nodeCapacities
// leaves such a class out). Volumes whose class is no longer configured count as thick usage
// (the LV still occupies the VG). Never negative.
func classCapacity(dc DeviceClass, classes []DeviceClass, vgBytes int64, pools map[string]int64, vols []volume) int64 {
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
	var free int64
	if dc.IsThin() {
		pool, ok := pools[dc.ThinPool.Name]
		if !ok {
			return 0
		}
		free = int64(math.Floor(dc.ThinPool.OverprovisionRatio*float64(pool))) - used
	} else {
		base := vgBytes - dc.SpareBytes()
		for _, b := range pools {
			base -= b
		}
		if base <= 0 {
			return 0
		}
		free = base - used
	}
	return max(free, 0)
}

// nodeCapacities returns free bytes per device class applicable on a node whose volume group is
// vg of vgBytes with thin pools pools (classes whose volume-group matches; a thin class only when
// its pool exists: the simulator's stand-in for lvmd's "Thin pool not found" exit, which stops
// every class of the node under real TopoLVM). Empty when the node has no volume group.
func nodeCapacities(classes []DeviceClass, vg string, vgBytes int64, pools map[string]int64, vols []volume) map[string]int64 {
	out := map[string]int64{}
	if vgBytes <= 0 {
		return out
	}
	for _, dc := range classes {
		if dc.VolumeGroup != vg {
			continue
		}
		if _, ok := pools[poolOf(dc)]; dc.IsThin() && !ok {
			continue
		}
		out[dc.Name] = classCapacity(dc, classes, vgBytes, pools, vols)
	}
	return out
}

func poolOf(dc DeviceClass) string {
	if dc.ThinPool == nil {
		return ""
	}
	return dc.ThinPool.Name
}

// nodeThinPools is the thin pools on the node's volume group (AnnThinPools), once the group
// exists.
func nodeThinPools(node *corev1.Node) map[string]int64 {
	if !volumeGroupCreated(node) {
		return nil
	}
	pools, _ := ParseThinPools(node.Annotations[AnnThinPools])
	return pools
}

// ParseThinPools reads AnnThinPools: "name=bytes" entries separated by commas.
func ParseThinPools(v string) (map[string]int64, error) {
	out := map[string]int64{}
	for _, e := range strings.Split(v, ",") {
		if e = strings.TrimSpace(e); e == "" {
			continue
		}
		name, size, ok := strings.Cut(e, "=")
		b, err := strconv.ParseInt(size, 10, 64)
		if !ok || name == "" || err != nil || b <= 0 {
			return nil, fmt.Errorf("%s %q: entry %q is not name=bytes", AnnThinPools, v, e)
		}
		out[name] = b
	}
	return out, nil
}

// FormatThinPools writes AnnThinPools, names sorted.
func FormatThinPools(pools map[string]int64) string {
	parts := make([]string, 0, len(pools))
	for _, n := range slices.Sorted(maps.Keys(pools)) {
		parts = append(parts, n+"="+strconv.FormatInt(pools[n], 10))
	}
	return strings.Join(parts, ",")
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
