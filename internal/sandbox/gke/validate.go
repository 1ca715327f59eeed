package gke

import (
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"cloud.google.com/go/container/apiv1/containerpb"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

var poolNameRE = regexp.MustCompile(`^[a-z]([-a-z0-9]*[a-z0-9])?$`)

var diskTypes = []string{"pd-standard", "pd-balanced", "pd-ssd", "pd-extreme", "hyperdisk-balanced"}

var imageTypes = []string{"COS_CONTAINERD", "UBUNTU_CONTAINERD"}

var versionRE = regexp.MustCompile(`^1\.\d+(\.\d+(-gke\.\d+)?)?$`)

// nodeVersion is the version a node pool asked for v gets: the sandbox's build of that minor,
// which may be older than the master by up to two minors, never newer (GKE's version skew
// policy: nodes may be up to two minor versions older than the control plane;
// https://cloud.google.com/kubernetes-engine/versioning#version_skew).
func nodeVersion(v, master string) (string, error) {
	if !versionRE.MatchString(v) {
		return "", invalid("Invalid value for field \"node_pool.version\": %q is not a supported version; use %q or \"-\".", v, master)
	}
	minor := func(s string) int {
		parts := strings.SplitN(s, ".", 3)
		n, _ := strconv.Atoi(parts[1])
		return n
	}
	nv, mv := minor(v), minor(master)
	if nv > mv || nv < mv-2 {
		return "", invalid("Invalid value for field \"node_pool.version\": node version %q must be no newer than the master version %q and at most two minor versions older.", v, master)
	}
	return GKEVersion("1." + strconv.Itoa(nv)), nil
}

const minBootDiskGB = 10

func invalid(format string, a ...any) error {
	return status.Errorf(codes.InvalidArgument, format, a...)
}

// admitPool fills GKE's defaults into a node pool about to be created in c and validates it.
// Seeded pools keep an initial_node_count of 0 (the world says what exists); created ones get
// GKE's default of 1. Call with s.mu held (or before serving).
func (s *Server) admitPool(c *cluster, np *containerpb.NodePool, seed bool) error {
	if np == nil {
		return invalid("Invalid request: node_pool must be set.")
	}
	if np.Name == "" {
		return invalid("Invalid request: node_pool.name must be set.")
	}
	if len(np.Name) > 40 || !poolNameRE.MatchString(np.Name) {
		return invalid("Invalid value for field \"node_pool.name\": %q. Node pool name must be 1-40 characters long, start with a lowercase letter, and contain only lowercase letters, digits and hyphens, not ending with a hyphen (RFC1035).", np.Name)
	}
	if _, dup := c.pools[np.Name]; dup {
		return status.Errorf(codes.AlreadyExists, "Already exists: %s/nodePools/%s.", c.key, np.Name)
	}
	k := poolKey{c.key, np.Name}
	np.Status = containerpb.NodePool_PROVISIONING
	np.StatusMessage = ""
	np.SelfLink = selfLink(k.String())
	if np.Version == "" || np.Version == "-" || np.Version == "latest" {
		np.Version = c.pb.CurrentNodeVersion
	} else {
		v, err := nodeVersion(np.Version, c.pb.CurrentMasterVersion)
		if err != nil {
			return err
		}
		np.Version = v
	}
	if np.Config == nil {
		np.Config = &containerpb.NodeConfig{}
	}
	fillConfigDefaults(np.Config)
	if len(np.Locations) == 0 {
		np.Locations = slices.Clone(c.pb.Locations)
	}
	for _, z := range np.Locations {
		if !isZone(z) || regionOf(z) != regionOf(c.key.Location) {
			return invalid("Invalid value for field \"node_pool.locations\": zone %q is not in the cluster's region %q.", z, regionOf(c.key.Location))
		}
		if isZone(c.key.Location) && z != c.key.Location && !slices.Contains(c.pb.Locations, z) {
			return invalid("Invalid value for field \"node_pool.locations\": zone %q is not a location of zonal cluster %s (%v).", z, c.key.Cluster, c.pb.Locations)
		}
	}
	if np.InitialNodeCount < 0 {
		return invalid("Invalid value for field \"node_pool.initial_node_count\": %d. Must be non-negative.", np.InitialNodeCount)
	}
	if np.Autoscaling != nil && np.Autoscaling.Enabled {
		if err := checkAutoscaling(np.Autoscaling); err != nil {
			return err
		}
		np.InitialNodeCount = clampCount(np.InitialNodeCount, np.Autoscaling, len(np.Locations))
	} else if np.InitialNodeCount == 0 && !seed {
		// GKE fills 1 when the request leaves initial_node_count unset (mockcontainer records).
		np.InitialNodeCount = 1
	}
	if err := validateConfig(np.Config); err != nil {
		return err
	}
	fillFixedLocalSSD(np.Config)
	igm := "gke-" + nodePrefixCore(c.key.Cluster, np.Name) + "-" + poolHash(k, "") + "-grp"
	np.InstanceGroupUrls = nil
	for _, z := range np.Locations {
		np.InstanceGroupUrls = append(np.InstanceGroupUrls, instanceGroupURL(c.key.Project, z, igm))
	}
	if np.Management == nil {
		np.Management = &containerpb.NodeManagement{AutoUpgrade: true, AutoRepair: true}
	}
	if err := autoUpgradeErr(c, np.Management); err != nil {
		return err
	}
	if n := np.GetMaxPodsConstraint().GetMaxPodsPerNode(); n != 0 && (n < 8 || n > 256) {
		return invalid("Invalid value for field \"node_pool.max_pods_constraint.max_pods_per_node\": %d. Must be between 8 and 256.", n)
	}
	if np.MaxPodsConstraint == nil || np.MaxPodsConstraint.MaxPodsPerNode == 0 {
		np.MaxPodsConstraint = &containerpb.MaxPodsConstraint{MaxPodsPerNode: 110}
	}
	if np.PodIpv4CidrSize == 0 {
		np.PodIpv4CidrSize = podCIDRSize(np.MaxPodsConstraint.MaxPodsPerNode)
	}
	if np.NetworkConfig == nil {
		np.NetworkConfig = &containerpb.NodeNetworkConfig{}
	}
	if np.NetworkConfig.PodIpv4CidrBlock == "" {
		np.NetworkConfig.PodIpv4CidrBlock = c.pb.ClusterIpv4Cidr
	}
	if np.NetworkConfig.PodRange == "" {
		np.NetworkConfig.PodRange = "gke-" + c.key.Cluster + "-pods-" + poolHash(k, "range")
	}
	if np.UpgradeSettings == nil {
		np.UpgradeSettings = &containerpb.NodePool_UpgradeSettings{MaxSurge: 1}
	}
	if np.UpgradeSettings.Strategy == nil {
		st := containerpb.NodePoolUpdateStrategy_SURGE
		np.UpgradeSettings.Strategy = &st
	}
	if np.UpgradeSettings.GetStrategy() == containerpb.NodePoolUpdateStrategy_SURGE &&
		np.UpgradeSettings.MaxSurge == 0 && np.UpgradeSettings.MaxUnavailable == 0 {
		return invalid("Invalid value for field \"node_pool.upgrade_settings\": max_surge and max_unavailable cannot both be 0.")
	}
	np.Etag = randHex(16)
	return nil
}

// podCIDRSize is the per-node pod range size GKE derives from max pods per node (110 -> /24).
func podCIDRSize(maxPods int64) int32 {
	size := int32(32)
	for need := maxPods * 2; need > 1 && size > 8; need = (need + 1) / 2 {
		size--
	}
	return size
}

// fillConfigDefaults applies GKE's NodeConfig defaults (per mockcontainer records of real GKE).
func fillConfigDefaults(cfg *containerpb.NodeConfig) {
	if cfg.MachineType == "" {
		cfg.MachineType = "e2-medium"
	}
	if cfg.BootDisk != nil && cfg.BootDisk.SizeGb != 0 && cfg.DiskSizeGb == 0 {
		cfg.DiskSizeGb = int32(cfg.BootDisk.SizeGb)
	}
	if cfg.BootDisk != nil && cfg.BootDisk.DiskType != "" && cfg.DiskType == "" {
		cfg.DiskType = cfg.BootDisk.DiskType
	}
	if cfg.DiskSizeGb == 0 {
		cfg.DiskSizeGb = 100
	}
	if cfg.DiskType == "" {
		cfg.DiskType = "pd-balanced"
	}
	cfg.BootDisk = &containerpb.BootDisk{DiskType: cfg.DiskType, SizeGb: int64(cfg.DiskSizeGb),
		ProvisionedIops: cfg.GetBootDisk().GetProvisionedIops(), ProvisionedThroughput: cfg.GetBootDisk().GetProvisionedThroughput()}
	if cfg.ImageType == "" {
		cfg.ImageType = "COS_CONTAINERD"
	}
	cfg.ImageType = strings.ToUpper(cfg.ImageType)
	if len(cfg.OauthScopes) == 0 {
		cfg.OauthScopes = []string{
			"https://www.googleapis.com/auth/devstorage.read_only",
			"https://www.googleapis.com/auth/logging.write",
			"https://www.googleapis.com/auth/monitoring",
			"https://www.googleapis.com/auth/service.management.readonly",
			"https://www.googleapis.com/auth/servicecontrol",
			"https://www.googleapis.com/auth/trace.append",
		}
	}
	if cfg.ServiceAccount == "" {
		cfg.ServiceAccount = "default"
	}
	if cfg.Metadata == nil {
		cfg.Metadata = map[string]string{}
	}
	if cfg.Metadata["disable-legacy-endpoints"] == "" {
		cfg.Metadata["disable-legacy-endpoints"] = "true"
	}
	if cfg.ShieldedInstanceConfig == nil {
		cfg.ShieldedInstanceConfig = &containerpb.ShieldedInstanceConfig{EnableIntegrityMonitoring: true}
	}
	if cfg.EffectiveCgroupMode == containerpb.NodeConfig_EFFECTIVE_CGROUP_MODE_UNSPECIFIED {
		cfg.EffectiveCgroupMode = containerpb.NodeConfig_EFFECTIVE_CGROUP_MODE_V2
	}
	if cfg.ResourceLabels == nil {
		cfg.ResourceLabels = map[string]string{}
	}
	prov := "on-demand"
	if cfg.Spot {
		prov = "spot"
	} else if cfg.Preemptible {
		prov = "preemptible"
	}
	cfg.ResourceLabels["goog-gke-node-pool-provisioning-model"] = prov
}

// fillFixedLocalSSD writes the fixed Local SSD count of a Gen3 -lssd machine type into a raw
// block config that left it 0: GKE returns the filled count (the cause of
// hashicorp/terraform-provider-google#17068).
func fillFixedLocalSSD(cfg *containerpb.NodeConfig) {
	mt, ok := lookupMachineType(cfg.MachineType)
	if !ok || mt.FixedLocalSSD == 0 {
		return
	}
	if b := cfg.LocalNvmeSsdBlockConfig; b != nil && b.LocalSsdCount == 0 {
		b.LocalSsdCount = mt.FixedLocalSSD
	}
	if e := cfg.EphemeralStorageLocalSsdConfig; e != nil && e.LocalSsdCount == 0 && cfg.LocalNvmeSsdBlockConfig == nil {
		e.LocalSsdCount = mt.FixedLocalSSD
	}
}

// validateConfig checks a defaulted NodeConfig the way GKE does.
func validateConfig(cfg *containerpb.NodeConfig) error {
	mt, ok := lookupMachineType(cfg.MachineType)
	if !ok {
		return invalid("Invalid value for field \"node_pool.config.machine_type\": %q. Machine type %q does not exist or is not supported by this emulator (supported: %s).",
			cfg.MachineType, cfg.MachineType, supportedMachineTypes())
	}
	if cfg.DiskSizeGb < minBootDiskGB {
		return invalid("Invalid value for field \"node_pool.config.disk_size_gb\": %d. Disk size must be at least %d GB.", cfg.DiskSizeGb, minBootDiskGB)
	}
	if !slices.Contains(diskTypes, cfg.DiskType) {
		return invalid("Invalid value for field \"node_pool.config.disk_type\": %q. Supported disk types: %s.", cfg.DiskType, strings.Join(diskTypes, ", "))
	}
	if !slices.Contains(imageTypes, cfg.ImageType) {
		return invalid("Invalid value for field \"node_pool.config.image_type\": %q. Supported image types: %s.", cfg.ImageType, strings.Join(imageTypes, ", "))
	}
	raw := cfg.GetLocalNvmeSsdBlockConfig().GetLocalSsdCount()
	eph := cfg.GetEphemeralStorageLocalSsdConfig().GetLocalSsdCount()
	dataCache := cfg.GetEphemeralStorageLocalSsdConfig().GetDataCacheCount()
	legacy := cfg.LocalSsdCount
	for f, n := range map[string]int32{
		"node_pool.config.local_nvme_ssd_block_config.local_ssd_count":         raw,
		"node_pool.config.ephemeral_storage_local_ssd_config.local_ssd_count":  eph,
		"node_pool.config.ephemeral_storage_local_ssd_config.data_cache_count": dataCache,
		"node_pool.config.local_ssd_count":                                     legacy,
	} {
		if n < 0 {
			return invalid("Invalid value for field %q: %d. Must be non-negative.", f, n)
		}
	}
	if raw > 0 && eph > 0 {
		return invalid("Invalid request: local_nvme_ssd_block_config and ephemeral_storage_local_ssd_config cannot both set Local SSD disks on one node pool (raw block %d, ephemeral %d).", raw, eph)
	}
	// Data Cache disks are Local SSDs of the VM too.
	if err := mt.checkLocalSSDCount(raw + eph + dataCache + legacy); err != nil {
		return invalid("Invalid value for Local SSD count: %v.", err)
	}
	if err := validateNodeSystem(cfg); err != nil {
		return err
	}
	for _, t := range cfg.Taints {
		if t.Key == "" || t.Effect == containerpb.NodeTaint_EFFECT_UNSPECIFIED {
			return invalid("Invalid value for field \"node_pool.config.taints\": taint %q=%q needs a key and an effect.", t.Key, t.Value)
		}
	}
	for k := range cfg.Labels {
		if strings.HasPrefix(k, "cloud.google.com/") || strings.HasPrefix(k, "kubernetes.io/") || strings.HasPrefix(k, "k8s.io/") {
			return invalid("Invalid value for field \"node_pool.config.labels\": label key %q uses a reserved prefix.", k)
		}
	}
	return nil
}

// autoUpgradeErr refuses node auto-upgrade off in a cluster enrolled in a release channel
// (CreateNodePool, SetNodePoolManagement; UpdateNodePoolRequest carries no management), in GKE's
// words: "googleapi: Error 400: Auto_upgrade cannot be false when release_channel REGULAR is set.,
// badRequest" (nkoson/gke-tutorial#8, terraform-google-modules/terraform-google-kubernetes-engine
// #682; RAPID in Percona-Lab/jenkins-pipelines#471). GKE's release channel documentation: node
// auto-upgrade cannot be disabled when using release channels. Clusters without a channel
// (UNSPECIFIED) accept it. The same documentation ("Node auto-upgrade and auto-repair are enabled
// and cannot be disabled when using release channels", quoted in #682) covers auto-repair; its
// refusal is worded by analogy ("Auto_upgrade and auto_repair cannot be false ..." is also quoted
// when both are off). m must not be nil.
func autoUpgradeErr(c *cluster, m *containerpb.NodeManagement) error {
	ch := c.pb.GetReleaseChannel().GetChannel()
	switch {
	case ch == containerpb.ReleaseChannel_UNSPECIFIED || m.GetAutoUpgrade() && m.GetAutoRepair():
		return nil
	case !m.GetAutoUpgrade() && !m.GetAutoRepair():
		return invalid("Auto_upgrade and auto_repair cannot be false when release_channel %s is set.", ch)
	case !m.GetAutoRepair():
		return invalid("Auto_repair cannot be false when release_channel %s is set.", ch)
	}
	return invalid("Auto_upgrade cannot be false when release_channel %s is set.", ch)
}

func checkAutoscaling(a *containerpb.NodePoolAutoscaling) error {
	if !a.Enabled {
		return nil
	}
	perZone := a.MinNodeCount != 0 || a.MaxNodeCount != 0
	total := a.TotalMinNodeCount != 0 || a.TotalMaxNodeCount != 0
	if perZone && total {
		return invalid("Invalid request: autoscaling min_node_count/max_node_count cannot be combined with total_min_node_count/total_max_node_count.")
	}
	lo, hi := a.MinNodeCount, a.MaxNodeCount
	if total {
		lo, hi = a.TotalMinNodeCount, a.TotalMaxNodeCount
	}
	if lo < 0 || hi < 1 || lo > hi || hi > 1000 {
		return invalid("Invalid value for autoscaling limits: min %d, max %d. Need 0 <= min <= max, 1 <= max <= 1000.", lo, hi)
	}
	return nil
}

// clampCount puts a per-zone node count within the autoscaling limits. Total limits are spread
// over the pool's zones (min rounded up, max rounded down).
func clampCount(n int32, a *containerpb.NodePoolAutoscaling, zones int) int32 {
	if a == nil || !a.Enabled {
		return n
	}
	lo, hi := a.MinNodeCount, a.MaxNodeCount
	if a.TotalMinNodeCount != 0 || a.TotalMaxNodeCount != 0 {
		z := int32(max(zones, 1))
		lo, hi = (a.TotalMinNodeCount+z-1)/z, a.TotalMaxNodeCount/z
	}
	return min(max(n, lo), max(hi, lo))
}

// validateNodeSystem checks the node system configuration (kubelet_config, linux_node_config),
// the reservation affinity and the boot disk's provisioned performance with the rules GKE's
// node system configuration, reservation and Hyperdisk pages document.
func validateNodeSystem(cfg *containerpb.NodeConfig) error {
	if k := cfg.GetKubeletConfig(); k != nil {
		hi, lo := k.GetImageGcHighThresholdPercent(), k.GetImageGcLowThresholdPercent()
		for f, v := range map[string]int32{"image_gc_high_threshold_percent": hi, "image_gc_low_threshold_percent": lo} {
			if v != 0 && (v < 10 || v > 85) {
				return invalid("Invalid value for field \"node_pool.config.kubelet_config.%s\": %d. Must be between 10 and 85.", f, v)
			}
		}
		if hi != 0 && lo != 0 && lo >= hi {
			return invalid("Invalid value for field \"node_pool.config.kubelet_config.image_gc_low_threshold_percent\": %d must be lower than image_gc_high_threshold_percent %d.", lo, hi)
		}
		if p := k.GetCpuCfsQuotaPeriod(); p != "" {
			d, err := time.ParseDuration(p)
			if err != nil || d < time.Millisecond || d > time.Second {
				return invalid("Invalid value for field \"node_pool.config.kubelet_config.cpu_cfs_quota_period\": %q. Must be a duration between 1ms and 1s.", p)
			}
		}
		if n := k.GetPodPidsLimit(); n != 0 && (n < 1024 || n > 4194304) {
			return invalid("Invalid value for field \"node_pool.config.kubelet_config.pod_pids_limit\": %d. Must be between 1024 and 4194304.", n)
		}
		if n := k.GetContainerLogMaxFiles(); n != 0 && (n < 2 || n > 10) {
			return invalid("Invalid value for field \"node_pool.config.kubelet_config.container_log_max_files\": %d. Must be between 2 and 10.", n)
		}
		if p := k.GetCpuManagerPolicy(); p != "" && p != "static" && p != "none" {
			return invalid("Invalid value for field \"node_pool.config.kubelet_config.cpu_manager_policy\": %q. Must be \"static\" or \"none\".", p)
		}
	}
	if r := cfg.GetReservationAffinity(); r != nil {
		specific := r.GetConsumeReservationType() == containerpb.ReservationAffinity_SPECIFIC_RESERVATION
		if specific != (r.GetKey() != "" && len(r.GetValues()) > 0) && (specific || r.GetKey() != "" || len(r.GetValues()) > 0) {
			return invalid("Invalid value for field \"node_pool.config.reservation_affinity\": key and values are required for SPECIFIC_RESERVATION and not allowed otherwise.")
		}
	}
	if b := cfg.GetBootDisk(); (b.GetProvisionedIops() != 0 || b.GetProvisionedThroughput() != 0) && !strings.HasPrefix(cfg.DiskType, "hyperdisk-") {
		return invalid("Invalid value for field \"node_pool.config.boot_disk\": provisioned_iops and provisioned_throughput are supported for Hyperdisk boot disks only, not %q.", cfg.DiskType)
	}
	return nil
}
