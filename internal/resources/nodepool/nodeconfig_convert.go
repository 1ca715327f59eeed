package nodepool

import (
	"context"
	"sort"
	"strings"

	"cloud.google.com/go/container/apiv1/containerpb"
	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// Attribute-map access for the nested objects of nodeconfig.go: a null or unknown object has no
// attributes, and a null or unknown attribute reads as its zero value.

func attrsOf(v attr.Value) map[string]attr.Value {
	o, ok := v.(types.Object)
	if !ok || o.IsNull() || o.IsUnknown() {
		return nil
	}
	return o.Attributes()
}

func known(v attr.Value) bool { return v != nil && !v.IsNull() && !v.IsUnknown() }

func getS(m map[string]attr.Value, k string) string {
	if v, ok := m[k].(types.String); ok && known(v) {
		return v.ValueString()
	}
	return ""
}

func getI(m map[string]attr.Value, k string) int64 {
	if v, ok := m[k].(types.Int64); ok && known(v) {
		return v.ValueInt64()
	}
	return 0
}

func getB(m map[string]attr.Value, k string) *bool {
	if v, ok := m[k].(types.Bool); ok && known(v) {
		b := v.ValueBool()
		return &b
	}
	return nil
}

func getMap(ctx context.Context, m map[string]attr.Value, k string, diags *diag.Diagnostics) map[string]string {
	v, ok := m[k].(types.Map)
	if !ok {
		return nil
	}
	return stringMap(ctx, v, diags)
}

// Flatten helpers: GKE's zero value is null when the prior value was null (the attribute stays
// unset), the value otherwise.

func strOr(v string, prior attr.Value) types.String {
	if v == "" && !known(prior) {
		return types.StringNull()
	}
	return types.StringValue(v)
}

func intOr(v int64, prior attr.Value) types.Int64 {
	if v == 0 && !known(prior) {
		return types.Int64Null()
	}
	return types.Int64Value(v)
}

func boolOr2(v *bool, prior attr.Value) types.Bool {
	if v == nil {
		if !known(prior) {
			return types.BoolNull()
		}
		return types.BoolValue(false)
	}
	return types.BoolValue(*v)
}

// enumOr is strOr for an enum whose zero value is unspecified.
func enumOr(name string, zero bool, prior attr.Value) types.String {
	if zero && !known(prior) {
		return types.StringNull()
	}
	return types.StringValue(name)
}

// objOr is the object of vals, or null when empty says GKE reports nothing and prior was null.
func objOr(t map[string]attr.Type, vals map[string]attr.Value, empty bool, prior attr.Value, diags *diag.Diagnostics) types.Object {
	if empty && !known(prior) {
		return types.ObjectNull(t)
	}
	return objectOf(t, vals, diags)
}

func enumValue[E ~int32](m map[string]int32, s string) E { return E(m[s]) }

// expandNodeConfigFields adds the fields of nodeconfig.go to np (built by expand).
func expandNodeConfigFields(ctx context.Context, m *model, np *containerpb.NodePool, diags *diag.Diagnostics) {
	cfg := np.Config
	if a := attrsOf(m.WorkloadMetadataConfig); a != nil {
		cfg.WorkloadMetadataConfig = &containerpb.WorkloadMetadataConfig{Mode: enumValue[containerpb.WorkloadMetadataConfig_Mode](containerpb.WorkloadMetadataConfig_Mode_value, getS(a, "mode"))}
	}
	cfg.LinuxNodeConfig = expandLinux(ctx, m.LinuxNodeConfig, diags)
	if a := attrsOf(m.NodeDrainConfig); a != nil {
		np.NodeDrainConfig = &containerpb.NodePool_NodeDrainConfig{RespectPdbDuringNodePoolDeletion: getB(a, "respect_pdb_during_node_pool_deletion")}
	}
	if a := attrsOf(m.ReservationAffinity); a != nil {
		r := &containerpb.ReservationAffinity{ConsumeReservationType: enumValue[containerpb.ReservationAffinity_Type](containerpb.ReservationAffinity_Type_value, getS(a, "consume_reservation_type")), Key: getS(a, "key")}
		if s, ok := a["values"].(types.Set); ok {
			r.Values = stringSet(ctx, s, diags)
		}
		cfg.ReservationAffinity = r
	}
	if a := attrsOf(m.Gvnic); a != nil {
		cfg.Gvnic = &containerpb.VirtualNIC{Enabled: deref(getB(a, "enabled"))}
	}
	if a := attrsOf(m.GcfsConfig); a != nil {
		cfg.GcfsConfig = &containerpb.GcfsConfig{Enabled: deref(getB(a, "enabled"))}
	}
	np.NetworkConfig = expandNetworkConfig(m.NetworkConfig)
	if !m.SecondaryBootDisks.IsNull() && !m.SecondaryBootDisks.IsUnknown() {
		for _, e := range m.SecondaryBootDisks.Elements() {
			a := attrsOf(e)
			cfg.SecondaryBootDisks = append(cfg.SecondaryBootDisks, &containerpb.SecondaryBootDisk{DiskImage: getS(a, "disk_image"),
				Mode: enumValue[containerpb.SecondaryBootDisk_Mode](containerpb.SecondaryBootDisk_Mode_value, getS(a, "mode"))})
		}
	}
	if n := m.DataCacheCount.ValueInt64(); n > 0 {
		if cfg.EphemeralStorageLocalSsdConfig == nil {
			cfg.EphemeralStorageLocalSsdConfig = &containerpb.EphemeralStorageLocalSsdConfig{}
		}
		cfg.EphemeralStorageLocalSsdConfig.DataCacheCount = int32(n)
	}
	if v := m.LocalSSDEncryptionMode; known(v) {
		e := enumValue[containerpb.NodeConfig_LocalSsdEncryptionMode](containerpb.NodeConfig_LocalSsdEncryptionMode_value, v.ValueString())
		cfg.LocalSsdEncryptionMode = &e
	}
	if a := attrsOf(m.ShieldedInstanceConfig); a != nil {
		cfg.ShieldedInstanceConfig = &containerpb.ShieldedInstanceConfig{EnableSecureBoot: deref(getB(a, "enable_secure_boot")), EnableIntegrityMonitoring: getB(a, "enable_integrity_monitoring") == nil || *getB(a, "enable_integrity_monitoring")}
	}
	cfg.Tags = stringList(ctx, m.Tags, diags)
	cfg.Metadata = stringMap(ctx, m.Metadata, diags)
	if t := stringMap(ctx, m.ResourceManagerTags, diags); t != nil {
		cfg.ResourceManagerTags = &containerpb.ResourceManagerTags{Tags: t}
	}
	if v := m.MaxPodsPerNode; known(v) {
		np.MaxPodsConstraint = &containerpb.MaxPodsConstraint{MaxPodsPerNode: v.ValueInt64()}
	}
	if a := attrsOf(m.PlacementPolicy); a != nil {
		np.PlacementPolicy = &containerpb.NodePool_PlacementPolicy{Type: enumValue[containerpb.NodePool_PlacementPolicy_Type](containerpb.NodePool_PlacementPolicy_Type_value, getS(a, "type")),
			PolicyName: getS(a, "policy_name"), TpuTopology: getS(a, "tpu_topology")}
	}
	if a := attrsOf(m.QueuedProvisioning); a != nil {
		np.QueuedProvisioning = &containerpb.NodePool_QueuedProvisioning{Enabled: deref(getB(a, "enabled"))}
	}
}

func deref(b *bool) bool { return b != nil && *b }

func stringList(ctx context.Context, l types.List, diags *diag.Diagnostics) []string {
	if l.IsNull() || l.IsUnknown() {
		return nil
	}
	var out []string
	diags.Append(l.ElementsAs(ctx, &out, false)...)
	return out
}

func expandLinux(ctx context.Context, o types.Object, diags *diag.Diagnostics) *containerpb.LinuxNodeConfig {
	a := attrsOf(o)
	if a == nil {
		return nil
	}
	l := &containerpb.LinuxNodeConfig{
		Sysctls:                    getMap(ctx, a, "sysctls", diags),
		CgroupMode:                 enumValue[containerpb.LinuxNodeConfig_CgroupMode](containerpb.LinuxNodeConfig_CgroupMode_value, getS(a, "cgroup_mode")),
		TransparentHugepageEnabled: enumValue[containerpb.LinuxNodeConfig_TransparentHugepageEnabled](containerpb.LinuxNodeConfig_TransparentHugepageEnabled_value, getS(a, "transparent_hugepage_enabled")),
		TransparentHugepageDefrag:  enumValue[containerpb.LinuxNodeConfig_TransparentHugepageDefrag](containerpb.LinuxNodeConfig_TransparentHugepageDefrag_value, getS(a, "transparent_hugepage_defrag")),
	}
	if h := attrsOf(a["hugepages_config"]); h != nil {
		l.Hugepages = &containerpb.LinuxNodeConfig_HugepagesConfig{}
		if v, ok := h["hugepage_size_2m"].(types.Int64); ok && known(v) {
			n := int32(v.ValueInt64())
			l.Hugepages.HugepageSize2M = &n
		}
		if v, ok := h["hugepage_size_1g"].(types.Int64); ok && known(v) {
			n := int32(v.ValueInt64())
			l.Hugepages.HugepageSize1G = &n
		}
	}
	return l
}

func expandNetworkConfig(o types.Object) *containerpb.NodeNetworkConfig {
	a := attrsOf(o)
	if a == nil {
		return nil
	}
	n := &containerpb.NodeNetworkConfig{PodRange: getS(a, "pod_range"), CreatePodRange: deref(getB(a, "create_pod_range")), EnablePrivateNodes: getB(a, "enable_private_nodes")}
	if p := attrsOf(a["network_performance_config"]); p != nil {
		t := enumValue[containerpb.NodeNetworkConfig_NetworkPerformanceConfig_Tier](containerpb.NodeNetworkConfig_NetworkPerformanceConfig_Tier_value, getS(p, "total_egress_bandwidth_tier"))
		n.NetworkPerformanceConfig = &containerpb.NodeNetworkConfig_NetworkPerformanceConfig{TotalEgressBandwidthTier: &t}
	}
	return n
}

// expandKubeletMore fills kubelet_config's attributes beyond eviction into out.
func expandKubeletMore(a map[string]attr.Value, out *containerpb.NodeKubeletConfig) {
	out.CpuManagerPolicy = getS(a, "cpu_manager_policy")
	if b := getB(a, "cpu_cfs_quota"); b != nil {
		out.CpuCfsQuota = wrapperspb.Bool(*b)
	}
	out.CpuCfsQuotaPeriod = getS(a, "cpu_cfs_quota_period")
	out.PodPidsLimit = getI(a, "pod_pids_limit")
	out.ImageGcHighThresholdPercent = int32(getI(a, "image_gc_high_threshold_percent"))
	out.ImageGcLowThresholdPercent = int32(getI(a, "image_gc_low_threshold_percent"))
	out.ImageMinimumGcAge = getS(a, "image_minimum_gc_age")
	out.ImageMaximumGcAge = getS(a, "image_maximum_gc_age")
	out.ContainerLogMaxSize = getS(a, "container_log_max_size")
	out.ContainerLogMaxFiles = int32(getI(a, "container_log_max_files"))
	if t := attrsOf(a["topology_manager"]); t != nil {
		out.TopologyManager = &containerpb.TopologyManager{Policy: getS(t, "policy"), Scope: getS(t, "scope")}
	}
	if mm := attrsOf(a["memory_manager"]); mm != nil {
		out.MemoryManager = &containerpb.MemoryManager{Policy: getS(mm, "policy")}
	}
}

// flattenKubeletMore returns kubelet_config's attributes beyond eviction, and whether GKE
// reported none of them.
func flattenKubeletMore(k *containerpb.NodeKubeletConfig, prior map[string]attr.Value, diags *diag.Diagnostics) (map[string]attr.Value, bool) {
	var quota *bool
	if k.GetCpuCfsQuota() != nil {
		b := k.GetCpuCfsQuota().GetValue()
		quota = &b
	}
	tm, mm := k.GetTopologyManager(), k.GetMemoryManager()
	pt, pm := attrsOf(prior["topology_manager"]), attrsOf(prior["memory_manager"])
	out := map[string]attr.Value{
		"cpu_manager_policy":              strOr(k.GetCpuManagerPolicy(), prior["cpu_manager_policy"]),
		"cpu_cfs_quota":                   boolOr2(quota, prior["cpu_cfs_quota"]),
		"cpu_cfs_quota_period":            strOr(k.GetCpuCfsQuotaPeriod(), prior["cpu_cfs_quota_period"]),
		"pod_pids_limit":                  intOr(k.GetPodPidsLimit(), prior["pod_pids_limit"]),
		"image_gc_high_threshold_percent": intOr(int64(k.GetImageGcHighThresholdPercent()), prior["image_gc_high_threshold_percent"]),
		"image_gc_low_threshold_percent":  intOr(int64(k.GetImageGcLowThresholdPercent()), prior["image_gc_low_threshold_percent"]),
		"image_minimum_gc_age":            strOr(k.GetImageMinimumGcAge(), prior["image_minimum_gc_age"]),
		"image_maximum_gc_age":            strOr(k.GetImageMaximumGcAge(), prior["image_maximum_gc_age"]),
		"container_log_max_size":          strOr(k.GetContainerLogMaxSize(), prior["container_log_max_size"]),
		"container_log_max_files":         intOr(int64(k.GetContainerLogMaxFiles()), prior["container_log_max_files"]),
		"topology_manager": objOr(topologyAttrTypes, map[string]attr.Value{"policy": strOr(tm.GetPolicy(), pt["policy"]), "scope": strOr(tm.GetScope(), pt["scope"])},
			tm == nil, prior["topology_manager"], diags),
		"memory_manager": objOr(memoryManagerTypes, map[string]attr.Value{"policy": strOr(mm.GetPolicy(), pm["policy"])}, mm == nil, prior["memory_manager"], diags),
	}
	empty := true
	for _, v := range out {
		if !v.IsNull() {
			empty = false
		}
	}
	return out, empty
}

// flattenNodeConfigFields writes the fields of nodeconfig.go from np into m (m holds the prior
// values).
func flattenNodeConfigFields(ctx context.Context, np *containerpb.NodePool, m *model, diags *diag.Diagnostics) {
	cfg := np.GetConfig()
	if w := cfg.GetWorkloadMetadataConfig(); w != nil {
		m.WorkloadMetadataConfig = objectOf(modeAttrTypes, map[string]attr.Value{"mode": types.StringValue(w.GetMode().String())}, diags)
	} else {
		m.WorkloadMetadataConfig = types.ObjectNull(modeAttrTypes)
	}
	m.LinuxNodeConfig = flattenLinux(cfg.GetLinuxNodeConfig(), m.LinuxNodeConfig, diags)
	if d := np.GetNodeDrainConfig(); d != nil && d.RespectPdbDuringNodePoolDeletion != nil {
		m.NodeDrainConfig = objectOf(nodeDrainAttrTypes, map[string]attr.Value{"respect_pdb_during_node_pool_deletion": types.BoolValue(d.GetRespectPdbDuringNodePoolDeletion())}, diags)
	} else if !known(m.NodeDrainConfig) {
		m.NodeDrainConfig = types.ObjectNull(nodeDrainAttrTypes)
	}
	if r := cfg.GetReservationAffinity(); r != nil {
		pa := attrsOf(m.ReservationAffinity)
		values := types.SetNull(types.StringType)
		if len(r.GetValues()) > 0 || known(pa["values"]) {
			values = setOf(r.GetValues(), diags)
		}
		m.ReservationAffinity = objectOf(reservationAttrTypes, map[string]attr.Value{"consume_reservation_type": types.StringValue(r.GetConsumeReservationType().String()),
			"key": strOr(r.GetKey(), pa["key"]), "values": values}, diags)
	} else {
		m.ReservationAffinity = types.ObjectNull(reservationAttrTypes)
	}
	m.Gvnic = enabledObject(cfg.GetGvnic() != nil, cfg.GetGvnic().GetEnabled(), diags)
	m.GcfsConfig = enabledObject(cfg.GetGcfsConfig() != nil, cfg.GetGcfsConfig().GetEnabled(), diags)
	m.NetworkConfig = flattenNetworkConfig(np.GetNetworkConfig(), m.NetworkConfig, diags)
	m.SecondaryBootDisks = flattenSecondaryDisks(cfg.GetSecondaryBootDisks(), m.SecondaryBootDisks, diags)
	m.DataCacheCount = intOr(int64(cfg.GetEphemeralStorageLocalSsdConfig().GetDataCacheCount()), m.DataCacheCount)
	if e := cfg.LocalSsdEncryptionMode; e != nil && *e != containerpb.NodeConfig_LOCAL_SSD_ENCRYPTION_MODE_UNSPECIFIED {
		m.LocalSSDEncryptionMode = types.StringValue(e.String())
	} else {
		m.LocalSSDEncryptionMode = types.StringNull()
	}
	if s := cfg.GetShieldedInstanceConfig(); s != nil {
		m.ShieldedInstanceConfig = objectOf(shieldedAttrTypes, map[string]attr.Value{"enable_secure_boot": types.BoolValue(s.GetEnableSecureBoot()),
			"enable_integrity_monitoring": types.BoolValue(s.GetEnableIntegrityMonitoring())}, diags)
	} else {
		m.ShieldedInstanceConfig = types.ObjectNull(shieldedAttrTypes)
	}
	if len(cfg.GetTags()) > 0 || known(m.Tags) {
		m.Tags = listOf(cfg.GetTags(), diags)
	} else {
		m.Tags = types.ListNull(types.StringType)
	}
	// GKE adds disable-legacy-endpoints = "true"; it shows only when configured.
	prior := stringMap(ctx, m.Metadata, diags)
	m.Metadata = mapOrNull(cfg.GetMetadata(), m.Metadata, func(k string) bool {
		_, configured := prior[k]
		return k == "disable-legacy-endpoints" && cfg.GetMetadata()[k] == "true" && !configured
	}, diags)
	m.ResourceManagerTags = mapOrNull(cfg.GetResourceManagerTags().GetTags(), m.ResourceManagerTags, nil, diags)
	if c := np.GetMaxPodsConstraint(); c != nil {
		m.MaxPodsPerNode = types.Int64Value(c.GetMaxPodsPerNode())
	} else {
		m.MaxPodsPerNode = types.Int64Null()
	}
	if p := np.GetPlacementPolicy(); p != nil {
		pa := attrsOf(m.PlacementPolicy)
		m.PlacementPolicy = objectOf(placementAttrTypes, map[string]attr.Value{"type": types.StringValue(p.GetType().String()),
			"policy_name": strOr(p.GetPolicyName(), pa["policy_name"]), "tpu_topology": strOr(p.GetTpuTopology(), pa["tpu_topology"])}, diags)
	} else {
		m.PlacementPolicy = types.ObjectNull(placementAttrTypes)
	}
	if q := np.GetQueuedProvisioning(); q != nil {
		m.QueuedProvisioning = objectOf(enabledAttrTypes, map[string]attr.Value{"enabled": types.BoolValue(q.GetEnabled())}, diags)
	} else {
		m.QueuedProvisioning = types.ObjectNull(enabledAttrTypes)
	}
}

func enabledObject(set, enabled bool, diags *diag.Diagnostics) types.Object {
	if !set {
		return types.ObjectNull(enabledAttrTypes)
	}
	return objectOf(enabledAttrTypes, map[string]attr.Value{"enabled": types.BoolValue(enabled)}, diags)
}

func flattenLinux(l *containerpb.LinuxNodeConfig, prior types.Object, diags *diag.Diagnostics) types.Object {
	if l == nil {
		return types.ObjectNull(linuxNodeConfigTypes)
	}
	pa := attrsOf(prior)
	priorSysctls := types.MapNull(types.StringType)
	if v, ok := pa["sysctls"].(types.Map); ok {
		priorSysctls = v
	}
	hp := types.ObjectNull(hugepagesAttrTypes)
	if h := l.GetHugepages(); h != nil {
		ph := attrsOf(pa["hugepages_config"])
		hp = objectOf(hugepagesAttrTypes, map[string]attr.Value{
			"hugepage_size_2m": int32Ptr(h.HugepageSize2M, ph["hugepage_size_2m"]), "hugepage_size_1g": int32Ptr(h.HugepageSize1G, ph["hugepage_size_1g"]),
		}, diags)
	}
	return objectOf(linuxNodeConfigTypes, map[string]attr.Value{
		"sysctls":                      mapOrNull(l.GetSysctls(), priorSysctls, nil, diags),
		"hugepages_config":             hp,
		"transparent_hugepage_enabled": enumOr(l.GetTransparentHugepageEnabled().String(), l.GetTransparentHugepageEnabled() == 0, pa["transparent_hugepage_enabled"]),
		"transparent_hugepage_defrag":  enumOr(l.GetTransparentHugepageDefrag().String(), l.GetTransparentHugepageDefrag() == 0, pa["transparent_hugepage_defrag"]),
		"cgroup_mode":                  enumOr(l.GetCgroupMode().String(), l.GetCgroupMode() == 0, pa["cgroup_mode"]),
	}, diags)
}

func int32Ptr(v *int32, prior attr.Value) types.Int64 {
	if v == nil {
		if known(prior) {
			return types.Int64Value(0)
		}
		return types.Int64Null()
	}
	return types.Int64Value(int64(*v))
}

func flattenNetworkConfig(n *containerpb.NodeNetworkConfig, prior types.Object, diags *diag.Diagnostics) types.Object {
	if n == nil {
		return types.ObjectNull(networkConfigAttrTypes)
	}
	pa := attrsOf(prior)
	// GKE does not report create_pod_range: keep what was configured (as the google provider).
	create := types.BoolNull()
	if v, ok := pa["create_pod_range"].(types.Bool); ok && known(v) {
		create = v
	}
	perf := types.ObjectNull(netPerfAttrTypes)
	if p := n.GetNetworkPerformanceConfig(); p != nil && p.TotalEgressBandwidthTier != nil {
		perf = objectOf(netPerfAttrTypes, map[string]attr.Value{"total_egress_bandwidth_tier": types.StringValue(p.GetTotalEgressBandwidthTier().String())}, diags)
	}
	return objectOf(networkConfigAttrTypes, map[string]attr.Value{
		"pod_range": types.StringValue(n.GetPodRange()), "create_pod_range": create,
		"enable_private_nodes": types.BoolValue(n.GetEnablePrivateNodes()), "network_performance_config": perf,
	}, diags)
}

func flattenSecondaryDisks(ds []*containerpb.SecondaryBootDisk, prior types.List, diags *diag.Diagnostics) types.List {
	et := types.ObjectType{AttrTypes: secondaryDiskAttrTypes}
	if len(ds) == 0 && !known(prior) {
		return types.ListNull(et)
	}
	var priorElems []attr.Value
	if known(prior) {
		priorElems = prior.Elements()
	}
	vals := make([]attr.Value, 0, len(ds))
	for i, d := range ds {
		var pm attr.Value
		if i < len(priorElems) {
			pm = attrsOf(priorElems[i])["mode"]
		}
		vals = append(vals, objectOf(secondaryDiskAttrTypes, map[string]attr.Value{"disk_image": types.StringValue(d.GetDiskImage()),
			"mode": enumOr(d.GetMode().String(), d.GetMode() == 0, pm)}, diags))
	}
	l, d := types.ListValue(et, vals)
	diags.Append(d...)
	return l
}

// --- GKE activity (operations, pending_upgrade) ---

// poolOperations are the operations not DONE whose target is the pool or its cluster, oldest
// first.
func poolOperations(ops []*containerpb.Operation, clusterName, poolName string) []*containerpb.Operation {
	var out []*containerpb.Operation
	for _, op := range ops {
		if op.GetStatus() == containerpb.Operation_DONE {
			continue
		}
		if t := operationTarget(op.GetTargetLink(), clusterName, poolName); t != "" {
			out = append(out, op)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].GetStartTime() < out[j].GetStartTime() })
	return out
}

