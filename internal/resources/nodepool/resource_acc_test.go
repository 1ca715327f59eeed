package nodepool_test

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apiresource "k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"

	"github.com/olapgke/terraform-provider-olapgke/internal/acctest"
	"github.com/olapgke/terraform-provider-olapgke/internal/gke"
	"github.com/olapgke/terraform-provider-olapgke/internal/provider"
)

func TestMain(m *testing.M) { acctest.Main(m) }

const res = "olapgke_local_ssd_node_pool.test"

// wrapped compiles a pattern whose spaces match any whitespace, because Terraform wraps long
// diagnostic lines.
func wrapped(pattern string) *regexp.Regexp {
	return regexp.MustCompile("(?s)" + strings.ReplaceAll(pattern, " ", `\s+`))
}

// poolConfig renders one olapgke_local_ssd_node_pool "test" (or another label) from HCL body lines.
func poolConfig(label, name, body string) string {
	return fmt.Sprintf(`
resource "olapgke_local_ssd_node_pool" %q {
  name                 = %q
  machine_type         = "n2-standard-8"
  local_nvme_ssd_count = 2
  deletion_protection  = false
%s
}
`, label, name, body)
}

// checkGone verifies that GKE no longer has the pool after destroy.
func checkGone(name string) resource.TestCheckFunc {
	return func(*terraform.State) error {
		ctx := context.Background()
		c, err := provider.ClientsFromEnvironment(ctx, "acctest")
		if err != nil {
			return err
		}
		api, err := c.GKE(ctx)
		if err != nil {
			return err
		}
		_, err = api.GetNodePool(ctx, gke.ClusterRef{Project: c.Project, Location: c.Location, Cluster: c.Cluster}, name)
		if !gke.IsNotFound(err) {
			return fmt.Errorf("node pool %s still exists after destroy (GetNodePool error: %v)", name, err)
		}
		return nil
	}
}

// checkNodes verifies the pool's Kubernetes Nodes: their count, and that each carries labels and
// the taint keys given.
func checkNodes(kc kubernetes.Interface, pool string, count int, labels map[string]string, taintKeys ...string) resource.TestCheckFunc {
	return func(*terraform.State) error {
		l, err := kc.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{LabelSelector: "cloud.google.com/gke-nodepool=" + pool})
		if err != nil {
			return err
		}
		if len(l.Items) != count {
			return fmt.Errorf("pool %s has %d Node(s), want %d", pool, len(l.Items), count)
		}
		for _, n := range l.Items {
			for k, v := range labels {
				if n.Labels[k] != v {
					return fmt.Errorf("node %s label %s = %q, want %q", n.Name, k, n.Labels[k], v)
				}
			}
			var keys []string
			for _, t := range n.Spec.Taints {
				keys = append(keys, t.Key)
			}
			for _, k := range taintKeys {
				if !slices.Contains(keys, k) {
					return fmt.Errorf("node %s lacks taint %s (has %v)", n.Name, k, keys)
				}
			}
		}
		return nil
	}
}

