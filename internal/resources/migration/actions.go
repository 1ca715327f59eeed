package migration

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/action"
	aschema "github.com/hashicorp/terraform-plugin-framework/action/schema"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-log/tflog"
	"k8s.io/client-go/kubernetes"

	"github.com/olapgke/terraform-provider-olapgke/internal/clients"
	"github.com/olapgke/terraform-provider-olapgke/internal/diagnostics"
	"github.com/olapgke/terraform-provider-olapgke/internal/engine"
	"github.com/olapgke/terraform-provider-olapgke/internal/planner/gates"
	planmigration "github.com/olapgke/terraform-provider-olapgke/internal/planner/migration"
	"github.com/olapgke/terraform-provider-olapgke/internal/resources/durations"
	"github.com/olapgke/terraform-provider-olapgke/internal/stsutil"
)

// The day-2 verbs (Terraform actions, 1.14+): olapgke_move_ordinals, olapgke_restart_ordinals
// and olapgke_evacuate_node_pool. Each is a thin adapter over what olapgke_statefulset_migration
// runs: the same planner (preflight, per-ordinal decisions, refusals: evaluateWith,
// problemDiagnostics), the same engine (engine.Migrate: steps, waits, gates, resume) and the
// same diagnostics (stoppedDiagnostic). They never touch Terraform state: what a killed run
// needs to resume is on the cluster (the restart annotation, the evacuation taint; a move is
// recognised from where the PVs are pinned). Progress goes to Terraform as it happens
// (SendProgress: one line per step, ordinal and gate).

// DefaultActionTimeout bounds one invocation, every ordinal with its soak and gates.
const DefaultActionTimeout = "60m"

// verb is what the actions share: the provider's clients and the migration's planner and
// engine, reached through a migrationResource value.
type verb struct {
	clients *clients.Clients
	// resync is the engine's longest wait without an informer event (0: its default).
	resync time.Duration
}

func (v *verb) Configure(_ context.Context, req action.ConfigureRequest, resp *action.ConfigureResponse) {
	if c := clients.FromProviderData(req.ProviderData, &resp.Diagnostics); c != nil {
		v.clients = c
	}
}

func (v *verb) migration() *migrationResource {
	return &migrationResource{clients: v.clients, resync: v.resync}
}

// ready reports whether the cluster can be read now (not at a plan whose provider
// configuration is unknown).
func (v *verb) ready() bool { return v.clients != nil && !v.clients.Deferred() }

// verbSettings are the settings every action shares with olapgke_statefulset_migration.
type verbSettings struct {
	MinReadySeconds               types.Int64  `tfsdk:"min_ready_seconds"`
	RequireOthersReady            types.Bool   `tfsdk:"require_others_ready"`
	ForceDeleteOnUnreachableNodes types.Bool   `tfsdk:"force_delete_on_unreachable_nodes"`
	OrdinalTimeout                types.String `tfsdk:"ordinal_timeout"`
	UnschedulableTimeout          types.String `tfsdk:"unschedulable_timeout"`
	Timeout                       types.String `tfsdk:"timeout"`
}

// known reports whether every setting is known (an action planned with values from resources
// created in the same run is judged at invoke).
func (s verbSettings) known() bool {
	return !anyUnknown(s.MinReadySeconds.IsUnknown(), s.RequireOthersReady.IsUnknown(), s.ForceDeleteOnUnreachableNodes.IsUnknown(),
		s.OrdinalTimeout.IsUnknown(), s.UnschedulableTimeout.IsUnknown(), s.Timeout.IsUnknown())
}

// model is the olapgke_statefulset_migration the action runs as: one ordinal at a time, in
// the controller's order (descending) unless ordinals are listed.
func (s verbSettings) model(ns, name string, ordinals, claims, gates types.List) resourceModel {
	m := resourceModel{
		Namespace: types.StringValue(ns), StatefulSet: types.StringValue(name), Ordinals: ordinals,
		Order: types.StringValue(string(planmigration.OrderDescending)), VolumeClaims: claims,
		MaxUnavailable: types.Int64Value(1), MinReadySeconds: s.MinReadySeconds,
		RequireOthersReady: s.RequireOthersReady, ForceDeleteOnUnreachableNodes: s.ForceDeleteOnUnreachableNodes,
		OrdinalTimeout: s.OrdinalTimeout, UnschedulableTimeout: s.UnschedulableTimeout,
		PlannedManifest: types.StringNull(), Gates: gates,
	}
	if m.MinReadySeconds.IsNull() {
		m.MinReadySeconds = types.Int64Value(0)
	}
	if m.RequireOthersReady.IsNull() {
		m.RequireOthersReady = types.BoolValue(true)
	}
	if m.ForceDeleteOnUnreachableNodes.IsNull() {
		m.ForceDeleteOnUnreachableNodes = types.BoolValue(false)
	}
	if m.Gates.IsNull() || m.Gates.IsUnknown() {
		m.Gates = types.ListNull(types.ObjectType{})
	}
	if m.VolumeClaims.IsUnknown() {
		m.VolumeClaims = types.ListNull(types.StringType)
	}
	return m
}

