// Package world describes what a sandbox starts with: GKE clusters and their
// node pools (which become simulated nodes), TopoLVM device classes and
// StorageClasses. It reads the YAML given to `olapgke-sandbox up --config`
// and holds the default world.
package world

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"cloud.google.com/go/container/apiv1/containerpb"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/olapgke/terraform-provider-olapgke/internal/sandbox/controlplane"
	"github.com/olapgke/terraform-provider-olapgke/internal/sandbox/topolvm"
)

// World is the sandbox's starting state. Sections left out of a config file
// take the default world's value (see Default), so a file naming only
// `clusters` keeps the default TopoLVM install and StorageClass.
type World struct {
	// Project is the GCP project of every cluster (default "sandbox").
	Project string `json:"project,omitempty"`
	// KubernetesVersion is the minor the control plane emulates: "1.34",
	// "1.35", "1.36" or "1.37" (default: the binary's, 1.37).
	// `olapgke-sandbox up --kubernetes-version` overrides it.
	KubernetesVersion string `json:"kubernetesVersion,omitempty"`
	// Clusters to seed; the first is the one DIR/env points at.
	Clusters []Cluster `json:"clusters,omitempty"`
	// TopoLVM install: lvmd ConfigMap location and device classes.
	TopoLVM *TopoLVM `json:"topolvm,omitempty"`
	// StorageClasses backed by TopoLVM device classes.
	StorageClasses []StorageClass `json:"storageClasses,omitempty"`
	// Pods are world-wide Pod timings (per-Pod annotations override them: kwoknodes podstages.go).
	Pods *Pods `json:"pods,omitempty"`
}

// Pods are what every simulated Pod does on its node.
type Pods struct {
	// ReadyAfter is how long a Pod's containers run before its readiness probe passes: Running
	// and not Ready until then (default 0: Ready at once, KWOK's fast pod-ready stage). A Pod's
	// sandbox.olapgke.io/ready-after annotation overrides it.
	ReadyAfter *metav1.Duration `json:"readyAfter,omitempty"`
}

// Cluster is one GKE cluster. All clusters share the sandbox's single API
// server; their node pools' nodes live side by side in it.
type Cluster struct {
	Name     string `json:"name"`
	Location string `json:"location"` // zone (us-central1-a) or region
	// ReleaseChannel is the cluster's GKE release channel: UNSPECIFIED (none), RAPID, REGULAR
	// (default, as for new GKE clusters), STABLE or EXTENDED. Node pools of a cluster on a
	// channel cannot turn node auto-upgrade off.
	ReleaseChannel string     `json:"releaseChannel,omitempty"`
	Pools          []NodePool `json:"nodePools,omitempty"`
}

// NodePool is a GKE node pool. Unset fields take pool-a's values.
type NodePool struct {
	Name string `json:"name"`
	// MachineType (default n2-standard-8).
	MachineType string `json:"machineType,omitempty"`
	// NodeCount per zone (GKE initial_node_count; default 3).
	NodeCount *int32 `json:"nodeCount,omitempty"`
	// LocalNVMeSSDCount is node_config.local_nvme_ssd_block_config.local_ssd_count:
	// raw-block Local SSDs (375 GiB each) TopoLVM builds its volume group on (default 2).
	LocalNVMeSSDCount *int32 `json:"localNvmeSsdCount,omitempty"`
	// EphemeralLocalSSDCount is node_config.ephemeral_storage_local_ssd_config.local_ssd_count (default 0).
	EphemeralLocalSSDCount int32 `json:"ephemeralLocalSsdCount,omitempty"`
	// BootDiskSizeGB (default 100) and BootDiskType (default pd-balanced).
	BootDiskSizeGB int32  `json:"bootDiskSizeGb,omitempty"`
	BootDiskType   string `json:"bootDiskType,omitempty"`
	// Labels and Taints are node_config.labels / node_config.taints.
	Labels map[string]string `json:"labels,omitempty"`
	Taints []Taint           `json:"taints,omitempty"`
	// Locations are the pool's zones (default: the cluster's zone).
	Locations []string `json:"locations,omitempty"`
	Spot      bool     `json:"spot,omitempty"`
}

