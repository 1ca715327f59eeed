package nodepool

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-timeouts/resource/timeouts"
	"github.com/hashicorp/terraform-plugin-framework-validators/float64validator"
	"github.com/hashicorp/terraform-plugin-framework-validators/int64validator"
	"github.com/hashicorp/terraform-plugin-framework-validators/mapvalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/objectvalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/setvalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/booldefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/boolplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/int64default"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/int64planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/listplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/objectplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/setplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/olapgke/terraform-provider-olapgke/internal/gkerules"
	"github.com/olapgke/terraform-provider-olapgke/internal/resources/durations"
	"github.com/olapgke/terraform-provider-olapgke/internal/stsutil"
)

// evictionSignals are the kubelet eviction signals GKE's kubelet_config accepts
// (google.container.v1.EvictionSignals / EvictionGracePeriod / EvictionMinimumReclaim).
var evictionSignals = []string{"memory.available", "nodefs.available", "nodefs.inodesFree", "imagefs.available", "imagefs.inodesFree", "pid.available"}

func (r *nodePoolResource) Schema(ctx context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	replace := func(s string) string {
		return s + " Changing it replaces the node pool (GKE cannot update it): every node and its Local SSD data is deleted."
	}
	recreate := func(s string) string {
		return s + " Changing it updates the pool by recreating every VM (GKE upgrade operation): Local SSD data on the nodes is lost, so the data-loss guard applies."
	}
	inPlace := func(s string) string { return s + " Updated in place." }
	resp.Schema = schema.Schema{
		MarkdownDescription: "A GKE node pool whose Local SSDs are raw block devices (for TopoLVM), with plan-time checks that GKE and the " +
			"Google provider do not make: Local SSD counts per machine type, the node's ephemeral-storage arithmetic (boot disk, " +
			"GKE reservation, kubelet eviction threshold, allocatable, expected demand, headroom) with a DiskPressure warning, and " +
			"a data-loss guard that refuses changes deleting or recreating nodes while StatefulSet ordinals keep TopoLVM volumes on them.",
		Attributes: merge(map[string]schema.Attribute{
			"id": schema.StringAttribute{
				Computed:            true,
				MarkdownDescription: "`projects/P/locations/L/clusters/C/nodePools/N`.",
				PlanModifiers:       []planmodifier.String{stringplanmodifier.UseStateForUnknown()},
			},
			"name": schema.StringAttribute{
				Optional: true, Computed: true,
				MarkdownDescription: replace("Node pool name: 1-" + fmt.Sprint(gkerules.MaxNodePoolNameLen) + " lowercase letters, digits and hyphens, starting with a letter. Exactly one of `name` and `name_prefix` is required."),
				PlanModifiers:       []planmodifier.String{stringplanmodifier.UseStateForUnknown(), stringplanmodifier.RequiresReplace()},
			},
			"project":  providerDefaulted("GCP project; defaults to the provider's `project`."),
			"location": providerDefaulted("Cluster location (region or zone); defaults to the provider's `location`."),
			"cluster":  providerDefaulted("Cluster name; defaults to the provider's `cluster`."),
			"node_locations": schema.SetAttribute{
				ElementType: types.StringType, Optional: true, Computed: true,
				MarkdownDescription: "Zones of the pool's nodes; defaults to the cluster's locations. Removing a zone deletes its nodes (data-loss guard applies).",
				PlanModifiers:       []planmodifier.Set{setplanmodifier.UseStateForUnknown()},
				Validators:          []validator.Set{setvalidator.SizeAtLeast(1)},
			},
			"machine_type": schema.StringAttribute{
				Required:            true,
				MarkdownDescription: recreate("Compute Engine machine type, e.g. `n2-standard-8` or `c3-standard-8-lssd`."),
			},
			"node_count": schema.Int64Attribute{
				Optional: true, Computed: true,
				MarkdownDescription: "Nodes per zone. Conflicts with `autoscaling` (then it reports the current size). A decrease deletes nodes GKE chooses: the data-loss guard names the ordinals at risk.",
				PlanModifiers:       []planmodifier.Int64{int64planmodifier.UseStateForUnknown()},
				Validators:          []validator.Int64{int64validator.AtLeast(0)},
			},
			"autoscaling": schema.SingleNestedAttribute{
				Optional:            true,
				MarkdownDescription: "Cluster autoscaler limits per zone. Conflicts with `node_count`.",
				Validators:          []validator.Object{objectvalidator.ConflictsWith(path.MatchRoot("node_count"))},
				Attributes: map[string]schema.Attribute{
					"min_node_count": schema.Int64Attribute{Optional: true, Computed: true, Default: int64default.StaticInt64(0),
						MarkdownDescription: "Minimum nodes per zone (default 0).", Validators: []validator.Int64{int64validator.AtLeast(0)}},
					"max_node_count": schema.Int64Attribute{Required: true, MarkdownDescription: "Maximum nodes per zone.",
						Validators: []validator.Int64{int64validator.AtLeast(1), int64validator.AtLeastSumOf(path.MatchRelative().AtParent().AtName("min_node_count"))}},
					"location_policy": schema.StringAttribute{Optional: true, Computed: true,
						MarkdownDescription: "`BALANCED` (default) or `ANY`.",
						PlanModifiers:       []planmodifier.String{keepPriorString{}},
						Validators:          []validator.String{stringvalidator.OneOf("BALANCED", "ANY")}},
				},
			},
			"local_nvme_ssd_count": schema.Int64Attribute{
				Optional: true, Computed: true,
				MarkdownDescription: "Local SSDs per node attached as raw NVMe block devices (`node_config.local_nvme_ssd_block_config.local_ssd_count`), for TopoLVM. " +
					"On Gen3 `-lssd` machine types the count is fixed; leaving it unset or 0 means the type's count and causes no diff. " +
					"Counts are checked at plan against the machine family's allowed values. Changing it replaces the node pool.",
				PlanModifiers: []planmodifier.Int64{localSSDCountModifier{}},
				Validators:    []validator.Int64{int64validator.AtLeast(0)},
			},
			"ephemeral_storage_local_ssd_count": schema.Int64Attribute{
				Optional: true, Computed: true, Default: int64default.StaticInt64(0),
				MarkdownDescription: replace("Local SSDs per node that back node ephemeral storage instead of the boot disk (`ephemeral_storage_local_ssd_config`). " +
					"Whether GKE accepts it for a machine type, and together with raw-block Local SSDs, is the API's decision at apply."),
				PlanModifiers: []planmodifier.Int64{int64planmodifier.RequiresReplace()},
				Validators:    []validator.Int64{int64validator.AtLeast(0)},
			},
			"boot_disk": schema.SingleNestedAttribute{
				Optional: true, Computed: true,
				MarkdownDescription: recreate("Boot disk. Unless `ephemeral_storage_local_ssd_count` is set, it also holds all node ephemeral storage (images, writable layers, logs, emptyDir)."),
				PlanModifiers:       []planmodifier.Object{objectplanmodifier.UseStateForUnknown()},
				Attributes: map[string]schema.Attribute{
					"type": schema.StringAttribute{Optional: true, Computed: true,
						MarkdownDescription: "`pd-balanced` (GKE default), `pd-standard`, `pd-ssd`, `pd-extreme` or a Hyperdisk type the machine family takes.",
						PlanModifiers:       []planmodifier.String{keepPriorString{}},
						Validators:          []validator.String{stringvalidator.OneOf(gkerules.BootDiskTypes...)}},
					"size_gb": schema.Int64Attribute{Optional: true, Computed: true,
						MarkdownDescription: fmt.Sprintf("Size in GiB (GKE default %d, minimum %d).", gkerules.DefaultBootDiskGiB, gkerules.MinBootDiskGiB),
						PlanModifiers:       []planmodifier.Int64{keepPriorInt64{}},
						Validators:          []validator.Int64{int64validator.AtLeast(gkerules.MinBootDiskGiB)}},
					"provisioned_iops": schema.Int64Attribute{Optional: true, Computed: true,
						MarkdownDescription: "Provisioned IOPS of a `hyperdisk-balanced` boot disk (`node_config.boot_disk.provisioned_iops`).",
						PlanModifiers:       []planmodifier.Int64{keepPriorInt64{}},
						Validators:          []validator.Int64{int64validator.AtLeast(0)}},
					"provisioned_throughput": schema.Int64Attribute{Optional: true, Computed: true,
						MarkdownDescription: "Provisioned throughput in MiB/s of a `hyperdisk-balanced` boot disk (`node_config.boot_disk.provisioned_throughput`).",
						PlanModifiers:       []planmodifier.Int64{keepPriorInt64{}},
						Validators:          []validator.Int64{int64validator.AtLeast(0)}},
				},
			},
			"image_type": schema.StringAttribute{
				Optional: true, Computed: true,
				MarkdownDescription: recreate("Node image, e.g. `COS_CONTAINERD` (GKE default)."),
				PlanModifiers:       []planmodifier.String{stringplanmodifier.UseStateForUnknown()},
			},
			"labels": schema.MapAttribute{
				ElementType: types.StringType, Optional: true,
				MarkdownDescription: "Kubernetes labels on every node; updated in place.",
			},
			"taints": schema.ListNestedAttribute{
				Optional:            true,
				MarkdownDescription: "Kubernetes taints on every node; updated in place. A `NO_EXECUTE` taint added or changed makes Kubernetes evict the Pods that do not tolerate it, and an ordinal whose PVs pin it to the pool then stays Pending: the data-loss guard refuses it while such Pods live on the pool (`allow_local_data_loss` accepts it). `NO_SCHEDULE`, `PREFER_NO_SCHEDULE` and removals evict nothing.",
				NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
					"key":   schema.StringAttribute{Required: true, MarkdownDescription: "Taint key."},
					"value": schema.StringAttribute{Optional: true, MarkdownDescription: "Taint value."},
					"effect": schema.StringAttribute{Required: true, MarkdownDescription: "`NO_SCHEDULE`, `PREFER_NO_SCHEDULE` or `NO_EXECUTE`.",
						Validators: []validator.String{stringvalidator.OneOf("NO_SCHEDULE", "PREFER_NO_SCHEDULE", "NO_EXECUTE")}},
				}},
			},
			"storage_startup_taint": schema.BoolAttribute{
				Optional: true, Computed: true, Default: booldefault.StaticBool(false),
				MarkdownDescription: "Adds the startup taint `" + stsutil.TaintStorageNotReady + "=true:NO_SCHEDULE` to the pool's taints sent to GKE " +
					"(not shown in `taints`), so GKE puts it on every node it creates or recreates for the pool and nothing without a toleration " +
					"lands there before the node's storage is ready. The volume-group bootstrap DaemonSet ([`examples/topolvm-gke`](https://github.com/olapgke/terraform-provider-olapgke/tree/main/examples/topolvm-gke)) creates the " +
					"volume group on the node's empty raw-block Local SSDs, then removes the taint from the Node and annotates it `" +
					stsutil.AnnotationVolumeGroup + ": <vg> created <time> on <devices>`; without the bootstrap the taint stays. " +
					"See the guide [Running on real GKE](../guides/running-on-real-gke.md). Updated in place like `taints`: turning it on " +
					"taints the existing nodes too, until the bootstrap's next pass removes it again. Default `false`.",
			},
			"resource_labels": schema.MapAttribute{
				ElementType: types.StringType, Optional: true,
				MarkdownDescription: "GCP labels on the node VMs; updated in place. Labels GKE adds itself (`goog-*`) are not shown.",
			},
			"spot": schema.BoolAttribute{
				Optional: true, Computed: true, Default: booldefault.StaticBool(false),
				MarkdownDescription: replace("Spot VMs."),
				PlanModifiers:       []planmodifier.Bool{boolplanmodifier.RequiresReplace()},
			},
			"service_account": schema.StringAttribute{
				Optional: true, Computed: true,
				MarkdownDescription: replace("Service account of the nodes (GKE default: `default`)."),
				PlanModifiers:       []planmodifier.String{stringplanmodifier.UseStateForUnknown(), stringplanmodifier.RequiresReplace()},
			},
			"oauth_scopes": schema.SetAttribute{
				ElementType: types.StringType, Optional: true, Computed: true,
				MarkdownDescription: replace("OAuth scopes of the nodes (GKE default: the logging/monitoring/storage read-only set)."),
				PlanModifiers:       []planmodifier.Set{setplanmodifier.UseStateForUnknown(), setplanmodifier.RequiresReplace()},
			},
			"management": schema.SingleNestedAttribute{
				Optional: true, Computed: true,
				MarkdownDescription: "Auto-repair and auto-upgrade (GKE default: both on); updated in place. Both repair and upgrade recreate nodes and lose Local SSD data outside Terraform's control, but a cluster enrolled in a release channel (RAPID, REGULAR, STABLE, EXTENDED: most clusters) requires both on, and the plan refuses `false` there (GKE would at apply). Hold upgrades off with a cluster [maintenance exclusion](https://cloud.google.com/kubernetes-engine/docs/concepts/maintenance-windows-and-exclusions) (scope \"no minor or node upgrades\", up to the end of support) instead.",
				PlanModifiers:       []planmodifier.Object{objectplanmodifier.UseStateForUnknown()},
				Attributes: map[string]schema.Attribute{
					"auto_repair": schema.BoolAttribute{Optional: true, Computed: true, MarkdownDescription: "Node auto-repair. Must stay on in a release-channel cluster (checked at plan).",
						PlanModifiers: []planmodifier.Bool{keepPriorBool{}}},
					"auto_upgrade": schema.BoolAttribute{Optional: true, Computed: true, MarkdownDescription: "Node auto-upgrade. Must stay on in a release-channel cluster (checked at plan); use a maintenance exclusion to hold upgrades off.",
						PlanModifiers: []planmodifier.Bool{keepPriorBool{}}},
				},
			},
			"upgrade_settings": schema.SingleNestedAttribute{
				Optional: true, Computed: true,
				MarkdownDescription: "How GKE recreates nodes during upgrades and VM-recreating updates; updated in place.",
				PlanModifiers:       []planmodifier.Object{objectplanmodifier.UseStateForUnknown()},
				Attributes: map[string]schema.Attribute{
					"strategy": schema.StringAttribute{Optional: true, Computed: true, MarkdownDescription: "`SURGE` (default) or `BLUE_GREEN`.",
						PlanModifiers: []planmodifier.String{keepPriorString{}},
						Validators:    []validator.String{stringvalidator.OneOf("SURGE", "BLUE_GREEN")}},
					"max_surge": schema.Int64Attribute{Optional: true, Computed: true, MarkdownDescription: "SURGE: extra nodes during the upgrade.",
						PlanModifiers: []planmodifier.Int64{keepPriorInt64{}},
						Validators:    []validator.Int64{int64validator.AtLeast(0)}},
					"max_unavailable": schema.Int64Attribute{Optional: true, Computed: true, MarkdownDescription: "SURGE: nodes that may be unavailable at once.",
						PlanModifiers: []planmodifier.Int64{keepPriorInt64{}},
						Validators:    []validator.Int64{int64validator.AtLeast(0)}},
					"blue_green": schema.SingleNestedAttribute{Optional: true, MarkdownDescription: "BLUE_GREEN settings.",
						Attributes: map[string]schema.Attribute{
							"node_pool_soak_duration": schema.StringAttribute{Optional: true, MarkdownDescription: "Soak time after all batches, e.g. `3600s`.",
								Validators: []validator.String{durations.AtLeastZero()}},
							"batch_percentage": schema.Float64Attribute{Optional: true, MarkdownDescription: "Fraction (0-1] of nodes drained per batch.",
								Validators: []validator.Float64{float64validator.Between(0, 1), float64validator.ConflictsWith(path.MatchRelative().AtParent().AtName("batch_node_count"))}},
							"batch_node_count": schema.Int64Attribute{Optional: true, MarkdownDescription: "Nodes drained per batch.", Validators: []validator.Int64{int64validator.AtLeast(1)}},
							"batch_soak_duration": schema.StringAttribute{Optional: true, MarkdownDescription: "Soak time between batches, e.g. `60s`.",
								Validators: []validator.String{durations.AtLeastZero()}},
						}},
				},
			},
			"kubelet_config": schema.SingleNestedAttribute{
				Optional: true,
				MarkdownDescription: recreate("Kubelet eviction settings GKE accepts (soft thresholds, their grace periods, minimum reclaim, max Pod grace period). " +
					"Keys: `" + strings.Join(evictionSignals, "`, `") + "`. A soft `nodefs.available` above the hard 10% counts in `ephemeral_storage`."),
				Attributes: merge(map[string]schema.Attribute{
					"eviction_soft": schema.MapAttribute{ElementType: types.StringType, Optional: true,
						MarkdownDescription: "Soft eviction thresholds, e.g. `{ \"nodefs.available\" = \"15%\" }` (memory.available takes a quantity such as `200Mi`).",
						Validators:          []validator.Map{mapvalidator.KeysAre(stringvalidator.OneOf(evictionSignals...))}},
					"eviction_soft_grace_period": schema.MapAttribute{ElementType: types.StringType, Optional: true,
						MarkdownDescription: "Grace period per soft threshold, e.g. `{ \"nodefs.available\" = \"60s\" }`.",
						Validators:          []validator.Map{mapvalidator.KeysAre(stringvalidator.OneOf(evictionSignals...))}},
					"eviction_minimum_reclaim": schema.MapAttribute{ElementType: types.StringType, Optional: true,
						MarkdownDescription: "Minimum reclaim per signal, e.g. `{ \"nodefs.available\" = \"5%\" }`.",
						Validators:          []validator.Map{mapvalidator.KeysAre(stringvalidator.OneOf(evictionSignals...))}},
					"eviction_max_pod_grace_period_seconds": schema.Int64Attribute{Optional: true,
						MarkdownDescription: "Maximum Pod termination grace period for soft evictions.",
						Validators:          []validator.Int64{int64validator.Between(0, 300)}},
				}, kubeletAttributes()),
			},
			"version": schema.StringAttribute{
				Optional: true, Computed: true,
				MarkdownDescription: recreate("Node Kubernetes version or alias (`1.37`, `-` for the control plane's); GKE's default is the control plane version."),
				PlanModifiers:       []planmodifier.String{stringplanmodifier.UseStateForUnknown()},
			},
			"deletion_protection": schema.BoolAttribute{
				Optional: true, Computed: true, Default: booldefault.StaticBool(true),
				MarkdownDescription: "When true (default), destroying or replacing the pool is refused at plan. Set it to false and apply before destroying.",
			},
			"allow_local_data_loss": schema.BoolAttribute{
				Optional: true, Computed: true, Default: booldefault.StaticBool(false),
				MarkdownDescription: "Accept changes that delete or recreate nodes while PersistentVolumes (e.g. TopoLVM) pinned to them are still bound. " +
					"Default false: such plans fail and list the StatefulSet ordinals and PVCs concerned; move them first (`olapgke_statefulset_migration`).",
			},
			"expected_ephemeral_gib": schema.Float64Attribute{
				Optional: true,
				MarkdownDescription: "Expected ephemeral-storage use per node in GiB (images, writable layers, logs, emptyDir). When unset, the demand is the " +
					"sum of ephemeral-storage requests of the Pods that target this pool, per node.",
				Validators: []validator.Float64{float64validator.AtLeast(0)},
			},
			"instance_group_urls": schema.ListAttribute{
				ElementType: types.StringType, Computed: true,
				MarkdownDescription: "Managed instance groups of the pool.",
				PlanModifiers:       []planmodifier.List{listplanmodifier.UseStateForUnknown()},
			},
			"nodes": schema.ListAttribute{
				ElementType: types.StringType, Computed: true,
				MarkdownDescription: "Names of the Kubernetes Nodes now in the pool (label `cloud.google.com/gke-nodepool`), sorted.",
				PlanModifiers:       []planmodifier.List{listplanmodifier.UseStateForUnknown()},
			},
			"local_ssd_gib_per_node": schema.Int64Attribute{
				Computed:            true,
				MarkdownDescription: fmt.Sprintf("Raw-block Local SSD capacity per node: count x %d GiB.", gkerules.LocalSSDGiB),
			},
			"ephemeral_storage": schema.SingleNestedAttribute{
				Computed: true,
				MarkdownDescription: "Ephemeral-storage arithmetic of one node, computed at plan (see the sizing guide). A negative `headroom_gib` " +
					"means nodes will hit DiskPressure and the plan warns.",
				Attributes: map[string]schema.Attribute{
					"backing":                schema.StringAttribute{Computed: true, MarkdownDescription: "`boot-disk` or `local-ssd`."},
					"boot_disk_gib":          schema.Float64Attribute{Computed: true, MarkdownDescription: "Boot disk size."},
					"capacity_gib":           schema.Float64Attribute{Computed: true, MarkdownDescription: "Node filesystem capacity (boot disk minus the OS's partitions, or the Local SSDs)."},
					"reserved_gib":           schema.Float64Attribute{Computed: true, MarkdownDescription: "What GKE reserves for system components."},
					"eviction_threshold_gib": schema.Float64Attribute{Computed: true, MarkdownDescription: "Free space below which kubelet evicts Pods."},
					"eviction_signal":        schema.StringAttribute{Computed: true, MarkdownDescription: "The threshold in kubelet's terms."},
					"allocatable_gib":        schema.Float64Attribute{Computed: true, MarkdownDescription: "Ephemeral storage the scheduler hands to Pods."},
					"demand_gib":             schema.Float64Attribute{Computed: true, MarkdownDescription: "Expected demand per node."},
					"demand_source":          schema.StringAttribute{Computed: true, MarkdownDescription: "Where the demand comes from."},
					"headroom_gib":           schema.Float64Attribute{Computed: true, MarkdownDescription: "capacity - reserved - eviction threshold - demand."},
				},
			},
		}, nodeConfigAttributes(replace, recreate, inPlace)),
		Blocks: map[string]schema.Block{
			"timeouts": timeouts.Block(ctx, timeouts.Opts{
				Create: true, Read: true, Update: true, Delete: true,
				CreateDescription: timeoutDoc("creating the pool (the GKE operation and its nodes)", defaultCreateTimeout),
				ReadDescription:   timeoutDoc("reading the pool and its nodes at refresh", defaultReadTimeout),
				UpdateDescription: timeoutDoc("all the GKE operations of one update (an upgrade recreates every VM)", defaultUpdateTimeout),
				DeleteDescription: timeoutDoc("deleting the pool", defaultDeleteTimeout),
			}),
		},
	}
}

