package nodepool

import (
	"github.com/hashicorp/terraform-plugin-framework-timeouts/resource/timeouts"
	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/types"
)

// model is the resource's Terraform state.
type model struct {
	ID                     types.String   `tfsdk:"id"`
	Name                   types.String   `tfsdk:"name"`
	Project                types.String   `tfsdk:"project"`
	Location               types.String   `tfsdk:"location"`
	Cluster                types.String   `tfsdk:"cluster"`
	NodeLocations          types.Set      `tfsdk:"node_locations"`
	MachineType            types.String   `tfsdk:"machine_type"`
	NodeCount              types.Int64    `tfsdk:"node_count"`
	Autoscaling            types.Object   `tfsdk:"autoscaling"`
	LocalNVMeSSDCount      types.Int64    `tfsdk:"local_nvme_ssd_count"`
	EphemeralLocalSSDCount types.Int64    `tfsdk:"ephemeral_storage_local_ssd_count"`
	BootDisk               types.Object   `tfsdk:"boot_disk"`
	ImageType              types.String   `tfsdk:"image_type"`
	Labels                 types.Map      `tfsdk:"labels"`
	Taints                 types.List     `tfsdk:"taints"`
	StorageStartupTaint    types.Bool     `tfsdk:"storage_startup_taint"`
	ResourceLabels         types.Map      `tfsdk:"resource_labels"`
	Spot                   types.Bool     `tfsdk:"spot"`
	ServiceAccount         types.String   `tfsdk:"service_account"`
	OAuthScopes            types.Set      `tfsdk:"oauth_scopes"`
	Management             types.Object   `tfsdk:"management"`
	UpgradeSettings        types.Object   `tfsdk:"upgrade_settings"`
	KubeletConfig          types.Object   `tfsdk:"kubelet_config"`
	Version                types.String   `tfsdk:"version"`
	DeletionProtection     types.Bool     `tfsdk:"deletion_protection"`
	AllowLocalDataLoss     types.Bool     `tfsdk:"allow_local_data_loss"`
	ExpectedEphemeralGiB   types.Float64  `tfsdk:"expected_ephemeral_gib"`
	InstanceGroupURLs      types.List     `tfsdk:"instance_group_urls"`
	Nodes                  types.List     `tfsdk:"nodes"`
	LocalSSDGiBPerNode     types.Int64    `tfsdk:"local_ssd_gib_per_node"`
	EphemeralStorage       types.Object   `tfsdk:"ephemeral_storage"`
	Timeouts               timeouts.Value `tfsdk:"timeouts"`

	// nodeconfig.go
	NamePrefix             types.String `tfsdk:"name_prefix"`
	WorkloadMetadataConfig types.Object `tfsdk:"workload_metadata_config"`
	LinuxNodeConfig        types.Object `tfsdk:"linux_node_config"`
	NodeDrainConfig        types.Object `tfsdk:"node_drain_config"`
	ReservationAffinity    types.Object `tfsdk:"reservation_affinity"`
	Gvnic                  types.Object `tfsdk:"gvnic"`
	GcfsConfig             types.Object `tfsdk:"gcfs_config"`
	NetworkConfig          types.Object `tfsdk:"network_config"`
	SecondaryBootDisks     types.List   `tfsdk:"secondary_boot_disks"`
	DataCacheCount         types.Int64  `tfsdk:"data_cache_count"`
	LocalSSDEncryptionMode types.String `tfsdk:"local_ssd_encryption_mode"`
	ShieldedInstanceConfig types.Object `tfsdk:"shielded_instance_config"`
	Tags                   types.List   `tfsdk:"tags"`
	Metadata               types.Map    `tfsdk:"metadata"`
	ResourceManagerTags    types.Map    `tfsdk:"resource_manager_tags"`
	MaxPodsPerNode         types.Int64  `tfsdk:"max_pods_per_node"`
	PlacementPolicy        types.Object `tfsdk:"placement_policy"`
	QueuedProvisioning     types.Object `tfsdk:"queued_provisioning"`
	Operations             types.List   `tfsdk:"operations"`
	PendingUpgrade         types.String `tfsdk:"pending_upgrade"`
}

type autoscalingModel struct {
	MinNodeCount   types.Int64  `tfsdk:"min_node_count"`
	MaxNodeCount   types.Int64  `tfsdk:"max_node_count"`
	LocationPolicy types.String `tfsdk:"location_policy"`
}

var autoscalingAttrTypes = map[string]attr.Type{
	"min_node_count": types.Int64Type, "max_node_count": types.Int64Type, "location_policy": types.StringType,
}

type bootDiskModel struct {
	Type                  types.String `tfsdk:"type"`
	SizeGB                types.Int64  `tfsdk:"size_gb"`
	ProvisionedIops       types.Int64  `tfsdk:"provisioned_iops"`
	ProvisionedThroughput types.Int64  `tfsdk:"provisioned_throughput"`
}

var bootDiskAttrTypes = map[string]attr.Type{"type": types.StringType, "size_gb": types.Int64Type,
	"provisioned_iops": types.Int64Type, "provisioned_throughput": types.Int64Type}

type taintModel struct {
	Key    types.String `tfsdk:"key"`
	Value  types.String `tfsdk:"value"`
	Effect types.String `tfsdk:"effect"`
}

var taintAttrTypes = map[string]attr.Type{"key": types.StringType, "value": types.StringType, "effect": types.StringType}

