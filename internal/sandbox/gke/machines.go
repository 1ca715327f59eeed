package gke

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// localSSDBytes is the size of one Local SSD disk: 375 GiB
// (https://cloud.google.com/compute/docs/disks/local-ssd).
const localSSDBytes int64 = 375 << 30

const gib int64 = 1 << 30

// machineType is what the emulator knows about one Compute Engine machine type.
type machineType struct {
	Name     string
	Family   string // value of the node label cloud.google.com/machine-family
	VCPUs    int64
	MemoryMB int64
	// FixedLocalSSD is the Local SSD count a Gen3 "-lssd" type always comes with (0 otherwise).
	FixedLocalSSD int32
	// LocalSSDCounts lists the non-zero Local SSD counts a flexible type accepts; empty means the
	// type takes no Local SSD beyond FixedLocalSSD.
	LocalSSDCounts []int32
}

// families is the single table of machine families the emulator accepts. Anything else is
// rejected with InvalidArgument, as GKE rejects an unknown machine type.
//
// Local SSD counts: https://cloud.google.com/compute/docs/disks/local-ssd#choose_number_local_ssds
// ("Choose a valid number of Local SSD disks"): N1 takes 1-8, 16 or 24 disks; N2 and N2D take
// fewer choices as vCPUs grow (see n2LocalSSD, n2dLocalSSD); E2 takes none; C3 / C3D take a fixed
// count only on their -lssd types (c3-standard-4/8/22/44/88/176-lssd = 1/2/4/8/16/32,
// c3d-standard-8/16/30/60/90/180/360-lssd = 1/1/2/4/8/16/32). The gen3 counts come from
// /work/shared/REFERENCE.md and the API comment on LocalNvmeSsdBlockConfig ("c3-standard-8-lssd
// ... 2 local ssds"). Memory per vCPU: standard types have 4 GB per vCPU (N1: 3.75 GB).
var families = []struct {
	prefix, suffix, family string
	vcpus                  []int64
	memPerVCPUMB           int64
	lssd                   func(vcpus int64) []int32 // flexible counts
	fixed                  []int32                   // fixed counts aligned with vcpus
}{
	{prefix: "n1-standard-", family: "n1", vcpus: []int64{1, 2, 4, 8, 16, 32, 64, 96}, memPerVCPUMB: 3840,
		lssd: func(int64) []int32 { return []int32{1, 2, 3, 4, 5, 6, 7, 8, 16, 24} }},
	{prefix: "n2-standard-", family: "n2", vcpus: []int64{2, 4, 8, 16, 32, 48, 64, 80, 96, 128}, memPerVCPUMB: 4096, lssd: n2LocalSSD},
	{prefix: "n2d-standard-", family: "n2d", vcpus: []int64{2, 4, 8, 16, 32, 48, 64, 80, 96, 128, 224}, memPerVCPUMB: 4096, lssd: n2dLocalSSD},
	{prefix: "e2-standard-", family: "e2", vcpus: []int64{2, 4, 8, 16, 32}, memPerVCPUMB: 4096},
	{prefix: "c3-standard-", suffix: "-lssd", family: "c3", vcpus: []int64{4, 8, 22, 44, 88, 176}, memPerVCPUMB: 4096,
		fixed: []int32{1, 2, 4, 8, 16, 32}},
	{prefix: "c3d-standard-", suffix: "-lssd", family: "c3d", vcpus: []int64{8, 16, 30, 60, 90, 180, 360}, memPerVCPUMB: 4096,
		fixed: []int32{1, 1, 2, 4, 8, 16, 32}},
	{prefix: "c3-standard-", family: "c3", vcpus: []int64{4, 8, 22, 44, 88, 176}, memPerVCPUMB: 4096},
	{prefix: "c3d-standard-", family: "c3d", vcpus: []int64{4, 8, 16, 30, 60, 90, 180, 360}, memPerVCPUMB: 4096},
}

// n2LocalSSD: N2 with 2-10 vCPUs: 1,2,4,8,16,24; 12-20: 2,4,8,16,24; 22-40: 4,8,16,24;
// 42-80: 8,16,24; 82-128: 16,24 (source: see families).
func n2LocalSSD(v int64) []int32 {
	switch {
	case v <= 10:
		return []int32{1, 2, 4, 8, 16, 24}
	case v <= 20:
		return []int32{2, 4, 8, 16, 24}
	case v <= 40:
		return []int32{4, 8, 16, 24}
	case v <= 80:
		return []int32{8, 16, 24}
	default:
		return []int32{16, 24}
	}
}

// n2dLocalSSD: N2D with 2-16 vCPUs: 1,2,4,8,16,24; 32 or 48: 2,4,8,16,24; 64 or 80: 4,8,16,24;
// 96-224: 8,16,24 (source: see families).
func n2dLocalSSD(v int64) []int32 {
	switch {
	case v <= 16:
		return []int32{1, 2, 4, 8, 16, 24}
	case v <= 48:
		return []int32{2, 4, 8, 16, 24}
	case v <= 80:
		return []int32{4, 8, 16, 24}
	default:
		return []int32{8, 16, 24}
	}
}

