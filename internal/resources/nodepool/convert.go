package nodepool

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"cloud.google.com/go/container/apiv1/containerpb"
	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-framework/types/basetypes"
	"google.golang.org/protobuf/types/known/durationpb"
	corev1 "k8s.io/api/core/v1"

	"github.com/olapgke/terraform-provider-olapgke/internal/diagnostics"
	"github.com/olapgke/terraform-provider-olapgke/internal/gkerules"
	"github.com/olapgke/terraform-provider-olapgke/internal/stsutil"
)

var objAs = basetypes.ObjectAsOptions{}

// expand builds the CreateNodePool body from a planned model.
func expand(ctx context.Context, m *model) (*containerpb.NodePool, diag.Diagnostics) {
	var diags diag.Diagnostics
	cfg := &containerpb.NodeConfig{
		MachineType:    m.MachineType.ValueString(),
		ImageType:      m.ImageType.ValueString(),
		Labels:         stringMap(ctx, m.Labels, &diags),
		ResourceLabels: stringMap(ctx, m.ResourceLabels, &diags),
		Spot:           m.Spot.ValueBool(),
		ServiceAccount: m.ServiceAccount.ValueString(),
		OauthScopes:    stringSet(ctx, m.OAuthScopes, &diags),
		Taints:         withStartupTaint(expandTaints(ctx, m.Taints, &diags), m.StorageStartupTaint),
	}
	if bd := bootDisk(ctx, m, &diags); bd != nil {
		cfg.DiskType, cfg.DiskSizeGb = bd.Type.ValueString(), int32(bd.SizeGB.ValueInt64())
		if iops, tput := bd.ProvisionedIops.ValueInt64(), bd.ProvisionedThroughput.ValueInt64(); iops > 0 || tput > 0 {
			cfg.BootDisk = &containerpb.BootDisk{DiskType: cfg.DiskType, SizeGb: int64(cfg.DiskSizeGb), ProvisionedIops: iops, ProvisionedThroughput: tput}
		}
	}
	raw, eph := m.LocalNVMeSSDCount, m.EphemeralLocalSSDCount.ValueInt64()
	mt, known := gkerules.LookupMachineType(cfg.MachineType)
	switch {
	case !raw.IsNull() && !raw.IsUnknown() && raw.ValueInt64() > 0:
		cfg.LocalNvmeSsdBlockConfig = &containerpb.LocalNvmeSsdBlockConfig{LocalSsdCount: int32(raw.ValueInt64())}
	case eph == 0 && (!known || mt.FixedLocalSSD > 0) && strings.HasSuffix(cfg.MachineType, "-lssd"):
		// -lssd with the count left to the type: ask for raw block and let GKE fill the count.
		cfg.LocalNvmeSsdBlockConfig = &containerpb.LocalNvmeSsdBlockConfig{}
	}
	if eph > 0 {
		cfg.EphemeralStorageLocalSsdConfig = &containerpb.EphemeralStorageLocalSsdConfig{LocalSsdCount: int32(eph)}
	}
	cfg.KubeletConfig = expandKubelet(ctx, m.KubeletConfig, &diags)
	np := &containerpb.NodePool{
		Name:      m.Name.ValueString(),
		Config:    cfg,
		Locations: stringSet(ctx, m.NodeLocations, &diags),
		Version:   m.Version.ValueString(),
	}
	if !m.NodeCount.IsNull() && !m.NodeCount.IsUnknown() {
		np.InitialNodeCount = int32(m.NodeCount.ValueInt64())
	}
	np.Autoscaling = expandAutoscaling(ctx, m.Autoscaling, &diags)
	if np.Autoscaling != nil && np.InitialNodeCount == 0 {
		np.InitialNodeCount = np.Autoscaling.MinNodeCount
	}
	if !m.Management.IsNull() && !m.Management.IsUnknown() {
		var mm managementModel
		diags.Append(m.Management.As(ctx, &mm, objAs)...)
		np.Management = &containerpb.NodeManagement{AutoRepair: boolOr(mm.AutoRepair, true), AutoUpgrade: boolOr(mm.AutoUpgrade, true)}
	}
	np.UpgradeSettings = expandUpgradeSettings(ctx, m.UpgradeSettings, &diags)
	expandNodeConfigFields(ctx, m, np, &diags)
	return np, diags
}