func TestAccLocalSSDNodePool_Lifecycle(t *testing.T) {
	env := acctest.Sandbox(t)
	name := "acc-life"
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories,
		CheckDestroy:             checkGone(name),
		Steps: []resource.TestStep{
			{
				Config: poolConfig("test", name, `
  node_count = 1
  labels     = { role = "olap" }
`),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(res, plancheck.ResourceActionCreate),
					plancheck.ExpectKnownValue(res, tfjsonpath.New("local_ssd_gib_per_node"), knownvalue.Int64Exact(750)),
					plancheck.ExpectKnownValue(res, tfjsonpath.New("ephemeral_storage").AtMapKey("allocatable_gib"), knownvalue.Float64Exact(43.83)),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(res, tfjsonpath.New("id"), knownvalue.StringRegexp(regexp.MustCompile(`^projects/[^/]+/locations/[^/]+/clusters/[^/]+/nodePools/acc-life$`))),
					statecheck.ExpectKnownValue(res, tfjsonpath.New("nodes"), knownvalue.ListSizeExact(1)),
					statecheck.ExpectKnownValue(res, tfjsonpath.New("local_nvme_ssd_count"), knownvalue.Int64Exact(2)),
					statecheck.ExpectKnownValue(res, tfjsonpath.New("boot_disk").AtMapKey("size_gb"), knownvalue.Int64Exact(100)),
					statecheck.ExpectKnownValue(res, tfjsonpath.New("instance_group_urls"), knownvalue.ListSizeExact(1)),
				},
				Check: checkNodes(env.Kube, name, 1, map[string]string{"role": "olap", "cloud.google.com/gke-local-nvme-ssd": "true"}),
			},
			{ // import by project/location/cluster/name
				ResourceName: res, ImportState: true, ImportStateVerify: true,
				ImportStateIdFunc: func(s *terraform.State) (string, error) {
					a := s.RootModule().Resources[res].Primary.Attributes
					return a["project"] + "/" + a["location"] + "/" + a["cluster"] + "/" + a["name"], nil
				},
				ImportStateVerifyIgnore: []string{"deletion_protection", "timeouts"},
			},
			{ // import by bare name with the provider's defaults
				ResourceName: res, ImportState: true, ImportStateVerify: true, ImportStateId: name,
				ImportStateVerifyIgnore: []string{"deletion_protection", "timeouts"},
			},
			{ // labels and taints change in place: same nodes
				Config: poolConfig("test", name, `
  node_count = 1
  labels     = { role = "olap", tier = "hot" }
  taints     = [{ key = "dedicated", value = "olap", effect = "NO_SCHEDULE" }]
`),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(res, plancheck.ResourceActionUpdate),
					plancheck.ExpectKnownValue(res, tfjsonpath.New("nodes"), knownvalue.ListSizeExact(1)),
				}},
				Check: checkNodes(env.Kube, name, 1, map[string]string{"role": "olap", "tier": "hot"}, "dedicated"),
			},
			{ // grow
				Config: poolConfig("test", name, `
  node_count = 2
  labels     = { role = "olap", tier = "hot" }
  taints     = [{ key = "dedicated", value = "olap", effect = "NO_SCHEDULE" }]
`),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectResourceAction(res, plancheck.ResourceActionUpdate)}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(res, tfjsonpath.New("nodes"), knownvalue.ListSizeExact(2)),
					statecheck.ExpectKnownValue(res, tfjsonpath.New("node_count"), knownvalue.Int64Exact(2)),
				},
				Check: checkNodes(env.Kube, name, 2, map[string]string{"tier": "hot"}, "dedicated"),
			},
			{ // autoscaling instead of a fixed size; labels and taints removed
				Config: poolConfig("test", name, `
  autoscaling = { min_node_count = 1, max_node_count = 3 }
`),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectResourceAction(res, plancheck.ResourceActionUpdate)}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(res, tfjsonpath.New("autoscaling").AtMapKey("max_node_count"), knownvalue.Int64Exact(3)),
					statecheck.ExpectKnownValue(res, tfjsonpath.New("autoscaling").AtMapKey("location_policy"), knownvalue.StringExact("BALANCED")),
					statecheck.ExpectKnownValue(res, tfjsonpath.New("nodes"), knownvalue.ListSizeExact(2)),
				},
				Check: checkNodes(env.Kube, name, 2, nil),
			},
			{ // management (both on: the sandbox cluster is on the REGULAR release channel, see
				// release_channel_acc_test.go), upgrade settings and kubelet eviction settings
				Config: poolConfig("test", name, `
  autoscaling      = { min_node_count = 1, max_node_count = 3 }
  management       = { auto_repair = true, auto_upgrade = true }
  upgrade_settings = {
    strategy   = "BLUE_GREEN"
    blue_green = { batch_node_count = 1, batch_soak_duration = "60s", node_pool_soak_duration = "300s" }
  }
  kubelet_config = {
    eviction_soft              = { "nodefs.available" = "15%" }
    eviction_soft_grace_period = { "nodefs.available" = "60s" }
  }
`),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(res, plancheck.ResourceActionUpdate),
					plancheck.ExpectKnownValue(res, tfjsonpath.New("ephemeral_storage").AtMapKey("eviction_signal"), knownvalue.StringExact("nodefs.available<15% (soft)")),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(res, tfjsonpath.New("management").AtMapKey("auto_upgrade"), knownvalue.Bool(true)),
					statecheck.ExpectKnownValue(res, tfjsonpath.New("upgrade_settings").AtMapKey("strategy"), knownvalue.StringExact("BLUE_GREEN")),
					statecheck.ExpectKnownValue(res, tfjsonpath.New("upgrade_settings").AtMapKey("blue_green").AtMapKey("batch_node_count"), knownvalue.Int64Exact(1)),
					statecheck.ExpectKnownValue(res, tfjsonpath.New("kubelet_config").AtMapKey("eviction_soft").AtMapKey("nodefs.available"), knownvalue.StringExact("15%")),
				},
			},
		},
	})
}

