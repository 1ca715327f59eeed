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
//   - A thin pool is taken to span the whole volume group minus spare-gb; thick and thin classes on
//     one volume group do not take space from each other. Capacity never goes below zero. The
//     fake lvmd behind `--topolvm real` follows the same rule (topolvmreal/fakelvmd's package
//     comment, which also says what real LVM does instead), so both modes publish the same.
//   - The space check at provisioning uses the same figure as the capacity annotations (free space
//     minus spare-gb for thick classes), so what the scheduler sees and what provisioning accepts agree.
//   - Requested sizes are rounded up to whole GiB (minimum 1 GiB).
package topolvm

import (
	"errors"
	"fmt"

	"sigs.k8s.io/yaml"
)

// Names shared with the rest of the sandbox and with real TopoLVM.
const (
	DriverName               = "topolvm.io"
	TopologyKey              = "topology.topolvm.io/node"
	NodeFinalizer            = "topolvm.io/node"
	CapacityAnnPrefix        = "capacity.topolvm.io/"
	DefaultCapacityKey       = CapacityAnnPrefix + "00default"
	DeviceClassParam         = "topolvm.io/device-class"
	FSTypeParam              = "csi.storage.k8s.io/fstype"
	AnnSSDCount              = "sandbox.olapgke.io/local-nvme-ssd-count"
	AnnVolumeGroup           = "sandbox.olapgke.io/volume-group"
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

// ValidateDeviceClasses applies lvmd's start-up checks: at least one class, unique non-empty
// names, a volume group each, exactly one default, known types, and a thin pool with a name and
// an overprovision ratio of at least 1 for thin classes.
func ValidateDeviceClasses(classes []DeviceClass) error {
	if len(classes) == 0 {
		return errors.New("lvmd config has no device-classes")
	}
	seen := map[string]bool{}
	defaults := 0
	var errs []error
	for i, dc := range classes {
		switch {
		case dc.Name == "":
			errs = append(errs, fmt.Errorf("device-classes[%d]: name is empty", i))
		case seen[dc.Name]:
			errs = append(errs, fmt.Errorf("device-classes[%d]: duplicate name %q", i, dc.Name))
		}
		seen[dc.Name] = true
		if dc.VolumeGroup == "" {
			errs = append(errs, fmt.Errorf("device-classes[%d] (%s): volume-group is empty", i, dc.Name))
		}
		if dc.Default {
			defaults++
		}
		switch dc.Type {
		case "", TypeThick:
		case TypeThin:
			if dc.ThinPool == nil || dc.ThinPool.Name == "" {
				errs = append(errs, fmt.Errorf("device-classes[%d] (%s): type thin needs thin-pool.name", i, dc.Name))
			} else if dc.ThinPool.OverprovisionRatio < 1 {
				errs = append(errs, fmt.Errorf("device-classes[%d] (%s): thin-pool.overprovision-ratio must be >= 1, got %g", i, dc.Name, dc.ThinPool.OverprovisionRatio))
			}
		default:
			errs = append(errs, fmt.Errorf("device-classes[%d] (%s): unknown type %q (thick or thin)", i, dc.Name, dc.Type))
		}
	}
	if defaults != 1 {
		errs = append(errs, fmt.Errorf("lvmd config needs exactly one default device-class, found %d", defaults))
	}
	return errors.Join(errs...)
}

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
