package gkerules

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// LocalSSDGiB is the size of one Local SSD disk (375 GiB).
// Source: https://cloud.google.com/compute/docs/disks/local-ssd ("Each Local SSD disk is 375 GiB").
const LocalSSDGiB = 375

// MachineType is what the rules know about one Compute Engine machine type.
type MachineType struct {
	Name   string
	Family string
	VCPUs  int64
	// FixedLocalSSD is the Local SSD count a Gen3 "-lssd" type always comes with (0 otherwise).
	FixedLocalSSD int64
	// LocalSSDCounts are the non-zero Local SSD totals a flexible type accepts; empty (with
	// FixedLocalSSD 0) means the type takes no Local SSD.
	LocalSSDCounts []int64
	// BootDiskTypes are the boot disk types the family accepts; empty means "not known here".
	BootDiskTypes []string
}

// family is one row of the machine table.
type family struct {
	prefix, suffix, name string
	vcpus                []int64
	fixed                []int64 // aligned with vcpus, for -lssd types
	counts               func(vcpus int64) []int64
	bootDisks            []string
}

var (
	pdDisks    = []string{"pd-standard", "pd-balanced", "pd-ssd", "pd-extreme"}
	gen3Disks  = []string{"pd-balanced", "pd-ssd", "hyperdisk-balanced", "hyperdisk-extreme", "hyperdisk-throughput"}
	fixedCount = func(int64) []int64 { return nil }
)

// machineFamilies is THE table of Local SSD counts per machine family. Families not listed are
// left to the GKE API to judge (its error is surfaced as is).
//
// Sources:
//   - https://cloud.google.com/compute/docs/disks/local-ssd#choose_number_local_ssds ("Choose a
//     valid number of Local SSD disks"): N1 1-8, 16 or 24; N2 and N2D fewer choices as vCPUs grow
//     (n2Counts, n2dCounts); C2 by vCPUs (c2Counts); E2 none; C3 and C3D only on -lssd types with a
//     fixed count: c3-standard-4/8/22/44/88/176-lssd = 1/2/4/8/16/32,
//     c3d-standard-8/16/30/60/90/180/360-lssd = 1/1/2/4/8/16/32 (also in the GKE API comment on
//     LocalNvmeSsdBlockConfig: "c3-standard-8-lssd ... 2 local ssds").
//   - Boot disk types per family: https://cloud.google.com/compute/docs/disks#disk-types (C3/C3D
//     do not take pd-standard; N1/N2/N2D/C2/E2 take the persistent disk types).
var machineFamilies = []family{
	{prefix: "n1-standard-", name: "n1", vcpus: []int64{1, 2, 4, 8, 16, 32, 64, 96}, counts: n1Counts, bootDisks: pdDisks},
	{prefix: "n1-highmem-", name: "n1", vcpus: []int64{2, 4, 8, 16, 32, 64, 96}, counts: n1Counts, bootDisks: pdDisks},
	{prefix: "n1-highcpu-", name: "n1", vcpus: []int64{2, 4, 8, 16, 32, 64, 96}, counts: n1Counts, bootDisks: pdDisks},
	{prefix: "n2-standard-", name: "n2", vcpus: []int64{2, 4, 8, 16, 32, 48, 64, 80, 96, 128}, counts: n2Counts, bootDisks: pdDisks},
	{prefix: "n2-highmem-", name: "n2", vcpus: []int64{2, 4, 8, 16, 32, 48, 64, 80, 96, 128}, counts: n2Counts, bootDisks: pdDisks},
	{prefix: "n2-highcpu-", name: "n2", vcpus: []int64{2, 4, 8, 16, 32, 48, 64, 80, 96}, counts: n2Counts, bootDisks: pdDisks},
	{prefix: "n2d-standard-", name: "n2d", vcpus: []int64{2, 4, 8, 16, 32, 48, 64, 80, 96, 128, 224}, counts: n2dCounts, bootDisks: pdDisks},
	{prefix: "n2d-highmem-", name: "n2d", vcpus: []int64{2, 4, 8, 16, 32, 48, 64, 80, 96}, counts: n2dCounts, bootDisks: pdDisks},
	{prefix: "c2-standard-", name: "c2", vcpus: []int64{4, 8, 16, 30, 60}, counts: c2Counts, bootDisks: pdDisks},
	{prefix: "e2-standard-", name: "e2", vcpus: []int64{2, 4, 8, 16, 32}, counts: fixedCount, bootDisks: pdDisks},
	{prefix: "e2-highmem-", name: "e2", vcpus: []int64{2, 4, 8, 16}, counts: fixedCount, bootDisks: pdDisks},
	{prefix: "c3-standard-", suffix: "-lssd", name: "c3", vcpus: []int64{4, 8, 22, 44, 88, 176}, fixed: []int64{1, 2, 4, 8, 16, 32}, bootDisks: gen3Disks},
	{prefix: "c3d-standard-", suffix: "-lssd", name: "c3d", vcpus: []int64{8, 16, 30, 60, 90, 180, 360}, fixed: []int64{1, 1, 2, 4, 8, 16, 32}, bootDisks: gen3Disks},
	{prefix: "c3-standard-", name: "c3", vcpus: []int64{4, 8, 22, 44, 88, 176}, counts: fixedCount, bootDisks: gen3Disks},
	{prefix: "c3d-standard-", name: "c3d", vcpus: []int64{4, 8, 16, 30, 60, 90, 180, 360}, counts: fixedCount, bootDisks: gen3Disks},
}