type managementModel struct {
	AutoRepair  types.Bool `tfsdk:"auto_repair"`
	AutoUpgrade types.Bool `tfsdk:"auto_upgrade"`
}

var managementAttrTypes = map[string]attr.Type{"auto_repair": types.BoolType, "auto_upgrade": types.BoolType}

type upgradeSettingsModel struct {
	Strategy       types.String `tfsdk:"strategy"`
	MaxSurge       types.Int64  `tfsdk:"max_surge"`
	MaxUnavailable types.Int64  `tfsdk:"max_unavailable"`
	BlueGreen      types.Object `tfsdk:"blue_green"`
}

type blueGreenModel struct {
	NodePoolSoakDuration types.String  `tfsdk:"node_pool_soak_duration"`
	BatchPercentage      types.Float64 `tfsdk:"batch_percentage"`
	BatchNodeCount       types.Int64   `tfsdk:"batch_node_count"`
	BatchSoakDuration    types.String  `tfsdk:"batch_soak_duration"`
}

var blueGreenAttrTypes = map[string]attr.Type{
	"node_pool_soak_duration": types.StringType, "batch_percentage": types.Float64Type,
	"batch_node_count": types.Int64Type, "batch_soak_duration": types.StringType,
}

var upgradeSettingsAttrTypes = map[string]attr.Type{
	"strategy": types.StringType, "max_surge": types.Int64Type, "max_unavailable": types.Int64Type,
	"blue_green": types.ObjectType{AttrTypes: blueGreenAttrTypes},
}

type kubeletConfigModel struct {
	EvictionSoft                     types.Map    `tfsdk:"eviction_soft"`
	EvictionSoftGracePeriod          types.Map    `tfsdk:"eviction_soft_grace_period"`
	EvictionMinimumReclaim           types.Map    `tfsdk:"eviction_minimum_reclaim"`
	EvictionMaxPodGracePeriodSeconds types.Int64  `tfsdk:"eviction_max_pod_grace_period_seconds"`
	CPUManagerPolicy                 types.String `tfsdk:"cpu_manager_policy"`
	CPUCfsQuota                      types.Bool   `tfsdk:"cpu_cfs_quota"`
	CPUCfsQuotaPeriod                types.String `tfsdk:"cpu_cfs_quota_period"`
	PodPidsLimit                     types.Int64  `tfsdk:"pod_pids_limit"`
	ImageGCHighThresholdPercent      types.Int64  `tfsdk:"image_gc_high_threshold_percent"`
	ImageGCLowThresholdPercent       types.Int64  `tfsdk:"image_gc_low_threshold_percent"`
	ImageMinimumGCAge                types.String `tfsdk:"image_minimum_gc_age"`
	ImageMaximumGCAge                types.String `tfsdk:"image_maximum_gc_age"`
	ContainerLogMaxSize              types.String `tfsdk:"container_log_max_size"`
	ContainerLogMaxFiles             types.Int64  `tfsdk:"container_log_max_files"`
	TopologyManager                  types.Object `tfsdk:"topology_manager"`
	MemoryManager                    types.Object `tfsdk:"memory_manager"`
}

var kubeletConfigAttrTypes = map[string]attr.Type{
	"eviction_soft":                         types.MapType{ElemType: types.StringType},
	"eviction_soft_grace_period":            types.MapType{ElemType: types.StringType},
	"eviction_minimum_reclaim":              types.MapType{ElemType: types.StringType},
	"eviction_max_pod_grace_period_seconds": types.Int64Type,
	"cpu_manager_policy":                    types.StringType,
	"cpu_cfs_quota":                         types.BoolType,
	"cpu_cfs_quota_period":                  types.StringType,
	"pod_pids_limit":                        types.Int64Type,
	"image_gc_high_threshold_percent":       types.Int64Type,
	"image_gc_low_threshold_percent":        types.Int64Type,
	"image_minimum_gc_age":                  types.StringType,
	"image_maximum_gc_age":                  types.StringType,
	"container_log_max_size":                types.StringType,
	"container_log_max_files":               types.Int64Type,
	"topology_manager":                      types.ObjectType{AttrTypes: topologyAttrTypes},
	"memory_manager":                        types.ObjectType{AttrTypes: memoryManagerTypes},
}

type ephemeralModel struct {
	Backing              types.String  `tfsdk:"backing"`
	BootDiskGiB          types.Float64 `tfsdk:"boot_disk_gib"`
	CapacityGiB          types.Float64 `tfsdk:"capacity_gib"`
	ReservedGiB          types.Float64 `tfsdk:"reserved_gib"`
	EvictionThresholdGiB types.Float64 `tfsdk:"eviction_threshold_gib"`
	EvictionSignal       types.String  `tfsdk:"eviction_signal"`
	AllocatableGiB       types.Float64 `tfsdk:"allocatable_gib"`
	DemandGiB            types.Float64 `tfsdk:"demand_gib"`
	DemandSource         types.String  `tfsdk:"demand_source"`
	HeadroomGiB          types.Float64 `tfsdk:"headroom_gib"`
}

var ephemeralAttrTypes = map[string]attr.Type{
	"backing": types.StringType, "boot_disk_gib": types.Float64Type, "capacity_gib": types.Float64Type,
	"reserved_gib": types.Float64Type, "eviction_threshold_gib": types.Float64Type, "eviction_signal": types.StringType,
	"allocatable_gib": types.Float64Type, "demand_gib": types.Float64Type, "demand_source": types.StringType,
	"headroom_gib": types.Float64Type,
}