// Taint is a node taint; Effect is NO_SCHEDULE, PREFER_NO_SCHEDULE or NO_EXECUTE
// (GKE spelling) or NoSchedule, PreferNoSchedule, NoExecute (Kubernetes spelling).
type Taint struct {
	Key    string `json:"key"`
	Value  string `json:"value,omitempty"`
	Effect string `json:"effect"`
}

// TopoLVM is the simulated TopoLVM install.
type TopoLVM struct {
	Namespace     string `json:"namespace,omitempty"`     // default topolvm-system
	ConfigMapName string `json:"configMapName,omitempty"` // default topolvm-lvmd-0
	Key           string `json:"key,omitempty"`           // default lvmd.yaml
	// DeviceClasses use lvmd's field names (name, volume-group, default,
	// spare-gb, type, thin-pool{name, overprovision-ratio}, ...).
	DeviceClasses []topolvm.DeviceClass `json:"deviceClasses,omitempty"`
	// BringUp are the stages of TopoLVM's start on a node and of capacity publishing, for
	// `up --topolvm real`, the default (the simulator ignores them: it publishes at once).
	BringUp *BringUp `json:"bringUp,omitempty"`
}

// BringUp delays, as Go durations ("1s", "500ms", "1m"). Unset fields take the defaults, which
// are shorter than a real cluster's so that test suites stay fast.
type BringUp struct {
	// LvmdStart is the time from the node agent's start (TopoLVM's DaemonSet Pod on the node)
	// until lvmd serves: on GKE the Pod's sandbox and container start, seconds (longer when the
	// image is pulled first). Default 1s.
	LvmdStart *metav1.Duration `json:"lvmdStart,omitempty"`
	// CSIRegistration is the time from the node plugin serving until the kubelet registered it
	// (node-driver-registrar's start, the kubelet's plugin watcher, GetInfo/NodeGetInfo; the
	// topology label and the CSINode entry): on a real node about 1-2 s. Default 500ms.
	CSIRegistration *metav1.Duration `json:"csiRegistration,omitempty"`
	// CapacityPoll is external-provisioner's --capacity-poll-interval (upstream and TopoLVM's
	// chart: 1m): how often CSIStorageCapacity is refreshed besides after each provisioning and
	// on topology changes. Default 1m.
	CapacityPoll *metav1.Duration `json:"capacityPoll,omitempty"`
	// CapacityQPS and CapacityBurst are external-provisioner's --kube-api-capacity-qps and
	// --kube-api-capacity-burst: the rate of its CSIStorageCapacity writes (upstream and
	// TopoLVM's chart, which passes neither: 1 and 5). One object per node and StorageClass, so
	// a new pool's capacity is published at about one node-StorageClass pair per second after
	// the first five: 500 nodes and one StorageClass take ~8 min, on GKE as here. Defaults 1, 5.
	CapacityQPS   *float64 `json:"capacityQPS,omitempty"`
	CapacityBurst *int     `json:"capacityBurst,omitempty"`
}

// Defaults of BringUp.
const (
	DefaultLvmdStart       = time.Second
	DefaultCSIRegistration = 500 * time.Millisecond
	DefaultCapacityPoll    = time.Minute
	DefaultCapacityQPS     = 1.0
	DefaultCapacityBurst   = 5
)

// StorageClass is a TopoLVM StorageClass (provisioner topolvm.io,
// WaitForFirstConsumer, xfs, expansion allowed).
type StorageClass struct {
	Name        string `json:"name"`
	DeviceClass string `json:"deviceClass,omitempty"` // default: the default device class
}

