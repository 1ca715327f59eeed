package gke

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"cloud.google.com/go/container/apiv1/containerpb"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Compute Engine's regional quotas, as GKE checks them when a node pool is created: the pool's
// VMs need vCPUs (quota "CPUS" for N1 and E2, a quota per family for the others: "N2_CPUS",
// "N2D_CPUS", "C2_CPUS", "C3_CPUS", "C3D_CPUS"), Local SSD ("LOCAL_SSD_TOTAL_GB", 375 GB a
// disk) and boot disks ("SSD_TOTAL_GB" for pd-balanced and pd-ssd, "DISKS_TOTAL_GB" for
// pd-standard). Source: Compute Engine's "Allocation quotas" page (CPU quota per machine family,
// Local SSD and persistent disk quotas). GKE refuses the CreateNodePool call itself, with HTTP 403
// PERMISSION_DENIED (not RESOURCE_EXHAUSTED) and Compute Engine's text:
//
//	Insufficient regional quota to satisfy request: resource "CPUS": request requires '144.0' and
//	is short '109.0'. project has a quota of '128.0' with '35.0' available. View and manage quotas
//	at https://console.cloud.google.com/iam-admin/quotas?usage=USED&project=mlab-staging.
//
// (gcloud's "ResponseError: code=403" in m-lab/etl#798; "googleapi: Error 403: Insufficient
// regional quota ... forbidden" in GoogleCloudPlatform/k8s-config-connector#321 for "C2_CPUS";
// "status":"PERMISSION_DENIED" in kubeflow/kubeflow#842.) When several quotas are short, each
// is numbered: "(1) insufficient regional quota ... (2) insufficient regional quota ..."
// (kaiwaehner/hivemq-mqtt-tensorflow-kafka-realtime-iot-machine-learning-training-inference#48).
//
// The emulator enforces only the limits a test set (SetRegionalQuota): by default there is none.
// Usage is every node of every pool of the project in the region. Not modelled: project-wide
// quotas (CPUS_ALL_REGIONS), IN_USE_ADDRESSES, a resize or an autoscaler running into quota
// (there the managed instance group fails later, not the call).

// quotaMetric is the CPU quota a machine family's vCPUs count against.
func quotaMetric(family string) string {
	switch family {
	case "n1", "e2", "":
		return "CPUS"
	}
	return strings.ToUpper(family) + "_CPUS"
}

// SetRegionalQuota sets the regional quota limits (metric -> limit, e.g. {"N2_CPUS": 16}) GKE
// checks on node pool creation; an empty map removes them all. It returns the limits now in
// force. For tests (the control endpoint).
func (s *Server) SetRegionalQuota(limits map[string]float64) (map[string]float64, error) {
	for m, v := range limits {
		if v < 0 || m == "" {
			return nil, invalid("Invalid regional quota %q: %g. Must be a metric name and a non-negative limit.", m, v)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.regional = maps.Clone(limits)
	s.log.Info("regional quota set", "limits", limits)
	return maps.Clone(s.regional), nil
}

// nodeQuotaUse is what one node of a pool with config cfg takes from each regional quota.
func nodeQuotaUse(cfg *containerpb.NodeConfig) map[string]float64 {
	use := map[string]float64{}
	mt, _ := lookupMachineType(cfg.GetMachineType())
	use[quotaMetric(mt.Family)] = float64(mt.VCPUs)
	raw, eph := localSSDCounts(cfg)
	if n := raw + eph + cfg.GetLocalSsdCount(); n > 0 {
		use["LOCAL_SSD_TOTAL_GB"] = float64(n) * 375
	}
	disk := "SSD_TOTAL_GB"
	if cfg.GetDiskType() == "pd-standard" {
		disk = "DISKS_TOTAL_GB"
	}
	use[disk] = float64(cfg.GetDiskSizeGb())
	return use
}

// quotaLocked refuses the creation of np in cluster c when the region's quotas cannot hold its
// nodes, with GKE's error.
func (s *Server) quotaLocked(c *cluster, np *containerpb.NodePool) error {
	if len(s.regional) == 0 {
		return nil
	}
	region := regionOf(c.key.Location)
	used := map[string]float64{}
	for _, oc := range s.clusters {
		if oc.key.Project != c.key.Project || regionOf(oc.key.Location) != region {
			continue
		}
		for _, p := range oc.pools {
			for m, v := range nodeQuotaUse(p.np.GetConfig()) {
				used[m] += v * float64(len(p.nodes))
			}
		}
	}
	nodes := float64(np.GetInitialNodeCount()) * float64(max(len(np.GetLocations()), 1))
	var short []string
	for _, m := range slices.Sorted(maps.Keys(s.regional)) {
		req := nodeQuotaUse(np.GetConfig())[m] * nodes
		limit := s.regional[m]
		avail := max(limit-used[m], 0)
		if req == 0 || req <= avail {
			continue
		}
		short = append(short, fmt.Sprintf("insufficient regional quota to satisfy request: resource %q: request requires '%s' and is short '%s'. project has a quota of '%s' with '%s' available. View and manage quotas at https://console.cloud.google.com/iam-admin/quotas?usage=USED&project=%s.",
			m, quotaNum(req), quotaNum(req-avail), quotaNum(limit), quotaNum(avail), c.key.Project))
	}
	switch len(short) {
	case 0:
		return nil
	case 1:
		return status.Error(codes.PermissionDenied, "I"+short[0][1:])
	}
	var b strings.Builder
	for i, m := range short {
		fmt.Fprintf(&b, "\n\t(%d) %s", i+1, m)
	}
	return status.Error(codes.PermissionDenied, b.String())
}

// quotaNum writes a quota figure as Compute Engine does: one decimal ('24.0').
func quotaNum(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }
