package nodepool

import (
	"context"

	"github.com/hashicorp/terraform-plugin-framework-validators/int64validator"
	"github.com/hashicorp/terraform-plugin-framework-validators/listvalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/booldefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/boolplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/int64planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/listplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/mapplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/objectplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
)

// The node_config and node pool fields of google_container_node_pool that olapgke adds at the
// top level (node_config.X becomes X, as machine_type and labels already are). Enum values are
// the API's (google.container.v1), as the google provider writes them.

var (
	workloadMetadataModes = []string{"MODE_UNSPECIFIED", "GCE_METADATA", "GKE_METADATA"}
	cgroupModes           = []string{"CGROUP_MODE_UNSPECIFIED", "CGROUP_MODE_V1", "CGROUP_MODE_V2"}
	thpEnabled            = []string{"TRANSPARENT_HUGEPAGE_ENABLED_UNSPECIFIED", "TRANSPARENT_HUGEPAGE_ENABLED_ALWAYS", "TRANSPARENT_HUGEPAGE_ENABLED_MADVISE", "TRANSPARENT_HUGEPAGE_ENABLED_NEVER"}
	thpDefrag             = []string{"TRANSPARENT_HUGEPAGE_DEFRAG_UNSPECIFIED", "TRANSPARENT_HUGEPAGE_DEFRAG_ALWAYS", "TRANSPARENT_HUGEPAGE_DEFRAG_DEFER", "TRANSPARENT_HUGEPAGE_DEFRAG_DEFER_WITH_MADVISE", "TRANSPARENT_HUGEPAGE_DEFRAG_MADVISE", "TRANSPARENT_HUGEPAGE_DEFRAG_NEVER"}
	reservationTypes      = []string{"UNSPECIFIED", "NO_RESERVATION", "ANY_RESERVATION", "SPECIFIC_RESERVATION", "ANY_RESERVATION_THEN_FAIL"}
	egressTiers           = []string{"TIER_UNSPECIFIED", "TIER_1"}
	secondaryDiskModes    = []string{"MODE_UNSPECIFIED", "CONTAINER_IMAGE_CACHE"}
	localSSDEncryption    = []string{"STANDARD_ENCRYPTION", "EPHEMERAL_KEY_ENCRYPTION"}
	placementTypes        = []string{"TYPE_UNSPECIFIED", "COMPACT"}
	cpuManagerPolicies    = []string{"static", "none", ""}
	topologyPolicies      = []string{"none", "restricted", "single-numa-node", "best-effort", ""}
	topologyScopes        = []string{"container", "pod", ""}
	memoryPolicies        = []string{"None", "Static", ""}
)

var (
	modeAttrTypes          = map[string]attr.Type{"mode": types.StringType}
	enabledAttrTypes       = map[string]attr.Type{"enabled": types.BoolType}
	hugepagesAttrTypes     = map[string]attr.Type{"hugepage_size_2m": types.Int64Type, "hugepage_size_1g": types.Int64Type}
	linuxNodeConfigTypes   = map[string]attr.Type{"sysctls": types.MapType{ElemType: types.StringType}, "hugepages_config": types.ObjectType{AttrTypes: hugepagesAttrTypes}, "transparent_hugepage_enabled": types.StringType, "transparent_hugepage_defrag": types.StringType, "cgroup_mode": types.StringType}
	nodeDrainAttrTypes     = map[string]attr.Type{"respect_pdb_during_node_pool_deletion": types.BoolType}
	reservationAttrTypes   = map[string]attr.Type{"consume_reservation_type": types.StringType, "key": types.StringType, "values": types.SetType{ElemType: types.StringType}}
	netPerfAttrTypes       = map[string]attr.Type{"total_egress_bandwidth_tier": types.StringType}
	networkConfigAttrTypes = map[string]attr.Type{"pod_range": types.StringType, "create_pod_range": types.BoolType, "enable_private_nodes": types.BoolType, "network_performance_config": types.ObjectType{AttrTypes: netPerfAttrTypes}}
	secondaryDiskAttrTypes = map[string]attr.Type{"disk_image": types.StringType, "mode": types.StringType}
	shieldedAttrTypes      = map[string]attr.Type{"enable_secure_boot": types.BoolType, "enable_integrity_monitoring": types.BoolType}
	placementAttrTypes     = map[string]attr.Type{"type": types.StringType, "policy_name": types.StringType, "tpu_topology": types.StringType}
	operationAttrTypes     = map[string]attr.Type{"name": types.StringType, "type": types.StringType, "status": types.StringType, "start_time": types.StringType, "target": types.StringType}
	topologyAttrTypes      = map[string]attr.Type{"policy": types.StringType, "scope": types.StringType}
	memoryManagerTypes     = map[string]attr.Type{"policy": types.StringType}
)