// The sandbox's default pool (pool-a: 3 x n2-standard-8, 2 Local SSDs, 100 GiB boot disks) imported
// by name with a matching configuration plans no changes; it is then forgotten, not destroyed.
func TestAccLocalSSDNodePool_ImportDefaultPool(t *testing.T) {
	acctest.Sandbox(t)
	const a = "olapgke_local_ssd_node_pool.a"
	cfg := `
resource "olapgke_local_ssd_node_pool" "a" {
  name                 = "pool-a"
  machine_type         = "n2-standard-8"
  local_nvme_ssd_count = 2
  node_count           = 3
  boot_disk            = { size_gb = 100 }
}
`
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config: cfg, ResourceName: a, ImportState: true, ImportStateId: "pool-a", ImportStatePersist: true,
				ImportStateCheck: func(s []*terraform.InstanceState) error {
					if len(s) != 1 || s[0].Attributes["nodes.#"] != "3" || s[0].Attributes["local_ssd_gib_per_node"] != "750" ||
						s[0].Attributes["ephemeral_storage.allocatable_gib"] != "43.83" {
						return fmt.Errorf("imported pool-a: %v", s)
					}
					return nil
				},
			},
			{
				Config:           cfg,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
			},
			{
				Config: `
removed {
  from = olapgke_local_ssd_node_pool.a
  lifecycle {
    destroy = false
  }
}
`,
			},
		},
	})
}

// An -lssd machine type with the count left unset (or 0) must not diff on the next plan
// (hashicorp/terraform-provider-google#17068): resource.Test runs a plan after every apply and
// fails on a non-empty one.
func TestAccLocalSSDNodePool_LssdNoPerpetualDiff(t *testing.T) {
	acctest.Sandbox(t)
	cfg := func(count string) string {
		return fmt.Sprintf(`
resource "olapgke_local_ssd_node_pool" "test" {
  name                = "acc-lssd"
  machine_type        = "c3-standard-8-lssd"
  node_count          = 1
  deletion_protection = false
  boot_disk           = { type = "pd-balanced" }
  %s
}
`, count)
	}
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories,
		CheckDestroy:             checkGone("acc-lssd"),
		Steps: []resource.TestStep{
			{
				Config: cfg(""),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(res, tfjsonpath.New("local_nvme_ssd_count"), knownvalue.Int64Exact(2)),
					statecheck.ExpectKnownValue(res, tfjsonpath.New("local_ssd_gib_per_node"), knownvalue.Int64Exact(750)),
				},
			},
			{
				Config:           cfg("local_nvme_ssd_count = 0"),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectResourceAction(res, plancheck.ResourceActionUpdate)}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(res, tfjsonpath.New("local_nvme_ssd_count"), knownvalue.Int64Exact(0)),
					statecheck.ExpectKnownValue(res, tfjsonpath.New("local_ssd_gib_per_node"), knownvalue.Int64Exact(750)),
				},
			},
			{
				Config:           cfg("local_nvme_ssd_count = 2"),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectResourceAction(res, plancheck.ResourceActionUpdate)}},
			},
		},
	})
}

