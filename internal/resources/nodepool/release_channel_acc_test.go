package nodepool_test

import (
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/olapgke/terraform-provider-olapgke/internal/acctest"
)

// The sandbox's cluster is enrolled in the REGULAR release channel, as most GKE clusters are: the
// plan refuses management.auto_upgrade = false on the attribute (GKE would refuse it at apply),
// for a new pool and for a change to an existing one, and names the way to keep GKE from
// recreating the nodes instead (a maintenance exclusion).
func TestAccLocalSSDNodePool_ReleaseChannelRequiresAutoUpgrade(t *testing.T) {
	acctest.Sandbox(t)
	const name = "acc-channel"
	want := wrapped(`Auto-Upgrade Required By Release Channel.*cluster projects/[^/]+/locations/[^/]+/clusters/[^/]+ .*` +
		`management.auto_upgrade is planned false.*REGULAR release channel.*maintenance exclusion.*"no minor or node upgrades".*` +
		`maintenance-windows-and-exclusions.*no release channel`)
	off := poolConfig("test", name, `
  node_count = 1
  management = { auto_repair = true, auto_upgrade = false }
`)
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories,
		CheckDestroy:             checkGone(name),
		Steps: []resource.TestStep{
			{Config: off, PlanOnly: true, ExpectError: want},
			{ // auto_upgrade left to GKE: on
				Config: poolConfig("test", name, `
  node_count = 1
  management = { auto_repair = true }
`),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(res, plancheck.ResourceActionCreate),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(res, tfjsonpath.New("management").AtMapKey("auto_upgrade"), knownvalue.Bool(true)),
				},
			},
			{Config: off, ExpectError: want},
		},
	})
}