// nodeConfigAttributes are the schema attributes of the fields above. replace and recreate add
// the update-path sentence to a description.
func nodeConfigAttributes(replace, recreate, inPlace func(string) string) map[string]schema.Attribute {
	enabled := func(desc string) map[string]schema.Attribute {
		return map[string]schema.Attribute{"enabled": schema.BoolAttribute{Required: true, MarkdownDescription: desc}}
	}
	return map[string]schema.Attribute{
		"name_prefix": schema.StringAttribute{
			Optional:            true,
			MarkdownDescription: replace("Creates a unique name beginning with this prefix (google provider's `name_prefix`): at most 31 characters, a lowercase letter first, then lowercase letters, digits and hyphens. Conflicts with `name`; exactly one of the two is required."),
			PlanModifiers:       []planmodifier.String{stringplanmodifier.RequiresReplace()},
			Validators:          []validator.String{stringvalidator.LengthBetween(1, 31), stringvalidator.RegexMatches(namePrefixRE, "must start with a lowercase letter and contain only lowercase letters, digits and hyphens")},
		},
		"workload_metadata_config": schema.SingleNestedAttribute{
			Optional: true, Computed: true,
			MarkdownDescription: recreate("How the node exposes metadata to Pods (`node_config.workload_metadata_config`): `GKE_METADATA` runs the GKE metadata server (Workload Identity Federation, e.g. for deep storage in GCS), `GCE_METADATA` exposes the Compute Engine metadata server."),
			PlanModifiers:       []planmodifier.Object{objectplanmodifier.UseStateForUnknown()},
			Attributes: map[string]schema.Attribute{
				"mode": schema.StringAttribute{Required: true, MarkdownDescription: "`GKE_METADATA`, `GCE_METADATA` or `MODE_UNSPECIFIED`.",
					Validators: []validator.String{stringvalidator.OneOf(workloadMetadataModes...)}},
			},
		},
		"linux_node_config": schema.SingleNestedAttribute{
			Optional:            true,
			MarkdownDescription: recreate("Linux node system configuration (`node_config.linux_node_config`)."),
			Attributes: map[string]schema.Attribute{
				"sysctls": schema.MapAttribute{ElementType: types.StringType, Optional: true,
					MarkdownDescription: "Kernel parameters, e.g. `{ \"net.core.somaxconn\" = \"4096\" }`; GKE accepts the sysctls its node system configuration page lists."},
				"hugepages_config": schema.SingleNestedAttribute{Optional: true, MarkdownDescription: "Hugepages to pre-allocate on each node.",
					Attributes: map[string]schema.Attribute{
						"hugepage_size_2m": schema.Int64Attribute{Optional: true, MarkdownDescription: "Number of 2 MiB hugepages.", Validators: []validator.Int64{int64validator.AtLeast(0)}},
						"hugepage_size_1g": schema.Int64Attribute{Optional: true, MarkdownDescription: "Number of 1 GiB hugepages.", Validators: []validator.Int64{int64validator.AtLeast(0)}},
					}},
				"transparent_hugepage_enabled": schema.StringAttribute{Optional: true, MarkdownDescription: "`TRANSPARENT_HUGEPAGE_ENABLED_ALWAYS`, `_MADVISE` or `_NEVER`.",
					Validators: []validator.String{stringvalidator.OneOf(thpEnabled...)}},
				"transparent_hugepage_defrag": schema.StringAttribute{Optional: true, MarkdownDescription: "`TRANSPARENT_HUGEPAGE_DEFRAG_ALWAYS`, `_DEFER`, `_DEFER_WITH_MADVISE`, `_MADVISE` or `_NEVER`.",
					Validators: []validator.String{stringvalidator.OneOf(thpDefrag...)}},
				"cgroup_mode": schema.StringAttribute{Optional: true, MarkdownDescription: "`CGROUP_MODE_V1` or `CGROUP_MODE_V2`.",
					Validators: []validator.String{stringvalidator.OneOf(cgroupModes...)}},
			},
		},
		"node_drain_config": schema.SingleNestedAttribute{
			Optional:            true,
			MarkdownDescription: inPlace("How GKE drains nodes (node pool's `node_drain_config`)."),
			Attributes: map[string]schema.Attribute{
				"respect_pdb_during_node_pool_deletion": schema.BoolAttribute{Required: true,
					MarkdownDescription: "Whether GKE respects PodDisruptionBudgets while it deletes the node pool."},
			},
		},
		"reservation_affinity": schema.SingleNestedAttribute{
			Optional: true, Computed: true,
			MarkdownDescription: replace("Compute Engine reservations the nodes consume (`node_config.reservation_affinity`)."),
			PlanModifiers:       []planmodifier.Object{objectplanmodifier.UseStateForUnknown(), objectplanmodifier.RequiresReplace()},
			Attributes: map[string]schema.Attribute{
				"consume_reservation_type": schema.StringAttribute{Required: true, MarkdownDescription: "`NO_RESERVATION`, `ANY_RESERVATION`, `SPECIFIC_RESERVATION` or `ANY_RESERVATION_THEN_FAIL`.",
					Validators: []validator.String{stringvalidator.OneOf(reservationTypes...)}},
				"key":    schema.StringAttribute{Optional: true, MarkdownDescription: "Label key of the reservation (`compute.googleapis.com/reservation-name` for a named one); `SPECIFIC_RESERVATION` only."},
				"values": schema.SetAttribute{ElementType: types.StringType, Optional: true, MarkdownDescription: "Label values of the reservation; `SPECIFIC_RESERVATION` only."},
			},
		},
		"gvnic": schema.SingleNestedAttribute{
			Optional: true, Computed: true,
			MarkdownDescription: recreate("Google Virtual NIC (`node_config.gvnic`)."),
			PlanModifiers:       []planmodifier.Object{objectplanmodifier.UseStateForUnknown()},
			Attributes:          enabled("Whether gVNIC is enabled."),
		},
		"gcfs_config": schema.SingleNestedAttribute{
			Optional: true, Computed: true,
			MarkdownDescription: recreate("Image streaming (`node_config.gcfs_config`)."),
			PlanModifiers:       []planmodifier.Object{objectplanmodifier.UseStateForUnknown()},
			Attributes:          enabled("Whether image streaming is enabled."),
		},
		"network_config": schema.SingleNestedAttribute{
			Optional: true, Computed: true,
			MarkdownDescription: "Networking of the pool (node pool's `network_config`). `pod_range` and `create_pod_range` replace the pool; `enable_private_nodes` and `network_performance_config` are updated by recreating every VM (data-loss guard applies).",
			PlanModifiers:       []planmodifier.Object{objectplanmodifier.UseStateForUnknown()},
			Attributes: map[string]schema.Attribute{
				"pod_range": schema.StringAttribute{Optional: true, Computed: true,
					MarkdownDescription: "Secondary range for Pod IPs (GKE fills the cluster's).",
					PlanModifiers:       []planmodifier.String{keepPriorString{}, stringplanmodifier.RequiresReplace()}},
				"create_pod_range": schema.BoolAttribute{Optional: true,
					MarkdownDescription: "Create `pod_range` for this pool. GKE does not report it, so an imported pool records it from the configuration (an in-place no-op).",
					PlanModifiers:       []planmodifier.Bool{boolplanmodifier.RequiresReplaceIf(replaceIfKnownBefore, "replaces the pool when the prior value was recorded", "replaces the pool when the prior value was recorded")}},
				"enable_private_nodes": schema.BoolAttribute{Optional: true, Computed: true,
					MarkdownDescription: "Nodes have internal IP addresses only.",
					PlanModifiers:       []planmodifier.Bool{keepPriorBool{}}},
				"network_performance_config": schema.SingleNestedAttribute{Optional: true, MarkdownDescription: "Network bandwidth tier.",
					Attributes: map[string]schema.Attribute{
						"total_egress_bandwidth_tier": schema.StringAttribute{Required: true, MarkdownDescription: "`TIER_1` or `TIER_UNSPECIFIED`.",
							Validators: []validator.String{stringvalidator.OneOf(egressTiers...)}},
					}},
			},
		},
		"secondary_boot_disks": schema.ListNestedAttribute{
			Optional:            true,
			MarkdownDescription: replace("Secondary boot disks preloading data or container images (`node_config.secondary_boot_disks`)."),
			PlanModifiers:       []planmodifier.List{listplanmodifier.RequiresReplace()},
			Validators:          []validator.List{listvalidator.SizeAtMost(127)},
			NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
				"disk_image": schema.StringAttribute{Required: true, MarkdownDescription: "Disk image, e.g. `global/images/cache-image`."},
				"mode": schema.StringAttribute{Optional: true, MarkdownDescription: "`CONTAINER_IMAGE_CACHE` or `MODE_UNSPECIFIED`.",
					Validators: []validator.String{stringvalidator.OneOf(secondaryDiskModes...)}},
			}},
		},
		"data_cache_count": schema.Int64Attribute{
			Optional:            true,
			MarkdownDescription: replace("Local SSDs per node for GKE Data Cache (`node_config.ephemeral_storage_local_ssd_config.data_cache_count`). Together with the other Local SSDs it must be a count the machine type takes (checked at plan for known types)."),
			PlanModifiers:       []planmodifier.Int64{int64planmodifier.RequiresReplace()},
			Validators:          []validator.Int64{int64validator.AtLeast(0)},
		},
		"local_ssd_encryption_mode": schema.StringAttribute{
			Optional: true, Computed: true,
			MarkdownDescription: replace("Local SSD encryption (`node_config.local_ssd_encryption_mode`): `STANDARD_ENCRYPTION` or `EPHEMERAL_KEY_ENCRYPTION`."),
			PlanModifiers:       []planmodifier.String{stringplanmodifier.UseStateForUnknown(), stringplanmodifier.RequiresReplace()},
			Validators:          []validator.String{stringvalidator.OneOf(localSSDEncryption...)},
		},
		"shielded_instance_config": schema.SingleNestedAttribute{
			Optional: true, Computed: true,
			MarkdownDescription: replace("Shielded VM options (`node_config.shielded_instance_config`; GKE default: integrity monitoring on, secure boot off)."),
			PlanModifiers:       []planmodifier.Object{objectplanmodifier.UseStateForUnknown(), objectplanmodifier.RequiresReplace()},
			Attributes: map[string]schema.Attribute{
				"enable_secure_boot": schema.BoolAttribute{Optional: true, Computed: true, Default: booldefault.StaticBool(false),
					MarkdownDescription: "Secure Boot (default false)."},
				"enable_integrity_monitoring": schema.BoolAttribute{Optional: true, Computed: true, Default: booldefault.StaticBool(true),
					MarkdownDescription: "Integrity monitoring (default true)."},
			},
		},
		"tags": schema.ListAttribute{
			ElementType: types.StringType, Optional: true,
			MarkdownDescription: inPlace("Network tags of the node VMs (`node_config.tags`), for firewall rules."),
		},
		"metadata": schema.MapAttribute{
			ElementType: types.StringType, Optional: true,
			MarkdownDescription: replace("Compute Engine instance metadata of the node VMs (`node_config.metadata`). GKE adds `disable-legacy-endpoints = \"true\"`, which is not shown unless configured."),
			PlanModifiers:       []planmodifier.Map{mapplanmodifier.RequiresReplace()},
		},
		"resource_manager_tags": schema.MapAttribute{
			ElementType: types.StringType, Optional: true,
			MarkdownDescription: inPlace("Resource Manager tags of the node VMs (`node_config.resource_manager_tags`), `tagKeys/ID = tagValues/ID`, for network firewall policies."),
		},
		"max_pods_per_node": schema.Int64Attribute{
			Optional: true, Computed: true,
			MarkdownDescription: replace("Maximum Pods per node (GKE default 110; 8-256)."),
			PlanModifiers:       []planmodifier.Int64{int64planmodifier.UseStateForUnknown(), int64planmodifier.RequiresReplace()},
			Validators:          []validator.Int64{int64validator.Between(8, 256)},
		},
		"placement_policy": schema.SingleNestedAttribute{
			Optional:            true,
			MarkdownDescription: replace("Node placement policy (node pool's `placement_policy`)."),
			PlanModifiers:       []planmodifier.Object{objectplanmodifier.RequiresReplace()},
			Attributes: map[string]schema.Attribute{
				"type": schema.StringAttribute{Required: true, MarkdownDescription: "`COMPACT` (or `TYPE_UNSPECIFIED`).",
					Validators: []validator.String{stringvalidator.OneOf(placementTypes...)}},
				"policy_name":  schema.StringAttribute{Optional: true, MarkdownDescription: "A resource policy of the project and region to use instead of GKE's."},
				"tpu_topology": schema.StringAttribute{Optional: true, MarkdownDescription: "TPU topology, e.g. `2x4`."},
			},
		},
		"queued_provisioning": schema.SingleNestedAttribute{
			Optional: true, Computed: true,
			MarkdownDescription: replace("Nodes obtainable only through the ProvisioningRequest API (node pool's `queued_provisioning`)."),
			PlanModifiers:       []planmodifier.Object{objectplanmodifier.UseStateForUnknown(), objectplanmodifier.RequiresReplace()},
			Attributes:          enabled("Whether queued provisioning is enabled."),
		},
		"operations": schema.ListNestedAttribute{
			Computed: true,
			MarkdownDescription: "GKE operations in flight on this pool or its cluster (ListOperations of the location, filtered by target), read on refresh. " +
				"GKE starts some itself (auto-upgrade, auto-repair), and those recreate VMs and lose Local SSD data outside Terraform. Unknown at plan when the pool changes.",
			NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
				"name":       schema.StringAttribute{Computed: true, MarkdownDescription: "Operation name."},
				"type":       schema.StringAttribute{Computed: true, MarkdownDescription: "Operation type, e.g. `UPGRADE_NODES`, `AUTO_REPAIR_NODES`, `UPGRADE_MASTER`."},
				"status":     schema.StringAttribute{Computed: true, MarkdownDescription: "`PENDING`, `RUNNING` or `ABORTING`."},
				"start_time": schema.StringAttribute{Computed: true, MarkdownDescription: "When it started (RFC 3339)."},
				"target":     schema.StringAttribute{Computed: true, MarkdownDescription: "`node_pool` or `cluster`."},
			}},
		},
		"pending_upgrade": schema.StringAttribute{
			Computed: true,
			MarkdownDescription: "The version GKE will auto-upgrade the nodes to (recreating every VM) when `management.auto_upgrade` is on and the pool runs an older version than the control plane; empty otherwise. " +
				"Read on refresh; unknown at plan when the pool changes.",
		},
	}
}

