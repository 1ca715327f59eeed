package nodepool_test

import (
	"fmt"
	"regexp"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/olapgke/terraform-provider-olapgke/internal/acctest"
)

// Import by resource identity (Terraform 1.12+): the identity is {project, location, cluster,
// name}; an import block with all four, or with the name alone (the provider's project,
// location and cluster, as a bare-name import ID), adopts the pool with the same identity. The
// import sets deletion_protection = true, as an import by ID does, so the plan after it turns
// it back off as configured and changes nothing else.
func TestAccLocalSSDNodePool_ImportByIdentity(t *testing.T) {
	acctest.Sandbox(t)
	name := "acc-ident"
	cfg := poolConfig("test", name, "  node_count = 1\n")
	afterImport := resource.ImportPlanChecks{PreApply: []plancheck.PlanCheck{
		plancheck.ExpectResourceAction(res, plancheck.ResourceActionUpdate),
		plancheck.ExpectKnownValue(res, tfjsonpath.New("deletion_protection"), knownvalue.Bool(false)),
		plancheck.ExpectKnownValue(res, tfjsonpath.New("node_count"), knownvalue.Int64Exact(1)),
	}}
	segment := regexp.MustCompile(`^[^/]+$`)
	resource.Test(t, resource.TestCase{
		TerraformVersionChecks:   acctest.IdentityCLI,
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories,
		CheckDestroy:             checkGone(name),
		Steps: []resource.TestStep{
			{
				Config: cfg,
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectIdentity(res, map[string]knownvalue.Check{
						"project":  knownvalue.StringRegexp(segment),
						"location": knownvalue.StringRegexp(segment),
						"cluster":  knownvalue.StringRegexp(segment),
						"name":     knownvalue.StringExact(name),
					}),
					statecheck.ExpectIdentityValueMatchesState(res, tfjsonpath.New("project")),
					statecheck.ExpectIdentityValueMatchesState(res, tfjsonpath.New("location")),
					statecheck.ExpectIdentityValueMatchesState(res, tfjsonpath.New("cluster")),
				},
			},
			{
				ResourceName: res, ImportState: true, ImportStateKind: resource.ImportBlockWithResourceIdentity,
				ExpectNonEmptyPlan: true, ImportPlanChecks: afterImport,
			},
			{
				ResourceName: res, ImportState: true, ImportStateKind: resource.ImportBlockWithResourceIdentity,
				ImportStateConfigExact: true, ExpectNonEmptyPlan: true, ImportPlanChecks: afterImport,
				Config: cfg + fmt.Sprintf(`
import {
  to       = %s
  identity = { name = %q }
}
`, res, name),
			},
			{
				Config: cfg + poolConfig("adopt", "acc-ident-other", "  node_count = 1\n") + `
import {
  to       = olapgke_local_ssd_node_pool.adopt
  identity = { project = "sandbox", name = "acc-ident-other" }
}
`,
				PlanOnly:    true,
				ExpectError: regexp.MustCompile(`Incomplete Import Identity`),
			},
		},
	})
}
