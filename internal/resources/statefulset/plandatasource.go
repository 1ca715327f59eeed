package statefulset

import (
	"context"
	"fmt"

	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/datasource/schema"
	"github.com/hashicorp/terraform-plugin-framework/types"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/olapgke/terraform-provider-olapgke/internal/clients"
	"github.com/olapgke/terraform-provider-olapgke/internal/diagnostics"
)

var (
	_ datasource.DataSource              = (*planDataSource)(nil)
	_ datasource.DataSourceWithConfigure = (*planDataSource)(nil)
)

// PlanFieldManager is the field manager of the plan data source's dry runs. They persist nothing,
// so it never owns a field; being distinct from "olapgke" and forcing conflicts, the prediction
// of an operator's (or Helm's) change is not refused for fields someone else owns.
const PlanFieldManager = "olapgke-plan"

type planDataSource struct{ clients *clients.Clients }

// NewPlanDataSource returns the olapgke_statefulset_plan data source.
func NewPlanDataSource() datasource.DataSource { return &planDataSource{} }

type planModel struct {
	ID                 types.String  `tfsdk:"id"`
	Namespace          types.String  `tfsdk:"namespace"`
	Name               types.String  `tfsdk:"name"`
	Manifest           types.Dynamic `tfsdk:"manifest"`
	AllowUnschedulable types.Bool    `tfsdk:"allow_unschedulable"`
	Ordinals           types.List    `tfsdk:"ordinals"`
	UpdateRevision     types.String  `tfsdk:"update_revision"`
	Recreated          types.Bool    `tfsdk:"recreated"`
	Schedulable        types.Bool    `tfsdk:"all_schedulable"`
}

func (d *planDataSource) Metadata(_ context.Context, req datasource.MetadataRequest, resp *datasource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_statefulset_plan"
}

func (d *planDataSource) Configure(_ context.Context, req datasource.ConfigureRequest, resp *datasource.ConfigureResponse) {
	if c := clients.FromProviderData(req.ProviderData, &resp.Diagnostics); c != nil {
		d.clients = c
	}
}

func (d *planDataSource) Schema(_ context.Context, _ datasource.SchemaRequest, resp *datasource.SchemaResponse) {
	resp.Schema = schema.Schema{
		MarkdownDescription: "Predicts, per ordinal, what a change to a StatefulSet that olapgke does not own would do — " +
			"for example the StatefulSet an operator (druid-operator, clickhouse-operator) will write after a change of its " +
			"custom resource — with the same server-side dry run, cluster snapshot and planner as `olapgke_statefulset`, " +
			"without writing anything. It returns the same `ordinals` and raises the same errors and warnings " +
			"(**Ordinals Would Stay Pending**, **Ordinals Will Be Recreated**, ...), so a `check` block, a precondition or " +
			"a policy can stop the change before it reaches the operator.",
		Attributes: map[string]schema.Attribute{
			"id":        schema.StringAttribute{Computed: true, Description: "`<namespace>/<name>`."},
			"namespace": schema.StringAttribute{Required: true, Description: "Namespace of the StatefulSet."},
			"name":      schema.StringAttribute{Required: true, Description: "Name of the StatefulSet."},
			"manifest": schema.DynamicAttribute{Required: true,
				MarkdownDescription: "The StatefulSet as it would look after the change, as an object (e.g. the live object with the " +
					"fields the operator will change). `apiVersion`, `kind` and `metadata.name`/`namespace` default to apps/v1, " +
					"StatefulSet and `name`/`namespace`. Dry-run as field manager `" + PlanFieldManager + "` with conflicts forced: " +
					"nothing is written and no field is taken from its owner."},
			"allow_unschedulable": schema.BoolAttribute{Optional: true,
				MarkdownDescription: "Report ordinals that would stay Pending as a warning instead of an error (default false)."},
			"ordinals": schema.ListNestedAttribute{Computed: true,
				MarkdownDescription: "Per ordinal, as `olapgke_statefulset.ordinals`: what the change does to it (`create`, `delete`, " +
					"`recreate`, `stale`, `stranded`, `unchanged`), in which wave the controller acts, and whether its Pod can schedule afterwards.",
				NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
					"name":        schema.StringAttribute{Computed: true, MarkdownDescription: "Pod name of the ordinal (`<set>-<ordinal>`)."},
					"ordinal":     schema.Int64Attribute{Computed: true},
					"pod":         schema.StringAttribute{Computed: true},
					"node":        schema.StringAttribute{Computed: true, Description: "Node the Pod runs on today."},
					"action":      schema.StringAttribute{Computed: true},
					"wave":        schema.Int64Attribute{Computed: true, Description: "0: not acted on; 1: as soon as the change lands; k+1: once wave k is Ready."},
					"schedulable": schema.BoolAttribute{Computed: true},
					"reason":      schema.StringAttribute{Computed: true},
					"blocked":     schema.BoolAttribute{Computed: true, Description: "An earlier wave stalls, so the controller never reaches this ordinal."},
					"volumes": schema.ListNestedAttribute{Computed: true, NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
						"claim":       schema.StringAttribute{Computed: true, Description: "volumeClaimTemplate name."},
						"pvc":         schema.StringAttribute{Computed: true, Description: "PersistentVolumeClaim name."},
						"pv":          schema.StringAttribute{Computed: true, Description: "Bound PersistentVolume, empty when not bound yet."},
						"pinned_node": schema.StringAttribute{Computed: true, Description: "Node the PV is pinned to, empty when none."},
					}}},
					"pvcs_after": schema.StringAttribute{Computed: true, Description: "For `delete`: `retained` or `deleted`; empty otherwise."},
				}},
			},
			"update_revision": schema.StringAttribute{Computed: true, Description: "The revision the controller will name the changed template."},
			"recreated": schema.BoolAttribute{Computed: true,
				Description: "The change touches immutable fields: the StatefulSet object would have to be deleted and created again."},
			"all_schedulable": schema.BoolAttribute{Computed: true,
				Description: "Every ordinal the change creates or recreates can schedule afterwards (for check blocks and preconditions)."},
		},
	}
}