func boolOr(b types.Bool, def bool) bool {
	if b.IsNull() || b.IsUnknown() {
		return def
	}
	return b.ValueBool()
}

func bootDisk(ctx context.Context, m *model, diags *diag.Diagnostics) *bootDiskModel {
	if m.BootDisk.IsNull() || m.BootDisk.IsUnknown() {
		return nil
	}
	var bd bootDiskModel
	diags.Append(m.BootDisk.As(ctx, &bd, objAs)...)
	return &bd
}

func expandAutoscaling(ctx context.Context, o types.Object, diags *diag.Diagnostics) *containerpb.NodePoolAutoscaling {
	if o.IsNull() || o.IsUnknown() {
		return nil
	}
	var a autoscalingModel
	diags.Append(o.As(ctx, &a, objAs)...)
	out := &containerpb.NodePoolAutoscaling{Enabled: true, MinNodeCount: int32(a.MinNodeCount.ValueInt64()), MaxNodeCount: int32(a.MaxNodeCount.ValueInt64())}
	if v, ok := containerpb.NodePoolAutoscaling_LocationPolicy_value[a.LocationPolicy.ValueString()]; ok && !a.LocationPolicy.IsUnknown() {
		out.LocationPolicy = containerpb.NodePoolAutoscaling_LocationPolicy(v)
	}
	return out
}

func expandTaints(ctx context.Context, l types.List, diags *diag.Diagnostics) []*containerpb.NodeTaint {
	if l.IsNull() || l.IsUnknown() {
		return nil
	}
	var ts []taintModel
	diags.Append(l.ElementsAs(ctx, &ts, false)...)
	out := make([]*containerpb.NodeTaint, 0, len(ts))
	for _, t := range ts {
		out = append(out, &containerpb.NodeTaint{Key: t.Key.ValueString(), Value: t.Value.ValueString(),
			Effect: containerpb.NodeTaint_Effect(containerpb.NodeTaint_Effect_value[t.Effect.ValueString()])})
	}
	return out
}

// startupTaint is the taint storage_startup_taint adds to the pool's taints.
func startupTaint() *containerpb.NodeTaint {
	return &containerpb.NodeTaint{Key: stsutil.TaintStorageNotReady, Value: "true", Effect: containerpb.NodeTaint_NO_SCHEDULE}
}

// withStartupTaint is the pool's taints as sent to GKE: the user's, plus the startup taint when
// storage_startup_taint is true (once: a user taint with the same key is left as written).
func withStartupTaint(ts []*containerpb.NodeTaint, on types.Bool) []*containerpb.NodeTaint {
	if !on.ValueBool() || slices.ContainsFunc(ts, isStartupTaint) {
		return ts
	}
	return append(ts, startupTaint())
}

func isStartupTaint(t *containerpb.NodeTaint) bool { return t.GetKey() == stsutil.TaintStorageNotReady }

// splitStartupTaint undoes withStartupTaint on what GKE reports, given the prior
// storage_startup_taint: true (or unknown at create) strips the startup taint from the taints and
// records whether GKE has it; null (import) is set from its presence, and strips it too; false
// leaves the taints as they are (a user who lists the taint in taints keeps seeing it there).
func splitStartupTaint(ts []*containerpb.NodeTaint, prior types.Bool) (types.Bool, []*containerpb.NodeTaint) {
	if !prior.IsNull() && !prior.IsUnknown() && !prior.ValueBool() {
		return prior, ts
	}
	present := slices.ContainsFunc(ts, isStartupTaint)
	return types.BoolValue(present), slices.DeleteFunc(slices.Clone(ts), isStartupTaint)
}

