package functions_test

import (
	"math/big"
	"os"
	"regexp"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/tfversion"

	"github.com/olapgke/terraform-provider-olapgke/internal/acctest"
)

// TestAccFunctions calls both provider functions through the real Terraform CLI (provider
// functions need Terraform 1.8 or later); they need no cluster, so no sandbox is started. A
// machine type the table does not know fails the plan on the function's argument.
func TestAccFunctions(t *testing.T) {
	if os.Getenv("TF_ACC") == "" {
		t.Skip("acceptance test: set TF_ACC=1")
	}
	num := func(s string) knownvalue.Check {
		f, _, err := big.ParseFloat(s, 10, 512, big.ToNearestEven)
		if err != nil {
			t.Fatal(err)
		}
		return knownvalue.NumberExact(f)
	}
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories,
		TerraformVersionChecks:   []tfversion.TerraformVersionCheck{tfversion.SkipBelow(tfversion.Version1_8_0)},
		Steps: []resource.TestStep{
			{
				Config: `
output "counts" {
  value = provider::olapgke::local_ssd_count("n2-standard-32")
}
output "lssd" {
  value = provider::olapgke::local_ssd_count("c3-standard-8-lssd")
}
output "boot" {
  value = provider::olapgke::ephemeral_storage("n2-standard-8", 100, 0)
}
output "ssd" {
  value = provider::olapgke::ephemeral_storage("n2-standard-8", 100, 2)
}
`,
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownOutputValue("counts", knownvalue.ListExact([]knownvalue.Check{
						knownvalue.Int64Exact(4), knownvalue.Int64Exact(8), knownvalue.Int64Exact(16), knownvalue.Int64Exact(24)})),
					statecheck.ExpectKnownOutputValue("lssd", knownvalue.ListExact([]knownvalue.Check{knownvalue.Int64Exact(2)})),
					statecheck.ExpectKnownOutputValue("boot", knownvalue.ObjectExact(map[string]knownvalue.Check{
						"backing": knownvalue.StringExact("boot-disk"), "boot_disk_gib": num("100"), "capacity_gib": num("94.25"),
						"reserved_gib": num("41"), "eviction_threshold_gib": num("9.43"), "eviction_signal": knownvalue.StringExact("nodefs.available<10%"),
						"allocatable_gib": num("43.83"),
					})),
					statecheck.ExpectKnownOutputValue("ssd", knownvalue.ObjectPartial(map[string]knownvalue.Check{
						"backing": knownvalue.StringExact("local-ssd"), "capacity_gib": num("750"), "allocatable_gib": num("600"),
					})),
				},
			},
			{
				Config: `
output "unknown" {
  value = provider::olapgke::local_ssd_count("z3-highmem-88")
}
`,
				ExpectError: regexp.MustCompile(`(?s)Invalid function argument.*not in olapgke's Local SSD table`),
			},
		},
	})
}
