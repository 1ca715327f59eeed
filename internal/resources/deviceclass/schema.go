package deviceclass

import (
	"context"

	"github.com/hashicorp/terraform-plugin-framework-validators/int64validator"
	"github.com/hashicorp/terraform-plugin-framework-validators/listvalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/booldefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/objectdefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/objectplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringdefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/olapgke/terraform-provider-olapgke/internal/lvmdconf"
)

var (
	thinPoolAttrTypes = map[string]attr.Type{"name": types.StringType, "overprovision_ratio": types.Float64Type}
	cmAttrTypes       = map[string]attr.Type{"namespace": types.StringType, "name": types.StringType, "key": types.StringType}
	scAttrTypes       = map[string]attr.Type{
		"name": types.StringType, "fs_type": types.StringType, "reclaim_policy": types.StringType,
		"allow_volume_expansion": types.BoolType, "is_default": types.BoolType, "volume_binding_mode": types.StringType,
		"labels": types.MapType{ElemType: types.StringType}, "annotations": types.MapType{ElemType: types.StringType},
	}
	volumeAttrTypes = map[string]attr.Type{
		"namespace": types.StringType, "pvc": types.StringType, "pv": types.StringType, "node": types.StringType,
		"storage_class": types.StringType, "statefulset": types.StringType, "ordinal": types.Int64Type,
	}
)

func cmObject(c cmRef) types.Object {
	return types.ObjectValueMust(cmAttrTypes, map[string]attr.Value{
		"namespace": types.StringValue(c.Namespace), "name": types.StringValue(c.Name), "key": types.StringValue(c.Key),
	})
}