// kubeTaintEffects maps the schema's GKE spelling (google.container.v1.NodeTaint.Effect) to the
// effect the Node objects carry.
var kubeTaintEffects = map[string]corev1.TaintEffect{
	"NO_SCHEDULE":        corev1.TaintEffectNoSchedule,
	"PREFER_NO_SCHEDULE": corev1.TaintEffectPreferNoSchedule,
	"NO_EXECUTE":         corev1.TaintEffectNoExecute,
}

// kubeTaints is the taints list as the pool's Node objects carry it, and whether every key, value
// and effect is known.
func kubeTaints(ctx context.Context, l types.List, diags *diag.Diagnostics) ([]corev1.Taint, bool) {
	if l.IsUnknown() {
		return nil, false
	}
	if l.IsNull() {
		return nil, true
	}
	var ts []taintModel
	diags.Append(l.ElementsAs(ctx, &ts, false)...)
	out := make([]corev1.Taint, 0, len(ts))
	for _, t := range ts {
		if t.Key.IsUnknown() || t.Value.IsUnknown() || t.Effect.IsUnknown() {
			return nil, false
		}
		out = append(out, corev1.Taint{Key: t.Key.ValueString(), Value: t.Value.ValueString(), Effect: kubeTaintEffects[t.Effect.ValueString()]})
	}
	return out, true
}

func expandUpgradeSettings(ctx context.Context, o types.Object, diags *diag.Diagnostics) *containerpb.NodePool_UpgradeSettings {
	if o.IsNull() || o.IsUnknown() {
		return nil
	}
	var u upgradeSettingsModel
	diags.Append(o.As(ctx, &u, objAs)...)
	out := &containerpb.NodePool_UpgradeSettings{}
	if !u.MaxSurge.IsUnknown() {
		out.MaxSurge = int32(u.MaxSurge.ValueInt64())
	}
	if !u.MaxUnavailable.IsUnknown() {
		out.MaxUnavailable = int32(u.MaxUnavailable.ValueInt64())
	}
	if s, ok := containerpb.NodePoolUpdateStrategy_value[u.Strategy.ValueString()]; ok && !u.Strategy.IsUnknown() {
		st := containerpb.NodePoolUpdateStrategy(s)
		out.Strategy = &st
	}
	if !u.BlueGreen.IsNull() && !u.BlueGreen.IsUnknown() {
		var bg blueGreenModel
		diags.Append(u.BlueGreen.As(ctx, &bg, objAs)...)
		b := &containerpb.BlueGreenSettings{}
		if d, ok := duration(bg.NodePoolSoakDuration, "node_pool_soak_duration", diags); ok {
			b.NodePoolSoakDuration = d
		}
		pol := &containerpb.BlueGreenSettings_StandardRolloutPolicy{}
		if !bg.BatchPercentage.IsNull() {
			pol.UpdateBatchSize = &containerpb.BlueGreenSettings_StandardRolloutPolicy_BatchPercentage{BatchPercentage: float32(bg.BatchPercentage.ValueFloat64())}
		} else if !bg.BatchNodeCount.IsNull() {
			pol.UpdateBatchSize = &containerpb.BlueGreenSettings_StandardRolloutPolicy_BatchNodeCount{BatchNodeCount: int32(bg.BatchNodeCount.ValueInt64())}
		}
		if d, ok := duration(bg.BatchSoakDuration, "batch_soak_duration", diags); ok {
			pol.BatchSoakDuration = d
		}
		b.RolloutPolicy = &containerpb.BlueGreenSettings_StandardRolloutPolicy_{StandardRolloutPolicy: pol}
		out.BlueGreenSettings = b
	}
	return out
}

// duration converts upgrade_settings.blue_green.<attr>. The schema's validator refuses a bad
// value at plan; this error is the same check at apply, on the attribute.
func duration(s types.String, attr string, diags *diag.Diagnostics) (*durationpb.Duration, bool) {
	if s.IsNull() || s.IsUnknown() {
		return nil, false
	}
	d, err := time.ParseDuration(s.ValueString())
	if err != nil {
		p := path.Root("upgrade_settings").AtName("blue_green").AtName(attr)
		diags.Append(diagnostics.AttributeError(p, "Invalid Duration", diagnostics.Detail{
			Checked: fmt.Sprintf("%s = %q.", p, s.ValueString()),
			Found:   "It is not a Go duration.",
			Do:      "Write a duration such as \"60s\" or \"1h\".",
			Err:     err,
		}))
		return nil, false
	}
	return durationpb.New(d), true
}