// lookupMachineType resolves a machine type name, or reports false when the emulator does not
// know it.
func lookupMachineType(name string) (machineType, bool) {
	for _, f := range families {
		if !strings.HasPrefix(name, f.prefix) || !strings.HasSuffix(name, f.suffix) {
			continue
		}
		mid := strings.TrimSuffix(strings.TrimPrefix(name, f.prefix), f.suffix)
		v, err := strconv.ParseInt(mid, 10, 64)
		if err != nil {
			continue
		}
		i := slices.Index(f.vcpus, v)
		if i < 0 {
			continue
		}
		mt := machineType{Name: name, Family: f.family, VCPUs: v, MemoryMB: v * f.memPerVCPUMB}
		if f.fixed != nil {
			mt.FixedLocalSSD = f.fixed[i]
		}
		if f.lssd != nil {
			mt.LocalSSDCounts = f.lssd(v)
		}
		return mt, true
	}
	return machineType{}, false
}

// supportedMachineTypes lists the accepted families for error messages.
func supportedMachineTypes() string {
	var out []string
	for _, f := range families {
		out = append(out, f.prefix+"*"+f.suffix)
	}
	return strings.Join(out, ", ")
}

// checkLocalSSDCount says whether a total Local SSD count (raw block + ephemeral + legacy
// local_ssd_count) fits the machine type.
func (m machineType) checkLocalSSDCount(n int32) error {
	if n == 0 {
		return nil
	}
	if m.FixedLocalSSD > 0 {
		if n == m.FixedLocalSSD {
			return nil
		}
		return fmt.Errorf("machine type %s comes with exactly %d Local SSD disk(s); requested %d", m.Name, m.FixedLocalSSD, n)
	}
	if len(m.LocalSSDCounts) == 0 {
		return fmt.Errorf("machine type %s does not support Local SSD disks; requested %d", m.Name, n)
	}
	if !slices.Contains(m.LocalSSDCounts, n) {
		return fmt.Errorf("machine type %s (%d vCPUs) supports %v Local SSD disk(s); requested %d", m.Name, m.VCPUs, m.LocalSSDCounts, n)
	}
	return nil
}

// cpuReservedMilli is GKE's CPU reservation for system daemons: 6% of the first core, 1% of the
// next core, 0.5% of the next 2 cores, 0.25% of any cores above 4.
// Source: https://cloud.google.com/kubernetes-engine/docs/concepts/plan-node-sizes
// ("Node allocatable resources" / "CPU reservations").
func cpuReservedMilli(vcpus int64) int64 {
	m := vcpus * 1000
	var r float64
	steps := []struct {
		upto int64
		frac float64
	}{{1000, 0.06}, {2000, 0.01}, {4000, 0.005}, {1 << 62, 0.0025}}
	prev := int64(0)
	for _, s := range steps {
		if m <= prev {
			break
		}
		r += float64(min(m, s.upto)-prev) * s.frac
		prev = s.upto
	}
	return int64(r + 0.5)
}

// memoryReservedBytes is GKE's memory reservation: 255 MiB below 1 GiB, else 25% of the first
// 4 GiB, 20% of the next 4 GiB, 10% of the next 8 GiB, 6% of the next 112 GiB, 2% above 128 GiB;
// plus the kubelet hard eviction threshold of 100 MiB. Source: as for cpuReservedMilli.
func memoryReservedBytes(mem int64) int64 {
	const evict = 100 << 20
	if mem < gib {
		return 255<<20 + evict
	}
	var r float64
	steps := []struct {
		upto int64
		frac float64
	}{{4 * gib, 0.25}, {8 * gib, 0.20}, {16 * gib, 0.10}, {128 * gib, 0.06}, {1 << 62, 0.02}}
	prev := int64(0)
	for _, s := range steps {
		if mem <= prev {
			break
		}
		r += float64(min(mem, s.upto)-prev) * s.frac
		prev = s.upto
	}
	return int64(r) + evict
}

// The node's ephemeral storage follows the arithmetic olapgke's sizing guide states
// (templates/guides/sizing-local-ssd-and-boot-disks.md.tmpl) with the same semantics as the
// provider's gkerules.ComputeEphemeral, in bytes. Source: GKE's node sizing page, "Local ephemeral
// storage reservation"
// (https://cloud.google.com/kubernetes-engine/docs/concepts/plan-node-sizes#local_ephemeral_storage_reservation):
//
//	                boot disk backing                       Local SSD backing (n disks)
//	capacity        boot disk - OS partitions (6025692Ki)   n x 375 GiB
//	reserved        min(50% disk, 6 GiB + 35% disk, 100 GiB) 50 GiB (n=1), 75 GiB (n=2), 100 GiB (n>=3)
//	allocatable     capacity - reserved - 10% of capacity (kubelet hard eviction nodefs.available<10%)
//
// The OS partitions are derived from the page's own example (a 100 GiB boot disk shows capacity
// 98831908Ki: 104857600Ki - 98831908Ki = 6025692Ki); with it this gives allocatable 47060071629
// where the page shows 47060071478 (151 bytes of rounding).
const bootDiskOSOverheadBytes int64 = 6025692 << 10

// ephemeralStorage is a node's ephemeral-storage capacity and allocatable, for a boot disk of
// diskBytes and ephemeralSSDs Local SSDs backing ephemeral storage (0: the boot disk backs it).
func ephemeralStorage(diskBytes int64, ephemeralSSDs int32) (capacity, allocatable int64) {
	var reserved int64
	if ephemeralSSDs > 0 {
		capacity = int64(ephemeralSSDs) * localSSDBytes
		switch {
		case ephemeralSSDs == 1:
			reserved = 50 * gib
		case ephemeralSSDs == 2:
			reserved = 75 * gib
		default:
			reserved = 100 * gib
		}
	} else {
		capacity = max(diskBytes-bootDiskOSOverheadBytes, 0)
		reserved = min(diskBytes/2, 6*gib+diskBytes*35/100, 100*gib)
	}
	return capacity, max(capacity-reserved-capacity/10, 0)
}
