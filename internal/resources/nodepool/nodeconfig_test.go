package nodepool

import (
	"context"
	"strings"
	"testing"
	"time"

	"cloud.google.com/go/container/apiv1/containerpb"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/olapgke/terraform-provider-olapgke/internal/diagnostics/diagtest"
	"github.com/olapgke/terraform-provider-olapgke/internal/gkerules"
)

// parityPool is a pool as GKE returns it with every parity field set (what the google provider
// or gcloud would have created).
func parityPool() *containerpb.NodePool {
	two, yes, no := int32(2), true, false
	tier := containerpb.NodeNetworkConfig_NetworkPerformanceConfig_TIER_1
	enc := containerpb.NodeConfig_EPHEMERAL_KEY_ENCRYPTION
	return &containerpb.NodePool{Name: "parity", Version: "1.37.2-gke.1000", InitialNodeCount: 1,
		Config: &containerpb.NodeConfig{MachineType: "c3-standard-8-lssd", DiskType: "hyperdisk-balanced", DiskSizeGb: 100, ImageType: "COS_CONTAINERD",
			LocalNvmeSsdBlockConfig:        &containerpb.LocalNvmeSsdBlockConfig{LocalSsdCount: 2},
			EphemeralStorageLocalSsdConfig: &containerpb.EphemeralStorageLocalSsdConfig{DataCacheCount: 1},
			BootDisk:                       &containerpb.BootDisk{DiskType: "hyperdisk-balanced", SizeGb: 100, ProvisionedIops: 3000, ProvisionedThroughput: 140},
			WorkloadMetadataConfig:         &containerpb.WorkloadMetadataConfig{Mode: containerpb.WorkloadMetadataConfig_GKE_METADATA},
			KubeletConfig: &containerpb.NodeKubeletConfig{CpuManagerPolicy: "static", CpuCfsQuota: wrapperspb.Bool(true), CpuCfsQuotaPeriod: "100ms", PodPidsLimit: 4096,
				ImageGcHighThresholdPercent: 80, ImageGcLowThresholdPercent: 60, ImageMinimumGcAge: "1m", ImageMaximumGcAge: "2h", ContainerLogMaxSize: "50Mi", ContainerLogMaxFiles: 5,
				TopologyManager: &containerpb.TopologyManager{Policy: "best-effort", Scope: "pod"}, MemoryManager: &containerpb.MemoryManager{Policy: "Static"}},
			LinuxNodeConfig: &containerpb.LinuxNodeConfig{Sysctls: map[string]string{"net.core.somaxconn": "4096"}, Hugepages: &containerpb.LinuxNodeConfig_HugepagesConfig{HugepageSize2M: &two},
				TransparentHugepageEnabled: containerpb.LinuxNodeConfig_TRANSPARENT_HUGEPAGE_ENABLED_MADVISE, TransparentHugepageDefrag: containerpb.LinuxNodeConfig_TRANSPARENT_HUGEPAGE_DEFRAG_DEFER,
				CgroupMode: containerpb.LinuxNodeConfig_CGROUP_MODE_V2},
			Gvnic: &containerpb.VirtualNIC{Enabled: true}, GcfsConfig: &containerpb.GcfsConfig{Enabled: true},
			Tags:                   []string{"olap"},
			Metadata:               map[string]string{"team": "olap", "disable-legacy-endpoints": "true"},
			ResourceManagerTags:    &containerpb.ResourceManagerTags{Tags: map[string]string{"tagKeys/1": "tagValues/2"}},
			ShieldedInstanceConfig: &containerpb.ShieldedInstanceConfig{EnableSecureBoot: true, EnableIntegrityMonitoring: true},
			ReservationAffinity: &containerpb.ReservationAffinity{ConsumeReservationType: containerpb.ReservationAffinity_SPECIFIC_RESERVATION,
				Key: "compute.googleapis.com/reservation-name", Values: []string{"r1"}},
			SecondaryBootDisks:     []*containerpb.SecondaryBootDisk{{DiskImage: "global/images/cache", Mode: containerpb.SecondaryBootDisk_CONTAINER_IMAGE_CACHE}},
			LocalSsdEncryptionMode: &enc,
		},
		MaxPodsConstraint:  &containerpb.MaxPodsConstraint{MaxPodsPerNode: 64},
		NetworkConfig:      &containerpb.NodeNetworkConfig{PodRange: "pods", EnablePrivateNodes: &yes, NetworkPerformanceConfig: &containerpb.NodeNetworkConfig_NetworkPerformanceConfig{TotalEgressBandwidthTier: &tier}},
		NodeDrainConfig:    &containerpb.NodePool_NodeDrainConfig{RespectPdbDuringNodePoolDeletion: &no},
		PlacementPolicy:    &containerpb.NodePool_PlacementPolicy{Type: containerpb.NodePool_PlacementPolicy_COMPACT, PolicyName: "compact-1"},
		QueuedProvisioning: &containerpb.NodePool_QueuedProvisioning{Enabled: true},
		Management:         &containerpb.NodeManagement{AutoUpgrade: true, AutoRepair: true},
		UpgradeSettings:    &containerpb.NodePool_UpgradeSettings{MaxSurge: 1},
	}
}

