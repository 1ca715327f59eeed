package deviceclass

import (
	"context"
	"maps"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-framework/types/basetypes"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/olapgke/terraform-provider-olapgke/internal/lvmdconf"
)

type model struct {
	ID              types.String `tfsdk:"id"`
	Name            types.String `tfsdk:"name"`
	VolumeGroup     types.String `tfsdk:"volume_group"`
	Default         types.Bool   `tfsdk:"default"`
	SpareGB         types.Int64  `tfsdk:"spare_gb"`
	Type            types.String `tfsdk:"type"`
	ThinPool        types.Object `tfsdk:"thin_pool"`
	LVCreateOptions types.List   `tfsdk:"lvcreate_options"`
	Stripe          types.Int64  `tfsdk:"stripe"`
	StripeSize      types.String `tfsdk:"stripe_size"`
	LVMDConfigMap   types.Object `tfsdk:"lvmd_config_map"`
	StorageClass    types.Object `tfsdk:"storage_class"`
	RestartLVMD     types.Bool   `tfsdk:"restart_lvmd"`
	ForceDestroy    types.Bool   `tfsdk:"force_destroy"`
	Capacity        types.Map    `tfsdk:"capacity"`
	Volumes         types.List   `tfsdk:"volumes"`
}

type thinPoolModel struct {
	Name               types.String  `tfsdk:"name"`
	OverprovisionRatio types.Float64 `tfsdk:"overprovision_ratio"`
}

type cmModel struct {
	Namespace types.String `tfsdk:"namespace"`
	Name      types.String `tfsdk:"name"`
	Key       types.String `tfsdk:"key"`
}

type scModel struct {
	Name                 types.String `tfsdk:"name"`
	FSType               types.String `tfsdk:"fs_type"`
	ReclaimPolicy        types.String `tfsdk:"reclaim_policy"`
	AllowVolumeExpansion types.Bool   `tfsdk:"allow_volume_expansion"`
	IsDefault            types.Bool   `tfsdk:"is_default"`
	VolumeBindingMode    types.String `tfsdk:"volume_binding_mode"`
	Labels               types.Map    `tfsdk:"labels"`
	Annotations          types.Map    `tfsdk:"annotations"`
}

var asOpts = basetypes.ObjectAsOptions{UnhandledNullAsEmpty: true, UnhandledUnknownAsEmpty: true}

// cm returns the ConfigMap reference; ok is false while any part is unknown.
func (m *model) cm(ctx context.Context) (cmRef, bool) {
	if m.LVMDConfigMap.IsUnknown() {
		return cmRef{}, false
	}
	if m.LVMDConfigMap.IsNull() {
		return cmRef{DefaultNamespace, DefaultConfigMapName, DefaultConfigKey}, true
	}
	var c cmModel
	if d := m.LVMDConfigMap.As(ctx, &c, asOpts); d.HasError() {
		return cmRef{}, false
	}
	if c.Namespace.IsUnknown() || c.Name.IsUnknown() || c.Key.IsUnknown() {
		return cmRef{}, false
	}
	return cmRef{c.Namespace.ValueString(), c.Name.ValueString(), c.Key.ValueString()}, true
}

// sc returns the storage_class block or nil when it is null or unknown.
func (m *model) sc(ctx context.Context) *scModel {
	if m.StorageClass.IsNull() || m.StorageClass.IsUnknown() {
		return nil
	}
	var s scModel
	if d := m.StorageClass.As(ctx, &s, asOpts); d.HasError() {
		return nil
	}
	return &s
}

// lvmdKnown reports whether every attribute that goes into the lvmd entry is known.
func (m *model) lvmdKnown() bool {
	return !m.Name.IsUnknown() && !m.VolumeGroup.IsUnknown() && !m.Default.IsUnknown() && !m.SpareGB.IsUnknown() &&
		!m.Type.IsUnknown() && !m.ThinPool.IsUnknown() && !m.LVCreateOptions.IsUnknown() && !m.Stripe.IsUnknown() &&
		!m.StripeSize.IsUnknown() && thinPoolKnown(m.ThinPool)
}

