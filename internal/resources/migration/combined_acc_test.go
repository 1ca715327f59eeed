package migration_test

import (
	"fmt"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/olapgke/terraform-provider-olapgke/internal/acctest"
)

// testAccStatefulSetMigrationConfig_combined is the one-configuration flow:
// olapgke_statefulset (OnDelete, template on pool) + a migration that
// depends on it and judges its planned manifest.
func testAccStatefulSetMigrationConfig_combined(ns, pool string) string {
	return acctest.HistoricalStatefulSetHCL(ns, pool, "olap/historical:1") + fmt.Sprintf(`
resource "olapgke_statefulset_migration" "hist" {
  namespace        = %[1]q
  statefulset      = "hist"
  planned_manifest = jsonencode(olapgke_statefulset.hist.manifest)
  ordinal_timeout  = "3m"
  depends_on       = [olapgke_statefulset.hist]
}
`, ns)
}

func TestAccStatefulSetMigration_OneApplyWithStatefulSet(t *testing.T) {
	env := acctest.Sandbox(t)
	ensurePool(t, env, "pool-b", 3)
	const ns = "mig-combined"
	if _, err := env.Kube.CoreV1().Namespaces().Create(t.Context(), nsObject(ns), createOpts); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { deleteNamespace(env, ns) })
	f := &setFixture{env: env, ns: ns, name: "hist", n: 3, podUIDs: map[int32]string{}, pvs: map[int32]string{}}
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config: testAccStatefulSetMigrationConfig_combined(ns, "pool-a"),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectUnknownValue(res, tfjsonpath.New("moves")),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(res, tfjsonpath.New("moves"), knownvalue.ListSizeExact(0)),
				},
				Check: func(*terraformState) error {
					f.waitPlaced(t, "pool-a")
					for o := int32(0); o < 3; o++ {
						p, c := f.get(t, o)
						f.podUIDs[o], f.pvs[o] = string(p.UID), c.Spec.VolumeName
					}
					return nil
				},
			},
			{
				// One apply: the template moves to pool-b (OnDelete: nothing recreated by
				// the controller), then the migration moves every ordinal.
				Config: testAccStatefulSetMigrationConfig_combined(ns, "pool-b"),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction("olapgke_statefulset.hist", plancheck.ResourceActionUpdate),
					plancheck.ExpectResourceAction(res, plancheck.ResourceActionUpdate),
					plancheck.ExpectKnownValue(res, tfjsonpath.New("moves"), expectOrdinals(2, 1, 0)),
				}},
				Check: resource.ComposeAggregateTestCheckFunc(
					func(*terraformState) error { f.checkMoved(t, "pool-b", 2, 1, 0); return nil },
					durationsRecorded(0, 1, 2),
				),
			},
		},
	})
}
