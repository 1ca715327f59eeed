package gke

import (
	"testing"

	"cloud.google.com/go/container/apiv1/containerpb"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// TestRegionalQuota: node pool creation beyond a regional quota is refused by the call itself,
// PERMISSION_DENIED with Compute Engine's text (one shortfall, or several numbered); the pool
// that fits, the near miss, is created. The default pool (3 x n2-standard-8, 2 Local SSDs, 100 GB
// pd-balanced boot disks) uses 24 N2_CPUS, 2250 LOCAL_SSD_TOTAL_GB and 300 SSD_TOTAL_GB.
func TestRegionalQuota(t *testing.T) {
	t.Parallel()
	e := start(t, nil)
	one := func(name string) *containerpb.CreateNodePoolRequest {
		return &containerpb.CreateNodePoolRequest{Parent: parent, NodePool: &containerpb.NodePool{Name: name, InitialNodeCount: 1,
			Config: &containerpb.NodeConfig{MachineType: "n2-standard-8", DiskSizeGb: 100, LocalNvmeSsdBlockConfig: &containerpb.LocalNvmeSsdBlockConfig{LocalSsdCount: 2}}}}
	}
	const manage = "View and manage quotas at https://console.cloud.google.com/iam-admin/quotas?usage=USED&project=sandbox."
	for name, tc := range map[string]struct {
		limits map[string]float64
		want   string
	}{
		"cpus": {map[string]float64{"N2_CPUS": 30, "CPUS": 8},
			`Insufficient regional quota to satisfy request: resource "N2_CPUS": request requires '8.0' and is short '2.0'. project has a quota of '30.0' with '6.0' available. ` + manage},
		"cpus and local ssd": {map[string]float64{"N2_CPUS": 24, "LOCAL_SSD_TOTAL_GB": 2500},
			"\n\t(1) insufficient regional quota to satisfy request: resource \"LOCAL_SSD_TOTAL_GB\": request requires '750.0' and is short '500.0'. project has a quota of '2500.0' with '250.0' available. " + manage +
				"\n\t(2) insufficient regional quota to satisfy request: resource \"N2_CPUS\": request requires '8.0' and is short '8.0'. project has a quota of '24.0' with '0.0' available. " + manage},
	} {
		if _, err := e.s.SetRegionalQuota(tc.limits); err != nil {
			t.Fatal(err)
		}
		_, err := e.c.CreateNodePool(t.Context(), one("short"))
		if st, _ := status.FromError(err); st.Code() != codes.PermissionDenied || st.Message() != tc.want {
			t.Errorf("%s: %v, want PermissionDenied %q", name, err, tc.want)
		}
	}
	if _, err := e.s.SetRegionalQuota(map[string]float64{"N2_CPUS": 32, "LOCAL_SSD_TOTAL_GB": 3000, "SSD_TOTAL_GB": 400}); err != nil {
		t.Fatal(err)
	}
	e.ok(t)(e.c.CreateNodePool(t.Context(), one("fits")))
	// Now at every limit: the next one is short.
	if _, err := e.c.CreateNodePool(t.Context(), one("full")); status.Code(err) != codes.PermissionDenied {
		t.Errorf("at the limits: %v, want PermissionDenied", err)
	}
	if _, err := e.s.SetRegionalQuota(map[string]float64{"N2_CPUS": -1}); status.Code(err) != codes.InvalidArgument {
		t.Errorf("negative limit: %v", err)
	}
}