func expandKubelet(ctx context.Context, o types.Object, diags *diag.Diagnostics) *containerpb.NodeKubeletConfig {
	if o.IsNull() || o.IsUnknown() {
		return nil
	}
	var k kubeletConfigModel
	diags.Append(o.As(ctx, &k, objAs)...)
	out := &containerpb.NodeKubeletConfig{EvictionMaxPodGracePeriodSeconds: int32(k.EvictionMaxPodGracePeriodSeconds.ValueInt64())}
	if m := stringMap(ctx, k.EvictionSoft, diags); m != nil {
		out.EvictionSoft = &containerpb.EvictionSignals{MemoryAvailable: m["memory.available"], NodefsAvailable: m["nodefs.available"],
			NodefsInodesFree: m["nodefs.inodesFree"], ImagefsAvailable: m["imagefs.available"], ImagefsInodesFree: m["imagefs.inodesFree"], PidAvailable: m["pid.available"]}
	}
	if m := stringMap(ctx, k.EvictionSoftGracePeriod, diags); m != nil {
		out.EvictionSoftGracePeriod = &containerpb.EvictionGracePeriod{MemoryAvailable: m["memory.available"], NodefsAvailable: m["nodefs.available"],
			NodefsInodesFree: m["nodefs.inodesFree"], ImagefsAvailable: m["imagefs.available"], ImagefsInodesFree: m["imagefs.inodesFree"], PidAvailable: m["pid.available"]}
	}
	if m := stringMap(ctx, k.EvictionMinimumReclaim, diags); m != nil {
		out.EvictionMinimumReclaim = &containerpb.EvictionMinimumReclaim{MemoryAvailable: m["memory.available"], NodefsAvailable: m["nodefs.available"],
			NodefsInodesFree: m["nodefs.inodesFree"], ImagefsAvailable: m["imagefs.available"], ImagefsInodesFree: m["imagefs.inodesFree"], PidAvailable: m["pid.available"]}
	}
	expandKubeletMore(o.Attributes(), out)
	return out
}

