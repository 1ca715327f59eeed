package migration

import (
	"context"

	"github.com/hashicorp/terraform-plugin-framework/resource"

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
		0: stateupgrade.FromRawJSON("Upgrading olapgke_statefulset_migration state from schema version 0 (adding moves[*].name and completed[*].name).",
			func(raw []byte) ([]byte, error) {
				b, err := stateupgrade.AddOrdinalNames(raw, "moves", "plan_summary")
				if err != nil {
					return nil, err
				}
				return stateupgrade.AddOrdinalNames(b, "completed")
			}),
	}
}
