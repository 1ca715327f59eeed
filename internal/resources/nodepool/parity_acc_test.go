package nodepool_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"cloud.google.com/go/container/apiv1/containerpb"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/olapgke/terraform-provider-olapgke/internal/acctest"
	"github.com/olapgke/terraform-provider-olapgke/internal/gke"
	"github.com/olapgke/terraform-provider-olapgke/internal/provider"
)

// parityBody is a pool setting the google_container_node_pool fields olapgke adds; tags and
// system vary the in-place and the VM-recreating parts.
func parityBody(tags, system, extra string) string {
	return fmt.Sprintf(`
  node_count           = 1
  data_cache_count     = 2
  max_pods_per_node    = 64
  metadata             = { team = "olap" }
  shielded_instance_config  = { enable_secure_boot = true }
  local_ssd_encryption_mode = "EPHEMERAL_KEY_ENCRYPTION"
  reservation_affinity = {
    consume_reservation_type = "SPECIFIC_RESERVATION"
    key                      = "compute.googleapis.com/reservation-name"
    values                   = ["olap-res"]
  }
  secondary_boot_disks = [{ disk_image = "global/images/olap-cache", mode = "CONTAINER_IMAGE_CACHE" }]
  placement_policy     = { type = "COMPACT", policy_name = "olap-compact" }
  queued_provisioning  = { enabled = false }
  network_config = {
    pod_range            = "olap-pods"
    create_pod_range     = true
  }
  %s
  %s
  %s
`, tags, system, extra)
}

const parityInPlaceA = `
  tags                  = ["olap"]
  resource_manager_tags = { "tagKeys/1" = "tagValues/2" }
  node_drain_config     = { respect_pdb_during_node_pool_deletion = true }
`

const parityInPlaceB = `
  tags                  = ["olap", "db"]
  resource_manager_tags = { "tagKeys/1" = "tagValues/3" }
  node_drain_config     = { respect_pdb_during_node_pool_deletion = false }
`

func paritySystem(mode string, pids int, thp string) string {
	return fmt.Sprintf(`
  workload_metadata_config = { mode = %q }
  gvnic       = { enabled = true }
  gcfs_config = { enabled = true }
  kubelet_config = {
    cpu_manager_policy              = "static"
    cpu_cfs_quota                   = true
    cpu_cfs_quota_period            = "100ms"
    pod_pids_limit                  = %d
    image_gc_high_threshold_percent = 80
    image_gc_low_threshold_percent  = 60
    image_minimum_gc_age            = "1m"
    image_maximum_gc_age            = "2h"
    container_log_max_size          = "50Mi"
    container_log_max_files         = 5
    topology_manager                = { policy = "single-numa-node", scope = "pod" }
    memory_manager                  = { policy = "Static" }
  }
  linux_node_config = {
    sysctls                      = { "net.core.somaxconn" = "4096" }
    hugepages_config             = { hugepage_size_2m = 64 }
    transparent_hugepage_enabled = %q
    transparent_hugepage_defrag  = "TRANSPARENT_HUGEPAGE_DEFRAG_DEFER"
    cgroup_mode                  = "CGROUP_MODE_V2"
  }
`, mode, pids, thp)
}