// flatten writes what GKE reports into m. m holds the prior values (plan on create/update, state
// on read); values that mean the same as what GKE reports are kept as written (version aliases,
// image type case, the -lssd Local SSD count, labels GKE adds).
func flatten(ctx context.Context, np *containerpb.NodePool, m *model, diags *diag.Diagnostics) {
	cfg := np.GetConfig()
	m.ID = types.StringValue(poolID(m.ref(), np.GetName()))
	m.Name = types.StringValue(np.GetName())
	m.NodeLocations = setOf(np.GetLocations(), diags)
	m.MachineType = types.StringValue(cfg.GetMachineType())
	m.NodeCount = types.Int64Value(int64(np.GetInitialNodeCount()))
	if a := np.GetAutoscaling(); a.GetEnabled() {
		m.Autoscaling = objectOf(autoscalingAttrTypes, map[string]attr.Value{
			"min_node_count": types.Int64Value(int64(a.GetMinNodeCount())), "max_node_count": types.Int64Value(int64(a.GetMaxNodeCount())),
			"location_policy": types.StringValue(a.GetLocationPolicy().String()),
		}, diags)
	} else {
		m.Autoscaling = types.ObjectNull(autoscalingAttrTypes)
	}
	eph := int64(cfg.GetEphemeralStorageLocalSsdConfig().GetLocalSsdCount())
	raw := int64(cfg.GetLocalNvmeSsdBlockConfig().GetLocalSsdCount())
	if prior := m.LocalNVMeSSDCount; prior.IsNull() || prior.IsUnknown() || !gkerules.SameLocalSSDCount(cfg.GetMachineType(), prior.ValueInt64(), raw, eph) {
		m.LocalNVMeSSDCount = types.Int64Value(raw)
	}
	m.EphemeralLocalSSDCount = types.Int64Value(eph)
	m.LocalSSDGiBPerNode = types.Int64Value(gkerules.EffectiveLocalSSDCount(cfg.GetMachineType(), raw, eph) * gkerules.LocalSSDGiB)
	size, dtype := int64(cfg.GetDiskSizeGb()), cfg.GetDiskType()
	if b := cfg.GetBootDisk(); b != nil && b.GetSizeGb() != 0 {
		size, dtype = b.GetSizeGb(), b.GetDiskType()
	}
	m.BootDisk = objectOf(bootDiskAttrTypes, map[string]attr.Value{"type": types.StringValue(dtype), "size_gb": types.Int64Value(size),
		"provisioned_iops": types.Int64Value(cfg.GetBootDisk().GetProvisionedIops()), "provisioned_throughput": types.Int64Value(cfg.GetBootDisk().GetProvisionedThroughput())}, diags)
	if !strings.EqualFold(m.ImageType.ValueString(), cfg.GetImageType()) || m.ImageType.IsUnknown() {
		m.ImageType = types.StringValue(cfg.GetImageType())
	}
	m.Labels = mapOrNull(cfg.GetLabels(), m.Labels, nil, diags)
	m.ResourceLabels = mapOrNull(cfg.GetResourceLabels(), m.ResourceLabels, func(k string) bool { return strings.HasPrefix(k, "goog-") }, diags)
	taints := cfg.GetTaints()
	m.StorageStartupTaint, taints = splitStartupTaint(taints, m.StorageStartupTaint)
	m.Taints = flattenTaints(taints, m.Taints, diags)
	m.Spot = types.BoolValue(cfg.GetSpot())
	m.ServiceAccount = types.StringValue(cfg.GetServiceAccount())
	m.OAuthScopes = setOf(cfg.GetOauthScopes(), diags)
	mg := np.GetManagement()
	m.Management = objectOf(managementAttrTypes, map[string]attr.Value{"auto_repair": types.BoolValue(mg.GetAutoRepair()), "auto_upgrade": types.BoolValue(mg.GetAutoUpgrade())}, diags)
	m.UpgradeSettings = flattenUpgradeSettings(ctx, np.GetUpgradeSettings(), m.UpgradeSettings, diags)
	m.KubeletConfig = flattenKubelet(ctx, cfg.GetKubeletConfig(), m.KubeletConfig, diags)
	if !versionMatches(m.Version.ValueString(), np.GetVersion()) || m.Version.IsUnknown() || m.Version.IsNull() {
		m.Version = types.StringValue(np.GetVersion())
	}
	urls := np.GetInstanceGroupUrls()
	m.InstanceGroupURLs = listOf(urls, diags)
	flattenNodeConfigFields(ctx, np, m, diags)
}

// versionMatches reports whether a configured version (alias or explicit) describes actual:
// "-" and "latest" match anything, "1.37" matches "1.37.2-gke.100", and so on.
func versionMatches(configured, actual string) bool {
	switch configured {
	case "", "-", "latest":
		return configured != ""
	}
	return configured == actual || strings.HasPrefix(actual, configured+".") || strings.HasPrefix(actual, configured+"-")
}

func flattenTaints(ts []*containerpb.NodeTaint, prior types.List, diags *diag.Diagnostics) types.List {
	et := types.ObjectType{AttrTypes: taintAttrTypes}
	if len(ts) == 0 && (prior.IsNull() || prior.IsUnknown()) {
		return types.ListNull(et)
	}
	vals := make([]attr.Value, 0, len(ts))
	for _, t := range ts {
		v := types.StringNull()
		if t.GetValue() != "" {
			v = types.StringValue(t.GetValue())
		}
		vals = append(vals, objectOf(taintAttrTypes, map[string]attr.Value{"key": types.StringValue(t.GetKey()), "value": v, "effect": types.StringValue(t.GetEffect().String())}, diags))
	}
	l, d := types.ListValue(et, vals)
	diags.Append(d...)
	return l
}

