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

// testAccStatefulSetMigrationConfig_newPool is the StatefulSet + migration of the combined
// flow, with the template's pool taken from an olapgke_local_ssd_node_pool when withPool: its
// name reaches the template once the pool's nodes are known (as modules/olap-historical does),
// so a pool created in the same apply is judged at apply, after it exists.
func testAccStatefulSetMigrationConfig_newPool(ns, pool string, withPool bool) string {
	poolExpr := fmt.Sprintf("%q", "pool-a")
	res := ""
	if withPool {
		poolExpr = "length(olapgke_local_ssd_node_pool.target.nodes) >= 0 ? olapgke_local_ssd_node_pool.target.name : null"
		res = fmt.Sprintf(`
resource "olapgke_local_ssd_node_pool" "target" {
  name                  = %q
  machine_type          = "n2-standard-8"
  local_nvme_ssd_count  = 2
  node_count            = 2
  boot_disk             = { size_gb = 100 }
  deletion_protection   = false
  allow_local_data_loss = true
}
`, pool)
	}
	return res + fmt.Sprintf(`
resource "olapgke_statefulset" "hist" {
  manifest = {
    apiVersion = "apps/v1"
    kind       = "StatefulSet"
    metadata   = { name = "hist", namespace = %[1]q }
    spec = {
      replicas            = 2
      serviceName         = "hist"
      podManagementPolicy = "Parallel"
      updateStrategy      = { type = "OnDelete" }
      selector            = { matchLabels = { app = "hist" } }
      template = {
        metadata = { labels = { app = "hist" } }
        spec = {
          terminationGracePeriodSeconds = 1
          nodeSelector                  = { "cloud.google.com/gke-nodepool" = %[2]s }
          containers = [{
            name         = "historical"
            image        = "olap/historical:1"
            volumeMounts = [{ name = "cache", mountPath = "/cache" }]
          }]
        }
      }
      volumeClaimTemplates = [{
        metadata = { name = "cache" }
        spec = {
          accessModes      = ["ReadWriteOnce"]
          storageClassName = "topolvm-provisioner"
          resources        = { requests = { storage = "1Gi" } }
        }
      }]
    }
  }
}

resource "olapgke_statefulset_migration" "hist" {
  namespace        = %[1]q
  statefulset      = "hist"
  planned_manifest = jsonencode(olapgke_statefulset.hist.manifest)
  ordinal_timeout  = "5m"
  depends_on       = [olapgke_statefulset.hist]
}
`, ns, poolExpr)
}

// TestAccStatefulSetMigration_OntoPoolCreatedInSameApply creates a node pool and migrates the
// ordinals onto it in one apply. With the real TopoLVM (the sandbox's default) the migration
// waits for driver registration and published capacity on the new nodes before deleting
// anything; with the simulator (OLAPGKE_SANDBOX_TOPOLVM=sim) TopoLVM is ready on new nodes at once.
func TestAccStatefulSetMigration_OntoPoolCreatedInSameApply(t *testing.T) {
	env := acctest.Sandbox(t)
	const ns, pool = "mig-newpool", "pool-new"
	if _, err := env.Kube.CoreV1().Namespaces().Create(t.Context(), nsObject(ns), createOpts); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { deleteNamespace(env, ns) })
	f := &setFixture{env: env, ns: ns, name: "hist", n: 2, podUIDs: map[int32]string{}, pvs: map[int32]string{}}
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config: testAccStatefulSetMigrationConfig_newPool(ns, pool, false),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(res, tfjsonpath.New("moves"), knownvalue.ListSizeExact(0)),
				},
				Check: func(*terraformState) error {
					f.waitPlaced(t, "pool-a")
					for o := int32(0); o < 2; o++ {
						p, c := f.get(t, o)
						f.podUIDs[o], f.pvs[o] = string(p.UID), c.Spec.VolumeName
					}
					return nil
				},
			},
			{
				// One apply: the pool is created, the template moves to it (OnDelete), and
				// the migration moves every ordinal once TopoLVM is ready there.
				Config: testAccStatefulSetMigrationConfig_newPool(ns, pool, true),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction("olapgke_local_ssd_node_pool.target", plancheck.ResourceActionCreate),
					plancheck.ExpectResourceAction(res, plancheck.ResourceActionUpdate),
					plancheck.ExpectUnknownValue(res, tfjsonpath.New("moves")),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(res, tfjsonpath.New("moves"), knownvalue.ListSizeExact(2)),
				},
				Check: resource.ComposeAggregateTestCheckFunc(
					func(*terraformState) error { f.checkMoved(t, pool, 1, 0); return nil },
					durationsRecorded(0, 1),
				),
			},
		},
	})
}
