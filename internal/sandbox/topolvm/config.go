// Package topolvm simulates TopoLVM (CSI controller + node + lvmd) together with the
// external-provisioner sidecar for the provisioner "topolvm.io" inside the olapgke sandbox.
//
// Install creates the objects a TopoLVM Helm install leaves behind (CSIDriver, lvmd ConfigMap,
// StorageClass, an lvmd DaemonSet object whose pods need not run). Run then acts on the API like
// the real components would:
//
//   - Nodes with raw-block Local SSDs (annotation sandbox.olapgke.io/local-nvme-ssd-count) get a
//     volume group of count x 375 GiB, the label topology.topolvm.io/node, the finalizer
//     topolvm.io/node and capacity.topolvm.io/<class> annotations.
//   - CSIStorageCapacity objects per (node, topolvm StorageClass), as external-provisioner
//     publishes them with --enable-capacity.
//   - PVCs with volume.kubernetes.io/selected-node get a PV pinned to that node, or a
//     ProvisioningFailed event and the selected-node annotation removed when space is short.
//   - Released PVs with reclaim policy Delete are deleted; deleting a Node runs the node finalizer.
//   - A bound PVC whose request grows is expanded (external-resizer and the kubelet's filesystem
//     grow in one step), or gets a VolumeResizeFailed event when the node lacks space.
//
// Simplifications, on purpose:
//   - Real lvmd reads its config only at start (a config change needs an lvmd restart, e.g. a
//     rollout of the topolvm-lvmd-0 DaemonSet). The simulator applies ConfigMap changes at once.
//   - A thin pool is a logical volume of its volume group, listed with its size in the node's
//     AnnThinPools: thick classes see the group less the pools (and spare-gb), a thin class
//     floor(pool x overprovision-ratio) less its volumes, as lvmd v0.41.0 reports them and the
//     fake lvmd behind `--topolvm real` computes them. A thin class whose pool is missing gets no
//     capacity on the node (real lvmd exits "Thin pool not found" and the whole node agent
//     crash-loops). Capacity never goes below zero.
//   - The space check at provisioning uses the same figure as the capacity annotations (free space
//     minus spare-gb for thick classes), so what the scheduler sees and what provisioning accepts agree.
//   - Requested sizes are rounded up to whole GiB (minimum 1 GiB).
package topolvm

import (
	"errors"
	"fmt"
	"regexp"

	"sigs.k8s.io/yaml"
)

// Names shared with the rest of the sandbox and with real TopoLVM.
const (
	DriverName         = "topolvm.io"
	TopologyKey        = "topology.topolvm.io/node"
	NodeFinalizer      = "topolvm.io/node"
	CapacityAnnPrefix  = "capacity.topolvm.io/"
	DefaultCapacityKey = CapacityAnnPrefix + "00default"
	DeviceClassParam   = "topolvm.io/device-class"
	FSTypeParam        = "csi.storage.k8s.io/fstype"
	AnnSSDCount        = "sandbox.olapgke.io/local-nvme-ssd-count"
	AnnVolumeGroup     = "sandbox.olapgke.io/volume-group"
	// AnnThinPools is the thin pools on the node's volume group ("name=bytes,..."), logical
	// volumes carved from it before lvmd starts: by the node's set-up (tests set it) or by the
	// volume-group bootstrap's THIN_POOLS. A thin class whose pool is not listed makes lvmd exit
	// "Thin pool not found" under real TopoLVM; the simulator publishes no capacity for it.
	AnnThinPools             = "sandbox.olapgke.io/thin-pools"
	DefaultVolumeGroup       = "vg-ssd"
	LocalSSDBytes      int64 = 375 << 30
	DefaultSpareGB           = 10

	DefaultNamespace        = "topolvm-system"
	DefaultConfigMapName    = "topolvm-lvmd-0"
	DefaultConfigKey        = "lvmd.yaml"
	DefaultStorageClassName = "topolvm-provisioner"
	DefaultDeviceClass      = "ssd"

	TypeThick = "thick"
	TypeThin  = "thin"

	// Annotations and labels of the Kubernetes storage machinery.
	AnnSelectedNode           = "volume.kubernetes.io/selected-node"
	AnnStorageProvisioner     = "volume.kubernetes.io/storage-provisioner"
	AnnBetaStorageProvisioner = "volume.beta.kubernetes.io/storage-provisioner"
	AnnProvisionedBy          = "pv.kubernetes.io/provisioned-by"
	LabelDriverName           = "csi.storage.k8s.io/drivername"
	LabelManagedBy            = "csi.storage.k8s.io/managed-by"
	ManagedByValue            = "external-provisioner"
)

// ThinPool mirrors lvmd's thin-pool block.
type ThinPool struct {
	Name               string  `json:"name"`
	OverprovisionRatio float64 `json:"overprovision-ratio"`
}

// DeviceClass mirrors lvmd's device-class YAML (pkg/lvmd/types/types.go in topolvm/topolvm).
type DeviceClass struct {
	Name            string    `json:"name"`
	VolumeGroup     string    `json:"volume-group"`
	Default         bool      `json:"default,omitempty"`
	SpareGB         *uint64   `json:"spare-gb,omitempty"`
	Stripe          *uint     `json:"stripe,omitempty"`
	StripeSize      string    `json:"stripe-size,omitempty"`
	LVCreateOptions []string  `json:"lvcreate-options,omitempty"`
	Type            string    `json:"type,omitempty"`
	ThinPool        *ThinPool `json:"thin-pool,omitempty"`
}

