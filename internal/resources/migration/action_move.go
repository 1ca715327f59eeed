package migration

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework-validators/listvalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/mapvalidator"
	"github.com/hashicorp/terraform-plugin-framework/action"
	aschema "github.com/hashicorp/terraform-plugin-framework/action/schema"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	corev1 "k8s.io/api/core/v1"

	"github.com/olapgke/terraform-provider-olapgke/internal/diagnostics"
	planmigration "github.com/olapgke/terraform-provider-olapgke/internal/planner/migration"
	"github.com/olapgke/terraform-provider-olapgke/internal/stsutil"
)

var (
	_ action.ActionWithConfigure  = (*moveOrdinalsAction)(nil)
	_ action.ActionWithModifyPlan = (*moveOrdinalsAction)(nil)
)

// moveOrdinalsAction is olapgke_move_ordinals: moves the named ordinals now, one at a time, to
// where the StatefulSet's template places them, or refuses with the migration's reasons.
type moveOrdinalsAction struct{ verb }

// NewMoveOrdinalsAction returns the olapgke_move_ordinals action.
func NewMoveOrdinalsAction() action.Action { return &moveOrdinalsAction{} }

type moveOrdinalsModel struct {
	Namespace          types.String `tfsdk:"namespace"`
	StatefulSet        types.String `tfsdk:"statefulset"`
	Ordinals           types.List   `tfsdk:"ordinals"`
	TargetNodePool     types.String `tfsdk:"target_node_pool"`
	TargetNodeSelector types.Map    `tfsdk:"target_node_selector"`
	VolumeClaims       types.List   `tfsdk:"volume_claims"`
	Gates              types.List   `tfsdk:"gate"`
	verbSettings
}

func (a *moveOrdinalsAction) Metadata(_ context.Context, req action.MetadataRequest, resp *action.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_move_ordinals"
}

func (a *moveOrdinalsAction) Schema(_ context.Context, _ action.SchemaRequest, resp *action.SchemaResponse) {
	resp.Schema = aschema.Schema{
		MarkdownDescription: "Moves the named ordinals of a StatefulSet now, one at a time, onto the nodes its template places " +
			"them on (typically a new node pool, with `updateStrategy: OnDelete` so nothing else rolls): per ordinal its " +
			"node-local PVCs, then its Pod, are deleted and the StatefulSet controller recreates both there; the next " +
			"ordinal starts when the Pod is Ready (and its gates pass). The same planner and engine as " +
			"`olapgke_statefulset_migration`: at plan the action refuses, naming each ordinal and why, a move whose Pod " +
			"could not land (nothing is deleted); a killed run is resumed by invoking the action again (moved ordinals are " +
			"recognised by where their PVs are pinned). Ordinals already where the template places them are left alone. " +
			"It never touches Terraform state. Invoke it with `terraform apply -invoke=action.olapgke_move_ordinals.<name>` " +
			"(Terraform 1.14+).",
		Attributes: settingsAttributes(map[string]aschema.Attribute{
			"namespace":   aschema.StringAttribute{Required: true, MarkdownDescription: "Namespace of the StatefulSet."},
			"statefulset": aschema.StringAttribute{Required: true, MarkdownDescription: "Name of the StatefulSet."},
			"ordinals": aschema.ListAttribute{Required: true, ElementType: types.Int64Type,
				Validators:          []validator.List{listvalidator.SizeAtLeast(1), listvalidator.UniqueValues()},
				MarkdownDescription: "Ordinals to move, in this order."},
			"target_node_pool": aschema.StringAttribute{Optional: true,
				MarkdownDescription: "GKE node pool the ordinals must land in. A check, not a placement (a StatefulSet has one " +
					"template for every Pod): the action refuses when the template admits nodes outside this pool."},
			"target_node_selector": aschema.MapAttribute{Optional: true, ElementType: types.StringType,
				Validators:          []validator.Map{mapvalidator.SizeAtLeast(1), mapvalidator.ConflictsWith(path.MatchRoot("target_node_pool"))},
				MarkdownDescription: "Node labels the ordinals' new nodes must carry; a check like `target_node_pool`."},
			"volume_claims": aschema.ListAttribute{Optional: true, ElementType: types.StringType,
				MarkdownDescription: "volumeClaimTemplates whose PVCs are recreated (default: the node-local ones)."},
		}),
		Blocks: map[string]aschema.Block{"gate": actionGateBlock()},
	}
}

