package gkerules

import (
	"fmt"
	"math"
)

const gib = float64(1 << 30)

// BootDiskOSOverheadGiB is the part of a boot disk the node OS keeps for itself (partitions other
// than the stateful one), so the node filesystem's capacity is smaller than the disk. Derived from
// the example in https://cloud.google.com/kubernetes-engine/docs/concepts/plan-node-sizes (a 100 GiB
// boot disk shows ephemeral-storage capacity 98831908Ki: 104857600Ki - 98831908Ki = 6025692Ki).
// It is an estimate for Container-Optimized OS; the plan shows it so it can be checked.
const BootDiskOSOverheadGiB = 6025692.0 / (1 << 20)

// HardNodefsEvictionPercent is kubelet's default hard eviction threshold nodefs.available<10%
// (https://kubernetes.io/docs/concepts/scheduling-eviction/node-pressure-eviction/#hard-eviction-thresholds),
// which GKE keeps and subtracts from allocatable (plan-node-sizes, "Local ephemeral storage
// reservation").
const HardNodefsEvictionPercent = 10.0

// EphemeralInput describes one node's ephemeral storage.
type EphemeralInput struct {
	// BootDiskGiB is the boot disk size.
	BootDiskGiB int64
	// EphemeralLocalSSDs is the number of Local SSDs given to ephemeral storage; 0 means ephemeral
	// storage (emptyDir, writable layers, logs, images) lives on the boot disk.
	EphemeralLocalSSDs int64
	// SoftNodefsAvailablePercent is kubelet_config's eviction_soft nodefs.available ("20%" -> 20);
	// 0 when unset. Soft eviction evicts too (after its grace period), so the higher threshold wins.
	SoftNodefsAvailablePercent float64
	// DemandGiB is the expected ephemeral demand per node (images, logs, emptyDir, writable layers).
	DemandGiB float64
}

// Ephemeral is the arithmetic of one node's ephemeral storage, in GiB.
type Ephemeral struct {
	// Backing is "boot-disk" or "local-ssd".
	Backing string
	// BootDiskGiB is the boot disk size.
	BootDiskGiB float64
	// CapacityGiB is the node filesystem's capacity (kubelet's ephemeral-storage capacity).
	CapacityGiB float64
	// ReservedGiB is what GKE reserves for system components.
	ReservedGiB float64
	// EvictionThresholdGiB is the free space below which kubelet evicts Pods.
	EvictionThresholdGiB float64
	// EvictionSignal names the threshold ("nodefs.available<10%").
	EvictionSignal string
	// AllocatableGiB is what the scheduler can hand to Pods: capacity - reserved - hard threshold.
	AllocatableGiB float64
	// DemandGiB is the expected demand per node.
	DemandGiB float64
	// HeadroomGiB is capacity - reserved - eviction threshold - demand: below 0 the node is
	// expected to hit DiskPressure (or Pods requesting it do not fit).
	HeadroomGiB float64
}

// bootDiskReservedGiB is GKE's ephemeral-storage reservation on a boot-disk-backed node:
// min(50% of the disk, 6 GiB + 35% of the disk, 100 GiB).
// Source: https://cloud.google.com/kubernetes-engine/docs/concepts/plan-node-sizes#local_ephemeral_storage_reservation
// (cross-checked against the page's own example: 100 GiB disk -> capacity 98831908Ki,
// allocatable 47060071478 bytes; this gives 47060071629). The sizing guide
// (templates/guides/sizing-local-ssd-and-boot-disks.md.tmpl) states the same arithmetic, and the
// sandbox's GKE emulator computes it in bytes (internal/sandbox/gke/machines.go ephemeralStorage).
func bootDiskReservedGiB(disk float64) float64 {
	return math.Min(math.Min(disk/2, 6+disk*0.35), 100)
}

// localSSDReservedGiB is GKE's reservation when ephemeral storage is on Local SSDs: 50 GiB with one
// disk, 75 GiB with two, 100 GiB with three or more; the eviction threshold is 10% of the disks'
// n x 375 GiB. Source: plan-node-sizes#local_ephemeral_storage_reservation (Local SSD table).
func localSSDReservedGiB(n int64) float64 {
	switch {
	case n <= 1:
		return 50
	case n == 2:
		return 75
	default:
		return 100
	}
}

// ComputeEphemeral does the arithmetic for one node.
func ComputeEphemeral(in EphemeralInput) Ephemeral {
	e := Ephemeral{BootDiskGiB: float64(in.BootDiskGiB), DemandGiB: in.DemandGiB}
	if in.EphemeralLocalSSDs > 0 {
		e.Backing = "local-ssd"
		e.CapacityGiB = float64(in.EphemeralLocalSSDs * LocalSSDGiB)
		e.ReservedGiB = localSSDReservedGiB(in.EphemeralLocalSSDs)
	} else {
		e.Backing = "boot-disk"
		e.CapacityGiB = math.Max(float64(in.BootDiskGiB)-BootDiskOSOverheadGiB, 0)
		e.ReservedGiB = bootDiskReservedGiB(float64(in.BootDiskGiB))
	}
	hard := e.CapacityGiB * HardNodefsEvictionPercent / 100
	e.EvictionThresholdGiB, e.EvictionSignal = hard, fmt.Sprintf("nodefs.available<%g%%", HardNodefsEvictionPercent)
	if in.SoftNodefsAvailablePercent > HardNodefsEvictionPercent {
		e.EvictionThresholdGiB = e.CapacityGiB * in.SoftNodefsAvailablePercent / 100
		e.EvictionSignal = fmt.Sprintf("nodefs.available<%g%% (soft)", in.SoftNodefsAvailablePercent)
	}
	e.AllocatableGiB = math.Max(e.CapacityGiB-e.ReservedGiB-hard, 0)
	e.HeadroomGiB = e.CapacityGiB - e.ReservedGiB - e.EvictionThresholdGiB - e.DemandGiB
	return e.rounded()
}

// rounded rounds every figure to 0.01 GiB so plans are stable and readable.
func (e Ephemeral) rounded() Ephemeral {
	r := func(f float64) float64 { return math.Round(f*100) / 100 }
	e.CapacityGiB, e.ReservedGiB, e.EvictionThresholdGiB = r(e.CapacityGiB), r(e.ReservedGiB), r(e.EvictionThresholdGiB)
	e.AllocatableGiB, e.DemandGiB, e.HeadroomGiB = r(e.AllocatableGiB), r(e.DemandGiB), r(e.HeadroomGiB)
	return e
}

// DiskPressure reports whether the demand does not fit.
func (e Ephemeral) DiskPressure() bool { return e.HeadroomGiB < 0 }

// String is the one-line arithmetic used in diagnostics.
func (e Ephemeral) String() string {
	src := fmt.Sprintf("boot disk %g GiB (filesystem %g GiB)", e.BootDiskGiB, e.CapacityGiB)
	if e.Backing == "local-ssd" {
		src = fmt.Sprintf("ephemeral storage on Local SSD (%g GiB)", e.CapacityGiB)
	}
	return fmt.Sprintf("%s, GKE reserves %g GiB, kubelet evicts when free space falls below %g GiB (%s), allocatable %g GiB, expected demand %g GiB per node, headroom %g GiB",
		src, e.ReservedGiB, e.EvictionThresholdGiB, e.EvictionSignal, e.AllocatableGiB, e.DemandGiB, e.HeadroomGiB)
}

// MinBootDiskForDemand is the smallest boot disk (GiB, rounded up to a multiple of 10) on which
// in.DemandGiB fits with headroom >= 0 when ephemeral storage is on the boot disk, or 0 when no
// disk up to 64 TiB fits (boot disk allocatable grows with the disk, so a binary search applies).
func MinBootDiskForDemand(in EphemeralInput) int64 {
	in.EphemeralLocalSSDs = 0
	fits := func(d int64) bool {
		in.BootDiskGiB = d
		return !ComputeEphemeral(in).DiskPressure()
	}
	lo, hi := int64(MinBootDiskGiB), int64(65536)
	if !fits(hi) {
		return 0
	}
	for lo < hi {
		mid := (lo + hi) / 2
		if fits(mid) {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return (lo + 9) / 10 * 10
}
