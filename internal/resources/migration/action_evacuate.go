package migration

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework-validators/mapvalidator"
	"github.com/hashicorp/terraform-plugin-framework/action"
	aschema "github.com/hashicorp/terraform-plugin-framework/action/schema"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/olapgke/terraform-provider-olapgke/internal/diagnostics"
	"github.com/olapgke/terraform-provider-olapgke/internal/engine"
	"github.com/olapgke/terraform-provider-olapgke/internal/planner"
	planmigration "github.com/olapgke/terraform-provider-olapgke/internal/planner/migration"
	"github.com/olapgke/terraform-provider-olapgke/internal/stsutil"
)

var (
	_ action.ActionWithConfigure  = (*evacuateNodePoolAction)(nil)
	_ action.ActionWithModifyPlan = (*evacuateNodePoolAction)(nil)
)

// evacuateNodePoolAction is olapgke_evacuate_node_pool: moves every StatefulSet ordinal whose
// PVs are pinned to a node pool's nodes onto other nodes, with the pool's nodes cordoned and
// tainted (stsutil.TaintEvacuating) first so that nothing lands back there.
type evacuateNodePoolAction struct{ verb }

// NewEvacuateNodePoolAction returns the olapgke_evacuate_node_pool action.
func NewEvacuateNodePoolAction() action.Action { return &evacuateNodePoolAction{} }

type evacuateNodePoolModel struct {
	Cluster            types.String `tfsdk:"cluster"`
	NodePool           types.String `tfsdk:"node_pool"`
	TargetNodeSelector types.Map    `tfsdk:"target_node_selector"`
	PlanOnly           types.Bool   `tfsdk:"plan_only"`
	verbSettings
}

func (a *evacuateNodePoolAction) Metadata(_ context.Context, req action.MetadataRequest, resp *action.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_evacuate_node_pool"
}

func (a *evacuateNodePoolAction) Schema(_ context.Context, _ action.SchemaRequest, resp *action.SchemaResponse) {
	resp.Schema = aschema.Schema{
		MarkdownDescription: "Empties a GKE node pool of Local SSD data before it goes: every StatefulSet ordinal whose PVs are " +
			"pinned to the pool's nodes is moved, one at a time, onto other nodes its template admits (new PVCs there; the " +
			"data on the pool is given up only once the ordinal runs Ready elsewhere). First the pool's nodes are cordoned " +
			"and tainted `" + stsutil.TaintEvacuating + "=<pool>:NoSchedule`, so no moved Pod lands back on them; the taint " +
			"is also how a killed run resumes (invoke again). At plan, and again before anything changes, the action refuses " +
			"(naming each ordinal and why) when a move could not land: for example when the template admits only this pool. " +
			"Meant for `lifecycle { action_trigger { events = [before_destroy] actions = [action.olapgke_evacuate_node_pool.x] } }` " +
			"on a `google_container_node_pool` or `olapgke_local_ssd_node_pool` (Terraform 1.16): a failed evacuation halts " +
			"the destroy with the pool intact. With `plan_only = true` it only reports what it would do. Ordinals are " +
			"moved without hydration gates (each StatefulSet would need its own); use olapgke_move_ordinals for gated moves. " +
			"It never touches Terraform state.",
		Attributes: settingsAttributes(map[string]aschema.Attribute{
			"cluster": aschema.StringAttribute{Optional: true,
				MarkdownDescription: "GKE cluster of the pool: a check that it is the provider's cluster (default: the provider's)."},
			"node_pool": aschema.StringAttribute{Required: true,
				MarkdownDescription: "Node pool to empty (nodes labelled `" + stsutil.LabelNodePool + "`)."},
			"target_node_selector": aschema.MapAttribute{Optional: true, ElementType: types.StringType,
				Validators: []validator.Map{mapvalidator.SizeAtLeast(1)},
				MarkdownDescription: "Node labels the ordinals' new nodes must carry. A check, not a placement: the action " +
					"refuses when a template admits other nodes outside the pool."},
			"plan_only": aschema.BoolAttribute{Optional: true,
				MarkdownDescription: "Only report, per StatefulSet and ordinal, what the evacuation would do; change nothing."},
		}),
	}
}

// evacuation is one StatefulSet's share of the evacuation.
type evacuation struct {
	m  resourceModel
	ev *evaluation
}