// operationTarget is "node_pool" when link names the pool, "cluster" when it names the cluster
// itself, "" otherwise. clusterName is projects/P/locations/L/clusters/C.
func operationTarget(link, clusterName, poolName string) string {
	i := strings.Index(link, "/projects/")
	if i < 0 {
		if !strings.HasPrefix(link, "projects/") {
			return ""
		}
	} else {
		link = link[i+1:]
	}
	switch link {
	case clusterName + "/nodePools/" + poolName:
		return "node_pool"
	case clusterName:
		return "cluster"
	}
	return ""
}

func operationsValue(ops []*containerpb.Operation, clusterName, poolName string, diags *diag.Diagnostics) types.List {
	et := types.ObjectType{AttrTypes: operationAttrTypes}
	vals := make([]attr.Value, 0, len(ops))
	for _, op := range ops {
		vals = append(vals, objectOf(operationAttrTypes, map[string]attr.Value{
			"name": types.StringValue(op.GetName()), "type": types.StringValue(op.GetOperationType().String()),
			"status": types.StringValue(op.GetStatus().String()), "start_time": types.StringValue(op.GetStartTime()),
			"target": types.StringValue(operationTarget(op.GetTargetLink(), clusterName, poolName)),
		}, diags))
	}
	l, d := types.ListValue(et, vals)
	diags.Append(d...)
	return l
}

// pendingUpgrade is the version GKE auto-upgrades the pool to: the control plane's when
// auto-upgrade is on and the pool's version is older; "" otherwise.
func pendingUpgrade(np *containerpb.NodePool, masterVersion string) string {
	if !np.GetManagement().GetAutoUpgrade() || masterVersion == "" {
		return ""
	}
	if compareVersions(np.GetVersion(), masterVersion) < 0 {
		return masterVersion
	}
	return ""
}

// compareVersions orders GKE versions "1.37.2-gke.1000" by minor, patch and gke.N.
func compareVersions(a, b string) int {
	pa, pb := versionParts(a), versionParts(b)
	for i := range pa {
		if pa[i] != pb[i] {
			if pa[i] < pb[i] {
				return -1
			}
			return 1
		}
	}
	return 0
}

func versionParts(v string) [4]int {
	var out [4]int
	v = strings.Replace(v, "-gke.", ".", 1)
	for i, f := range strings.SplitN(v, ".", 4) {
		n := 0
		for _, c := range f {
			if c < '0' || c > '9' {
				break
			}
			n = n*10 + int(c-'0')
		}
		out[i] = n
	}
	return out
}