// timeoutDoc is the description of one timeouts field, its default from the constant the CRUD
// code uses, so the docs cannot drift from it.
func timeoutDoc(what string, def time.Duration) string {
	return fmt.Sprintf("How long to wait for %s. Default `%s`. A duration such as `45m` or `2h` (units `s`, `m`, `h`).", what, shortDuration(def))
}

// shortDuration prints 30m0s as 30m and 1h0m0s as 1h.
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

func merge(a, b map[string]schema.Attribute) map[string]schema.Attribute {
	for k, v := range b {
		a[k] = v
	}
	return a
}

func providerDefaulted(desc string) schema.StringAttribute {
	return schema.StringAttribute{
		Optional: true, Computed: true,
		MarkdownDescription: desc + " Changing it replaces the node pool.",
		PlanModifiers:       []planmodifier.String{stringplanmodifier.UseStateForUnknown(), stringplanmodifier.RequiresReplace()},
	}
}

// localSSDCountModifier keeps local_nvme_ssd_count stable and decides replacement: an unset count
// keeps the state's value (the API reports the type's fixed count on -lssd types); a configured
// count replaces the pool only when it means a different number of disks (0 and the fixed count
// are the same on -lssd types; hashicorp/terraform-provider-google#17068).
type localSSDCountModifier struct{}

