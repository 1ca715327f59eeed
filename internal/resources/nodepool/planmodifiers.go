package nodepool

import (
	"context"

	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
)

// The framework's UseStateForUnknown copies a null prior value into the plan, which is wrong for
// attributes nested in an object that did not exist before (e.g. autoscaling.location_policy when
// autoscaling is added): GKE fills them, so they must stay unknown. These variants only copy a
// known, non-null prior value.

type keepPriorString struct{}

func (keepPriorString) Description(context.Context) string {
	return "keeps the prior value when the configuration leaves it to GKE"
}
func (m keepPriorString) MarkdownDescription(ctx context.Context) string { return m.Description(ctx) }
func (keepPriorString) PlanModifyString(_ context.Context, req planmodifier.StringRequest, resp *planmodifier.StringResponse) {
	if req.PlanValue.IsUnknown() && !req.ConfigValue.IsUnknown() && !req.StateValue.IsNull() && !req.StateValue.IsUnknown() {
		resp.PlanValue = req.StateValue
	}
}

type keepPriorInt64 struct{}

func (keepPriorInt64) Description(context.Context) string {
	return "keeps the prior value when the configuration leaves it to GKE"
}
func (m keepPriorInt64) MarkdownDescription(ctx context.Context) string { return m.Description(ctx) }
func (keepPriorInt64) PlanModifyInt64(_ context.Context, req planmodifier.Int64Request, resp *planmodifier.Int64Response) {
	if req.PlanValue.IsUnknown() && !req.ConfigValue.IsUnknown() && !req.StateValue.IsNull() && !req.StateValue.IsUnknown() {
		resp.PlanValue = req.StateValue
	}
}

type keepPriorBool struct{}

func (keepPriorBool) Description(context.Context) string {
	return "keeps the prior value when the configuration leaves it to GKE"
}
func (m keepPriorBool) MarkdownDescription(ctx context.Context) string { return m.Description(ctx) }
func (keepPriorBool) PlanModifyBool(_ context.Context, req planmodifier.BoolRequest, resp *planmodifier.BoolResponse) {
	if req.PlanValue.IsUnknown() && !req.ConfigValue.IsUnknown() && !req.StateValue.IsNull() && !req.StateValue.IsUnknown() {
		resp.PlanValue = req.StateValue
	}
}