func (s verbSettings) timeout() time.Duration { return parseDuration(s.Timeout, DefaultActionTimeout) }

// settingsAttributes are verbSettings' attributes in an action schema.
func settingsAttributes(attrs map[string]aschema.Attribute) map[string]aschema.Attribute {
	durationAttr := func(def, what string) aschema.StringAttribute {
		return aschema.StringAttribute{Optional: true, Validators: []validator.String{durations.Positive()},
			MarkdownDescription: what + " Default `" + def + "`."}
	}
	attrs["min_ready_seconds"] = aschema.Int64Attribute{Optional: true,
		MarkdownDescription: "Seconds each replaced Pod must stay Ready before the next ordinal (default 0), as in olapgke_statefulset_migration."}
	attrs["require_others_ready"] = aschema.BoolAttribute{Optional: true,
		MarkdownDescription: "Refuse to start while an ordinal that is not replaced is not Running and Ready (default `true`)."}
	attrs["force_delete_on_unreachable_nodes"] = aschema.BoolAttribute{Optional: true,
		MarkdownDescription: "Force-delete the Pod of an ordinal on a node that does not answer and move it onto new, empty PVCs " +
			"(default `false`: the action stops and names the node). The Local SSD data on that node is abandoned."}
	attrs["ordinal_timeout"] = durationAttr(DefaultOrdinalTimeout, "How long one ordinal may take to be Running and Ready again.")
	attrs["unschedulable_timeout"] = durationAttr(DefaultUnschedulable, "How long a replaced Pod may stay unschedulable (or its volume unprovisioned) before the action stops.")
	attrs["timeout"] = durationAttr(DefaultActionTimeout, "How long the whole invocation may take, every ordinal with its soak and gates.")
	return attrs
}

// actionGateBlock is olapgke_statefulset_migration's gate block in an action schema: the same
// attributes and descriptions (converted from gateBlock, so they cannot drift apart).
func actionGateBlock() aschema.ListNestedBlock {
	b := gateBlock()
	desc := "Hydration gates, as in olapgke_statefulset_migration: checks that must all pass after each ordinal's " +
		"restart or move (and its soak) before the next one starts, because Kubernetes Ready is not \"loaded\". Each " +
		"gate has exactly one of `pod_condition` and `http`, and its own `timeout` and `interval`. A gate that does not " +
		"pass in time stops the action quoting its last answer; the StatefulSet annotation `" + stsutil.AnnotationGatesPending +
		"` marks the ordinal, so invoking the action again waits for its gates first without deleting anything of it. " +
		"Strings of `http` take the placeholders `{" + strings.Join(gates.GatePlaceholders, "}`, `{") + "}`."
	return aschema.ListNestedBlock{MarkdownDescription: desc, NestedObject: aschema.NestedBlockObject{
		Attributes: actionAttributes(b.NestedObject.Attributes), Blocks: actionBlocks(b.NestedObject.Blocks)}}
}

func actionBlocks(in map[string]schema.Block) map[string]aschema.Block {
	out := map[string]aschema.Block{}
	for k, b := range in {
		sb, ok := b.(schema.SingleNestedBlock)
		if !ok {
			panic(fmt.Sprintf("gate block %s: %T has no action counterpart here", k, b))
		}
		out[k] = aschema.SingleNestedBlock{MarkdownDescription: sb.MarkdownDescription, Attributes: actionAttributes(sb.Attributes)}
	}
	return out
}

func actionAttributes(in map[string]schema.Attribute) map[string]aschema.Attribute {
	out := map[string]aschema.Attribute{}
	for k, a := range in {
		switch a := a.(type) {
		case schema.StringAttribute:
			out[k] = aschema.StringAttribute{Optional: a.Optional, Required: a.Required, MarkdownDescription: a.MarkdownDescription, Validators: a.Validators}
		case schema.Int64Attribute:
			out[k] = aschema.Int64Attribute{Optional: a.Optional, Required: a.Required, MarkdownDescription: a.MarkdownDescription}
		case schema.MapAttribute:
			// Action configuration is never stored; write-only keeps header values out of plans.
			out[k] = aschema.MapAttribute{ElementType: a.ElementType, Optional: a.Optional, WriteOnly: a.WriteOnly,
				MarkdownDescription: a.MarkdownDescription}
		default:
			panic(fmt.Sprintf("gate attribute %s: %T has no action counterpart here", k, a))
		}
	}
	return out
}