func n1Counts(int64) []int64 { return []int64{1, 2, 3, 4, 5, 6, 7, 8, 16, 24} }

// n2Counts: 2-10 vCPUs: 1,2,4,8,16,24; 12-20: 2,4,8,16,24; 22-40: 4,8,16,24; 42-80: 8,16,24;
// 82-128: 16,24.
func n2Counts(v int64) []int64 {
	switch {
	case v <= 10:
		return []int64{1, 2, 4, 8, 16, 24}
	case v <= 20:
		return []int64{2, 4, 8, 16, 24}
	case v <= 40:
		return []int64{4, 8, 16, 24}
	case v <= 80:
		return []int64{8, 16, 24}
	default:
		return []int64{16, 24}
	}
}

// n2dCounts: 2-16 vCPUs: 1,2,4,8,16,24; 32-48: 2,4,8,16,24; 64-80: 4,8,16,24; 96-224: 8,16,24.
func n2dCounts(v int64) []int64 {
	switch {
	case v <= 16:
		return []int64{1, 2, 4, 8, 16, 24}
	case v <= 48:
		return []int64{2, 4, 8, 16, 24}
	case v <= 80:
		return []int64{4, 8, 16, 24}
	default:
		return []int64{8, 16, 24}
	}
}

// c2Counts: 4 or 8 vCPUs: 1,2,4,8; 16: 2,4,8; 30: 4,8; 60: 8.
func c2Counts(v int64) []int64 {
	switch {
	case v <= 8:
		return []int64{1, 2, 4, 8}
	case v <= 16:
		return []int64{2, 4, 8}
	case v <= 30:
		return []int64{4, 8}
	default:
		return []int64{8}
	}
}

// LookupMachineType resolves a machine type name; false means the rules do not know it and the
// GKE API decides.
func LookupMachineType(name string) (MachineType, bool) {
	for _, f := range machineFamilies {
		if !strings.HasPrefix(name, f.prefix) || !strings.HasSuffix(name, f.suffix) {
			continue
		}
		v, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimPrefix(name, f.prefix), f.suffix), 10, 64)
		if err != nil {
			continue
		}
		i := slices.Index(f.vcpus, v)
		if i < 0 {
			continue
		}
		mt := MachineType{Name: name, Family: f.name, VCPUs: v, BootDiskTypes: f.bootDisks}
		if f.fixed != nil {
			mt.FixedLocalSSD = f.fixed[i]
		} else {
			mt.LocalSSDCounts = f.counts(v)
		}
		return mt, true
	}
	return MachineType{}, false
}