func thinPoolKnown(o types.Object) bool {
	if o.IsNull() {
		return true
	}
	for _, v := range o.Attributes() {
		if v.IsUnknown() {
			return false
		}
	}
	return true
}

// expand builds the lvmd entry. Type thick is written as an absent type (lvmd's default).
func (m *model) expand(ctx context.Context) (lvmdconf.DeviceClass, diag.Diagnostics) {
	var diags diag.Diagnostics
	dc := lvmdconf.DeviceClass{
		Name:        m.Name.ValueString(),
		VolumeGroup: m.VolumeGroup.ValueString(),
		Default:     m.Default.ValueBool(),
		StripeSize:  m.StripeSize.ValueString(),
	}
	if m.Type.ValueString() == lvmdconf.TypeThin {
		dc.Type = lvmdconf.TypeThin
	}
	if !m.SpareGB.IsNull() && !m.SpareGB.IsUnknown() && m.SpareGB.ValueInt64() >= 0 {
		v := uint64(m.SpareGB.ValueInt64())
		dc.SpareGB = &v
	}
	if !m.Stripe.IsNull() && !m.Stripe.IsUnknown() && m.Stripe.ValueInt64() >= 0 {
		v := uint(m.Stripe.ValueInt64())
		dc.Stripe = &v
	}
	if !m.LVCreateOptions.IsNull() && !m.LVCreateOptions.IsUnknown() {
		diags.Append(m.LVCreateOptions.ElementsAs(ctx, &dc.LVCreateOptions, false)...)
	}
	if !m.ThinPool.IsNull() && !m.ThinPool.IsUnknown() {
		var tp thinPoolModel
		diags.Append(m.ThinPool.As(ctx, &tp, asOpts)...)
		dc.ThinPool = &lvmdconf.ThinPool{Name: tp.Name.ValueString(), OverprovisionRatio: tp.OverprovisionRatio.ValueFloat64()}
	}
	return dc, diags
}

// flattenClass sets the lvmd attributes from the file's entry.
func (m *model) flattenClass(dc lvmdconf.DeviceClass) {
	m.Name = types.StringValue(dc.Name)
	m.VolumeGroup = types.StringValue(dc.VolumeGroup)
	m.Default = types.BoolValue(dc.Default)
	m.Type = types.StringValue(dc.EffectiveType())
	m.SpareGB = types.Int64Null()
	if dc.SpareGB != nil {
		m.SpareGB = types.Int64Value(int64(*dc.SpareGB))
	}
	m.Stripe = types.Int64Null()
	if dc.Stripe != nil {
		m.Stripe = types.Int64Value(int64(*dc.Stripe))
	}
	m.StripeSize = types.StringNull()
	if dc.StripeSize != "" {
		m.StripeSize = types.StringValue(dc.StripeSize)
	}
	m.LVCreateOptions = types.ListNull(types.StringType)
	if len(dc.LVCreateOptions) > 0 {
		vals := make([]attr.Value, len(dc.LVCreateOptions))
		for i, o := range dc.LVCreateOptions {
			vals[i] = types.StringValue(o)
		}
		m.LVCreateOptions = types.ListValueMust(types.StringType, vals)
	}
	m.ThinPool = types.ObjectNull(thinPoolAttrTypes)
	if dc.IsThin() && dc.ThinPool != nil {
		m.ThinPool = types.ObjectValueMust(thinPoolAttrTypes, map[string]attr.Value{
			"name": types.StringValue(dc.ThinPool.Name), "overprovision_ratio": types.Float64Value(dc.ThinPool.OverprovisionRatio),
		})
	}
}