// progress sends one line to Terraform per event of the run (SendProgress), and to the log.
type progress struct {
	ctx  context.Context
	mu   sync.Mutex
	send func(action.InvokeProgressEvent)
}

func (p *progress) say(format string, args ...any) {
	line := fmt.Sprintf(format, args...)
	tflog.Info(p.ctx, line)
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.send != nil {
		p.send(action.InvokeProgressEvent{Message: line})
	}
}

// runMoves replaces the planned moves of one StatefulSet with the migration engine, streaming
// progress. again says how the user resumes after a stop.
func (v *verb) runMoves(ctx context.Context, kube kubernetes.Interface, m resourceModel, ev *evaluation, gates []gates.Gate,
	p *progress, again string) diag.Diagnostics {
	var diags diag.Diagnostics
	ns, name := m.Namespace.ValueString(), m.StatefulSet.ValueString()
	var ordinals []int32
	actions := map[int32]planmigration.MigrationAction{}
	for _, mv := range ev.plan.Moves {
		ordinals = append(ordinals, mv.Ordinal)
		actions[mv.Ordinal] = mv.Action
	}
	if len(ordinals) == 0 {
		return diags
	}
	var done []string
	run := engine.MigrationRun{
		Namespace: ns, Name: name, Ordinals: ordinals, Actions: actions, Claims: ev.plan.Claims,
		Parallelism:                   1,
		RequireOthersReady:            m.RequireOthersReady.ValueBool(),
		ForceDeleteOnUnreachableNodes: m.ForceDeleteOnUnreachableNodes.ValueBool(),
		MinReady:                      time.Duration(m.MinReadySeconds.ValueInt64()) * time.Second,
		OrdinalTimeout:                parseDuration(m.OrdinalTimeout, DefaultOrdinalTimeout),
		UnschedulableGrace:            parseDuration(m.UnschedulableTimeout, DefaultUnschedulable),
		Resync:                        v.resync,
		Gates:                         gates,
		Log:                           func(line string) { p.say("%s/%s: %s", ns, name, line) },
		Done: func(d engine.MigratedOrdinal) {
			done = append(done, fmt.Sprintf("%d (%s on %s)", d.Ordinal, d.Duration.Round(time.Second), d.Node))
			p.say("%s/%s: ordinal %d %s done in %s on node %s", ns, name, d.Ordinal, actions[d.Ordinal], d.Duration.Round(time.Second), d.Node)
		},
	}
	p.say("%s/%s: ordinals %s (%s), one at a time", ns, name, planmigration.JoinOrdinals(ordinals), describeActions(ordinals, actions))
	if err := engine.Migrate(ctx, kube, run); err != nil {
		kept := "No ordinal finished in this run."
		if len(done) > 0 {
			kept = "Ordinals finished in this run stay as they are: " + strings.Join(done, ", ") + "."
		}
		diags.Append(stoppedDiagnostic(ns, name, ordinals, again, "action", kept, err))
	}
	return diags
}

// problemsOf is problemDiagnostics with the migration resource's attribute paths dropped
// (an action's attributes are not a resource's): the same summaries and advice.
func problemsOf(m resourceModel, ev *evaluation) diag.Diagnostics {
	var out diag.Diagnostics
	for _, d := range problemDiagnosticsFor(m, ev, false) {
		out.Append(diagnostics.WithoutPath(d))
	}
	return out
}

// ordinalsOf decodes a list of ordinals (nil when null).
func ordinalsOf(l types.List) []int32 {
	if l.IsNull() || l.IsUnknown() {
		return nil
	}
	var out []int32
	for _, e := range l.Elements() {
		if i, ok := e.(types.Int64); ok && !i.IsNull() && !i.IsUnknown() {
			out = append(out, int32(i.ValueInt64()))
		}
	}
	return out
}

// ordinalList is ordinals as a Terraform list.
func ordinalList(ordinals []int32) types.List {
	vals := make([]int64, 0, len(ordinals))
	for _, o := range ordinals {
		vals = append(vals, int64(o))
	}
	l, _ := types.ListValueFrom(context.Background(), types.Int64Type, vals)
	return l
}