// EffectiveLocalSSDCount is the raw-block Local SSD count nodes get when local_nvme_ssd_count is
// configured as n and ephemeral Local SSDs as e: on a "-lssd" type without ephemeral Local SSDs,
// 0 (or unset) means the type's fixed count.
func EffectiveLocalSSDCount(machineType string, n, e int64) int64 {
	if mt, ok := LookupMachineType(machineType); ok && mt.FixedLocalSSD > 0 && n == 0 && e == 0 {
		return mt.FixedLocalSSD
	}
	return n
}

// SameLocalSSDCount reports whether a configured count and the count the API reports describe
// the same pool: on a "-lssd" type 0 and the fixed count are the same thing (GKE reports the
// fixed count although 0 was sent; hashicorp/terraform-provider-google#17068).
func SameLocalSSDCount(machineType string, configured, reported, ephemeral int64) bool {
	return EffectiveLocalSSDCount(machineType, configured, ephemeral) == EffectiveLocalSSDCount(machineType, reported, ephemeral)
}

// CheckLocalSSD checks raw-block (TopoLVM) plus ephemeral-storage Local SSD counts against the
// machine type. known is false when the machine type is not in the table (the API decides);
// err says what is wrong otherwise.
func CheckLocalSSD(machineType string, rawBlock, ephemeral int64) (known bool, err error) {
	if rawBlock < 0 || ephemeral < 0 {
		return true, fmt.Errorf("local SSD counts cannot be negative (raw block %d, ephemeral %d)", rawBlock, ephemeral)
	}
	mt, ok := LookupMachineType(machineType)
	if !ok {
		return false, nil
	}
	if mt.FixedLocalSSD > 0 {
		switch {
		case rawBlock != 0 && ephemeral != 0:
			return true, fmt.Errorf("%s comes with exactly %d Local SSD(s); use them either as raw block devices or as ephemeral storage, not both (raw block %d, ephemeral %d)",
				mt.Name, mt.FixedLocalSSD, rawBlock, ephemeral)
		case rawBlock != 0 && rawBlock != mt.FixedLocalSSD:
			return true, fmt.Errorf("%s comes with exactly %d Local SSD(s); local_nvme_ssd_count must be %d or 0 (meaning the same), not %d",
				mt.Name, mt.FixedLocalSSD, mt.FixedLocalSSD, rawBlock)
		case ephemeral != 0 && ephemeral != mt.FixedLocalSSD:
			return true, fmt.Errorf("%s comes with exactly %d Local SSD(s); an ephemeral-storage Local SSD count must be %d or 0, not %d",
				mt.Name, mt.FixedLocalSSD, mt.FixedLocalSSD, ephemeral)
		}
		return true, nil
	}
	total := rawBlock + ephemeral
	if total == 0 {
		return true, nil
	}
	if len(mt.LocalSSDCounts) == 0 {
		return true, fmt.Errorf("%s (family %s) takes no Local SSD; requested %d", mt.Name, mt.Family, total)
	}
	if !slices.Contains(mt.LocalSSDCounts, total) {
		return true, fmt.Errorf("%s (%d vCPUs) accepts %s Local SSD(s) in total; requested %d (raw block %d + ephemeral %d)",
			mt.Name, mt.VCPUs, joinInts(mt.LocalSSDCounts), total, rawBlock, ephemeral)
	}
	return true, nil
}

// EphemeralLocalSSDOptions returns the ephemeral-storage Local SSD counts the table says can be
// added to rawBlock raw-block disks on this machine type (nil when none or unknown). The API's
// answer at apply is final; this only decides whether to mention the option.
func EphemeralLocalSSDOptions(machineType string, rawBlock int64) (opts []int64, known bool) {
	mt, ok := LookupMachineType(machineType)
	if !ok {
		return nil, false
	}
	if mt.FixedLocalSSD > 0 {
		return nil, true // all fixed disks are already raw block
	}
	for _, c := range mt.LocalSSDCounts {
		if c > rawBlock {
			opts = append(opts, c-rawBlock)
		}
	}
	return opts, true
}

func joinInts(v []int64) string {
	s := make([]string, len(v))
	for i, n := range v {
		s[i] = strconv.FormatInt(n, 10)
	}
	return strings.Join(s, ", ")
}