func flattenUpgradeSettings(ctx context.Context, u *containerpb.NodePool_UpgradeSettings, prior types.Object, diags *diag.Diagnostics) types.Object {
	bgType := types.ObjectType{AttrTypes: blueGreenAttrTypes}
	bg := types.ObjectNull(blueGreenAttrTypes)
	if b := u.GetBlueGreenSettings(); b != nil && u.GetStrategy() == containerpb.NodePoolUpdateStrategy_BLUE_GREEN {
		pol := b.GetStandardRolloutPolicy()
		vals := map[string]attr.Value{
			"node_pool_soak_duration": durString(b.GetNodePoolSoakDuration()), "batch_soak_duration": durString(pol.GetBatchSoakDuration()),
			"batch_percentage": types.Float64Null(), "batch_node_count": types.Int64Null(),
		}
		if pol.GetBatchPercentage() != 0 {
			vals["batch_percentage"] = types.Float64Value(float64(pol.GetBatchPercentage()))
		}
		if pol.GetBatchNodeCount() != 0 {
			vals["batch_node_count"] = types.Int64Value(int64(pol.GetBatchNodeCount()))
		}
		bg = objectOf(blueGreenAttrTypes, vals, diags)
		// keep the durations as written when they mean the same
		if !prior.IsNull() && !prior.IsUnknown() {
			var pu upgradeSettingsModel
			diags.Append(prior.As(ctx, &pu, objAs)...)
			if !pu.BlueGreen.IsNull() && !pu.BlueGreen.IsUnknown() {
				var pb blueGreenModel
				diags.Append(pu.BlueGreen.As(ctx, &pb, objAs)...)
				if sameDuration(pb.NodePoolSoakDuration, b.GetNodePoolSoakDuration()) {
					vals["node_pool_soak_duration"] = pb.NodePoolSoakDuration
				}
				if sameDuration(pb.BatchSoakDuration, pol.GetBatchSoakDuration()) {
					vals["batch_soak_duration"] = pb.BatchSoakDuration
				}
				if !pb.BatchPercentage.IsNull() && float32(pb.BatchPercentage.ValueFloat64()) == pol.GetBatchPercentage() {
					vals["batch_percentage"] = pb.BatchPercentage
				}
				bg = objectOf(blueGreenAttrTypes, vals, diags)
			}
		}
	}
	_ = bgType
	strategy := u.GetStrategy().String()
	if u.Strategy == nil {
		strategy = "SURGE"
	}
	return objectOf(upgradeSettingsAttrTypes, map[string]attr.Value{
		"strategy": types.StringValue(strategy), "max_surge": types.Int64Value(int64(u.GetMaxSurge())),
		"max_unavailable": types.Int64Value(int64(u.GetMaxUnavailable())), "blue_green": bg,
	}, diags)
}

func sameDuration(s types.String, d *durationpb.Duration) bool {
	if s.IsNull() || s.IsUnknown() || d == nil {
		return false
	}
	p, err := time.ParseDuration(s.ValueString())
	return err == nil && p == d.AsDuration()
}

func durString(d *durationpb.Duration) types.String {
	if d == nil {
		return types.StringNull()
	}
	return types.StringValue(d.AsDuration().String())
}

