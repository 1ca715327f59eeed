package migration

import (
	"context"

	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6"

	"github.com/olapgke/terraform-provider-olapgke/internal/diagnostics"
	"github.com/olapgke/terraform-provider-olapgke/internal/resources/stateupgrade"
)

// schemaVersion is the version of olapgke_statefulset_migration's schema. 1: moves[*].name,
// completed[*].name and plan_summary.
const schemaVersion = 1

var _ resource.ResourceWithUpgradeState = (*migrationResource)(nil)

// UpgradeState upgrades state written by earlier versions of the provider.
func (r *migrationResource) UpgradeState(context.Context) map[int64]resource.StateUpgrader {
	return map[int64]resource.StateUpgrader{
		// No prior schema: the upgrade edits the raw JSON state.
		0: {StateUpgrader: func(_ context.Context, req resource.UpgradeStateRequest, resp *resource.UpgradeStateResponse) {
			b, err := stateupgrade.AddOrdinalNames(req.RawState.JSON, "moves", "plan_summary")
			if err == nil {
				b, err = stateupgrade.AddOrdinalNames(b, "completed")
			}
			if err != nil {
				resp.Diagnostics.Append(diagnostics.ProviderBug("State Upgrade Failed",
					"Upgrading olapgke_statefulset_migration state from schema version 0 (adding moves[*].name and completed[*].name).", err))
				return
			}
			resp.DynamicValue = &tfprotov6.DynamicValue{JSON: b}
		}},
	}
}
