package statefulset

import (
	"context"

	"github.com/hashicorp/terraform-plugin-framework/resource"

	"github.com/olapgke/terraform-provider-olapgke/internal/resources/stateupgrade"
)

// schemaVersion is the version of olapgke_statefulset's schema. 1: ordinals[*].name,
// plan_summary and claim_resizes.
const schemaVersion = 1

var _ resource.ResourceWithUpgradeState = (*statefulSetResource)(nil)

// UpgradeState upgrades state written by earlier versions of the provider.
func (r *statefulSetResource) UpgradeState(context.Context) map[int64]resource.StateUpgrader {
	return map[int64]resource.StateUpgrader{
		// No prior schema: the upgrade edits the raw JSON state, which carries the manifest
		// (a dynamic value) untouched.
		0: stateupgrade.FromRawJSON("Upgrading olapgke_statefulset state from schema version 0 (adding ordinals[*].name).",
			func(raw []byte) ([]byte, error) {
				return stateupgrade.AddOrdinalNames(raw, "ordinals", "plan_summary", "claim_resizes")
			}),
	}
}