func (a *moveOrdinalsAction) ModifyPlan(ctx context.Context, req action.ModifyPlanRequest, resp *action.ModifyPlanResponse) {
	var cfg moveOrdinalsModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &cfg)...)
	if resp.Diagnostics.HasError() || !a.ready() || !cfg.known() || anyUnknown(cfg.Namespace.IsUnknown(), cfg.StatefulSet.IsUnknown(),
		cfg.Ordinals.IsUnknown(), cfg.TargetNodePool.IsUnknown(), cfg.TargetNodeSelector.IsUnknown(), cfg.VolumeClaims.IsUnknown()) {
		return // judged at invoke
	}
	resp.Diagnostics.Append(validateGates(ctx, cfg.Gates)...)
	_, _, diags := a.judge(ctx, cfg, true)
	resp.Diagnostics.Append(diags...)
}

func (a *moveOrdinalsAction) Invoke(ctx context.Context, req action.InvokeRequest, resp *action.InvokeResponse) {
	var cfg moveOrdinalsModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &cfg)...)
	if resp.Diagnostics.HasError() {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, cfg.timeout())
	defer cancel()
	p := &progress{ctx: ctx, send: resp.SendProgress}
	m, ev, diags := a.judge(ctx, cfg, false)
	resp.Diagnostics.Append(diags...)
	if resp.Diagnostics.HasError() || ev == nil {
		return
	}
	if len(ev.plan.Moves) == 0 {
		p.say("%s/%s: nothing to move", m.Namespace.ValueString(), m.StatefulSet.ValueString())
		return
	}
	gates, diags := gatesFrom(ctx, cfg.Gates, true)
	resp.Diagnostics.Append(diags...)
	kube, err := a.clients.Kube(ctx)
	if err != nil {
		resp.Diagnostics.Append(diagnostics.KubeClientUnavailable("The provider's Kubernetes connection, for the move.", err))
	}
	if resp.Diagnostics.HasError() {
		return
	}
	resp.Diagnostics.Append(a.runMoves(ctx, kube, m, ev, gates, p, "invoke the action again")...)
}

// judge plans the move of the named ordinals: the migration's plan for them (those with no step
// are where the template places them: a warning), and the target check. planning judges the
// StatefulSet as olapgke_statefulset plans it in this run (an action_trigger on it), as the
// migration resource does; the invocation judges the live one.
func (a *moveOrdinalsAction) judge(ctx context.Context, cfg moveOrdinalsModel, planning bool) (resourceModel, *evaluation, diag.Diagnostics) {
	var diags diag.Diagnostics
	ns, name := cfg.Namespace.ValueString(), cfg.StatefulSet.ValueString()
	m := cfg.model(ns, name, cfg.Ordinals, cfg.VolumeClaims, cfg.Gates)
	res := a.migration()
	ev, d := res.evaluate(ctx, m, m.VolumeClaims, planning)
	diags.Append(d...)
	if diags.HasError() {
		return m, nil, diags
	}
	if ev.plan == nil { // the StatefulSet does not exist; evaluate said so
		return m, nil, diags
	}
	// Every step the migration plans for a named ordinal runs: a move, a gate a killed run left
	// pending, or a restart (a move a killed run left half done: the Pod is being recreated; or
	// a Pod at an old revision on a node the template still admits). Named ordinals with no
	// step are where the template places them.
	var staying []int32
	for _, o := range ordinalsOf(cfg.Ordinals) {
		if !slices.ContainsFunc(ev.plan.Moves, func(mv planmigration.Move) bool { return mv.Ordinal == o }) &&
			!slices.ContainsFunc(ev.plan.Problems, func(p planmigration.MigrationProblem) bool {
				return p.Ordinal == o && p.Kind == planmigration.ProblemUnknownOrdinal
			}) {
			staying = append(staying, o)
		}
	}
	if len(staying) > 0 {
		diags.Append(diagnostics.Warning("Ordinals Not Moved", diagnostics.Detail{
			Checked: fmt.Sprintf("Where ordinal(s) %s of StatefulSet %s/%s run, against its template placement (%s).",
				planmigration.JoinOrdinals(staying), ns, name, ev.plan.Target),
			Found: "Their Pods and PVs are where the template places them, so they need no move. A StatefulSet " +
				"has one template for every Pod: an ordinal moves only when its node or PVs no longer fit it.",
			Do: "Nothing, if they are where they should be. To move them, change the template's placement to the " +
				"target first (with updateStrategy OnDelete, so nothing else rolls), then invoke this action.",
		}))
	}
	diags.Append(problemsOf(m, ev)...)
	diags.Append(a.checkTarget(cfg, ev)...)
	return m, ev, diags
}