func stringMap(ctx context.Context, m types.Map) map[string]string {
	if m.IsNull() || m.IsUnknown() {
		return nil
	}
	out := map[string]string{}
	_ = m.ElementsAs(ctx, &out, false)
	return out
}

// desiredStorageClass builds the StorageClass the block describes for device class class.
func desiredStorageClass(ctx context.Context, s *scModel, class string) *storagev1.StorageClass {
	reclaim := corev1.PersistentVolumeReclaimPolicy(s.ReclaimPolicy.ValueString())
	binding := storagev1.VolumeBindingMode(s.VolumeBindingMode.ValueString())
	expand := s.AllowVolumeExpansion.ValueBool()
	sc := &storagev1.StorageClass{
		ObjectMeta:           metav1.ObjectMeta{Name: s.Name.ValueString(), Labels: stringMap(ctx, s.Labels), Annotations: stringMap(ctx, s.Annotations)},
		Provisioner:          Provisioner,
		Parameters:           map[string]string{DeviceClassParam: class, FSTypeParam: s.FSType.ValueString()},
		ReclaimPolicy:        &reclaim,
		VolumeBindingMode:    &binding,
		AllowVolumeExpansion: &expand,
	}
	if s.IsDefault.ValueBool() {
		if sc.Annotations == nil {
			sc.Annotations = map[string]string{}
		}
		sc.Annotations[AnnIsDefaultClass] = "true"
	}
	return sc
}

// flattenStorageClass describes a live StorageClass. Labels and annotations keep only the keys
// prior managed (all of them when prior is nil, as after import), never is-default-class.
func flattenStorageClass(ctx context.Context, sc *storagev1.StorageClass, prior *scModel) types.Object {
	reclaim := "Delete"
	if sc.ReclaimPolicy != nil {
		reclaim = string(*sc.ReclaimPolicy)
	}
	binding := string(storagev1.VolumeBindingImmediate)
	if sc.VolumeBindingMode != nil {
		binding = string(*sc.VolumeBindingMode)
	}
	filter := func(live map[string]string, priorMap types.Map, importing bool) types.Map {
		keep := map[string]attr.Value{}
		var wanted map[string]string
		if !importing {
			if priorMap.IsNull() {
				return types.MapNull(types.StringType)
			}
			wanted = stringMap(ctx, priorMap)
		}
		for k, v := range live {
			if k == AnnIsDefaultClass || k == "kubectl.kubernetes.io/last-applied-configuration" {
				continue
			}
			if _, ok := wanted[k]; ok || importing {
				keep[k] = types.StringValue(v)
			}
		}
		if importing && len(keep) == 0 {
			return types.MapNull(types.StringType)
		}
		return types.MapValueMust(types.StringType, keep)
	}
	importing := prior == nil
	var pl, pa types.Map
	if prior != nil {
		pl, pa = prior.Labels, prior.Annotations
	}
	return types.ObjectValueMust(scAttrTypes, map[string]attr.Value{
		"name":                   types.StringValue(sc.Name),
		"fs_type":                types.StringValue(sc.Parameters[FSTypeParam]),
		"reclaim_policy":         types.StringValue(reclaim),
		"allow_volume_expansion": types.BoolValue(sc.AllowVolumeExpansion != nil && *sc.AllowVolumeExpansion),
		"is_default":             types.BoolValue(sc.Annotations[AnnIsDefaultClass] == "true"),
		"volume_binding_mode":    types.StringValue(binding),
		"labels":                 filter(sc.Labels, pl, importing),
		"annotations":            filter(sc.Annotations, pa, importing),
	})
}

// mergeMeta returns live with the managed keys set to want: keys in prior but not in want are
// removed, keys nobody manages are kept.
func mergeMeta(live, want, prior map[string]string) map[string]string {
	out := maps.Clone(live)
	if out == nil {
		out = map[string]string{}
	}
	for k := range prior {
		if _, ok := want[k]; !ok {
			delete(out, k)
		}
	}
	maps.Copy(out, want)
	return out
}