// Create with every parity field, update the in-place ones without recreating nodes, apply a
// VM-recreating one while no PVs live on the pool, refuse one while they do, show GKE's
// operations on refresh, and import the pool with no diff.
func TestAccLocalSSDNodePool_ParityFields(t *testing.T) {
	env := acctest.Sandbox(t)
	ctx := context.Background()
	const name, ns, set = "acc-parity", "acc-parity", "db"
	cl := sandboxCluster(env)
	t.Cleanup(func() {
		_ = env.Kube.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{})
	})
	sysA := paritySystem("GKE_METADATA", 4096, "TRANSPARENT_HUGEPAGE_ENABLED_MADVISE")
	sysB := paritySystem("GKE_METADATA", 8192, "TRANSPARENT_HUGEPAGE_ENABLED_NEVER")
	var nodes []string
	sameNodes := func(same bool) resource.TestCheckFunc {
		return func(*terraform.State) error {
			l, err := poolNodeNames(ctx, env, name)
			if err != nil {
				return err
			}
			if same != slices.Equal(l, nodes) {
				return fmt.Errorf("nodes %v -> %v, want same = %v", nodes, l, same)
			}
			nodes = l
			return nil
		}
	}
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories,
		CheckDestroy:             checkGone(name),
		Steps: []resource.TestStep{
			{
				Config: poolConfig("test", name, parityBody(parityInPlaceA, sysA, "")),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(res, tfjsonpath.New("kubelet_config").AtMapKey("topology_manager").AtMapKey("policy"), knownvalue.StringExact("single-numa-node")),
					statecheck.ExpectKnownValue(res, tfjsonpath.New("linux_node_config").AtMapKey("hugepages_config").AtMapKey("hugepage_size_2m"), knownvalue.Int64Exact(64)),
					statecheck.ExpectKnownValue(res, tfjsonpath.New("network_config").AtMapKey("pod_range"), knownvalue.StringExact("olap-pods")),
					statecheck.ExpectKnownValue(res, tfjsonpath.New("shielded_instance_config").AtMapKey("enable_integrity_monitoring"), knownvalue.Bool(true)),
					statecheck.ExpectKnownValue(res, tfjsonpath.New("operations"), knownvalue.ListSizeExact(0)),
					statecheck.ExpectKnownValue(res, tfjsonpath.New("pending_upgrade"), knownvalue.StringExact("")),
				},
				Check: resource.ComposeAggregateTestCheckFunc(sameNodes(false), checkGKE(name, func(np *containerpb.NodePool) error {
					c := np.GetConfig()
					if c.GetEphemeralStorageLocalSsdConfig().GetDataCacheCount() != 2 || c.GetLinuxNodeConfig().GetSysctls()["net.core.somaxconn"] != "4096" ||
						c.GetKubeletConfig().GetCpuCfsQuotaPeriod() != "100ms" || !c.GetShieldedInstanceConfig().GetEnableSecureBoot() ||
						np.GetMaxPodsConstraint().GetMaxPodsPerNode() != 64 || np.GetPlacementPolicy().GetPolicyName() != "olap-compact" ||
						c.GetReservationAffinity().GetValues()[0] != "olap-res" || c.GetWorkloadMetadataConfig().GetMode() != containerpb.WorkloadMetadataConfig_GKE_METADATA {
						return fmt.Errorf("GKE holds %v", np)
					}
					return nil
				})),
			},
			{ // in place: same nodes
				Config: poolConfig("test", name, parityBody(parityInPlaceB, sysA, "")),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(res, plancheck.ResourceActionUpdate),
					plancheck.ExpectUnknownValue(res, tfjsonpath.New("operations")),
					plancheck.ExpectUnknownValue(res, tfjsonpath.New("pending_upgrade")),
				}},
				Check: resource.ComposeAggregateTestCheckFunc(sameNodes(true), checkGKE(name, func(np *containerpb.NodePool) error {
					if !slices.Equal(np.GetConfig().GetTags(), []string{"olap", "db"}) || np.GetNodeDrainConfig().GetRespectPdbDuringNodePoolDeletion() {
						return fmt.Errorf("GKE holds %v", np)
					}
					return nil
				})),
			},
			{ // node system change, no PVs on the pool: applied by recreating the VMs
				Config: poolConfig("test", name, parityBody(parityInPlaceB, sysB, "")),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(res, plancheck.ResourceActionUpdate),
					plancheck.ExpectUnknownValue(res, tfjsonpath.New("nodes")),
				}},
				Check: resource.ComposeAggregateTestCheckFunc(sameNodes(false), func(*terraform.State) error {
					return runStatefulSet(ctx, env.Kube, ns, set, name)
				}),
			},
			{ // with an ordinal's PVs on the pool the guard refuses each VM-recreating change
				Config:      poolConfig("test", name, parityBody(parityInPlaceB, paritySystem("GCE_METADATA", 8192, "TRANSPARENT_HUGEPAGE_ENABLED_NEVER"), "")),
				ExpectError: wrapped(`Local Data Would Be Lost.*workload_metadata_config changes.*recreating every VM.*StatefulSet acc-parity/db ordinal\(s\) 0`),
			},
			{
				Config:      poolConfig("test", name, parityBody(parityInPlaceB, sysA, "")),
				ExpectError: wrapped(`Local Data Would Be Lost.*kubelet_config changes; linux_node_config changes`),
			},
			{ // GKE's own operations show on refresh
				PreConfig: func() {
					if err := env.StartClusterOperation(ctx, cl.Project, cl.Location, cl.Cluster, "UPGRADE_MASTER", 8*time.Second); err != nil {
						t.Fatal(err)
					}
				},
				Config: poolConfig("test", name, parityBody(parityInPlaceB, sysB, "")),
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(res, "operations.#", "1"),
					resource.TestCheckResourceAttr(res, "operations.0.type", "UPGRADE_MASTER"),
					resource.TestCheckResourceAttr(res, "operations.0.target", "cluster"),
				),
			},
			{
				Config: poolConfig("test", name, parityBody(parityInPlaceB, sysB, "")), ResourceName: res, ImportState: true, ImportStateId: name,
				ImportStateVerify: true, ImportStateVerifyIgnore: []string{"deletion_protection", "network_config.create_pod_range", "operations"},
			},
			{ // accept the loss so the test's destroy can go
				Config: poolConfig("test", name, parityBody(parityInPlaceB, sysB, "allow_local_data_loss = true")),
			},
		},
	})
}

