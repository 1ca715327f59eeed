package nodepool_test

import (
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/olapgke/terraform-provider-olapgke/internal/acctest"
)

// A pool two minors behind its control plane (the sandbox's cluster runs 1.37) with auto-upgrade
// on shows the version GKE will upgrade it to; after `version = "-"` (the control plane's) it
// shows none.
func TestAccLocalSSDNodePool_PendingUpgrade(t *testing.T) {
	const name = "acc-pending-upgrade"
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories,
		CheckDestroy:             checkGone(name),
		Steps: []resource.TestStep{
			{
				Config: poolConfig("test", name, `  node_count = 1
  version    = "1.35"`),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(res, tfjsonpath.New("version"), knownvalue.StringExact("1.35")),
					statecheck.ExpectKnownValue(res, tfjsonpath.New("pending_upgrade"), knownvalue.StringExact("1.37.2-gke.1000")),
				},
			},
			{
				Config: poolConfig("test", name, `  node_count = 1
  version    = "-"`),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(res, tfjsonpath.New("pending_upgrade"), knownvalue.StringExact("")),
				},
			},
		},
	})
}