// checkTarget refuses when the template admits nodes outside the target: the scheduler, not
// the action, picks among them.
func (a *moveOrdinalsAction) checkTarget(cfg moveOrdinalsModel, ev *evaluation) diag.Diagnostics {
	want := selectorOf(cfg.TargetNodeSelector)
	if !cfg.TargetNodePool.IsNull() {
		want[stsutil.LabelNodePool] = cfg.TargetNodePool.ValueString()
	}
	return refuseOutsideTarget(ev, want, fmt.Sprintf("The nodes the template of StatefulSet %s/%s admits for new Pods (%s)",
		cfg.Namespace.ValueString(), cfg.StatefulSet.ValueString(), ev.plan.Target))
}

// selectorOf decodes a map of node labels (empty when null).
func selectorOf(m types.Map) map[string]string {
	want := map[string]string{}
	for k, v := range m.Elements() {
		if s, ok := v.(types.String); ok {
			want[k] = s.ValueString()
		}
	}
	return want
}

// refuseOutsideTarget is the error when a node the plan's moves may land on (ev.plan.TargetNodes)
// lacks a label of want; checked names those nodes.
func refuseOutsideTarget(ev *evaluation, want map[string]string, checked string) diag.Diagnostics {
	var diags diag.Diagnostics
	if len(want) == 0 || len(ev.plan.Moves) == 0 {
		return diags
	}
	outside := outsideTarget(ev.snap.Nodes, ev.plan.TargetNodes, want)
	if len(outside) == 0 {
		return diags
	}
	var sel []string
	for _, k := range slices.Sorted(maps.Keys(want)) {
		sel = append(sel, k+"="+want[k])
	}
	diags.Append(diagnostics.Error("Template Admits Nodes Outside The Target", diagnostics.Detail{
		Checked: checked + ", against the target " + strings.Join(sel, ", ") + ".",
		Found: fmt.Sprintf("%d of them are outside the target: %s. The scheduler could put a moved ordinal there.",
			len(outside), strings.Join(outside, ", ")),
		Do: "Narrow the template's placement to the target (nodeSelector or required node affinity; with " +
			"updateStrategy OnDelete nothing else rolls) and plan again. Nothing was changed.",
	}))
	return diags
}

// outsideTarget are the target nodes (by name) whose labels do not hold want.
func outsideTarget(nodes []corev1.Node, target []string, want map[string]string) []string {
	var out []string
	for _, n := range nodes {
		if !slices.Contains(target, n.Name) {
			continue
		}
		for k, v := range want {
			if n.Labels[k] != v {
				out = append(out, n.Name)
				break
			}
		}
	}
	slices.Sort(out)
	return out
}
