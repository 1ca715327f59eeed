package identity

import (
	"context"

	"github.com/hashicorp/terraform-plugin-framework/list"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-go/tftypes"

	"github.com/olapgke/terraform-provider-olapgke/internal/diagnostics"
)

// ListResult is one `terraform query` result for the object with import ID id, built exactly as
// `terraform import` builds the resource: r's ImportState with id, then (with include_resource)
// r's Read, so the listed resource is the one an import writes, verdicts and all. Its identity
// is s's, from that state; name is what the CLI shows.
func (s Spec) ListResult(ctx context.Context, r resource.ResourceWithImportState, req list.ListRequest, id, name string) list.ListResult {
	out := req.NewListResult(ctx)
	out.DisplayName = name
	state := tfsdk.State{Schema: req.ResourceSchema, Raw: tftypes.NewValue(req.ResourceSchema.Type().TerraformType(ctx), nil)}
	imp := resource.ImportStateResponse{State: state}
	r.ImportState(ctx, resource.ImportStateRequest{ID: id}, &imp)
	out.Diagnostics.Append(imp.Diagnostics...)
	if out.Diagnostics.HasError() {
		return out
	}
	s.Write(ctx, out.Identity, &out.Diagnostics, &imp.State)
	if !req.IncludeResource {
		return out
	}
	read := resource.ReadResponse{State: imp.State}
	r.Read(ctx, resource.ReadRequest{State: imp.State}, &read)
	out.Diagnostics.Append(read.Diagnostics...)
	if read.State.Raw.IsNull() {
		out.Diagnostics.Append(diagnostics.Warning("Listed Object Gone", diagnostics.Detail{
			Checked: "Reading " + id + " for the list's result.",
			Found:   "It was gone: it was deleted while the list ran.",
			Do:      "Nothing: run the query again to list what is there now.",
		}))
		return out
	}
	out.Resource = &tfsdk.Resource{Schema: read.State.Schema, Raw: read.State.Raw}
	return out
}