func (r *deviceClassResource) Schema(_ context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	resp.Schema = schema.Schema{
		Version: schemaVersion,
		MarkdownDescription: "One TopoLVM device class: an entry of lvmd's `device-classes` in the lvmd ConfigMap (shared with other " +
			"classes, edited with read-modify-write and retry on conflict, other entries and keys kept) and optionally the " +
			"StorageClass that provisions from it. The plan checks lvmd's rules, exactly one default class across the ConfigMap, " +
			"`WaitForFirstConsumer` binding, and refuses to destroy, rename or move a class to another volume group while " +
			"PersistentVolumes use it (listing the PVCs and StatefulSet ordinals) unless `force_destroy` is set.",
		Attributes: map[string]schema.Attribute{
			"id": schema.StringAttribute{
				Computed:            true,
				MarkdownDescription: "`<configmap-namespace>/<configmap-name>/<class>`.",
				PlanModifiers:       []planmodifier.String{stringplanmodifier.UseStateForUnknown()},
			},
			"name": schema.StringAttribute{
				Required: true,
				MarkdownDescription: "lvmd `name`: 1-63 characters, alphanumerics, `-`, `_`, `.`, starting and ending with an alphanumeric " +
					"(lvmd's rule; the name is also the suffix of the node annotation `capacity.topolvm.io/<name>`). Renaming while " +
					"PersistentVolumes use the class is refused unless `force_destroy`.",
			},
			"volume_group": schema.StringAttribute{
				Required:            true,
				MarkdownDescription: "lvmd `volume-group`: the LVM volume group on each node. TopoLVM does not create it. Changing it while PersistentVolumes use the class is refused unless `force_destroy`.",
			},
			"default": schema.BoolAttribute{
				Optional: true, Computed: true, Default: booldefault.StaticBool(false),
				MarkdownDescription: "lvmd `default`: the class used by StorageClasses that name none. Two defaults in the ConfigMap are refused at plan (checked against the live ConfigMap); none is a warning, so moving the default takes two applies (old one false, then new one true).",
			},
			"spare_gb": schema.Int64Attribute{
				Optional:            true,
				MarkdownDescription: "lvmd `spare-gb`: GiB kept free in the volume group (lvmd uses 10 when unset). Must be >= 0.",
				Validators:          []validator.Int64{int64validator.AtLeast(0)},
			},
			"type": schema.StringAttribute{
				Optional: true, Computed: true, Default: stringdefault.StaticString(lvmdconf.TypeThick),
				MarkdownDescription: "lvmd `type`: `thick` (default) or `thin` (needs `thin_pool`).",
				Validators:          []validator.String{stringvalidator.OneOf(lvmdconf.TypeThick, lvmdconf.TypeThin)},
			},
			"thin_pool": schema.SingleNestedAttribute{
				Optional:            true,
				MarkdownDescription: "lvmd `thin-pool`, required with `type = \"thin\"`.",
				Attributes: map[string]schema.Attribute{
					"name": schema.StringAttribute{Required: true, MarkdownDescription: "Thin pool logical volume name in `volume_group`."},
					"overprovision_ratio": schema.Float64Attribute{
						Required: true,
						MarkdownDescription: "lvmd `overprovision-ratio`: virtual capacity = (pool size) x ratio. Must be greater than 1 " +
							"(lvmd itself refuses values below 1.0; 1.0 would only be thick provisioning with thin-pool overhead).",
					},
				},
			},
			"lvcreate_options": schema.ListAttribute{
				Optional: true, ElementType: types.StringType,
				MarkdownDescription: "lvmd `lvcreate-options`: extra arguments to `lvcreate`.",
				Validators:          []validator.List{listvalidator.SizeAtLeast(1), listvalidator.ValueStringsAre(stringvalidator.LengthAtLeast(1))},
			},
			"stripe": schema.Int64Attribute{
				Optional: true, MarkdownDescription: "lvmd `stripe`: number of stripes (>= 1).",
				Validators: []validator.Int64{int64validator.AtLeast(1)},
			},
			"stripe_size": schema.StringAttribute{
				Optional:            true,
				MarkdownDescription: "lvmd `stripe-size` in lvcreate size syntax: a whole number with an optional unit `b`, `s`, `k`, `m`, `g`, `t`, `p`, `e` (e.g. `64k`, `4m`).",
			},
			"lvmd_config_map": schema.SingleNestedAttribute{
				Optional: true, Computed: true,
				Default:             objectdefault.StaticValue(cmObject(cmRef{DefaultNamespace, DefaultConfigMapName, DefaultConfigKey})),
				MarkdownDescription: "Where lvmd's config lives (defaults match the TopoLVM chart: `topolvm-system` / `topolvm-lvmd-0` / `lvmd.yaml`). Changing it replaces the resource.",
				PlanModifiers:       []planmodifier.Object{objectplanmodifier.RequiresReplace()},
				Attributes: map[string]schema.Attribute{
					"namespace": schema.StringAttribute{Optional: true, Computed: true, Default: stringdefault.StaticString(DefaultNamespace), MarkdownDescription: "ConfigMap namespace."},
					"name":      schema.StringAttribute{Optional: true, Computed: true, Default: stringdefault.StaticString(DefaultConfigMapName), MarkdownDescription: "ConfigMap name (the chart's `topolvm-lvmd-<n>`)."},
					"key":       schema.StringAttribute{Optional: true, Computed: true, Default: stringdefault.StaticString(DefaultConfigKey), MarkdownDescription: "Data key holding lvmd's YAML."},
				},
			},
			"storage_class": schema.SingleNestedAttribute{
				Optional: true,
				MarkdownDescription: "A StorageClass for this class: provisioner `topolvm.io`, parameter `topolvm.io/device-class`, " +
					"`volumeBindingMode: WaitForFirstConsumer`. Parameters and reclaim policy are immutable in Kubernetes: changing them " +
					"(or the name) deletes and recreates the StorageClass object only; existing PVs and PVCs are unaffected.",
				Attributes: map[string]schema.Attribute{
					"name": schema.StringAttribute{Required: true, MarkdownDescription: "StorageClass name (DNS-1123 subdomain)."},
					"fs_type": schema.StringAttribute{
						Optional: true, Computed: true, Default: stringdefault.StaticString("xfs"),
						MarkdownDescription: "`csi.storage.k8s.io/fstype`: `xfs` (default), `ext4` or `btrfs`.",
						Validators:          []validator.String{stringvalidator.OneOf("xfs", "ext4", "btrfs")},
					},
					"reclaim_policy": schema.StringAttribute{
						Optional: true, Computed: true, Default: stringdefault.StaticString("Delete"),
						MarkdownDescription: "`Delete` (default) or `Retain`.",
						Validators:          []validator.String{stringvalidator.OneOf("Delete", "Retain")},
					},
					"allow_volume_expansion": schema.BoolAttribute{Optional: true, Computed: true, Default: booldefault.StaticBool(true), MarkdownDescription: "Default true (TopoLVM supports online expansion)."},
					"is_default":             schema.BoolAttribute{Optional: true, Computed: true, Default: booldefault.StaticBool(false), MarkdownDescription: "Sets `storageclass.kubernetes.io/is-default-class`."},
					"volume_binding_mode": schema.StringAttribute{
						Optional: true, Computed: true, Default: stringdefault.StaticString(bindingWaitForUser),
						MarkdownDescription: "Must be `WaitForFirstConsumer`: a TopoLVM volume lives on one node's disks, so it must be created on the node the scheduler picked for the Pod. Anything else is refused at plan.",
					},
					"labels":      schema.MapAttribute{Optional: true, ElementType: types.StringType, MarkdownDescription: "Labels (only these keys are managed)."},
					"annotations": schema.MapAttribute{Optional: true, ElementType: types.StringType, MarkdownDescription: "Annotations (only these keys are managed)."},
				},
			},
			"restart_lvmd": schema.BoolAttribute{
				Optional: true, Computed: true, Default: booldefault.StaticBool(true),
				MarkdownDescription: "lvmd reads its config only at start. When true (default) and the ConfigMap changed, the lvmd DaemonSet(s) mounting it are rolled by setting the pod-template annotation `" + AnnLVMDConfigHash + "`.",
			},
			"force_destroy": schema.BoolAttribute{
				Optional: true, Computed: true, Default: booldefault.StaticBool(false),
				MarkdownDescription: "Allow destroying, renaming or moving the class to another volume group while PersistentVolumes use it. Their data stays on the nodes but TopoLVM can no longer manage (expand, delete) those volumes.",
			},
			"capacity": schema.MapAttribute{
				Computed: true, ElementType: types.Int64Type,
				MarkdownDescription: "Free bytes per node as TopoLVM reports them (node annotation `capacity.topolvm.io/<name>`, or CSIStorageCapacity objects). For thin classes the overprovisioned figure.",
			},
			"volumes": schema.ListNestedAttribute{
				Computed:            true,
				MarkdownDescription: "PVCs using the class and their PVs: a PV's class is the one its TopoLVM LogicalVolume records, else its `topolvm.io/device-class` volume attribute, else its StorageClass's `topolvm.io/device-class` parameter (absent: the default class).",
				NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
					"namespace":     schema.StringAttribute{Computed: true, MarkdownDescription: "PVC namespace."},
					"pvc":           schema.StringAttribute{Computed: true, MarkdownDescription: "PVC name."},
					"pv":            schema.StringAttribute{Computed: true, MarkdownDescription: "Bound PV name (empty while Pending)."},
					"node":          schema.StringAttribute{Computed: true, MarkdownDescription: "Node the PV is pinned to (`topology.topolvm.io/node`)."},
					"storage_class": schema.StringAttribute{Computed: true, MarkdownDescription: "StorageClass name."},
					"statefulset":   schema.StringAttribute{Computed: true, MarkdownDescription: "Owning StatefulSet (`<claim>-<set>-<ordinal>` naming or owner reference), empty if none."},
					"ordinal":       schema.Int64Attribute{Computed: true, MarkdownDescription: "StatefulSet ordinal, or -1."},
				}},
			},
		},
	}
}