// IsThin reports whether the class provisions thin volumes.
func (d DeviceClass) IsThin() bool { return d.Type == TypeThin }

// SpareBytes is the space lvmd keeps free in the volume group (spare-gb, default 10 GiB).
func (d DeviceClass) SpareBytes() int64 {
	if d.SpareGB == nil {
		return DefaultSpareGB << 30
	}
	return int64(*d.SpareGB) << 30
}

// lvmdConfig is the part of lvmd.yaml the simulator reads; other keys are kept untouched by Install.
type lvmdConfig struct {
	DeviceClasses []DeviceClass `json:"device-classes"`
}

// ParseLVMDConfig reads the device classes out of an lvmd.yaml document and validates them the
// way lvmd does at start.
func ParseLVMDConfig(data string) ([]DeviceClass, error) {
	var c lvmdConfig
	if err := yaml.Unmarshal([]byte(data), &c); err != nil {
		return nil, fmt.Errorf("parse lvmd config: %w", err)
	}
	if err := ValidateDeviceClasses(c.DeviceClasses); err != nil {
		return nil, err
	}
	return c.DeviceClasses, nil
}

// ValidateDeviceClasses is lvmd v0.41.0's own start-up check, ported line for line (topolvm
// internal/lvmd/device_class_manager.go ValidateDeviceClasses: an internal package, and this
// module does not link TopoLVM; the fake lvmd of `--topolvm real` calls the original, and
// fakelvmd's TestValidateIsLvmds and TestParseLVMDConfig here check the same messages): at least one class; names
// of 1-63 characters matching lvmd's qualified-name rule, each once; a volume group each; type
// thick or thin; for thin, a pool name and an overprovision ratio of at least 1; each volume
// group (thick) or volume-group/thin-pool pair (thin) used by one class; the stripe-size format;
// not more than one default (none is accepted). It stops at the first problem, as lvmd does.
func ValidateDeviceClasses(classes []DeviceClass) error {
	if len(classes) < 1 {
		return errors.New("should have at least one device-class")
	}
	countDefault := 0
	dcNames := map[string]bool{}
	vgNames := map[string]bool{}
	for _, dc := range classes {
		if len(dc.Name) == 0 {
			return errors.New("device-class name should not be empty")
		} else if len(dc.Name) > 63 {
			return fmt.Errorf("device-class name is too long: %s", dc.Name)
		}
		if !qualifiedNameRegexp.MatchString(dc.Name) {
			return fmt.Errorf("device-class name should consist of alphanumeric characters, '-', '_' or '.', and should start and end with an alphanumeric character: %s", dc.Name)
		}
		if len(dc.VolumeGroup) == 0 {
			return fmt.Errorf("volume group name should not be empty: %s", dc.Name)
		}
		if dc.Default {
			countDefault++
		}
		if dcNames[dc.Name] {
			return fmt.Errorf("duplicate device-class name: %s", dc.Name)
		}
		switch dc.Type {
		case "", TypeThick, TypeThin:
		default:
			return fmt.Errorf("target 'type' of device-class can be one of '%[1]s' or '%[2]s' or empty to default to '%[1]s'", TypeThick, TypeThin)
		}
		name := dc.VolumeGroup
		if dc.Type == TypeThin {
			if dc.ThinPool == nil {
				return fmt.Errorf("device class type is thin but thinpool config is empty: %s", dc.Name)
			}
			if len(dc.ThinPool.Name) == 0 {
				return fmt.Errorf("thinpool name should not be empty: %s", dc.Name)
			}
			if dc.ThinPool.OverprovisionRatio < 1.0 {
				return fmt.Errorf("overprovision ratio for thin pool %s in device class %s should be 1.0 or more", dc.ThinPool.Name, dc.Name)
			}
			name = name + "/" + dc.ThinPool.Name
		}
		if vgNames[name] {
			return fmt.Errorf("duplicate volumegroup/thinpool name: %s, %s", dc.Name, name)
		}
		dcNames[dc.Name] = true
		vgNames[name] = true
		if dc.StripeSize != "" && !stripeSizeRegexp.MatchString(dc.StripeSize) {
			return fmt.Errorf("stripe-size format is \"Size[k|UNIT]\": %s", dc.Name)
		}
	}
	if countDefault > 1 {
		return errors.New("should not have multiple default device-class")
	}
	return nil
}

// lvmd's name and stripe-size rules (device_class_manager.go).
var (
	qualifiedNameRegexp = regexp.MustCompile("^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
	stripeSizeRegexp    = regexp.MustCompile("(?i)^([0-9]*)(k|m|g|t|p|e|b|s)?$")
)

// defaultClass returns the default device class, if any.
func defaultClass(classes []DeviceClass) (DeviceClass, bool) {
	for _, dc := range classes {
		if dc.Default {
			return dc, true
		}
	}
	return DeviceClass{}, false
}

// findClass returns the named class; an empty name means the default class.
func findClass(classes []DeviceClass, name string) (DeviceClass, bool) {
	if name == "" {
		return defaultClass(classes)
	}
	for _, dc := range classes {
		if dc.Name == name {
			return dc, true
		}
	}
	return DeviceClass{}, false
}