// Flattening a pool GKE reports (import: no prior values) and expanding the result gives the
// same API fields back.
func TestParityFieldsRoundTrip(t *testing.T) {
	ctx := context.Background()
	want := parityPool()
	var m model
	var diags diag.Diagnostics
	flatten(ctx, want, &m, &diags)
	got, d := expand(ctx, &m)
	diags.Append(d...)
	if diags.HasError() {
		t.Fatal(diags)
	}
	wc, gc := want.Config, got.Config
	pairs := map[string][2]proto.Message{
		"workload_metadata_config": {wc.WorkloadMetadataConfig, gc.WorkloadMetadataConfig},
		"kubelet_config":           {wc.KubeletConfig, gc.KubeletConfig},
		"linux_node_config":        {wc.LinuxNodeConfig, gc.LinuxNodeConfig},
		"gvnic":                    {wc.Gvnic, gc.Gvnic},
		"gcfs_config":              {wc.GcfsConfig, gc.GcfsConfig},
		"resource_manager_tags":    {wc.ResourceManagerTags, gc.ResourceManagerTags},
		"shielded_instance_config": {wc.ShieldedInstanceConfig, gc.ShieldedInstanceConfig},
		"reservation_affinity":     {wc.ReservationAffinity, gc.ReservationAffinity},
		"boot_disk":                {wc.BootDisk, gc.BootDisk},
		"secondary_boot_disks":     {wc.SecondaryBootDisks[0], gc.SecondaryBootDisks[0]},
		"max_pods_per_node":        {want.MaxPodsConstraint, got.MaxPodsConstraint},
		"network_config":           {want.NetworkConfig, got.NetworkConfig},
		"node_drain_config":        {want.NodeDrainConfig, got.NodeDrainConfig},
		"placement_policy":         {want.PlacementPolicy, got.PlacementPolicy},
		"queued_provisioning":      {want.QueuedProvisioning, got.QueuedProvisioning},
	}
	for name, p := range pairs {
		if !proto.Equal(p[0], p[1]) {
			t.Errorf("%s: GKE reported %v, expand sends %v", name, p[0], p[1])
		}
	}
	if gc.GetEphemeralStorageLocalSsdConfig().GetDataCacheCount() != 1 || gc.GetLocalSsdEncryptionMode() != wc.GetLocalSsdEncryptionMode() ||
		strings.Join(gc.Tags, ",") != "olap" || gc.Metadata["team"] != "olap" {
		t.Errorf("expand: %v", gc)
	}
	// GKE's own metadata key is hidden unless configured.
	if _, shown := m.Metadata.Elements()["disable-legacy-endpoints"]; shown {
		t.Errorf("metadata shows GKE's disable-legacy-endpoints: %v", m.Metadata)
	}
	// Flattening again with the state as prior changes nothing (refresh after import).
	again := m
	flatten(ctx, want, &again, &diags)
	if !again.KubeletConfig.Equal(m.KubeletConfig) || !again.LinuxNodeConfig.Equal(m.LinuxNodeConfig) || !again.NetworkConfig.Equal(m.NetworkConfig) ||
		!again.Metadata.Equal(m.Metadata) || !again.SecondaryBootDisks.Equal(m.SecondaryBootDisks) {
		t.Errorf("second flatten differs")
	}
}