func (localSSDCountModifier) Description(context.Context) string {
	return "keeps the Local SSD count stable on -lssd machine types; a real change replaces the node pool"
}
func (m localSSDCountModifier) MarkdownDescription(ctx context.Context) string {
	return m.Description(ctx)
}

func (localSSDCountModifier) PlanModifyInt64(ctx context.Context, req planmodifier.Int64Request, resp *planmodifier.Int64Response) {
	if req.State.Raw.IsNull() {
		return // create: the API (or ModifyPlan) decides an unset count
	}
	var machine types.String
	var eph types.Int64
	resp.Diagnostics.Append(req.Plan.GetAttribute(ctx, path.Root("machine_type"), &machine)...)
	resp.Diagnostics.Append(req.Plan.GetAttribute(ctx, path.Root("ephemeral_storage_local_ssd_count"), &eph)...)
	if req.ConfigValue.IsNull() {
		if !req.StateValue.IsNull() && !machine.IsUnknown() &&
			gkerules.SameLocalSSDCount(machine.ValueString(), 0, req.StateValue.ValueInt64(), eph.ValueInt64()) {
			resp.PlanValue = req.StateValue
		} else if !req.StateValue.IsNull() && machine.IsUnknown() {
			resp.PlanValue = req.StateValue
		} else if !req.StateValue.IsNull() {
			// unset on a type where 0 differs from the current count: 0 disks, a replacement
			resp.PlanValue = types.Int64Value(0)
			resp.RequiresReplace = true
		}
		return
	}
	if req.ConfigValue.IsUnknown() || req.StateValue.IsNull() || machine.IsUnknown() {
		return
	}
	if !gkerules.SameLocalSSDCount(machine.ValueString(), req.ConfigValue.ValueInt64(), req.StateValue.ValueInt64(), eph.ValueInt64()) {
		resp.RequiresReplace = true
	}
}