// Plan-time validation needs no cluster: it runs as a unit test (no TF_ACC), since Terraform
// validates the configuration before configuring the provider.
func TestAccLocalSSDNodePool_InvalidLocalSSDCount(t *testing.T) {
	cases := map[string]struct{ machine, count, want string }{
		"n2 three":         {"n2-standard-8", "3", `n2-standard-8 \(8 vCPUs\) accepts 1, 2, 4, 8, 16, 24 Local SSD`},
		"lssd wrong fixed": {"c3-standard-8-lssd", "4", `c3-standard-8-lssd comes with exactly 2 Local SSD`},
		"e2 none":          {"e2-standard-8", "1", `e2-standard-8 \(family e2\) takes no Local SSD`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			resource.UnitTest(t, resource.TestCase{
				ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories,
				Steps: []resource.TestStep{{
					Config: fmt.Sprintf(`
resource "olapgke_local_ssd_node_pool" "test" {
  name                 = "acc-bad-ssd"
  machine_type         = %q
  local_nvme_ssd_count = %s
  node_count           = 1
}
`, tc.machine, tc.count),
					PlanOnly:    true,
					ExpectError: wrapped(`Invalid Local SSD Count.*` + tc.want),
				}},
			})
		})
	}
}

func TestAccLocalSSDNodePool_InvalidBootDiskAndName(t *testing.T) {
	cases := map[string]struct{ body, want string }{
		"boot disk too small": {`name = "acc-bad-disk"
  boot_disk = { size_gb = 9 }`, `Attribute boot_disk.size_gb value must be at least 10`},
		"pd-standard on c3": {`name = "acc-bad-disk"
  machine_type = "c3-standard-8-lssd"
  boot_disk = { type = "pd-standard" }`, `Invalid Boot Disk.*machine family c3 does not take pd-standard boot disks`},
		"bad name": {`name = "Pool_A"`, `Invalid Node Pool Name.*must start with a lowercase letter`},
		"count and autoscaling": {`name = "acc-both"
  autoscaling = { max_node_count = 2 }`, `node_count.*autoscaling`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			machine := `machine_type = "n2-standard-8"`
			if strings.Contains(tc.body, "machine_type") {
				machine = ""
			}
			resource.UnitTest(t, resource.TestCase{
				ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories,
				Steps: []resource.TestStep{{
					Config: fmt.Sprintf(`
resource "olapgke_local_ssd_node_pool" "test" {
  %s
  %s
  node_count = 1
}
`, tc.body, machine),
					PlanOnly:    true,
					ExpectError: wrapped(tc.want),
				}},
			})
		})
	}
}

func TestAccLocalSSDNodePool_DiskPressure(t *testing.T) {
	acctest.Sandbox(t)
	cfg := func(boot int) string {
		return poolConfig("test", "acc-dp", fmt.Sprintf(`
  node_count             = 1
  boot_disk              = { size_gb = %d }
  expected_ephemeral_gib = 60
`, boot))
	}
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories,
		CheckDestroy:             checkGone("acc-dp"),
		Steps: []resource.TestStep{
			{ // the incident's shape: both Local SSDs to TopoLVM, 100 GiB boot disk, 60 GiB per node
				Config:             cfg(100),
				PlanOnly:           true,
				ExpectNonEmptyPlan: true,
				ConfigPlanChecks: resource.ConfigPlanChecks{PostApplyPostRefresh: []plancheck.PlanCheck{
					plancheck.ExpectKnownValue(res, tfjsonpath.New("ephemeral_storage").AtMapKey("headroom_gib"), knownvalue.Float64Exact(-16.17)),
					plancheck.ExpectKnownValue(res, tfjsonpath.New("ephemeral_storage").AtMapKey("eviction_signal"), knownvalue.StringExact("nodefs.available<10%")),
				}},
			},
			{ // a 200 GiB boot disk fits the same demand
				Config: cfg(200),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectKnownValue(res, tfjsonpath.New("ephemeral_storage").AtMapKey("headroom_gib"), knownvalue.Float64Exact(38.83)),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(res, tfjsonpath.New("ephemeral_storage").AtMapKey("headroom_gib"), knownvalue.Float64Exact(38.83)),
				},
			},
		},
	})
}