// Defaults of the default world.
const (
	DefaultProject     = "sandbox"
	DefaultCluster     = "olap"
	DefaultLocation    = "us-central1-a"
	DefaultPool        = "pool-a"
	DefaultMachineType = "n2-standard-8"
	DefaultNodeCount   = 3
	DefaultLocalSSDs   = 2
	DefaultBootDiskGB  = 100
	DefaultBootDisk    = "pd-balanced"
	// DefaultReleaseChannel is GKE's default for new clusters.
	DefaultReleaseChannel = "REGULAR"
)

// ReleaseChannels are the values of Cluster.ReleaseChannel (GKE's ReleaseChannel.Channel).
var ReleaseChannels = []string{"UNSPECIFIED", "RAPID", "REGULAR", "STABLE", "EXTENDED"}

// Default is the world `up` starts without --config: project sandbox,
// cluster olap in us-central1-a, pool-a with 3 n2-standard-8 nodes, each
// with 2 raw-block Local SSDs and a 100 GiB boot disk, TopoLVM with device
// class ssd on volume group vg-ssd (default), StorageClass topolvm-provisioner.
func Default() *World {
	w := &World{}
	w.applyDefaults()
	return w
}

// Load reads a world file; sections it leaves out come from Default.
func Load(path string) (*World, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(data)
}

// Parse decodes a world document (YAML or JSON); unknown fields are errors.
func Parse(data []byte) (*World, error) {
	w := &World{}
	if err := yaml.UnmarshalStrict(data, w); err != nil {
		return nil, fmt.Errorf("world config: %w", err)
	}
	w.applyDefaults()
	if err := w.Validate(); err != nil {
		return nil, err
	}
	return w, nil
}

func (w *World) applyDefaults() {
	if w.Project == "" {
		w.Project = DefaultProject
	}
	if len(w.Clusters) == 0 {
		w.Clusters = []Cluster{{Name: DefaultCluster, Location: DefaultLocation, Pools: []NodePool{{Name: DefaultPool}}}}
	}
	for ci := range w.Clusters {
		c := &w.Clusters[ci]
		if c.Location == "" {
			c.Location = DefaultLocation
		}
		if c.ReleaseChannel == "" {
			c.ReleaseChannel = DefaultReleaseChannel
		}
		for pi := range c.Pools {
			p := &c.Pools[pi]
			if p.MachineType == "" {
				p.MachineType = DefaultMachineType
			}
			if p.NodeCount == nil {
				p.NodeCount = ptr(int32(DefaultNodeCount))
			}
			if p.LocalNVMeSSDCount == nil {
				p.LocalNVMeSSDCount = ptr(int32(DefaultLocalSSDs))
			}
			if p.BootDiskSizeGB == 0 {
				p.BootDiskSizeGB = DefaultBootDiskGB
			}
			if p.BootDiskType == "" {
				p.BootDiskType = DefaultBootDisk
			}
		}
	}
	if w.TopoLVM == nil {
		w.TopoLVM = &TopoLVM{}
	}
	if w.TopoLVM.Namespace == "" {
		w.TopoLVM.Namespace = topolvm.DefaultNamespace
	}
	if w.TopoLVM.ConfigMapName == "" {
		w.TopoLVM.ConfigMapName = topolvm.DefaultConfigMapName
	}
	if w.TopoLVM.Key == "" {
		w.TopoLVM.Key = topolvm.DefaultConfigKey
	}
	if w.TopoLVM.BringUp == nil {
		w.TopoLVM.BringUp = &BringUp{}
	}
	if w.Pods == nil {
		w.Pods = &Pods{}
	}
	if w.Pods.ReadyAfter == nil {
		w.Pods.ReadyAfter = &metav1.Duration{}
	}
	for _, d := range []struct {
		f   **metav1.Duration
		def time.Duration
	}{
		{&w.TopoLVM.BringUp.LvmdStart, DefaultLvmdStart},
		{&w.TopoLVM.BringUp.CSIRegistration, DefaultCSIRegistration},
		{&w.TopoLVM.BringUp.CapacityPoll, DefaultCapacityPoll},
	} {
		if *d.f == nil {
			*d.f = &metav1.Duration{Duration: d.def}
		}
	}
	if w.TopoLVM.BringUp.CapacityQPS == nil {
		w.TopoLVM.BringUp.CapacityQPS = ptr(DefaultCapacityQPS)
	}
	if w.TopoLVM.BringUp.CapacityBurst == nil {
		w.TopoLVM.BringUp.CapacityBurst = ptr(DefaultCapacityBurst)
	}
	if len(w.TopoLVM.DeviceClasses) == 0 {
		w.TopoLVM.DeviceClasses = []topolvm.DeviceClass{{Name: topolvm.DefaultDeviceClass, VolumeGroup: topolvm.DefaultVolumeGroup, Default: true}}
	}
	if w.StorageClasses == nil {
		w.StorageClasses = []StorageClass{{Name: topolvm.DefaultStorageClassName}}
	}
}