func (d *planDataSource) Read(ctx context.Context, req datasource.ReadRequest, resp *datasource.ReadResponse) {
	var m planModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	if d.clients == nil {
		resp.Diagnostics.Append(diagnostics.ProviderBug("Provider Not Configured", "The data source has no clients.", nil))
		return
	}
	ns, name := m.Namespace.ValueString(), m.Name.ValueString()
	man, err := planManifest(ctx, m.Manifest, ns, name)
	if err != nil {
		resp.Diagnostics.Append(diagnostics.AttributeError(manifestPath, "Invalid StatefulSet Manifest", diagnostics.Detail{
			Checked: fmt.Sprintf("The manifest of StatefulSet %s/%s.", ns, name),
			Found:   err.Error() + ".",
			Do:      "Pass the StatefulSet as it would look after the change, as an object (e.g. yamldecode of the operator's output).",
		}))
		return
	}
	kube, err := d.clients.Kube(ctx)
	if err != nil {
		resp.Diagnostics.Append(diagnostics.KubeClientUnavailable("The Kubernetes client for the predicted StatefulSet plan.", err))
		return
	}
	pr := predict(ctx, kube, man, PlanFieldManager, true, false, &resp.Diagnostics)
	if pr == nil {
		return
	}
	ords, dg := ordinalsValue(viewsFromPlan(pr.plan))
	resp.Diagnostics.Append(dg...)
	m.Ordinals = ords
	m.ID = types.StringValue(ns + "/" + name)
	m.UpdateRevision = types.StringValue(pr.plan.UpdateRevision)
	m.Recreated = types.BoolValue(pr.imm != nil)
	all := true
	for _, o := range pr.plan.Ordinals {
		if !o.Schedulable && o.Wave > 0 {
			all = false
		}
	}
	// A data source is read once per plan, never planned again: all_schedulable also says
	// whether a cordon or a node condition's taint holds an ordinal now (Plan.Held).
	m.Schedulable = types.BoolValue(all && len(pr.plan.Held) == 0)
	if pr.imm != nil {
		resp.Diagnostics.Append(replacementWarning(man, pr.plan))
	}
	resp.Diagnostics.Append(verdictDiagnostics(man, pr.plan, m.AllowUnschedulable.ValueBool())...)
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}

// planManifest completes the data source's manifest with the StatefulSet's identity (which it
// must not contradict) and checks it as olapgke_statefulset does.
func planManifest(ctx context.Context, d types.Dynamic, ns, name string) (*manifest, error) {
	v, err := dynamicToJSON(ctx, d)
	if err != nil {
		return nil, err
	}
	obj, ok := stripNulls(v).(map[string]any)
	if !ok {
		return nil, fmt.Errorf("the manifest is a %T, not an object", v)
	}
	if _, ok := obj["apiVersion"]; !ok {
		obj["apiVersion"] = "apps/v1"
	}
	if _, ok := obj["kind"]; !ok {
		obj["kind"] = "StatefulSet"
	}
	if ns == "" {
		ns = metav1.NamespaceDefault
	}
	meta, _ := obj["metadata"].(map[string]any)
	if meta == nil {
		meta = map[string]any{}
	}
	for key, want := range map[string]string{"name": name, "namespace": ns} {
		if got, ok := meta[key].(string); ok && got != "" && got != want {
			return nil, fmt.Errorf("metadata.%s is %q, but %s = %q", key, got, key, want)
		}
		meta[key] = want
	}
	// Server-set metadata of a live object copied into the manifest would make the dry run an
	// optimistic-concurrency check or an ownership claim: drop it.
	for _, k := range []string{"resourceVersion", "uid", "generation", "creationTimestamp", "managedFields", "selfLink"} {
		delete(meta, k)
	}
	obj["metadata"] = meta
	delete(obj, "status")
	return manifestFromJSON(obj)
}
