package nodepool_test

import (
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"

	"github.com/olapgke/terraform-provider-olapgke/internal/acctest"
)

// GKE's documented rules on the parity fields are refused at plan (resource.UnitTest: no
// cluster is read before these checks).
func TestUnitLocalSSDNodePool_ParityValidation(t *testing.T) {
	for name, c := range map[string]struct{ body, want string }{
		"name and name_prefix":   {`name_prefix = "olap-"`, `Invalid Attribute Combination`},
		"name_prefix charset":    {`name_prefix = "Olap"`, `must start with a lowercase letter`},
		"gc thresholds":          {`kubelet_config = { image_gc_high_threshold_percent = 60, image_gc_low_threshold_percent = 70 }`, `Invalid Image GC Thresholds`},
		"gc threshold range":     {`kubelet_config = { image_gc_high_threshold_percent = 90 }`, `between 10 and 85`},
		"gc ages":                {`kubelet_config = { image_minimum_gc_age = "2m", image_maximum_gc_age = "1m" }`, `Invalid Image GC Ages`},
		"cfs period format":      {`kubelet_config = { cpu_cfs_quota_period = "100" }`, `Invalid Duration`},
		"cfs period range":       {`kubelet_config = { cpu_cfs_quota_period = "2s" }`, `between 1ms and 1s`},
		"min gc age above 2m":    {`kubelet_config = { image_minimum_gc_age = "3m" }`, `Invalid Duration`},
		"log size":               {`kubelet_config = { container_log_max_size = "1Gi" }`, `Invalid Log Size`},
		"log files":              {`kubelet_config = { container_log_max_files = 20 }`, `between 2 and 10`},
		"pids":                   {`kubelet_config = { pod_pids_limit = 100 }`, `between 1024 and 4194304`},
		"cpu manager":            {`kubelet_config = { cpu_manager_policy = "dynamic" }`, `value must be one of`},
		"topology policy":        {`kubelet_config = { topology_manager = { policy = "numa" } }`, `value must be one of`},
		"hugepages negative":     {`linux_node_config = { hugepages_config = { hugepage_size_2m = -1 } }`, `at least 0`},
		"cgroup mode":            {`linux_node_config = { cgroup_mode = "V2" }`, `value must be one of`},
		"workload metadata mode": {`workload_metadata_config = { mode = "GKE" }`, `value must be one of`},
		"max pods":               {`max_pods_per_node = 300`, `between 8 and 256`},
		"specific reservation":   {`reservation_affinity = { consume_reservation_type = "SPECIFIC_RESERVATION" }`, `Incomplete Reservation Affinity`},
		"key without specific":   {`reservation_affinity = { consume_reservation_type = "ANY_RESERVATION", key = "k", values = ["v"] }`, `Unexpected Reservation Key`},
		"iops on pd":             {`boot_disk = { type = "pd-balanced", provisioned_iops = 3000 }`, `Provisioned Performance Needs Hyperdisk`},
		"data cache count":       {`data_cache_count = 1`, `Too Many Data Cache Local SSDs`},
		"egress tier":            {`network_config = { network_performance_config = { total_egress_bandwidth_tier = "TIER_2" } }`, `value must be one of`},
	} {
		t.Run(name, func(t *testing.T) {
			resource.UnitTest(t, resource.TestCase{
				ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories,
				Steps: []resource.TestStep{{
					Config:      acctest.UnitProviderConfig + poolConfig("test", "p", "  node_count = 1\n  "+c.body),
					PlanOnly:    true,
					ExpectError: wrapped(c.want),
				}},
			})
		})
	}
}