func (a *evacuateNodePoolAction) ModifyPlan(ctx context.Context, req action.ModifyPlanRequest, resp *action.ModifyPlanResponse) {
	var cfg evacuateNodePoolModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &cfg)...)
	if resp.Diagnostics.HasError() || !a.ready() || !cfg.known() ||
		anyUnknown(cfg.Cluster.IsUnknown(), cfg.NodePool.IsUnknown(), cfg.TargetNodeSelector.IsUnknown(), cfg.PlanOnly.IsUnknown()) {
		return
	}
	kube, err := a.clients.Kube(ctx)
	if err != nil {
		resp.Diagnostics.Append(diagnostics.KubeClientUnavailable("The provider's Kubernetes connection, for the evacuation.", err))
		return
	}
	_, _, diags := a.judge(ctx, kube, cfg)
	resp.Diagnostics.Append(diags...)
}

func (a *evacuateNodePoolAction) Invoke(ctx context.Context, req action.InvokeRequest, resp *action.InvokeResponse) {
	var cfg evacuateNodePoolModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &cfg)...)
	if resp.Diagnostics.HasError() {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, cfg.timeout())
	defer cancel()
	p := &progress{ctx: ctx, send: resp.SendProgress}
	kube, err := a.clients.Kube(ctx)
	if err != nil {
		resp.Diagnostics.Append(diagnostics.KubeClientUnavailable("The provider's Kubernetes connection, for the evacuation.", err))
		return
	}
	pool := cfg.NodePool.ValueString()
	nodes, sets, diags := a.judge(ctx, kube, cfg)
	resp.Diagnostics.Append(diags...)
	if resp.Diagnostics.HasError() {
		return
	}
	total := 0
	for _, e := range sets {
		total += len(e.ev.plan.Moves)
		p.say("%s/%s: would move ordinal(s) %s off node pool %s: %s", e.m.Namespace.ValueString(), e.m.StatefulSet.ValueString(),
			planmigration.JoinOrdinals(moveList(e.ev.plan.Moves)), pool, describeMoves(e.ev.plan.Moves))
	}
	if cfg.PlanOnly.ValueBool() {
		p.say("plan_only: node pool %s (%d node(s)) holds %d ordinal(s) of %d StatefulSet(s); nothing was changed", pool, len(nodes), total, len(sets))
		return
	}
	if len(nodes) == 0 {
		p.say("node pool %s has no nodes: nothing to evacuate", pool)
		return
	}
	if err := engine.MarkEvacuating(ctx, kube, nodes, pool); err != nil {
		resp.Diagnostics.Append(diagnostics.Error("Node Pool Not Cordoned", diagnostics.Detail{
			Checked: fmt.Sprintf("Cordoning the %d node(s) of node pool %s and tainting them %s.", len(nodes), pool, stsutil.TaintEvacuating),
			Found:   "A node could not be updated; no ordinal was moved.",
			Do:      "Fix the cause (the least-privilege role needs update on nodes) and invoke the action again.", Err: err}))
		return
	}
	p.say("node pool %s: %d node(s) cordoned and tainted %s=%s:NoSchedule", pool, len(nodes), stsutil.TaintEvacuating, pool)
	for _, e := range sets {
		if d := a.runMoves(ctx, kube, e.m, e.ev, nil, p, "invoke the action again"); d.HasError() {
			resp.Diagnostics.Append(d...)
			resp.Diagnostics.Append(diagnostics.Error("Node Pool Not Evacuated", diagnostics.Detail{
				Checked: fmt.Sprintf("Evacuating node pool %s: %d ordinal(s) of %d StatefulSet(s).", pool, total, len(sets)),
				Found: fmt.Sprintf("The move of StatefulSet %s/%s stopped (above). Its nodes stay cordoned and tainted, "+
					"so nothing lands there; the data of the ordinals not moved yet is still on them.",
					e.m.Namespace.ValueString(), e.m.StatefulSet.ValueString()),
				Do: "Do not delete the pool. Fix the cause and invoke the action again (it resumes), or give up the " +
					"evacuation: kubectl uncordon the nodes and kubectl taint nodes -l " + stsutil.LabelNodePool + "=" + pool + " " +
					stsutil.TaintEvacuating + "-",
			}))
			return
		}
	}
	p.say("node pool %s evacuated: %d ordinal(s) moved; its %d node(s) stay cordoned", pool, total, len(nodes))
}

