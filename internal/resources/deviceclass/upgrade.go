package deviceclass

import (
	"context"

	"github.com/hashicorp/terraform-plugin-framework/resource"

	"github.com/olapgke/terraform-provider-olapgke/internal/resources/stateupgrade"
)

// schemaVersion is the version of olapgke_topolvm_device_class's schema. 1: volumes[*].stateful_set
// renamed volumes[*].statefulset, the spelling of every other olapgke resource.
const schemaVersion = 1

var _ resource.ResourceWithUpgradeState = (*deviceClassResource)(nil)

// UpgradeState upgrades state written by earlier versions of the provider.
func (r *deviceClassResource) UpgradeState(context.Context) map[int64]resource.StateUpgrader {
	return map[int64]resource.StateUpgrader{
		// No prior schema: the upgrade edits the raw JSON state.
		0: stateupgrade.FromRawJSON("Upgrading olapgke_topolvm_device_class state from schema version 0 (renaming volumes[*].stateful_set to volumes[*].statefulset).",
			func(raw []byte) ([]byte, error) {
				return stateupgrade.RenameElemAttr(raw, "volumes", "stateful_set", "statefulset")
			}),
	}
}