// Validate checks what the sandbox itself needs; the GKE emulator and the
// TopoLVM install validate pools and device classes the way GKE and lvmd do.
func (w *World) Validate() error {
	var errs []error
	if w.KubernetesVersion != "" && !slices.Contains(controlplane.Versions, w.KubernetesVersion) {
		errs = append(errs, fmt.Errorf("kubernetesVersion %q is not supported: use one of %v", w.KubernetesVersion, controlplane.Versions))
	}
	clusters := map[string]bool{}
	for _, c := range w.Clusters {
		if c.Name == "" {
			errs = append(errs, errors.New("a cluster has no name"))
		}
		if clusters[c.Location+"/"+c.Name] {
			errs = append(errs, fmt.Errorf("cluster %s/%s is listed twice", c.Location, c.Name))
		}
		clusters[c.Location+"/"+c.Name] = true
		if !slices.Contains(ReleaseChannels, c.ReleaseChannel) {
			errs = append(errs, fmt.Errorf("cluster %s: releaseChannel %q is not one of %v", c.Name, c.ReleaseChannel, ReleaseChannels))
		}
		pools := map[string]bool{}
		for _, p := range c.Pools {
			if p.Name == "" {
				errs = append(errs, fmt.Errorf("cluster %s: a node pool has no name", c.Name))
			}
			if pools[p.Name] {
				errs = append(errs, fmt.Errorf("cluster %s: node pool %s is listed twice", c.Name, p.Name))
			}
			pools[p.Name] = true
			for _, t := range p.Taints {
				if _, err := taintEffect(t.Effect); err != nil {
					errs = append(errs, fmt.Errorf("cluster %s pool %s taint %s: %w", c.Name, p.Name, t.Key, err))
				}
			}
		}
	}
	for _, d := range []struct {
		name string
		v    *metav1.Duration
	}{
		{"lvmdStart", w.TopoLVM.BringUp.LvmdStart},
		{"csiRegistration", w.TopoLVM.BringUp.CSIRegistration},
		{"capacityPoll", w.TopoLVM.BringUp.CapacityPoll},
	} {
		if d.v.Duration < 0 {
			errs = append(errs, fmt.Errorf("topolvm.bringUp.%s %s is negative", d.name, d.v.Duration))
		}
	}
	if w.Pods.ReadyAfter.Duration < 0 {
		errs = append(errs, fmt.Errorf("pods.readyAfter %s is negative", w.Pods.ReadyAfter.Duration))
	}
	if w.TopoLVM.BringUp.CapacityPoll.Duration == 0 {
		errs = append(errs, errors.New("topolvm.bringUp.capacityPoll must be positive (external-provisioner polls at this interval)"))
	}
	if q := *w.TopoLVM.BringUp.CapacityQPS; q <= 0 {
		errs = append(errs, fmt.Errorf("topolvm.bringUp.capacityQPS %g must be positive (client-go rate limit)", q))
	}
	if b := *w.TopoLVM.BringUp.CapacityBurst; b < 1 {
		errs = append(errs, fmt.Errorf("topolvm.bringUp.capacityBurst %d must be at least 1", b))
	}
	if err := topolvm.ValidateDeviceClasses(w.TopoLVM.DeviceClasses); err != nil {
		errs = append(errs, fmt.Errorf("topolvm.deviceClasses: %w", err))
	}
	scs := map[string]bool{}
	for _, sc := range w.StorageClasses {
		if sc.Name == "" {
			errs = append(errs, errors.New("a storage class has no name"))
		}
		if scs[sc.Name] {
			errs = append(errs, fmt.Errorf("storage class %s is listed twice", sc.Name))
		}
		scs[sc.Name] = true
		if sc.DeviceClass != "" && !w.hasDeviceClass(sc.DeviceClass) {
			errs = append(errs, fmt.Errorf("storage class %s: device class %q is not in topolvm.deviceClasses", sc.Name, sc.DeviceClass))
		}
	}
	return errors.Join(errs...)
}

