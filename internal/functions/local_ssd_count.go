package functions

import (
	"context"
	"fmt"
	"slices"

	"github.com/hashicorp/terraform-plugin-framework/function"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/olapgke/terraform-provider-olapgke/internal/gkerules"
)

var _ function.Function = (*localSSDCount)(nil)

type localSSDCount struct{}

// NewLocalSSDCount is provider::olapgke::local_ssd_count.
func NewLocalSSDCount() function.Function { return &localSSDCount{} }

func (*localSSDCount) Metadata(_ context.Context, _ function.MetadataRequest, resp *function.MetadataResponse) {
	resp.Name = "local_ssd_count"
}

func (*localSSDCount) Definition(_ context.Context, _ function.DefinitionRequest, resp *function.DefinitionResponse) {
	resp.Definition = function.Definition{
		Summary: "Local SSD counts a machine type accepts",
		MarkdownDescription: "The numbers of Local SSD disks (375 GiB each) a Compute Engine machine type accepts per node, " +
			"raw block and ephemeral storage together, ascending: the table `olapgke_local_ssd_node_pool` validates " +
			"`local_nvme_ssd_count` and `ephemeral_storage_local_ssd_count` with (Google's \"Choose a valid number of " +
			"Local SSD disks\"). A `-lssd` type comes with a fixed count: the list holds only that count. A type that " +
			"takes no Local SSD (E2, C3 without `-lssd`) gives an empty list. A type olapgke's table does not know is an " +
			"error: GKE decides for it at apply.",
		Parameters: []function.Parameter{
			function.StringParameter{Name: "machine_type", MarkdownDescription: "Compute Engine machine type, e.g. `n2-standard-8` or `c3-standard-8-lssd`."},
		},
		Return: function.ListReturn{ElementType: types.Int64Type},
	}
}

func (*localSSDCount) Run(ctx context.Context, req function.RunRequest, resp *function.RunResponse) {
	var machineType string
	resp.Error = function.ConcatFuncErrors(req.Arguments.Get(ctx, &machineType))
	if resp.Error != nil {
		return
	}
	counts, err := LocalSSDCounts(machineType)
	if err != nil {
		resp.Error = function.NewArgumentFuncError(0, err.Error())
		return
	}
	resp.Error = function.ConcatFuncErrors(resp.Result.Set(ctx, counts))
}

// LocalSSDCounts is the function's answer: the non-zero Local SSD totals machineType accepts,
// from gkerules' table (the fixed count of a -lssd type), or an error for a type the table does
// not know.
func LocalSSDCounts(machineType string) ([]int64, error) {
	mt, ok := gkerules.LookupMachineType(machineType)
	if !ok {
		return nil, fmt.Errorf("machine type %q is not in olapgke's Local SSD table (families n1, n2, n2d, c2, e2, c3, c3d): GKE decides its Local SSD counts at apply", machineType)
	}
	if mt.FixedLocalSSD > 0 {
		return []int64{mt.FixedLocalSSD}, nil
	}
	out := slices.Clone(mt.LocalSSDCounts)
	if out == nil {
		out = []int64{}
	}
	return out, nil
}
