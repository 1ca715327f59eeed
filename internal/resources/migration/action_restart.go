package migration

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-validators/listvalidator"
	"github.com/hashicorp/terraform-plugin-framework/action"
	aschema "github.com/hashicorp/terraform-plugin-framework/action/schema"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/olapgke/terraform-provider-olapgke/internal/diagnostics"
	"github.com/olapgke/terraform-provider-olapgke/internal/engine"
	"github.com/olapgke/terraform-provider-olapgke/internal/planner"
	planmigration "github.com/olapgke/terraform-provider-olapgke/internal/planner/migration"
	"github.com/olapgke/terraform-provider-olapgke/internal/stsutil"
)

var (
	_ action.ActionWithConfigure  = (*restartOrdinalsAction)(nil)
	_ action.ActionWithModifyPlan = (*restartOrdinalsAction)(nil)
)

// restartOrdinalsAction is olapgke_restart_ordinals: restarts the named (or all) ordinals in
// place, keeping their PVCs, one at a time in the controller's order, honouring gates.
type restartOrdinalsAction struct{ verb }

// NewRestartOrdinalsAction returns the olapgke_restart_ordinals action.
func NewRestartOrdinalsAction() action.Action { return &restartOrdinalsAction{} }

type restartOrdinalsModel struct {
	Namespace   types.String `tfsdk:"namespace"`
	StatefulSet types.String `tfsdk:"statefulset"`
	Ordinals    types.List   `tfsdk:"ordinals"`
	Gates       types.List   `tfsdk:"gate"`
	verbSettings
}

func (a *restartOrdinalsAction) Metadata(_ context.Context, req action.MetadataRequest, resp *action.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_restart_ordinals"
}

func (a *restartOrdinalsAction) Schema(_ context.Context, _ action.SchemaRequest, resp *action.SchemaResponse) {
	resp.Schema = aschema.Schema{
		MarkdownDescription: "Restarts ordinals of a StatefulSet in place, keeping their PVCs (and so their Local SSD cache): " +
			"one at a time, from the highest ordinal down as the StatefulSet controller rolls, each Pod deleted (UID " +
			"precondition) and awaited Running and Ready on its node, then its soak and gates, before the next. The request " +
			"is written on the StatefulSet first (annotation `" + stsutil.AnnotationRestart + "`: the Pods to replace, by " +
			"UID), so a killed run resumes when the action is invoked again without restarting what it already restarted; " +
			"it is removed when the restart ends. At plan the action refuses, per ordinal, a Pod that could not come back " +
			"on its node (cordoned, tainted, full) and an ordinal whose PVs no longer fit the template (that is a move: " +
			"`olapgke_move_ordinals`). It never touches Terraform state. Invoke it with " +
			"`terraform apply -invoke=action.olapgke_restart_ordinals.<name>` (Terraform 1.14+).",
		Attributes: settingsAttributes(map[string]aschema.Attribute{
			"namespace":   aschema.StringAttribute{Required: true, MarkdownDescription: "Namespace of the StatefulSet."},
			"statefulset": aschema.StringAttribute{Required: true, MarkdownDescription: "Name of the StatefulSet."},
			"ordinals": aschema.ListAttribute{Optional: true, ElementType: types.Int64Type,
				Validators:          []validator.List{listvalidator.SizeAtLeast(1), listvalidator.UniqueValues()},
				MarkdownDescription: "Ordinals to restart, in this order (default: every ordinal, highest first)."},
		}),
		Blocks: map[string]aschema.Block{"gate": actionGateBlock()},
	}
}

func (a *restartOrdinalsAction) ModifyPlan(ctx context.Context, req action.ModifyPlanRequest, resp *action.ModifyPlanResponse) {
	var cfg restartOrdinalsModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &cfg)...)
	if resp.Diagnostics.HasError() || !a.ready() || !cfg.known() ||
		anyUnknown(cfg.Namespace.IsUnknown(), cfg.StatefulSet.IsUnknown(), cfg.Ordinals.IsUnknown()) {
		return
	}
	resp.Diagnostics.Append(validateGates(ctx, cfg.Gates)...)
	_, _, _, diags := a.judge(ctx, cfg, true)
	resp.Diagnostics.Append(diags...)
}

