package functions

import (
	"context"
	"fmt"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/function"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/olapgke/terraform-provider-olapgke/internal/gkerules"
)

var _ function.Function = (*ephemeralStorage)(nil)

type ephemeralStorage struct{}

// NewEphemeralStorage is provider::olapgke::ephemeral_storage.
func NewEphemeralStorage() function.Function { return &ephemeralStorage{} }

// ephemeralAttrTypes are the returned object's attributes: the ephemeral_storage block of
// olapgke_local_ssd_node_pool without the demand.
var ephemeralAttrTypes = map[string]attr.Type{
	"backing": types.StringType, "boot_disk_gib": types.Float64Type, "capacity_gib": types.Float64Type,
	"reserved_gib": types.Float64Type, "eviction_threshold_gib": types.Float64Type, "eviction_signal": types.StringType,
	"allocatable_gib": types.Float64Type,
}

func (*ephemeralStorage) Metadata(_ context.Context, _ function.MetadataRequest, resp *function.MetadataResponse) {
	resp.Name = "ephemeral_storage"
}

func (*ephemeralStorage) Definition(_ context.Context, _ function.DefinitionRequest, resp *function.DefinitionResponse) {
	resp.Definition = function.Definition{
		Summary: "A GKE node's ephemeral storage: capacity, reservation, eviction threshold, allocatable",
		MarkdownDescription: "The ephemeral-storage arithmetic of one GKE node, as `olapgke_local_ssd_node_pool` computes its " +
			"`ephemeral_storage` block (see the sizing guide): where ephemeral storage lives (`boot-disk`, or `local-ssd` " +
			"when `ephemeral_local_ssd_count` > 0), the node filesystem's capacity, what GKE reserves, the free space " +
			"below which the kubelet evicts Pods and reports DiskPressure (`eviction_threshold_gib`, `eviction_signal`: " +
			"GKE's hard `nodefs.available<10%`), and what the scheduler can hand to Pods (`allocatable_gib`), all in GiB " +
			"rounded to 0.01. Expected ephemeral use per node (images, logs, emptyDir, writable layers) above " +
			"`capacity_gib - reserved_gib - eviction_threshold_gib` puts nodes under DiskPressure.",
		Parameters: []function.Parameter{
			function.StringParameter{Name: "machine_type", MarkdownDescription: "Compute Engine machine type; when olapgke's table knows it, `ephemeral_local_ssd_count` must be a count `local_ssd_count` lists (or 0), as for a pool without raw-block Local SSDs."},
			function.Int64Parameter{Name: "boot_disk_gb", MarkdownDescription: "Boot disk size in GiB (GKE's default is 100, minimum 10)."},
			function.Int64Parameter{Name: "ephemeral_local_ssd_count", MarkdownDescription: "Local SSDs that back ephemeral storage (`ephemeral_storage_local_ssd_config`); 0: the boot disk does."},
		},
		Return: function.ObjectReturn{AttributeTypes: ephemeralAttrTypes},
	}
}

func (*ephemeralStorage) Run(ctx context.Context, req function.RunRequest, resp *function.RunResponse) {
	var machineType string
	var bootDisk, ephemeral int64
	resp.Error = function.ConcatFuncErrors(req.Arguments.Get(ctx, &machineType, &bootDisk, &ephemeral))
	if resp.Error != nil {
		return
	}
	e, arg, err := Ephemeral(machineType, bootDisk, ephemeral)
	if err != nil {
		resp.Error = function.NewArgumentFuncError(int64(arg), err.Error())
		return
	}
	obj, diags := types.ObjectValue(ephemeralAttrTypes, map[string]attr.Value{
		"backing": types.StringValue(e.Backing), "boot_disk_gib": types.Float64Value(e.BootDiskGiB), "capacity_gib": types.Float64Value(e.CapacityGiB),
		"reserved_gib": types.Float64Value(e.ReservedGiB), "eviction_threshold_gib": types.Float64Value(e.EvictionThresholdGiB),
		"eviction_signal": types.StringValue(e.EvictionSignal), "allocatable_gib": types.Float64Value(e.AllocatableGiB),
	})
	if diags.HasError() {
		resp.Error = function.FuncErrorFromDiags(ctx, diags)
		return
	}
	resp.Error = function.ConcatFuncErrors(resp.Result.Set(ctx, obj))
}

// Ephemeral is the function's answer: gkerules.ComputeEphemeral with no demand, after the checks
// the node pool resource makes (boot disk size; an ephemeral Local SSD count the machine type can
// take). arg is the argument at fault when err is set.
func Ephemeral(machineType string, bootDiskGiB, ephemeralSSDs int64) (e gkerules.Ephemeral, arg int, err error) {
	if err := gkerules.CheckBootDisk(machineType, "", bootDiskGiB); err != nil {
		return e, 1, err
	}
	if ephemeralSSDs < 0 {
		return e, 2, fmt.Errorf("ephemeral Local SSD count cannot be negative (%d)", ephemeralSSDs)
	}
	// As the node pool resource checks a pool with no raw-block Local SSDs: the ephemeral count
	// must be a total the machine type accepts.
	if known, err := gkerules.CheckLocalSSD(machineType, 0, ephemeralSSDs); known && err != nil {
		return e, 2, err
	}
	return gkerules.ComputeEphemeral(gkerules.EphemeralInput{BootDiskGiB: bootDiskGiB, EphemeralLocalSSDs: ephemeralSSDs}), 0, nil
}