// Without expected_ephemeral_gib the demand is the ephemeral-storage requests of the Pods that
// target the pool: here a Pending Pod waiting for the pool, as in the incident.
func TestAccLocalSSDNodePool_DiskPressureFromPods(t *testing.T) {
	env := acctest.Sandbox(t)
	ctx := context.Background()
	const ns = "acc-dp-pods"
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "scratch", Namespace: ns},
		Spec: corev1.PodSpec{
			NodeSelector: map[string]string{"cloud.google.com/gke-nodepool": "acc-dp-pods"},
			Containers: []corev1.Container{{Name: "c", Image: "registry.example/olap:1", Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceEphemeralStorage: apiresource.MustParse("60Gi")}}}},
		},
	}
	t.Cleanup(func() { _ = env.Kube.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{}) })
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories,
		Steps: []resource.TestStep{{
			PreConfig: func() {
				if _, err := env.Kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
					t.Fatal(err)
				}
				if _, err := env.Kube.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
			},
			Config: poolConfig("test", "acc-dp-pods", "  node_count = 1"),
			// What the cluster shows at plan can change before apply (a saved plan, a Pod added in
			// between), so a new pool's demand is recorded at apply; the plan warns from the live
			// read (Nodes Will Hit DiskPressure).
			ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
				plancheck.ExpectUnknownValue(res, tfjsonpath.New("ephemeral_storage").AtMapKey("demand_gib")),
				plancheck.ExpectUnknownValue(res, tfjsonpath.New("ephemeral_storage").AtMapKey("headroom_gib")),
				plancheck.ExpectKnownValue(res, tfjsonpath.New("ephemeral_storage").AtMapKey("allocatable_gib"), knownvalue.Float64Exact(43.83)),
			}},
			ConfigStateChecks: []statecheck.StateCheck{
				statecheck.ExpectKnownValue(res, tfjsonpath.New("ephemeral_storage").AtMapKey("demand_gib"), knownvalue.Float64Exact(60)),
				statecheck.ExpectKnownValue(res, tfjsonpath.New("ephemeral_storage").AtMapKey("demand_source"),
					knownvalue.StringExact("ephemeral-storage requests of 1 Pod(s) targeting node pool acc-dp-pods")),
				statecheck.ExpectKnownValue(res, tfjsonpath.New("ephemeral_storage").AtMapKey("headroom_gib"), knownvalue.Float64Exact(-16.17)),
			},
		}, {
			// The next plan keeps the demand the refresh recorded: no change.
			Config:           poolConfig("test", "acc-dp-pods", "  node_count = 1"),
			ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
		}},
	})
}

func TestAccLocalSSDNodePool_DeletionProtection(t *testing.T) {
	acctest.Sandbox(t)
	protected := `
resource "olapgke_local_ssd_node_pool" "test" {
  name                 = "acc-protect"
  machine_type         = "n2-standard-8"
  local_nvme_ssd_count = 2
  node_count           = 1
}
`
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories,
		CheckDestroy:             checkGone("acc-protect"),
		Steps: []resource.TestStep{
			{Config: protected, ConfigStateChecks: []statecheck.StateCheck{
				statecheck.ExpectKnownValue(res, tfjsonpath.New("deletion_protection"), knownvalue.Bool(true)),
			}},
			{Config: `resource "terraform_data" "other" {}`, ExpectError: wrapped(`Deletion Protection Enabled`)},
			{ // replacing is deleting too
				Config:      regexp.MustCompile(`local_nvme_ssd_count = 2`).ReplaceAllString(protected, "local_nvme_ssd_count = 4"),
				ExpectError: wrapped(`Deletion Protection Enabled.*local_nvme_ssd_count`),
			},
			{Config: regexp.MustCompile(`node_count           = 1`).ReplaceAllString(protected, "node_count = 1\n  deletion_protection = false")},
		},
	})
}

func TestAccLocalSSDNodePool_APIErrorSurfaces(t *testing.T) {
	acctest.Sandbox(t)
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories,
		Steps: []resource.TestStep{{
			// A machine family olapgke's table does not know: the plan defers to GKE, whose
			// InvalidArgument message must reach the user.
			Config: `
resource "olapgke_local_ssd_node_pool" "test" {
  name                 = "acc-api-err"
  machine_type         = "z9-standard-8"
  local_nvme_ssd_count = 2
  node_count           = 1
  deletion_protection  = false
}
`,
			ExpectError: wrapped(`Node Pool Creation Failed.*GKE answered InvalidArgument.*z9-standard-8.*does not cover machine type z9-standard-8`),
		}, {
			// 2 raw-block + 2 ephemeral = 4 Local SSDs is a valid total for n2-standard-8 by the
			// table, so the plan passes; whether one pool may mix both uses is GKE's answer.
			Config: `
resource "olapgke_local_ssd_node_pool" "test" {
  name                              = "acc-api-err"
  machine_type                      = "n2-standard-8"
  local_nvme_ssd_count              = 2
  ephemeral_storage_local_ssd_count = 2
  node_count                        = 1
  deletion_protection               = false
}
`,
			ExpectError: wrapped(`Node Pool Creation Failed.*GKE answered InvalidArgument: .*local_nvme_ssd_block_config and ephemeral_storage_local_ssd_config`),
		}},
	})
}