// replaceIfKnownBefore replaces only when the prior value was recorded (not after an import,
// where GKE does not report it).
func replaceIfKnownBefore(_ context.Context, req planmodifier.BoolRequest, resp *boolplanmodifier.RequiresReplaceIfFuncResponse) {
	resp.RequiresReplace = !req.StateValue.IsNull()
}

// kubeletAttributes are kubelet_config's attributes beyond eviction.
func kubeletAttributes() map[string]schema.Attribute {
	return map[string]schema.Attribute{
		"cpu_manager_policy": schema.StringAttribute{Optional: true, MarkdownDescription: "`static` or `none` (kubelet's CPU manager).",
			Validators: []validator.String{stringvalidator.OneOf(cpuManagerPolicies...)}},
		"cpu_cfs_quota": schema.BoolAttribute{Optional: true, MarkdownDescription: "Enforce CPU limits with CFS quota (kubelet default true)."},
		"cpu_cfs_quota_period": schema.StringAttribute{Optional: true, MarkdownDescription: "CFS quota period, a duration between `1ms` and `1s` (e.g. `100ms`).",
			Validators: []validator.String{durationBetween{min: "1ms", max: "1s"}}},
		"pod_pids_limit": schema.Int64Attribute{Optional: true, MarkdownDescription: "Maximum processes per Pod (1024-4194304).",
			Validators: []validator.Int64{int64validator.Between(1024, 4194304)}},
		"image_gc_high_threshold_percent": schema.Int64Attribute{Optional: true, MarkdownDescription: "Disk use above which image GC always runs (10-85, above the low threshold).",
			Validators: []validator.Int64{int64validator.Between(10, 85)}},
		"image_gc_low_threshold_percent": schema.Int64Attribute{Optional: true, MarkdownDescription: "Disk use image GC frees down to (10-85, below the high threshold).",
			Validators: []validator.Int64{int64validator.Between(10, 85)}},
		"image_minimum_gc_age": schema.StringAttribute{Optional: true, MarkdownDescription: "Minimum age of an unused image before GC, a duration up to `2m`.",
			Validators: []validator.String{durationBetween{min: "0s", max: "2m"}}},
		"image_maximum_gc_age": schema.StringAttribute{Optional: true, MarkdownDescription: "Maximum age of an unused image before GC, a duration above `image_minimum_gc_age`.",
			Validators: []validator.String{durationBetween{min: "0s"}}},
		"container_log_max_size": schema.StringAttribute{Optional: true, MarkdownDescription: "Size at which a container log is rotated, e.g. `50Mi` (up to `500Mi`).",
			Validators: []validator.String{logSizeValidator{}}},
		"container_log_max_files": schema.Int64Attribute{Optional: true, MarkdownDescription: "Rotated log files kept per container (2-10).",
			Validators: []validator.Int64{int64validator.Between(2, 10)}},
		"topology_manager": schema.SingleNestedAttribute{Optional: true, MarkdownDescription: "kubelet's Topology Manager.",
			Attributes: map[string]schema.Attribute{
				"policy": schema.StringAttribute{Optional: true, MarkdownDescription: "`none`, `restricted`, `single-numa-node` or `best-effort`.",
					Validators: []validator.String{stringvalidator.OneOf(topologyPolicies...)}},
				"scope": schema.StringAttribute{Optional: true, MarkdownDescription: "`container` or `pod`.",
					Validators: []validator.String{stringvalidator.OneOf(topologyScopes...)}},
			}},
		"memory_manager": schema.SingleNestedAttribute{Optional: true, MarkdownDescription: "kubelet's Memory Manager.",
			Attributes: map[string]schema.Attribute{
				"policy": schema.StringAttribute{Optional: true, MarkdownDescription: "`None` or `Static`.",
					Validators: []validator.String{stringvalidator.OneOf(memoryPolicies...)}},
			}},
	}
}
