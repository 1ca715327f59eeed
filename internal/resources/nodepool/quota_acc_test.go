package nodepool_test

import (
	"context"
	"regexp"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"

	"github.com/olapgke/terraform-provider-olapgke/internal/acctest"
)

// TestAccLocalSSDNodePool_QuotaShortfall (#40 item 7): with the region's N2 CPU quota used up,
// GKE refuses the pool's creation with 403 PERMISSION_DENIED "Insufficient regional quota ...";
// the apply's error quotes it and advises quota or a smaller pool, not IAM. Nothing is created:
// once the quota is lifted the same configuration applies.
func TestAccLocalSSDNodePool_QuotaShortfall(t *testing.T) {
	env := acctest.Sandbox(t)
	ctx := t.Context()
	// The sandbox's pools use 3 x 8 N2 CPUs: nothing is left for another n2-standard-8.
	if err := env.SetRegionalQuota(ctx, map[string]float64{"N2_CPUS": 24}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.SetRegionalQuota(context.Background(), nil) })
	cfg := poolConfig("q", "quota-short", `
  node_count = 1
`)
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config:      cfg,
				ExpectError: regexp.MustCompile(`(?s)Node Pool Creation Failed.*PermissionDenied: Insufficient regional\s+quota.*N2_CPUS.*not a\s+permission.*Request more\s+quota\s+for\s+N2_CPUS`),
			},
			{
				PreConfig: func() {
					if err := env.SetRegionalQuota(ctx, nil); err != nil {
						t.Fatal(err)
					}
				},
				Config: cfg,
				Check:  resource.TestCheckResourceAttr("olapgke_local_ssd_node_pool.q", "nodes.#", "1"),
			},
		},
	})
}