// The data-loss guard: a machine-type change is refused while a StatefulSet ordinal keeps a
// TopoLVM volume on the pool, and goes through once the ordinal was moved to another pool.
func TestAccLocalSSDNodePool_MachineTypeChangeGuard(t *testing.T) {
	env := acctest.Sandbox(t)
	ctx := context.Background()
	const ns, set = "acc-guard", "db"
	pools := func(srcMachine, extra string) string {
		return fmt.Sprintf(`
resource "olapgke_local_ssd_node_pool" "test" {
  name                 = "acc-guard-a"
  machine_type         = %q
  local_nvme_ssd_count = 2
  node_count           = 1
  deletion_protection  = false
  %s
}
resource "olapgke_local_ssd_node_pool" "target" {
  name                 = "acc-guard-b"
  machine_type         = "n2-standard-8"
  local_nvme_ssd_count = 2
  node_count           = 1
  deletion_protection  = false
  %s
}
`, srcMachine, extra, extra)
	}
	t.Cleanup(func() {
		_ = env.Kube.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{})
	})
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config: pools("n2-standard-8", ""),
				Check: func(*terraform.State) error {
					return runStatefulSet(ctx, env.Kube, ns, set, "acc-guard-a")
				},
			},
			{
				Config:      pools("n2-standard-16", ""),
				ExpectError: wrapped(`Local Data Would Be Lost.*machine_type changes from n2-standard-8 to n2-standard-16.*StatefulSet acc-guard/db ordinal\(s\) 0`),
			},
			{
				Config:      pools("n2-standard-8", `boot_disk = { size_gb = 200 }`),
				ExpectError: wrapped(`Local Data Would Be Lost.*boot disk changes`),
			},
			{
				PreConfig: func() {
					if err := moveOrdinal(ctx, env.Kube, ns, set, 0, "acc-guard-b"); err != nil {
						t.Fatalf("moving ordinal 0: %v", err)
					}
				},
				Config: pools("n2-standard-16", ""),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(res, plancheck.ResourceActionUpdate),
					plancheck.ExpectUnknownValue(res, tfjsonpath.New("nodes")),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(res, tfjsonpath.New("machine_type"), knownvalue.StringExact("n2-standard-16")),
					statecheck.ExpectKnownValue(res, tfjsonpath.New("nodes"), knownvalue.ListSizeExact(1)),
				},
			},
			{ // the ordinal now lives on the target pool: shrinking it to 0 is refused and names it
				Config:      regexp.MustCompile(`(?s)(name                 = "acc-guard-b".*?)node_count           = 1`).ReplaceAllString(pools("n2-standard-16", ""), "${1}node_count = 0"),
				ExpectError: wrapped(`Local Data Would Be Lost.*GKE chooses which 1 of the 1 node\(s\) to delete.*ordinal\(s\) 0`),
			},
			{ // destroying the pool that now holds the ordinal is refused too
				Config:      regexp.MustCompile(`(?s)resource "olapgke_local_ssd_node_pool" "target".*`).ReplaceAllString(pools("n2-standard-16", ""), ""),
				ExpectError: wrapped(`Local Data Would Be Lost.*destroying the node pool deletes every node.*StatefulSet acc-guard/db ordinal\(s\) 0`),
			},
			{ // accepting the loss lets the test's destroy go through
				Config: pools("n2-standard-16", "allow_local_data_loss = true"),
			},
		},
	})
}