func (w *World) hasDeviceClass(name string) bool {
	for _, d := range w.TopoLVM.DeviceClasses {
		if d.Name == name {
			return true
		}
	}
	return false
}

// DefaultDeviceClass is the device class marked default (or the first).
func (w *World) DefaultDeviceClass() string {
	for _, d := range w.TopoLVM.DeviceClasses {
		if d.Default {
			return d.Name
		}
	}
	return w.TopoLVM.DeviceClasses[0].Name
}

// NodePoolProto converts a pool to the GKE API's form, as a CreateNodePool
// request would carry it.
func (p NodePool) NodePoolProto() (*containerpb.NodePool, error) {
	cfg := &containerpb.NodeConfig{
		MachineType: p.MachineType,
		DiskSizeGb:  p.BootDiskSizeGB,
		DiskType:    p.BootDiskType,
		Labels:      p.Labels,
		Spot:        p.Spot,
	}
	if n := *p.LocalNVMeSSDCount; n > 0 {
		cfg.LocalNvmeSsdBlockConfig = &containerpb.LocalNvmeSsdBlockConfig{LocalSsdCount: n}
	}
	if p.EphemeralLocalSSDCount > 0 {
		cfg.EphemeralStorageLocalSsdConfig = &containerpb.EphemeralStorageLocalSsdConfig{LocalSsdCount: p.EphemeralLocalSSDCount}
	}
	for _, t := range p.Taints {
		e, err := taintEffect(t.Effect)
		if err != nil {
			return nil, err
		}
		cfg.Taints = append(cfg.Taints, &containerpb.NodeTaint{Key: t.Key, Value: t.Value, Effect: e})
	}
	return &containerpb.NodePool{
		Name:             p.Name,
		Config:           cfg,
		InitialNodeCount: *p.NodeCount,
		Locations:        p.Locations,
	}, nil
}

func taintEffect(s string) (containerpb.NodeTaint_Effect, error) {
	switch strings.ToUpper(strings.ReplaceAll(s, "_", "")) {
	case "NOSCHEDULE":
		return containerpb.NodeTaint_NO_SCHEDULE, nil
	case "PREFERNOSCHEDULE":
		return containerpb.NodeTaint_PREFER_NO_SCHEDULE, nil
	case "NOEXECUTE":
		return containerpb.NodeTaint_NO_EXECUTE, nil
	}
	return 0, fmt.Errorf("effect %q is not NO_SCHEDULE, PREFER_NO_SCHEDULE or NO_EXECUTE", s)
}

// NodeCount is the number of nodes the world seeds (node count x zones).
func (w *World) NodeCount() int {
	n := 0
	for _, c := range w.Clusters {
		for _, p := range c.Pools {
			zones := len(p.Locations)
			if zones == 0 {
				zones = 1
			}
			n += int(*p.NodeCount) * zones
		}
	}
	return n
}

func ptr[T any](v T) *T { return &v }
