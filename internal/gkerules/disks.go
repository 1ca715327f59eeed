package gkerules

import (
	"fmt"
	"slices"
	"strings"
)

// MinBootDiskGiB is the smallest boot disk GKE accepts. Source: the GKE API
// (UpdateNodePoolRequest.disk_size_gb: "The smallest allowed disk size is 10GB"; NodeConfig
// disk_size_gb: "The smallest allowed disk size is 10GB").
const MinBootDiskGiB = 10

// DefaultBootDiskGiB and DefaultBootDiskType are what GKE fills when they are not set
// (NodeConfig.disk_size_gb: "If unspecified, the default disk size is 100GB"; current GKE and
// the sandbox emulator fill pd-balanced as the disk type).
const (
	DefaultBootDiskGiB  = 100
	DefaultBootDiskType = "pd-balanced"
)

// BootDiskTypes are the boot disk types GKE node pools accept anywhere.
var BootDiskTypes = []string{"pd-standard", "pd-balanced", "pd-ssd", "pd-extreme", "hyperdisk-balanced", "hyperdisk-extreme", "hyperdisk-throughput"}

// CheckBootDisk checks a boot disk type and size (GiB) for a machine type. Unknown machine types
// only get the type-independent checks.
func CheckBootDisk(machineType, diskType string, sizeGiB int64) error {
	if sizeGiB < MinBootDiskGiB {
		return fmt.Errorf("boot disk size %d GiB is below GKE's minimum of %d GiB", sizeGiB, MinBootDiskGiB)
	}
	if diskType == "" {
		return nil
	}
	if !slices.Contains(BootDiskTypes, diskType) {
		return fmt.Errorf("boot disk type %q is not one of %s", diskType, strings.Join(BootDiskTypes, ", "))
	}
	if mt, ok := LookupMachineType(machineType); ok && len(mt.BootDiskTypes) > 0 && !slices.Contains(mt.BootDiskTypes, diskType) {
		return fmt.Errorf("machine family %s does not take %s boot disks; it takes %s", mt.Family, diskType, strings.Join(mt.BootDiskTypes, ", "))
	}
	return nil
}