// judge finds the StatefulSets with ordinals pinned to the pool's nodes and plans each one's
// moves on the cluster as it is once the nodes are marked (planmigration.WithEvacuation).
func (a *evacuateNodePoolAction) judge(ctx context.Context, kube kubernetes.Interface, cfg evacuateNodePoolModel) ([]string, []evacuation, diag.Diagnostics) {
	var diags diag.Diagnostics
	pool := cfg.NodePool.ValueString()
	if c := cfg.Cluster.ValueString(); c != "" && a.clients.Cluster != "" && c != a.clients.Cluster {
		diags.Append(diagnostics.Error("Node Pool Of Another Cluster", diagnostics.Detail{
			Checked: "cluster, against the provider's cluster.",
			Found:   fmt.Sprintf("The action names cluster %q; the provider is connected to %q.", c, a.clients.Cluster),
			Do:      "Use a provider (alias) configured for that cluster in the action's `provider` argument.",
		}))
		return nil, nil, diags
	}
	nodes, err := engine.PoolNodes(ctx, kube, pool)
	if err != nil {
		diags.Append(snapshotFailed(fmt.Sprintf("The nodes of node pool %s (LIST nodes).", pool), err))
		return nil, nil, diags
	}
	sets, err := kube.AppsV1().StatefulSets("").List(ctx, metav1.ListOptions{})
	if err != nil {
		diags.Append(snapshotFailed("The cluster's StatefulSets (LIST, every namespace).", err))
		return nil, nil, diags
	}
	pvs, err := kube.CoreV1().PersistentVolumes().List(ctx, metav1.ListOptions{})
	if err != nil {
		diags.Append(snapshotFailed("The cluster's PersistentVolumes (LIST).", err))
		return nil, nil, diags
	}
	var out []evacuation
	mark := func(s *planner.Snapshot) *planner.Snapshot { return planmigration.WithEvacuation(s, nodes, pool) }
	for _, ref := range planmigration.PinnedStatefulSets(sets.Items, pvs.Items, nodes) {
		m := cfg.model(ref.Namespace, ref.Name, types.ListNull(types.Int64Type), types.ListNull(types.StringType), types.ListNull(types.ObjectType{}))
		res := a.migration()
		ev, d := res.evaluateWith(ctx, m, m.VolumeClaims, false, mark)
		diags.Append(d...)
		if d.HasError() || ev == nil || ev.plan == nil {
			continue
		}
		moving := moveList(slices.DeleteFunc(slices.Clone(ev.plan.Moves), func(mv planmigration.Move) bool { return !evacuationStep(ev, mv) }))
		if len(moving) == 0 {
			continue
		}
		// Plan again for those ordinals only, on the same snapshot: the problems (placement,
		// capacity, PDBs, others ready) of exactly what runs.
		m.Ordinals = ordinalList(moving)
		ev.opts.Ordinals = moving
		p := ev.view.Plan(ev.opts)
		ev.plan = &p
		diags.Append(problemsOf(m, ev)...)
		diags.Append(checkSelector(cfg, ev, ref.Namespace+"/"+ref.Name)...)
		out = append(out, evacuation{m: m, ev: ev})
	}
	return nodes, out, diags
}

// checkSelector refuses when the template admits nodes outside target_node_selector.
func checkSelector(cfg evacuateNodePoolModel, ev *evaluation, set string) diag.Diagnostics {
	return refuseOutsideTarget(ev, selectorOf(cfg.TargetNodeSelector), fmt.Sprintf(
		"The nodes outside node pool %s that the template of StatefulSet %s admits for new Pods", cfg.NodePool.ValueString(), set))
}

func moveList(moves []planmigration.Move) []int32 {
	out := make([]int32, 0, len(moves))
	for _, m := range moves {
		out = append(out, m.Ordinal)
	}
	return out
}

func describeMoves(moves []planmigration.Move) string {
	parts := make([]string, 0, len(moves))
	for _, m := range moves {
		to := m.TargetNode
		if to == "" {
			to = m.Target
		}
		parts = append(parts, fmt.Sprintf("%s from %s to %s (predicted)", m.Pod, m.FromNode, to))
	}
	return strings.Join(parts, ", ")
}

// evacuationStep reports whether mv is the evacuation's to run: a move (its PVs are on the
// pool), a gate a killed run left pending, or a restart whose Pod is not Running and Ready (a
// move a killed run left half done, the new Pod on its way). A restart of a Ready Pod at an
// old revision is not the evacuation's: it stays for the migration that rolls the template.
func evacuationStep(ev *evaluation, mv planmigration.Move) bool {
	switch mv.Action {
	case planmigration.MigrationMove, planmigration.MigrationGate:
		return true
	case planmigration.MigrationRestart:
		for i := range ev.snap.Pods {
			if p := &ev.snap.Pods[i]; p.Name == mv.Pod && p.Namespace == ev.snap.Live.Namespace {
				return !stsutil.PodRunningAndReady(p) || p.DeletionTimestamp != nil
			}
		}
		return true // no Pod: the controller recreates it
	}
	return false
}