// A pool GKE reports without any parity field flattens to nulls (nothing unset shows up).
func TestParityFieldsUnsetStayNull(t *testing.T) {
	var m model
	var diags diag.Diagnostics
	flatten(context.Background(), &containerpb.NodePool{Name: "p", UpgradeSettings: &containerpb.NodePool_UpgradeSettings{MaxSurge: 1}, Config: &containerpb.NodeConfig{MachineType: "n2-standard-8", Metadata: map[string]string{"disable-legacy-endpoints": "true"}}}, &m, &diags)
	for name, v := range map[string]interface{ IsNull() bool }{"kubelet_config": m.KubeletConfig, "linux_node_config": m.LinuxNodeConfig,
		"workload_metadata_config": m.WorkloadMetadataConfig, "gvnic": m.Gvnic, "tags": m.Tags, "metadata": m.Metadata, "reservation_affinity": m.ReservationAffinity,
		"secondary_boot_disks": m.SecondaryBootDisks, "data_cache_count": m.DataCacheCount, "placement_policy": m.PlacementPolicy, "node_drain_config": m.NodeDrainConfig} {
		if !v.IsNull() {
			t.Errorf("%s = %v, want null", name, v)
		}
	}
}

func TestPendingUpgrade(t *testing.T) {
	t.Parallel()
	cases := map[string]struct {
		pool, master string
		auto         bool
		want         string
	}{
		"older patch":      {"1.36.4-gke.100", "1.37.2-gke.1000", true, "1.37.2-gke.1000"},
		"older gke.N":      {"1.37.2-gke.900", "1.37.2-gke.1000", true, "1.37.2-gke.1000"},
		"same":             {"1.37.2-gke.1000", "1.37.2-gke.1000", true, ""},
		"newer":            {"1.37.3-gke.1", "1.37.2-gke.1000", true, ""},
		"auto-upgrade off": {"1.36.4-gke.100", "1.37.2-gke.1000", false, ""},
	}
	for name, tc := range cases {
		np := &containerpb.NodePool{Version: tc.pool, Management: &containerpb.NodeManagement{AutoUpgrade: tc.auto}}
		if got := pendingUpgrade(np, tc.master); got != tc.want {
			t.Errorf("%s: pendingUpgrade = %q, want %q", name, got, tc.want)
		}
	}
}

func TestPoolOperations(t *testing.T) {
	t.Parallel()
	const cl = "projects/p/locations/us-central1-a/clusters/olap"
	base := "https://container.googleapis.com/v1/"
	ops := []*containerpb.Operation{
		{Name: "b", TargetLink: base + cl + "/nodePools/pool-a", Status: containerpb.Operation_RUNNING, StartTime: "2026-01-02T00:00:00Z"},
		{Name: "a", TargetLink: base + cl, Status: containerpb.Operation_PENDING, StartTime: "2026-01-01T00:00:00Z"},
		{Name: "done", TargetLink: base + cl + "/nodePools/pool-a", Status: containerpb.Operation_DONE},
		{Name: "other-pool", TargetLink: base + cl + "/nodePools/pool-b", Status: containerpb.Operation_RUNNING},
		{Name: "other-cluster", TargetLink: base + cl + "x", Status: containerpb.Operation_RUNNING},
	}
	got := poolOperations(ops, cl, "pool-a")
	if len(got) != 2 || got[0].Name != "a" || got[1].Name != "b" {
		t.Fatalf("poolOperations = %v", got)
	}
	d := operationInProgress("pool-a", got, cl)
	if d.Summary() != "GKE Operation In Progress" || !strings.Contains(d.Detail(), "a on the cluster") || !strings.Contains(d.Detail(), "b on the node pool") {
		t.Errorf("warning: %s\n%s", d.Summary(), d.Detail())
	}
	for _, p := range diagtest.Problems(d) { // at 80 columns, as Terraform prints it
		t.Error(p)
	}
}

func TestNameFromPrefix(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	for _, p := range []string{"olap-", strings.Repeat("a", 31)} {
		n := nameFromPrefix(p, now)
		if !strings.HasPrefix(n, p) || len(n) > gkerules.MaxNodePoolNameLen || gkerules.CheckNodePoolName(n) != nil {
			t.Errorf("nameFromPrefix(%q) = %q", p, n)
		}
	}
	if a, b := nameFromPrefix("x", now), nameFromPrefix("x", now); a == b {
		t.Error("two names from one prefix at the same time are equal")
	}
}
