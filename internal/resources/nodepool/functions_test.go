package nodepool

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-go/tftypes"

	"github.com/olapgke/terraform-provider-olapgke/internal/functions"
)

// functionMachineTypes cover every row kind of gkerules' table: flexible counts that shrink with
// vCPUs (n2, n2d, c2), fixed n1 counts, a family without Local SSD (e2), -lssd types with a
// fixed count and their plain siblings without any.
var functionMachineTypes = []string{"n1-standard-4", "n2-standard-8", "n2-standard-32", "n2d-standard-64", "c2-standard-30",
	"e2-standard-4", "c3-standard-8-lssd", "c3d-standard-360-lssd", "c3-standard-8"}

// TestFunctionsAgreeWithTheResource: provider::olapgke::local_ssd_count and ephemeral_storage
// give the node pool resource's own answers (one table, both answers): the resource's
// ValidateConfig accepts local_nvme_ssd_count = n exactly when n is 0 or a count the function
// lists, and its planned ephemeral_storage block is the function's object.
func TestFunctionsAgreeWithTheResource(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := &nodePoolResource{c: unreachable()}
	for _, mt := range functionMachineTypes {
		counts, err := functions.LocalSSDCounts(mt)
		if err != nil {
			t.Fatalf("%s: %v", mt, err)
		}
		for n := int64(0); n <= 33; n++ {
			a := base()
			a["machine_type"], a["local_nvme_ssd_count"] = mt, n
			plan, _ := objectFor(t, r, a)
			var resp resource.ValidateConfigResponse
			r.ValidateConfig(ctx, resource.ValidateConfigRequest{Config: tfsdk.Config(plan)}, &resp)
			resourceOK := findDiag(resp.Diagnostics, "Invalid Local SSD Count") == nil
			if fnOK := n == 0 || slices.Contains(counts, n); fnOK != resourceOK {
				t.Errorf("%s with %d Local SSDs: local_ssd_count says %v (%v), the resource's validation %v (%v)", mt, n, fnOK, counts, resourceOK, resp.Diagnostics)
			}
		}
		for _, eph := range []int64{0, 1, 2, 4} {
			for _, disk := range []int64{10, 100, 375} {
				want, _, ferr := functions.Ephemeral(mt, disk, eph)
				a := base()
				a["machine_type"], a["local_nvme_ssd_count"], a["ephemeral_storage_local_ssd_count"] = mt, int64(0), eph
				a["boot_disk.size_gb"] = disk
				plan, _ := objectFor(t, r, a)
				var vr resource.ValidateConfigResponse
				r.ValidateConfig(ctx, resource.ValidateConfigRequest{Config: tfsdk.Config(plan)}, &vr)
				if (ferr != nil) != vr.Diagnostics.HasError() {
					t.Errorf("%s, %d GiB, %d ephemeral: function error %v, resource validation %v", mt, disk, eph, ferr, vr.Diagnostics)
				}
				if ferr != nil {
					continue
				}
				req := resource.ModifyPlanRequest{Config: tfsdk.Config(plan), Plan: plan,
					State: tfsdk.State{Schema: plan.Schema, Raw: tftypes.NewValue(plan.Raw.Type(), nil)}}
				resp := resource.ModifyPlanResponse{Plan: plan}
				r.ModifyPlan(ctx, req, &resp)
				var got ephemeralModel
				if d := resp.Plan.GetAttribute(ctx, path.Root("ephemeral_storage"), &got); d.HasError() {
					t.Fatalf("%s: %v", mt, d)
				}
				g := fmt.Sprintf("%s %g %g %g %g %s %g", got.Backing.ValueString(), got.BootDiskGiB.ValueFloat64(), got.CapacityGiB.ValueFloat64(), got.ReservedGiB.ValueFloat64(),
					got.EvictionThresholdGiB.ValueFloat64(), got.EvictionSignal.ValueString(), got.AllocatableGiB.ValueFloat64())
				w := fmt.Sprintf("%s %g %g %g %g %s %g", want.Backing, want.BootDiskGiB, want.CapacityGiB, want.ReservedGiB, want.EvictionThresholdGiB, want.EvictionSignal, want.AllocatableGiB)
				if g != w {
					t.Errorf("%s, %d GiB boot disk, %d ephemeral Local SSDs: resource %s, function %s", mt, disk, eph, g, w)
				}
			}
		}
	}
}