// checkGKE reads the pool from GKE and hands it to check.
func checkGKE(name string, check func(*containerpb.NodePool) error) resource.TestCheckFunc {
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
		np, err := api.GetNodePool(ctx, gke.ClusterRef{Project: c.Project, Location: c.Location, Cluster: c.Cluster}, name)
		if err != nil {
			return err
		}
		return check(np)
	}
}

func poolNodeNames(ctx context.Context, env *acctest.Env, pool string) ([]string, error) {
	l, err := env.Kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: "cloud.google.com/gke-nodepool=" + pool})
	if err != nil {
		return nil, err
	}
	var out []string
	for _, n := range l.Items {
		out = append(out, n.Name)
	}
	slices.Sort(out)
	return out, nil
}

// A pool created straight through the GKE API (as the google provider does) with the parity
// fields set imports with no diff against a configuration that sets them.
func TestAccLocalSSDNodePool_ParityImportFromGKE(t *testing.T) {
	acctest.Sandbox(t)
	ctx := context.Background()
	const name = "acc-parity-imp"
	c, err := provider.ClientsFromEnvironment(ctx, "acctest")
	if err != nil {
		t.Fatal(err)
	}
	api, err := c.GKE(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ref := gke.ClusterRef{Project: c.Project, Location: c.Location, Cluster: c.Cluster}
	two, yes := int32(2), true
	tier := containerpb.NodeNetworkConfig_NetworkPerformanceConfig_TIER_1
	np := &containerpb.NodePool{Name: name, InitialNodeCount: 1,
		Config: &containerpb.NodeConfig{MachineType: "c3-standard-8-lssd", DiskType: "hyperdisk-balanced", DiskSizeGb: 100,
			LocalNvmeSsdBlockConfig: &containerpb.LocalNvmeSsdBlockConfig{},
			BootDisk:                &containerpb.BootDisk{DiskType: "hyperdisk-balanced", SizeGb: 100, ProvisionedIops: 3000, ProvisionedThroughput: 140},
			WorkloadMetadataConfig:  &containerpb.WorkloadMetadataConfig{Mode: containerpb.WorkloadMetadataConfig_GKE_METADATA},
			KubeletConfig:           &containerpb.NodeKubeletConfig{CpuManagerPolicy: "static", PodPidsLimit: 4096, ContainerLogMaxFiles: 4, TopologyManager: &containerpb.TopologyManager{Policy: "best-effort"}},
			LinuxNodeConfig:         &containerpb.LinuxNodeConfig{Sysctls: map[string]string{"net.core.somaxconn": "4096"}, Hugepages: &containerpb.LinuxNodeConfig_HugepagesConfig{HugepageSize2M: &two}},
			Gvnic:                   &containerpb.VirtualNIC{Enabled: true}, GcfsConfig: &containerpb.GcfsConfig{Enabled: true},
			Tags: []string{"olap"}, Metadata: map[string]string{"team": "olap"},
			ResourceManagerTags:    &containerpb.ResourceManagerTags{Tags: map[string]string{"tagKeys/1": "tagValues/2"}},
			ShieldedInstanceConfig: &containerpb.ShieldedInstanceConfig{EnableSecureBoot: true, EnableIntegrityMonitoring: true},
			ReservationAffinity:    &containerpb.ReservationAffinity{ConsumeReservationType: containerpb.ReservationAffinity_NO_RESERVATION},
		},
		MaxPodsConstraint: &containerpb.MaxPodsConstraint{MaxPodsPerNode: 32},
		NetworkConfig:     &containerpb.NodeNetworkConfig{PodRange: "olap-pods", EnablePrivateNodes: &yes, NetworkPerformanceConfig: &containerpb.NodeNetworkConfig_NetworkPerformanceConfig{TotalEgressBandwidthTier: &tier}},
		NodeDrainConfig:   &containerpb.NodePool_NodeDrainConfig{RespectPdbDuringNodePoolDeletion: &yes},
		PlacementPolicy:   &containerpb.NodePool_PlacementPolicy{Type: containerpb.NodePool_PlacementPolicy_COMPACT},
	}
	if err := api.CreateNodePool(ctx, ref, np); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := api.DeleteNodePool(context.Background(), ref, name); err != nil && !gke.IsNotFound(err) {
			t.Errorf("deleting %s: %v", name, err)
		}
	})
	cfg := fmt.Sprintf(`
resource "olapgke_local_ssd_node_pool" "test" {
  name         = %q
  machine_type = "c3-standard-8-lssd"
  node_count   = 1
  boot_disk    = { type = "hyperdisk-balanced", size_gb = 100, provisioned_iops = 3000, provisioned_throughput = 140 }
  workload_metadata_config = { mode = "GKE_METADATA" }
  kubelet_config = {
    cpu_manager_policy      = "static"
    pod_pids_limit          = 4096
    container_log_max_files = 4
    topology_manager        = { policy = "best-effort" }
  }
  linux_node_config = {
    sysctls          = { "net.core.somaxconn" = "4096" }
    hugepages_config = { hugepage_size_2m = 2 }
  }
  gvnic                    = { enabled = true }
  gcfs_config              = { enabled = true }
  tags                     = ["olap"]
  metadata                 = { team = "olap" }
  resource_manager_tags    = { "tagKeys/1" = "tagValues/2" }
  shielded_instance_config = { enable_secure_boot = true }
  reservation_affinity     = { consume_reservation_type = "NO_RESERVATION" }
  max_pods_per_node        = 32
  network_config = {
    pod_range                  = "olap-pods"
    enable_private_nodes       = true
    network_performance_config = { total_egress_bandwidth_tier = "TIER_1" }
  }
  node_drain_config = { respect_pdb_during_node_pool_deletion = true }
  placement_policy  = { type = "COMPACT" }
}
`, name)
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{Config: cfg, ResourceName: res, ImportState: true, ImportStateId: name, ImportStatePersist: true},
			{Config: cfg, ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}}},
			{Config: `
removed {
  from = olapgke_local_ssd_node_pool.test
  lifecycle {
    destroy = false
  }
}
`},
		},
	})
}
