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

// timeouts is a block, as on every other olapgke resource: the 0.x attribute syntax
// (`timeouts = { ... }`) is refused with Terraform's hint, the block is kept in state, and
// changing it alone updates nothing in GKE.
func TestAccLocalSSDNodePool_TimeoutsBlock(t *testing.T) {
	acctest.Sandbox(t)
	name := "acc-timeouts"
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories,
		CheckDestroy:             checkGone(name),
		Steps: []resource.TestStep{
			{
				Config:      poolConfig("test", name, "  node_count = 1\n  timeouts = { create = \"20m\" }"),
				ExpectError: wrapped(`Unsupported argument.*Did you mean to define a block of type "timeouts"`),
			},
			{
				Config: poolConfig("test", name, "  node_count = 1\n  timeouts {\n    create = \"20m\"\n    update = \"2h\"\n  }"),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(res, tfjsonpath.New("timeouts").AtMapKey("create"), knownvalue.StringExact("20m")),
					statecheck.ExpectKnownValue(res, tfjsonpath.New("timeouts").AtMapKey("update"), knownvalue.StringExact("2h")),
					statecheck.ExpectKnownValue(res, tfjsonpath.New("timeouts").AtMapKey("delete"), knownvalue.Null()),
				},
			},
			{
				Config: poolConfig("test", name, "  node_count = 1\n  timeouts {\n    delete = \"45m\"\n  }"),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(res, plancheck.ResourceActionUpdate),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(res, tfjsonpath.New("timeouts").AtMapKey("delete"), knownvalue.StringExact("45m")),
					statecheck.ExpectKnownValue(res, tfjsonpath.New("timeouts").AtMapKey("create"), knownvalue.Null()),
					statecheck.ExpectKnownValue(res, tfjsonpath.New("nodes"), knownvalue.ListSizeExact(1)),
				},
			},
		},
	})
}