// runStatefulSet creates a one-replica OnDelete StatefulSet with a TopoLVM volume on pool and
// waits until its Pod is Ready with the PVC bound.
func runStatefulSet(ctx context.Context, kc kubernetes.Interface, ns, name, pool string) error {
	if _, err := kc.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	sc := "topolvm-provisioner"
	one := int32(1)
	labels := map[string]string{"app": name}
	s := &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: appsv1.StatefulSetSpec{
			Replicas: &one, Selector: &metav1.LabelSelector{MatchLabels: labels}, ServiceName: name,
			UpdateStrategy: appsv1.StatefulSetUpdateStrategy{Type: appsv1.OnDeleteStatefulSetStrategyType},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					NodeSelector: map[string]string{"cloud.google.com/gke-nodepool": pool},
					Containers: []corev1.Container{{Name: "db", Image: "registry.example/olap:1",
						VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}}},
				},
			},
			VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{
				ObjectMeta: metav1.ObjectMeta{Name: "data"},
				Spec: corev1.PersistentVolumeClaimSpec{
					AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}, StorageClassName: &sc,
					Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: apiresource.MustParse("1Gi")}},
				},
			}},
		},
	}
	if _, err := kc.AppsV1().StatefulSets(ns).Create(ctx, s, metav1.CreateOptions{}); err != nil {
		return err
	}
	return waitOrdinalOn(ctx, kc, ns, name, 0, pool)
}

// moveOrdinal moves one ordinal of an OnDelete StatefulSet to pool the way a migration does:
// template to the target pool, delete the PVC (without waiting: pvc-protection holds it), delete
// the Pod, wait until the recreated Pod is Ready on the target with a new bound PVC.
func moveOrdinal(ctx context.Context, kc kubernetes.Interface, ns, name string, ord int, pool string) error {
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error { // the controller writes status meanwhile
		s, err := kc.AppsV1().StatefulSets(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		s.Spec.Template.Spec.NodeSelector = map[string]string{"cloud.google.com/gke-nodepool": pool}
		_, err = kc.AppsV1().StatefulSets(ns).Update(ctx, s, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return err
	}
	pod := fmt.Sprintf("%s-%d", name, ord)
	if err := kc.CoreV1().PersistentVolumeClaims(ns).Delete(ctx, "data-"+pod, metav1.DeleteOptions{}); err != nil {
		return err
	}
	if err := kc.CoreV1().Pods(ns).Delete(ctx, pod, metav1.DeleteOptions{}); err != nil {
		return err
	}
	return waitOrdinalOn(ctx, kc, ns, name, ord, pool)
}

// waitOrdinalOn polls until Pod <name>-<ord> is Ready on a node of pool and its PVC is Bound.
func waitOrdinalOn(ctx context.Context, kc kubernetes.Interface, ns, name string, ord int, pool string) error {
	pod := fmt.Sprintf("%s-%d", name, ord)
	var last string
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 90*time.Second, true, func(ctx context.Context) (bool, error) {
		p, err := kc.CoreV1().Pods(ns).Get(ctx, pod, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			last = "pod not created yet"
			return false, nil
		}
		if err != nil {
			return false, err
		}
		if p.DeletionTimestamp != nil || p.Spec.NodeName == "" {
			last = "pod terminating or unscheduled"
			return false, nil
		}
		n, err := kc.CoreV1().Nodes().Get(ctx, p.Spec.NodeName, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if n.Labels["cloud.google.com/gke-nodepool"] != pool {
			last = "pod on node " + n.Name + " of another pool"
			return false, nil
		}
		ready := false
		for _, c := range p.Status.Conditions {
			ready = ready || c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue
		}
		c, err := kc.CoreV1().PersistentVolumeClaims(ns).Get(ctx, "data-"+pod, metav1.GetOptions{})
		if err != nil {
			last = "pvc: " + err.Error()
			return false, nil //nolint:nilerr // polled again; the timeout reports last
		}
		last = fmt.Sprintf("ready=%v pvc phase=%s", ready, c.Status.Phase)
		return ready && c.Status.Phase == corev1.ClaimBound && c.DeletionTimestamp == nil, nil
	})
	if err != nil {
		return errors.Join(fmt.Errorf("waiting for %s/%s on pool %s (last: %s)", ns, pod, pool, last), err)
	}
	return nil
}
