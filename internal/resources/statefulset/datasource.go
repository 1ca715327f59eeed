package statefulset

import (
	"context"
	"fmt"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/datasource/schema"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/types"
	corev1 "k8s.io/api/core/v1"

	"github.com/olapgke/terraform-provider-olapgke/internal/clients"
	"github.com/olapgke/terraform-provider-olapgke/internal/diagnostics"
	"github.com/olapgke/terraform-provider-olapgke/internal/planner"
	"github.com/olapgke/terraform-provider-olapgke/internal/snapshot"
	"github.com/olapgke/terraform-provider-olapgke/internal/stsutil"
)

var (
	_ datasource.DataSource              = (*ordinalsDataSource)(nil)
	_ datasource.DataSourceWithConfigure = (*ordinalsDataSource)(nil)
)

type ordinalsDataSource struct{ clients *clients.Clients }

// NewOrdinalsDataSource returns the olapgke_statefulset_ordinals data source.
func NewOrdinalsDataSource() datasource.DataSource { return &ordinalsDataSource{} }

type ordinalsModel struct {
	ID        types.String `tfsdk:"id"`
	Namespace types.String `tfsdk:"namespace"`
	Name      types.String `tfsdk:"name"`
	Ordinals  types.List   `tfsdk:"ordinals"`
}

var dsOrdinalType = types.ObjectType{AttrTypes: map[string]attr.Type{
	"name": types.StringType, "ordinal": types.Int64Type, "pod": types.StringType, "node": types.StringType, "phase": types.StringType,
	"ready": types.BoolType, "revision": types.StringType, "volumes": types.ListType{ElemType: volumeType},
}}

func (d *ordinalsDataSource) Metadata(_ context.Context, req datasource.MetadataRequest, resp *datasource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_statefulset_ordinals"
}

func (d *ordinalsDataSource) Configure(_ context.Context, req datasource.ConfigureRequest, resp *datasource.ConfigureResponse) {
	if c := clients.FromProviderData(req.ProviderData, &resp.Diagnostics); c != nil {
		d.clients = c
	}
}

func (d *ordinalsDataSource) Schema(_ context.Context, _ datasource.SchemaRequest, resp *datasource.SchemaResponse) {
	vol := map[string]schema.Attribute{
		"claim":       schema.StringAttribute{Computed: true, Description: "volumeClaimTemplate name."},
		"pvc":         schema.StringAttribute{Computed: true, Description: "PersistentVolumeClaim name."},
		"pv":          schema.StringAttribute{Computed: true, Description: "Bound PersistentVolume, empty when not bound."},
		"pinned_node": schema.StringAttribute{Computed: true, Description: "Node the PV is pinned to (`topology.topolvm.io/node`), empty when none."},
	}
	resp.Schema = schema.Schema{
		Description: "The current ordinal -> Pod -> node -> PVC -> PV -> pinned node map of a StatefulSet.",
		Attributes: map[string]schema.Attribute{
			"id":        schema.StringAttribute{Computed: true, Description: "`<namespace>/<name>`."},
			"namespace": schema.StringAttribute{Required: true, Description: "Namespace of the StatefulSet."},
			"name":      schema.StringAttribute{Required: true, Description: "Name of the StatefulSet."},
			"ordinals": schema.ListNestedAttribute{
				Computed: true, Description: "One entry per ordinal in the StatefulSet's range and per existing Pod, ascending.",
				NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
					"name":     schema.StringAttribute{Computed: true, MarkdownDescription: "Pod name of the ordinal (`<set>-<ordinal>`)."},
					"ordinal":  schema.Int64Attribute{Computed: true, Description: "The ordinal."},
					"pod":      schema.StringAttribute{Computed: true, Description: "Pod name of the ordinal (the same as name)."},
					"node":     schema.StringAttribute{Computed: true, Description: "Node the Pod runs on, empty when none."},
					"phase":    schema.StringAttribute{Computed: true, Description: "Pod phase, empty when the Pod does not exist."},
					"ready":    schema.BoolAttribute{Computed: true, Description: "Whether the Pod is Ready."},
					"revision": schema.StringAttribute{Computed: true, Description: "controller-revision-hash of the Pod."},
					"volumes": schema.ListNestedAttribute{Computed: true,
						NestedObject: schema.NestedAttributeObject{Attributes: vol}},
				}},
			},
		},
	}
}

func (d *ordinalsDataSource) Read(ctx context.Context, req datasource.ReadRequest, resp *datasource.ReadResponse) {
	var m ordinalsModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	if d.clients == nil {
		resp.Diagnostics.Append(diagnostics.ProviderBug("Provider Not Configured", "The data source has no clients.", nil))
		return
	}
	kube, err := d.clients.Kube(ctx)
	if err != nil {
		resp.Diagnostics.Append(diagnostics.KubeClientUnavailable("The Kubernetes client for reading the StatefulSet.", err))
		return
	}
	ns, name := m.Namespace.ValueString(), m.Name.ValueString()
	snap, err := snapshot.Read(ctx, kube, nil, ns, name)
	if err != nil {
		resp.Diagnostics.Append(diagnostics.Error("StatefulSet Read Failed", kubeError(fmt.Sprintf("Listing StatefulSet %s/%s, its Pods, PVCs and PVs.", ns, name), err)))
		return
	}
	if snap.Live == nil {
		resp.Diagnostics.Append(diagnostics.AttributeError(path.Root("name"), "StatefulSet Not Found", diagnostics.Detail{
			Checked: fmt.Sprintf("StatefulSet %s/%s.", ns, name),
			Found:   "It does not exist.",
			Do:      "Check namespace and name.",
		}))
		return
	}
	views, err := liveViews(snap)
	if err != nil {
		resp.Diagnostics.Append(diagnostics.ProviderBug("Rollout Planner Failed", "Mapping the live ordinals.", err))
		return
	}
	// A data source keeps no record of the nodes, so only the durable facts are judged (the
	// node gone, or registered after the volume); the resource also sees same-name recreation.
	if lost := planner.LostLocalData(snap.Live, snap, nil); len(lost) > 0 {
		resp.Diagnostics.Append(lostDataWarning(snap.Live, lost))
	}
	pods := map[string]*corev1.Pod{}
	for i := range snap.Pods {
		pods[snap.Pods[i].Name] = &snap.Pods[i]
	}
	elems := make([]attr.Value, 0, len(views))
	for _, v := range views {
		phase, ready, rev := "", false, ""
		if p := pods[v.Pod]; p != nil {
			phase, rev = string(p.Status.Phase), p.Labels[stsutil.LabelControllerRevision]
			for _, c := range p.Status.Conditions {
				if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
					ready = true
				}
			}
		}
		vols, dg := volumesValue(v.Volumes)
		resp.Diagnostics.Append(dg...)
		ov, dg := types.ObjectValue(dsOrdinalType.AttrTypes, map[string]attr.Value{
			"name": types.StringValue(v.Pod), "ordinal": types.Int64Value(v.Ordinal), "pod": types.StringValue(v.Pod), "node": types.StringValue(v.Node),
			"phase": types.StringValue(phase), "ready": types.BoolValue(ready), "revision": types.StringValue(rev), "volumes": vols,
		})
		resp.Diagnostics.Append(dg...)
		elems = append(elems, ov)
	}
	l, dg := types.ListValue(dsOrdinalType, elems)
	resp.Diagnostics.Append(dg...)
	m.Ordinals = l
	m.ID = types.StringValue(ns + "/" + name)
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}
