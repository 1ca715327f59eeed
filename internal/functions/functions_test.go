package functions

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/function"
	"github.com/hashicorp/terraform-plugin-framework/types"
)

func TestLocalSSDCounts(t *testing.T) {
	t.Parallel()
	for mt, want := range map[string][]int64{
		"n2-standard-8":         {1, 2, 4, 8, 16, 24},
		"n2-standard-32":        {4, 8, 16, 24},
		"n1-standard-4":         {1, 2, 3, 4, 5, 6, 7, 8, 16, 24},
		"c2-standard-60":        {8},
		"c3-standard-8-lssd":    {2},
		"c3d-standard-360-lssd": {32},
		"e2-standard-4":         {},
		"c3-standard-8":         {},
	} {
		got, err := LocalSSDCounts(mt)
		if err != nil || !cmp.Equal(got, want) {
			t.Errorf("%s: %v %v, want %v", mt, got, err, want)
		}
	}
	if _, err := LocalSSDCounts("z3-highmem-88"); err == nil || !strings.Contains(err.Error(), "GKE decides") {
		t.Errorf("unknown type: %v", err)
	}
}

func TestEphemeral(t *testing.T) {
	t.Parallel()
	// GKE's node sizing page: a 100 GiB boot disk, capacity 98831908Ki, allocatable 43.83 GiB.
	e, _, err := Ephemeral("n2-standard-8", 100, 0)
	if err != nil || e.Backing != "boot-disk" || e.CapacityGiB != 94.25 || e.ReservedGiB != 41 || e.EvictionThresholdGiB != 9.43 ||
		e.EvictionSignal != "nodefs.available<10%" || e.AllocatableGiB != 43.83 {
		t.Errorf("n2-standard-8, 100 GiB: %+v %v", e, err)
	}
	e, _, err = Ephemeral("n2-standard-8", 100, 2)
	if err != nil || e.Backing != "local-ssd" || e.CapacityGiB != 750 || e.ReservedGiB != 75 || e.EvictionThresholdGiB != 75 || e.AllocatableGiB != 600 {
		t.Errorf("n2-standard-8, 2 ephemeral Local SSDs: %+v %v", e, err)
	}
	for name, tc := range map[string]struct {
		mt        string
		disk, eph int64
		arg       int
		want      string
	}{
		"small disk":           {"n2-standard-8", 9, 0, 1, "below GKE's minimum"},
		"negative count":       {"n2-standard-8", 100, -1, 2, "negative"},
		"count the type lacks": {"n2-standard-8", 100, 3, 2, "accepts 1, 2, 4, 8, 16, 24"},
		"no local ssd":         {"e2-standard-4", 100, 1, 2, "takes no Local SSD"},
		"lssd other count":     {"c3-standard-8-lssd", 100, 1, 2, "exactly 2"},
	} {
		if _, arg, err := Ephemeral(tc.mt, tc.disk, tc.eph); err == nil || arg != tc.arg || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: argument %d, %v; want argument %d, %q", name, arg, err, tc.arg, tc.want)
		}
	}
	if _, _, err := Ephemeral("z3-highmem-88", 200, 1); err != nil {
		t.Errorf("a type the table does not know is GKE's to judge: %v", err)
	}
}

// TestRun calls both functions through the framework, as Terraform does.
func TestRun(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	run := func(f function.Function, args ...attr.Value) function.RunResponse {
		var def function.DefinitionResponse
		f.Definition(ctx, function.DefinitionRequest{}, &def)
		var zero attr.Value = types.ListNull(types.Int64Type)
		if o, ok := def.Definition.Return.(function.ObjectReturn); ok {
			zero = types.ObjectNull(o.AttributeTypes)
		}
		resp := function.RunResponse{Result: function.NewResultData(zero)}
		f.Run(ctx, function.RunRequest{Arguments: function.NewArgumentsData(args)}, &resp)
		return resp
	}
	resp := run(NewLocalSSDCount(), types.StringValue("c2-standard-16"))
	want, _ := types.ListValueFrom(ctx, types.Int64Type, []int64{2, 4, 8})
	if resp.Error != nil || !resp.Result.Value().Equal(want) {
		t.Errorf("local_ssd_count(c2-standard-16) = %v, %v", resp.Result.Value(), resp.Error)
	}
	if resp := run(NewLocalSSDCount(), types.StringValue("z3-highmem-88")); resp.Error == nil || resp.Error.FunctionArgument == nil || *resp.Error.FunctionArgument != 0 {
		t.Errorf("unknown type: %v", resp.Error)
	}
	resp = run(NewEphemeralStorage(), types.StringValue("n2-standard-8"), types.Int64Value(100), types.Int64Value(0))
	obj, ok := resp.Result.Value().(types.Object)
	if resp.Error != nil || !ok || obj.Attributes()["eviction_threshold_gib"].Equal(types.Float64Value(9.43)) == false ||
		!obj.Attributes()["allocatable_gib"].Equal(types.Float64Value(43.83)) {
		t.Errorf("ephemeral_storage(n2-standard-8, 100, 0) = %v, %v", resp.Result.Value(), resp.Error)
	}
	if resp := run(NewEphemeralStorage(), types.StringValue("n2-standard-8"), types.Int64Value(5), types.Int64Value(0)); resp.Error == nil ||
		resp.Error.FunctionArgument == nil || *resp.Error.FunctionArgument != 1 {
		t.Errorf("5 GiB boot disk: %v", resp.Error)
	}
}
