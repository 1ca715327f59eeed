// Package migration is the olapgke_statefulset_migration resource: it moves
// StatefulSet ordinals between node pools one at a time during apply
// (planmigration.Migration.Plan decides at plan, engine.Migrate acts at apply).
package migration

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/olapgke/terraform-provider-olapgke/internal/clients"
	"github.com/olapgke/terraform-provider-olapgke/internal/diagnostics"
	planmigration "github.com/olapgke/terraform-provider-olapgke/internal/planner/migration"
)

var (
	_ resource.Resource                   = (*migrationResource)(nil)
	_ resource.ResourceWithConfigure      = (*migrationResource)(nil)
	_ resource.ResourceWithImportState    = (*migrationResource)(nil)
	_ resource.ResourceWithModifyPlan     = (*migrationResource)(nil)
	_ resource.ResourceWithValidateConfig = (*migrationResource)(nil)
)

type migrationResource struct {
	clients *clients.Clients
	// resync is the engine's longest wait without an informer event (0: its default).
	resync time.Duration
}

// NewStatefulSetMigrationResource returns the olapgke_statefulset_migration resource.
func NewStatefulSetMigrationResource() resource.Resource { return &migrationResource{} }

func (r *migrationResource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_statefulset_migration"
}

func (r *migrationResource) Configure(_ context.Context, req resource.ConfigureRequest, resp *resource.ConfigureResponse) {
	if c := clients.FromProviderData(req.ProviderData, &resp.Diagnostics); c != nil {
		r.clients = c
	}
}

func (r *migrationResource) ImportState(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse) {
	if req.ID = identitySpec.ImportID(ctx, req, &resp.Diagnostics); resp.Diagnostics.HasError() {
		return // an import by identity goes on with the ID it stands for (identitySpec)
	}
	ns, name, ok := strings.Cut(req.ID, "/")
	if !ok || ns == "" || name == "" || strings.Contains(name, "/") {
		resp.Diagnostics.Append(diagnostics.Error("Invalid Import ID", diagnostics.Detail{
			Checked: fmt.Sprintf("The import ID %q.", req.ID),
			Found:   "It is not of the form <namespace>/<statefulset>.",
			Do:      "Import with e.g. `terraform import olapgke_statefulset_migration.historical olap/historical`.",
		}))
		return
	}
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("id"), types.StringValue(ns+"/"+name))...)
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("namespace"), types.StringValue(ns))...)
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("statefulset"), types.StringValue(name))...)
}

func (r *migrationResource) ValidateConfig(ctx context.Context, req resource.ValidateConfigRequest, resp *resource.ValidateConfigResponse) {
	var order types.String
	var ordinals types.List
	resp.Diagnostics.Append(req.Config.GetAttribute(ctx, path.Root("order"), &order)...)
	resp.Diagnostics.Append(req.Config.GetAttribute(ctx, path.Root("ordinals"), &ordinals)...)
	if resp.Diagnostics.HasError() {
		return
	}
	var gates types.List
	resp.Diagnostics.Append(req.Config.GetAttribute(ctx, path.Root("gate"), &gates)...)
	resp.Diagnostics.Append(validateGates(ctx, gates)...)
	if order.ValueString() == string(planmigration.OrderExplicit) && ordinals.IsNull() {
		resp.Diagnostics.Append(diagnostics.AttributeError(path.Root("ordinals"), "Ordinals Required For Explicit Order", diagnostics.Detail{
			Checked: `order = "explicit".`,
			Found:   "`ordinals` is not set, so there is no order to follow.",
			Do:      "List the ordinals in the order they should move, or use order = \"descending\" or \"ascending\".",
		}))
	}
}

// Delete forgets the migration: nothing in the cluster is changed.
func (r *migrationResource) Delete(context.Context, resource.DeleteRequest, *resource.DeleteResponse) {
}