func (a *restartOrdinalsAction) Invoke(ctx context.Context, req action.InvokeRequest, resp *action.InvokeResponse) {
	var cfg restartOrdinalsModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &cfg)...)
	if resp.Diagnostics.HasError() {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, cfg.timeout())
	defer cancel()
	p := &progress{ctx: ctx, send: resp.SendProgress}
	m, ev, request, diags := a.judge(ctx, cfg, false)
	resp.Diagnostics.Append(diags...)
	if resp.Diagnostics.HasError() || ev == nil {
		return
	}
	gates, diags := gatesFrom(ctx, cfg.Gates, true)
	resp.Diagnostics.Append(diags...)
	kube, err := a.clients.Kube(ctx)
	if err != nil {
		resp.Diagnostics.Append(diagnostics.KubeClientUnavailable("The provider's Kubernetes connection, for the restart.", err))
	}
	if resp.Diagnostics.HasError() {
		return
	}
	ns, name := m.Namespace.ValueString(), m.StatefulSet.ValueString()
	checked := fmt.Sprintf("The restart request on StatefulSet %s/%s (annotation %s).", ns, name, stsutil.AnnotationRestart)
	if len(ev.plan.Moves) > 0 {
		if err := engine.RequestRestart(ctx, kube, ns, name, &request); err != nil {
			resp.Diagnostics.Append(diagnostics.Error("Restart Not Requested", diagnostics.Detail{Checked: checked,
				Found: "It could not be written; nothing was restarted.", Do: "Fix the cause and invoke the action again.", Err: err}))
			return
		}
		p.say("%s/%s: restart requested (requested at %s) for %s", ns, name, request.RequestedAt, strings.Join(slices.Sorted(maps.Keys(request.Pods)), ", "))
		resp.Diagnostics.Append(a.runMoves(ctx, kube, m, ev, gates, p, "invoke the action again")...)
		if resp.Diagnostics.HasError() {
			return // the request stays: the next invocation resumes it
		}
	} else {
		p.say("%s/%s: nothing to restart", ns, name)
	}
	// This run wrote a request, or the one it judged with names Pods (a killed run's, kept:
	// ev.snap is the cluster seen with the request written, so reading it back says no more).
	if len(ev.plan.Moves) > 0 || len(request.Pods) > 0 {
		if err := engine.RequestRestart(ctx, kube, ns, name, nil); err != nil {
			resp.Diagnostics.Append(diagnostics.Warning("Restart Request Not Removed", diagnostics.Detail{Checked: checked,
				Found: "Every ordinal restarted, but the request could not be removed. It is harmless: the Pods it names " +
					"are gone, so it restarts nothing again.",
				Do:  "Remove it when convenient: kubectl annotate statefulset -n " + ns + " " + name + " " + stsutil.AnnotationRestart + "-",
				Err: err}))
		}
	}
}

// judge plans the restart as the engine will run it: the cluster seen with the request written
// (planmigration.WithRestart), so every decision is the migration planner's. An ordinal that needs
// a move is refused.
func (a *restartOrdinalsAction) judge(ctx context.Context, cfg restartOrdinalsModel, planning bool) (resourceModel, *evaluation, stsutil.RestartRequest, diag.Diagnostics) {
	ns, name := cfg.Namespace.ValueString(), cfg.StatefulSet.ValueString()
	m := cfg.model(ns, name, cfg.Ordinals, types.ListNull(types.StringType), cfg.Gates)
	var request stsutil.RestartRequest
	ev, diags := a.migration().evaluateWith(ctx, m, m.VolumeClaims, planning, func(s *planner.Snapshot) *planner.Snapshot {
		ordinals := ordinalsOf(cfg.Ordinals)
		if ordinals == nil {
			ordinals = stsutil.OrdinalRange(s.Live)
		}
		request = planmigration.RestartRequestFor(s, ordinals, stsutil.ReadRestart(s.Live), time.Now())
		return planmigration.WithRestart(s, request)
	})
	if diags.HasError() || ev == nil || ev.plan == nil {
		return m, nil, request, diags
	}
	var moves []string
	for _, mv := range ev.plan.Moves {
		if mv.Action == planmigration.MigrationMove {
			moves = append(moves, fmt.Sprintf("%d: %s", mv.Ordinal, mv.Reason))
		}
	}
	if len(moves) > 0 {
		diags.Append(diagnostics.Error("Ordinals Need A Move", diagnostics.Detail{
			Checked: fmt.Sprintf("Whether each ordinal of StatefulSet %s/%s can restart on its node with its PVCs (template placement %s).",
				ns, name, ev.plan.Target),
			Found: "A restart keeps the PVCs, and these ordinals' Pods or PVs no longer fit the template: " + strings.Join(moves, "; ") +
				". Restarted, they would stay Pending. Nothing was changed.",
			Do: "Move them (olapgke_move_ordinals or olapgke_statefulset_migration), or leave them out of `ordinals`.",
		}))
		return m, ev, request, diags
	}
	diags.Append(problemsOf(m, ev)...)
	return m, ev, request, diags
}