func flattenKubelet(ctx context.Context, k *containerpb.NodeKubeletConfig, prior types.Object, diags *diag.Diagnostics) types.Object {
	signals := func(memory, nodefs, nodefsInodes, imagefs, imagefsInodes, pid string) map[string]string {
		m := map[string]string{}
		for key, v := range map[string]string{"memory.available": memory, "nodefs.available": nodefs, "nodefs.inodesFree": nodefsInodes,
			"imagefs.available": imagefs, "imagefs.inodesFree": imagefsInodes, "pid.available": pid} {
			if v != "" {
				m[key] = v
			}
		}
		return m
	}
	var pk kubeletConfigModel
	if !prior.IsNull() && !prior.IsUnknown() {
		diags.Append(prior.As(ctx, &pk, objAs)...)
	} else {
		pk = kubeletConfigModel{EvictionSoft: types.MapNull(types.StringType), EvictionSoftGracePeriod: types.MapNull(types.StringType), EvictionMinimumReclaim: types.MapNull(types.StringType)}
	}
	s, g, r := k.GetEvictionSoft(), k.GetEvictionSoftGracePeriod(), k.GetEvictionMinimumReclaim()
	soft := signals(s.GetMemoryAvailable(), s.GetNodefsAvailable(), s.GetNodefsInodesFree(), s.GetImagefsAvailable(), s.GetImagefsInodesFree(), s.GetPidAvailable())
	grace := signals(g.GetMemoryAvailable(), g.GetNodefsAvailable(), g.GetNodefsInodesFree(), g.GetImagefsAvailable(), g.GetImagefsInodesFree(), g.GetPidAvailable())
	reclaim := signals(r.GetMemoryAvailable(), r.GetNodefsAvailable(), r.GetNodefsInodesFree(), r.GetImagefsAvailable(), r.GetImagefsInodesFree(), r.GetPidAvailable())
	maxGrace := int64(k.GetEvictionMaxPodGracePeriodSeconds())
	more, none := flattenKubeletMore(k, attrsOf(prior), diags)
	if len(soft) == 0 && len(grace) == 0 && len(reclaim) == 0 && maxGrace == 0 && none && !known(prior) {
		return types.ObjectNull(kubeletConfigAttrTypes)
	}
	mg := types.Int64Null()
	if maxGrace != 0 || !pk.EvictionMaxPodGracePeriodSeconds.IsNull() {
		mg = types.Int64Value(maxGrace)
	}
	vals := map[string]attr.Value{
		"eviction_soft":                         mapOrNull(soft, pk.EvictionSoft, nil, diags),
		"eviction_soft_grace_period":            mapOrNull(grace, pk.EvictionSoftGracePeriod, nil, diags),
		"eviction_minimum_reclaim":              mapOrNull(reclaim, pk.EvictionMinimumReclaim, nil, diags),
		"eviction_max_pod_grace_period_seconds": mg,
	}
	for k, v := range more {
		vals[k] = v
	}
	return objectOf(kubeletConfigAttrTypes, vals, diags)
}

// --- small conversion helpers ---

func stringMap(ctx context.Context, m types.Map, diags *diag.Diagnostics) map[string]string {
	if m.IsNull() || m.IsUnknown() {
		return nil
	}
	out := map[string]string{}
	diags.Append(m.ElementsAs(ctx, &out, false)...)
	return out
}

func stringSet(ctx context.Context, s types.Set, diags *diag.Diagnostics) []string {
	if s.IsNull() || s.IsUnknown() {
		return nil
	}
	var out []string
	diags.Append(s.ElementsAs(ctx, &out, false)...)
	sort.Strings(out)
	return out
}

func setOf(v []string, diags *diag.Diagnostics) types.Set {
	s, d := types.SetValueFrom(context.Background(), types.StringType, v)
	diags.Append(d...)
	return s
}

func listOf(v []string, diags *diag.Diagnostics) types.List {
	if v == nil {
		v = []string{}
	}
	l, d := types.ListValueFrom(context.Background(), types.StringType, v)
	diags.Append(d...)
	return l
}

func objectOf(t map[string]attr.Type, v map[string]attr.Value, diags *diag.Diagnostics) types.Object {
	o, d := types.ObjectValue(t, v)
	diags.Append(d...)
	return o
}

// mapOrNull converts m (minus keys hidden by skip) to a map value; an empty result is null when
// the prior value was null, so an unset attribute stays unset.
func mapOrNull(m map[string]string, prior types.Map, skip func(string) bool, diags *diag.Diagnostics) types.Map {
	out := map[string]string{}
	for k, v := range m {
		if skip == nil || !skip(k) {
			out[k] = v
		}
	}
	if len(out) == 0 && (prior.IsNull() || prior.IsUnknown()) {
		return types.MapNull(types.StringType)
	}
	v, d := types.MapValueFrom(context.Background(), types.StringType, out)
	diags.Append(d...)
	return v
}
