package migration

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/types"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/olapgke/terraform-provider-olapgke/internal/clients"
	"github.com/olapgke/terraform-provider-olapgke/internal/diagnostics"
	"github.com/olapgke/terraform-provider-olapgke/internal/engine"
	"github.com/olapgke/terraform-provider-olapgke/internal/planner"
	planmigration "github.com/olapgke/terraform-provider-olapgke/internal/planner/migration"
	"github.com/olapgke/terraform-provider-olapgke/internal/resources/apifailure"
	"github.com/olapgke/terraform-provider-olapgke/internal/snapshot"
	"github.com/olapgke/terraform-provider-olapgke/internal/stsutil"
)

// ModifyPlan computes `moves` against the cluster (and `planned_manifest`)
// and refuses, on the attribute at fault, moves that cannot succeed.
func (r *migrationResource) ModifyPlan(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse) {
	if req.Plan.Raw.IsNull() {
		return // destroy: nothing to check, delete only forgets
	}
	var plan resourceModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	var cfgClaims types.List
	resp.Diagnostics.Append(req.Config.GetAttribute(ctx, path.Root("volume_claims"), &cfgClaims)...)
	var prior []completedModel
	var state *resourceModel
	if !req.State.Raw.IsNull() {
		state = &resourceModel{}
		resp.Diagnostics.Append(req.State.Get(ctx, state)...)
		c, d := completedFromState(ctx, state.Completed)
		resp.Diagnostics.Append(d...)
		prior = c
	}
	if resp.Diagnostics.HasError() {
		return
	}
	if !plan.Namespace.IsUnknown() && !plan.StatefulSet.IsUnknown() {
		plan.ID = types.StringValue(plan.Namespace.ValueString() + "/" + plan.StatefulSet.ValueString())
	}
	unknownPlan := func() {
		plan.Moves = types.ListUnknown(moveType)
		plan.PlanSummary = types.StringUnknown()
		plan.Completed = types.ListUnknown(completedType)
		plan.UpdateRevision = types.StringUnknown()
		if cfgClaims.IsNull() {
			plan.VolumeClaims = types.ListUnknown(types.StringType)
		}
		resp.Diagnostics.Append(resp.Plan.Set(ctx, &plan)...)
	}
	if plan.PlannedManifest.IsUnknown() && !plan.Namespace.IsUnknown() && !plan.StatefulSet.IsUnknown() {
		// Typically the target pool is created in this apply (its name reaches the template once
		// its nodes are known): say what the apply will wait for before deleting anything.
		resp.Diagnostics.Append(diagnostics.Warning("Migration Target Known At Apply", diagnostics.Detail{
			Checked: fmt.Sprintf("planned_manifest of StatefulSet %s/%s.", plan.Namespace.ValueString(), plan.StatefulSet.ValueString()),
			Found:   "It is known only at apply (for example the target node pool is created in this apply), so `moves` is too.",
			Do: "Nothing: before deleting anything, the apply checks placement and waits (up to ordinal_timeout) while " +
				"TopoLVM is not ready yet on the target nodes (CSI driver registration, published capacity, the " +
				planner.TaintStorageNotReady + " taint).",
		}))
	}
	if anyUnknown(plan.Namespace.IsUnknown(), plan.StatefulSet.IsUnknown(), plan.Ordinals.IsUnknown(), plan.Order.IsUnknown(),
		cfgClaims.IsUnknown(), plan.MaxUnavailable.IsUnknown(), plan.RequireOthersReady.IsUnknown(), plan.PlannedManifest.IsUnknown(),
		plan.Gates.IsUnknown(), plan.Copy.IsUnknown()) {
		unknownPlan()
		return
	}
	if r.clients == nil || r.clients.Deferred() {
		resp.Diagnostics.Append(diagnostics.Deferred("the migration's move selection and preflight checks"))
		unknownPlan()
		return
	}

	ev, diags := r.evaluate(ctx, plan, cfgClaims, true)
	resp.Diagnostics.Append(diags...)
	if resp.Diagnostics.HasError() {
		return
	}
	if ev.plan == nil {
		// The StatefulSet is created by this apply (planned_manifest): its
		// Pods start where the template says, so normally nothing moves, but
		// what there is to check is only known once it exists.
		unknownPlan()
		return
	}
	if ev.recreated {
		resp.Diagnostics.Append(diagnostics.Warning("StatefulSet Re-created In This Run", diagnostics.Detail{
			Checked: fmt.Sprintf("The StatefulSet %s/%s this run writes (%s).", plan.Namespace.ValueString(), plan.StatefulSet.ValueString(), ev.source),
			Found: "The change touches immutable fields, so the object is deleted (its Pods and PVCs are kept) and " +
				"created again before this migration runs; its revisions are only known then.",
			Do: "Nothing: `moves` is computed at apply time, after the StatefulSet is back.",
		}))
		unknownPlan()
		return
	}
	resp.Diagnostics.Append(problemDiagnostics(plan, ev)...)
	if d := copyRefused(plan, ev); d != nil {
		resp.Diagnostics.Append(d)
	}
	if w := topoLVMWaitDiagnostic(plan, ev); w != nil {
		resp.Diagnostics.Append(w)
	}
	if w := othersComingUpDiagnostic(plan, ev); w != nil {
		resp.Diagnostics.Append(w)
	}
	if w := unreachableWarning(plan, ev); w != nil {
		resp.Diagnostics.Append(w)
	}
	if copies := r.copiesUnderWay(ctx, plan, ev); len(copies) > 0 {
		resp.Diagnostics.Append(diagnostics.Warning("Warm Copy In Progress", diagnostics.Detail{
			Checked: fmt.Sprintf("The warm-move copier Pods of StatefulSet %s/%s and their logs.", plan.Namespace.ValueString(), plan.StatefulSet.ValueString()),
			Found:   "A copy an apply started is running: " + strings.Join(copies, "; ") + ".",
			Do:      "Nothing: apply picks the copy up where it is (it is not started again).",
		}))
	}
	finish := ev.view.HandOversToFinish()
	if len(finish) > 0 {
		var what []string
		for _, f := range finish {
			what = append(what, fmt.Sprintf("PV %s of PVC %s (ordinal %d)", strings.Join(f.PVs, ", "), strings.Join(f.Claims, ", "), f.Ordinal))
		}
		resp.Diagnostics.Append(diagnostics.Warning("Warm Hand-Over To Finish", diagnostics.Detail{
			Checked: fmt.Sprintf("The PersistentVolumes a warm move of StatefulSet %s/%s handed over.", plan.Namespace.ValueString(), plan.StatefulSet.ValueString()),
			Found: "An apply was stopped after reserving them, and the controllers finished the hand-over: " + strings.Join(what, "; ") +
				" is bound to the ordinal's claim but still Retain, with the warm move's annotations.",
			Do: "Nothing: apply restores their reclaim policy before it moves anything.",
		}))
	}
	if flux := ev.view.InFlux(ev.plan.Claims); len(flux) > 0 {
		// Terraform plans again at apply and requires the same known values:
		// while Pods and PVCs are changing (a step under way, for example after
		// a failed or killed apply), promise nothing and decide at apply.
		found := "They are changing: " + strings.Join(flux, "; ") + "."
		resp.Diagnostics.Append(diagnostics.Warning("Migration In Progress", diagnostics.Detail{
			Checked: fmt.Sprintf("The Pods and PVCs of StatefulSet %s/%s.", plan.Namespace.ValueString(), plan.StatefulSet.ValueString()),
			Found:   found + " `moves` is computed at apply time from the state then.",
			Do:      "Nothing: apply resumes the unfinished step first. Plan again once the cluster has settled to see the steps in advance.",
		}))
		unknownPlan()
		return
	}
	plan.Moves, diags = flattenMoves(ctx, ev.plan.Moves, movesContext(ctx, plan, prior))
	resp.Diagnostics.Append(diags...)
	plan.PlanSummary = types.StringValue(planSummary(ctx, ev.plan, ev.snap, plan, prior))
	if w := strandedWarning(r.clients, plan, ev.plan.Moves); w != nil {
		resp.Diagnostics.Append(w)
	}
	if cfgClaims.IsNull() {
		plan.VolumeClaims, diags = types.ListValueFrom(ctx, types.StringType, nonNil(ev.plan.Claims))
		resp.Diagnostics.Append(diags...)
	}
	if len(ev.plan.Moves) > 0 {
		// The apply moves ordinals: `completed` changes. This is also what
		// makes drift (a Pod that moved back) a non-empty plan.
		plan.Completed = types.ListUnknown(completedType)
		plan.UpdateRevision = types.StringValue(ev.plan.UpdateRevision)
	} else {
		// Nothing to move: no run. `moves` keeps the latest run's moves (the
		// state after an apply must equal its plan, so a plan made without
		// refresh must not turn them into a change).
		plan.Completed, diags = flattenCompleted(ctx, prior)
		resp.Diagnostics.Append(diags...)
		if len(finish) > 0 {
			plan.Completed = types.ListUnknown(completedType) // an apply, to finish the hand-overs
		}
		if state != nil && !state.Moves.IsNull() && !state.Moves.IsUnknown() {
			plan.Moves = state.Moves
			if !state.PlanSummary.IsNull() && !state.PlanSummary.IsUnknown() {
				plan.PlanSummary = state.PlanSummary // says what those moves were
			}
		}
		plan.UpdateRevision = types.StringValue(ev.plan.UpdateRevision)
		if state != nil && !state.UpdateRevision.IsNull() && !state.UpdateRevision.IsUnknown() {
			plan.UpdateRevision = state.UpdateRevision
		}
	}
	resp.Diagnostics.Append(resp.Plan.Set(ctx, &plan)...)
}

// movesContext is what `moves` shows of m's gates and the earlier runs in history.
func movesContext(ctx context.Context, m resourceModel, history []completedModel) moveContext {
	gates, _ := gatesFrom(ctx, m.Gates, false)
	mc := moveContext{namespace: m.Namespace.ValueString(), statefulset: m.StatefulSet.ValueString(),
		gates: gates, history: stepHistory(history), warm: !m.Copy.IsNull() && !m.Copy.IsUnknown()}
	if mc.warm {
		mc.bandwidth = copyBandwidth(ctx, m.Copy)
	}
	return mc
}

func anyUnknown(b ...bool) bool {
	for _, x := range b {
		if x {
			return true
		}
	}
	return false
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// evaluation is the snapshot and the planner's answer.
type evaluation struct {
	snap *planner.Snapshot
	// desired is the StatefulSet this run writes before the migration runs
	// (planned_manifest, or what olapgke_statefulset planned in this run), as
	// the API server's dry run defaulted it; nil when none is known.
	desired *appsv1.StatefulSet
	// source names where desired comes from, for diagnostics.
	source string
	// recreated: this run deletes and creates the StatefulSet again
	// (immutable fields), so its revisions are only known at apply.
	recreated bool
	view      *planmigration.Migration
	plan      *planmigration.MigrationPlan
	opts      planmigration.MigrationOptions
}

// evaluate reads the cluster and asks the planner. plan is nil when the
// StatefulSet does not exist but this run creates it (an error diagnostic
// when it does not exist and nothing creates it). usePlanned judges the
// StatefulSet this run writes (at plan time); the apply judges the live one.
func (r *migrationResource) evaluate(ctx context.Context, m resourceModel, claims types.List, usePlanned bool) (*evaluation, diag.Diagnostics) {
	return r.evaluateWith(ctx, m, claims, usePlanned, nil)
}

// evaluateWith is evaluate with the snapshot seen through request (nil: as read): the day-2
// verbs judge the cluster as it is once their request is written (planner/verbs.go).
func (r *migrationResource) evaluateWith(ctx context.Context, m resourceModel, claims types.List, usePlanned bool,
	request func(*planner.Snapshot) *planner.Snapshot) (*evaluation, diag.Diagnostics) {
	var diags diag.Diagnostics
	ns, name := m.Namespace.ValueString(), m.StatefulSet.ValueString()
	ev := &evaluation{}
	kube, err := r.clients.Kube(ctx)
	if err != nil {
		diags.Append(diagnostics.KubeClientUnavailable("The provider's Kubernetes connection (GKE cluster endpoint or the kubernetes block).", err))
		return nil, diags
	}
	if usePlanned && !m.PlannedManifest.IsNull() && m.PlannedManifest.ValueString() != "" {
		d, err := decodeManifest(m.PlannedManifest.ValueString(), ns, name)
		if err != nil {
			diags.Append(diagnostics.AttributeError(path.Root("planned_manifest"), "Invalid Planned Manifest", diagnostics.Detail{
				Checked: "planned_manifest, decoded as a StatefulSet.",
				Found:   err.Error(),
				Do:      "Pass the StatefulSet manifest as JSON, e.g. jsonencode(olapgke_statefulset.historical.manifest).",
			}))
			return nil, diags
		}
		// The server's defaulting of the template is what the controller
		// hashes into the update revision.
		got, imm, err := snapshot.DryRunApply(ctx, kube, d, snapshot.FieldManager, true)
		if err != nil {
			checked := fmt.Sprintf("A server-side apply dry run of planned_manifest as StatefulSet %s/%s.", ns, name)
			if apifailure.Classify(err) != apifailure.Refused {
				diags.Append(diagnostics.Error("Planned Manifest Dry Run Failed", apifailure.Detail(checked+" Nothing was changed.", err, apifailure.Advice{})))
				return nil, diags
			}
			diags.Append(diagnostics.AttributeError(path.Root("planned_manifest"), "Planned Manifest Rejected By The API Server", diagnostics.Detail{
				Checked: checked,
				Found:   "The API server refused it.",
				Do:      "Fix the manifest (the olapgke_statefulset that writes it reports the same error); nothing was changed.",
				Err:     err,
			}))
			return nil, diags
		}
		ev.desired, ev.recreated, ev.source = got, imm != nil, "planned_manifest"
	} else if usePlanned {
		if p, ok := r.clients.PlannedStatefulSet(ns, name); ok {
			ev.desired, ev.recreated, ev.source = p.Set, p.Recreated, "planned by olapgke_statefulset in this run"
		}
	}
	s, err := snapshot.Read(ctx, kube, ev.desired, ns, name)
	if err != nil {
		diags.Append(snapshotFailed(fmt.Sprintf("The StatefulSet %s/%s, its Pods, PVCs, PVs, Nodes, StorageClasses, capacities and PDBs (LIST calls).", ns, name), err))
		return nil, diags
	}
	if request != nil && s.Live != nil {
		s = request(s)
	}
	ev.snap = s
	if s.Live == nil {
		if ev.desired != nil {
			return ev, diags
		}
		diags.Append(diagnostics.AttributeError(path.Root("statefulset"), "StatefulSet Not Found", diagnostics.Detail{
			Checked: fmt.Sprintf("StatefulSet %s/%s in the cluster.", ns, name),
			Found:   "It does not exist.",
			Do:      "Create it first (for example with olapgke_statefulset and depends_on plus planned_manifest), or fix namespace/statefulset.",
		}))
		return nil, diags
	}
	if ev.desired != nil {
		fillDesired(ev.desired, s.Live)
	}
	opts, d := options(ctx, m, claims)
	diags.Append(d...)
	if diags.HasError() {
		return nil, diags
	}
	ev.opts = opts
	ev.view = planmigration.NewMigration(s)
	p := ev.view.Plan(opts)
	ev.plan = &p
	return ev, diags
}

// options maps the model to planner options; claims is the configured
// volume_claims (null: the planner's default).
func options(ctx context.Context, m resourceModel, claims types.List) (planmigration.MigrationOptions, diag.Diagnostics) {
	var diags diag.Diagnostics
	opts := planmigration.MigrationOptions{
		Order:              planmigration.MigrationOrder(m.Order.ValueString()),
		MaxUnavailable:     int(m.MaxUnavailable.ValueInt64()),
		RequireOthersReady: m.RequireOthersReady.IsNull() || m.RequireOthersReady.ValueBool(),
		Gated:              !m.Gates.IsNull() && !m.Gates.IsUnknown() && len(m.Gates.Elements()) > 0,
		// Unknown at plan (an expression): judged as false, the safe answer; apply knows it.
		ForceDeleteOnUnreachableNodes: m.ForceDeleteOnUnreachableNodes.ValueBool(),
		Now:                           time.Now(),
		// Warm moves place their copies with the copy's size (planmigration.CopyRequest).
		Warm: !m.Copy.IsNull() && !m.Copy.IsUnknown(),
	}
	if opts.Order == "" {
		opts.Order = planmigration.OrderDescending
	}
	if opts.MaxUnavailable < 1 {
		opts.MaxUnavailable = 1
	}
	if !m.Ordinals.IsNull() && !m.Ordinals.IsUnknown() {
		var os []int64
		diags.Append(m.Ordinals.ElementsAs(ctx, &os, false)...)
		opts.Ordinals = make([]int32, 0, len(os))
		for _, o := range os {
			opts.Ordinals = append(opts.Ordinals, int32(o))
		}
	}
	if !claims.IsNull() && !claims.IsUnknown() {
		var cs []string
		diags.Append(claims.ElementsAs(ctx, &cs, false)...)
		opts.VolumeClaims = nonNil(cs)
	}
	return opts, diags
}

// decodeManifest decodes planned_manifest (a StatefulSet object as JSON).
func decodeManifest(js, ns, name string) (*appsv1.StatefulSet, error) {
	var set appsv1.StatefulSet
	if err := json.Unmarshal([]byte(js), &set); err != nil {
		return nil, fmt.Errorf("not a StatefulSet as JSON: %w", err)
	}
	if set.Kind != "" && set.Kind != "StatefulSet" {
		return nil, fmt.Errorf("kind is %q, not StatefulSet", set.Kind)
	}
	if set.Name != "" && set.Name != name {
		return nil, fmt.Errorf("metadata.name is %q, but statefulset = %q", set.Name, name)
	}
	if set.Namespace != "" && set.Namespace != ns {
		return nil, fmt.Errorf("metadata.namespace is %q, but namespace = %q", set.Namespace, ns)
	}
	set.Name, set.Namespace = name, ns
	return &set, nil
}

// fillDesired gives the planned set what the manifest may leave to the live
// object: identity and the replica count (the API server defaults nothing
// else the planner reads here; a missing updateStrategy means RollingUpdate,
// as the server defaults it).
func fillDesired(d, live *appsv1.StatefulSet) {
	d.UID = live.UID
	if d.Spec.Replicas == nil {
		d.Spec.Replicas = live.Spec.Replicas
	}
}

// topoLVMWaitDiagnostic is the plan's word on target nodes TopoLVM is not ready on yet, when
// that alone keeps the moves from fitting (planmigration.MigrationPlan.TopoLVMWaits); nil otherwise.
func topoLVMWaitDiagnostic(m resourceModel, ev *evaluation) diag.Diagnostic {
	w := ev.plan.TopoLVMWaits
	if len(w) == 0 {
		return nil
	}
	return diagnostics.AttributeWarning(path.Root("statefulset"), "Waiting For TopoLVM On Target Nodes", diagnostics.Detail{
		Checked: fmt.Sprintf("Where the moved ordinals of StatefulSet %s/%s can land (target %s).",
			m.Namespace.ValueString(), m.StatefulSet.ValueString(), ev.plan.Target),
		Found: fmt.Sprintf("TopoLVM is not ready yet on %d target node(s): %s. They would fit once it is.",
			len(w), planner.DescribeNodeWaits(w)),
		Do: "Nothing: the apply waits for them (up to ordinal_timeout) before deleting anything, then checks " +
			"placement again. If they never become ready, check lvmd and topolvm-node on those nodes.",
	})
}

// othersComingUpDiagnostic is the plan's word on ordinals left alone that are not Ready yet but
// run where and as the template says (planmigration.MigrationPlan.OthersComingUp); nil otherwise.
func othersComingUpDiagnostic(m resourceModel, ev *evaluation) diag.Diagnostic {
	up := ev.plan.OthersComingUp
	if len(up) == 0 {
		return nil
	}
	return diagnostics.AttributeWarning(path.Root("require_others_ready"), "Waiting For Other Ordinals To Be Ready", diagnostics.Detail{
		Checked: fmt.Sprintf("The ordinals of StatefulSet %s/%s that this migration does not replace.",
			m.Namespace.ValueString(), m.StatefulSet.ValueString()),
		Found: fmt.Sprintf("%d of them are not Ready yet, but run where and as the template says (an earlier apply's "+
			"step, stopped before its Pod was Ready, or a restart): %s.", len(up), strings.Join(up, "; ")),
		Do: "Nothing: the apply waits for them (up to ordinal_timeout) before it replaces anything. " +
			"If one never becomes Ready, check its Pod.",
	})
}

// unreachableDo is what a user can do about an ordinal whose Pod is on a node that does not
// answer (planmigration.ProblemUnreachableNode, planner.CauseUnreachableNode).
const unreachableDo = "The apply cannot move this ordinal as it is: a Pod deleted on that node stays " +
	"Terminating until its kubelet answers again or the Pod is force-deleted, and the ordinal's Local " +
	"SSD data there cannot be read from anywhere else. Either bring the node back (or wait for GKE's " +
	"auto-repair to replace it) and apply again, leave the ordinal out of `ordinals` to move the others " +
	"now, or give up that data: set force_delete_on_unreachable_nodes = true and the apply force-deletes " +
	"the Pod (grace period 0) and moves the ordinal onto new, empty PVCs on the target."

// unreachableWarning is the plan's word, with force_delete_on_unreachable_nodes = true, on the
// ordinals whose Pod the apply force-deletes; nil when there are none.
func unreachableWarning(m resourceModel, ev *evaluation) diag.Diagnostic {
	u := ev.plan.Unreachable
	if len(u) == 0 || !m.ForceDeleteOnUnreachableNodes.ValueBool() {
		return nil
	}
	var lines []string
	for _, x := range u {
		lines = append(lines, x.Describe())
	}
	return diagnostics.AttributeWarning(path.Root("force_delete_on_unreachable_nodes"), "Pods On Unreachable Nodes Will Be Force-Deleted", diagnostics.Detail{
		Checked: fmt.Sprintf("The nodes of the Pods this migration replaces in StatefulSet %s/%s.",
			m.Namespace.ValueString(), m.StatefulSet.ValueString()),
		Found: fmt.Sprintf("%d of them do not answer: %s.", len(u), strings.Join(lines, "; ")),
		Do: "Nothing, if that data may go: with force_delete_on_unreachable_nodes = true the apply deletes " +
			"their PVCs, force-deletes the Pods (grace period 0) and moves them onto new, empty PVCs; the Local " +
			"SSD data on those nodes is abandoned. Set it to false to keep it and wait for the nodes instead.",
	})
}

// problemDiagnostics maps preflight problems to errors on the attribute at fault.
func problemDiagnostics(m resourceModel, ev *evaluation) diag.Diagnostics {
	return problemDiagnosticsFor(m, ev, true)
}

// problemDiagnosticsFor is problemDiagnostics for the resource (resource true) or for an action,
// which has no planned_manifest to advise.
func problemDiagnosticsFor(m resourceModel, ev *evaluation, resource bool) diag.Diagnostics {
	var diags diag.Diagnostics
	ns, name := m.Namespace.ValueString(), m.StatefulSet.ValueString()
	p := ev.plan
	var moving []string
	for _, mv := range p.Moves {
		moving = append(moving, fmt.Sprint(mv.Ordinal))
	}
	checked := fmt.Sprintf("Restarting or moving ordinal(s) %s of StatefulSet %s/%s (target %s, %d step(s), %d at a time).",
		strings.Join(moving, ", "), ns, name, p.Target, len(p.Moves), p.Parallelism)
	if ev.desired != nil {
		checked += " The template and update strategy are those " + map[bool]string{true: "of planned_manifest", false: "olapgke_statefulset plans in this run"}[ev.source == "planned_manifest"] + "."
	}
	for _, pr := range p.Problems {
		var at path.Path
		var summary, do string
		switch pr.Kind {
		case planmigration.ProblemUnknownOrdinal:
			at, summary, do = path.Root("ordinals"), "Unknown Ordinal", "Remove the ordinal from `ordinals`."
		case planmigration.ProblemUnknownClaim:
			at, summary, do = path.Root("volume_claims"), "Unknown Volume Claim", "List volumeClaimTemplate names in `volume_claims`, or leave it unset."
		case planmigration.ProblemTargetNodesMissing:
			at, summary, do = path.Root("statefulset"), "Target Nodes Missing",
				"Create or uncordon nodes that match the template placement (e.g. the target node pool) before migrating."
		case planmigration.ProblemUnschedulable:
			at, summary, do = path.Root("statefulset"), "Ordinal Cannot Be Placed",
				"Make room where the scheduler says (uncordon the node, tolerate the taint, add nodes to the target pool, lower the requests or the anti-affinity) and plan again; nothing was deleted."
		case planmigration.ProblemCapacity:
			at, summary, do = path.Root("statefulset"), "Not Enough Device-Class Capacity",
				"Add nodes (or Local SSDs) to the target pool, free space there, or move fewer ordinals (`ordinals`)."
		case planmigration.ProblemStrategy:
			at, summary = path.Root("statefulset"), "Update Strategy Would Roll Other Ordinals"
			do = strategyDo(m, ev, pr.Fix, resource)
			if ev.desired != nil {
				at = path.Root("planned_manifest")
			}
		case planmigration.ProblemPDB:
			at, summary, do = path.Root("max_unavailable"), "PodDisruptionBudget Forbids Migration",
				"Wait until every Pod the budget selects is Ready, or relax the PodDisruptionBudget (minAvailable or maxUnavailable), and plan again."
		case planmigration.ProblemUnreachableNode:
			at, summary, do = path.Root("force_delete_on_unreachable_nodes"), "Ordinal On Unreachable Node", unreachableDo
		case planmigration.ProblemOthersUnhealthy:
			at, summary, do = path.Root("require_others_ready"), "Other Ordinals Not Ready",
				"Bring those ordinals back to Ready, include them in the migration, or set require_others_ready = false."
		default:
			at, summary, do = path.Root("statefulset"), "Migration Not Possible", "Fix the cause and plan again."
		}
		diags.Append(diagnostics.AttributeError(at, summary, diagnostics.Detail{Checked: checked, Found: capitalize(pr.Message) + ".", Do: do}))
	}
	return diags
}

// strategyDo is the Do of "Update Strategy Would Roll Other Ordinals": the planner's fix, and
// where to make it. planned_manifest is advised only to the resource, and only when neither it
// nor an olapgke_statefulset planned in this run gives the StatefulSet this run writes.
func strategyDo(m resourceModel, ev *evaluation, fix string, resource bool) string {
	if fix == "" {
		fix = "set updateStrategy.type to OnDelete"
	}
	manifestSet := !m.PlannedManifest.IsNull() && (m.PlannedManifest.IsUnknown() || m.PlannedManifest.ValueString() != "")
	switch {
	case !resource:
		return capitalize(fix) + " on the StatefulSet, apply that, and run the action again."
	case manifestSet || ev.source == "planned_manifest":
		return capitalize(fix) + " in the StatefulSet manifest that planned_manifest passes, and let this resource move the ordinals."
	case ev.desired != nil:
		return capitalize(fix) + " in the olapgke_statefulset manifest, and let this resource move the ordinals."
	default:
		return capitalize(fix) + " before migrating. To change it in the same apply, pass the StatefulSet manifest as planned_manifest; this resource then moves the ordinals."
	}
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

func parseDuration(v types.String, def string) time.Duration {
	s := v.ValueString()
	if s == "" {
		s = def
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		d, _ = time.ParseDuration(def)
	}
	return d
}

// snapshotFailed is "Cluster Snapshot Failed": the reads (checked) failed with err, after their
// retries; apifailure says what the failure means (transient, RBAC, credentials). Nothing was
// changed.
func snapshotFailed(checked string, err error) diag.Diagnostic {
	return diagnostics.Error("Cluster Snapshot Failed", apifailure.Detail(checked+" Nothing was changed.", err, apifailure.Advice{
		Found: "A LIST call failed.",
		Do:    "Fix what the cause names and run the command again.",
	}))
}

// strandedWarning is the warning olapgke_statefulset leaves to the migration (it is planned
// first): the ordinals its change leaves on the old revision that could not come back in place
// (clients.PlannedStatefulSet.Stranded) and that these moves do not include, typically because
// `ordinals` names only some of them. nil when the moves include them all.
func strandedWarning(c *clients.Clients, m resourceModel, moves []planmigration.Move) diag.Diagnostic {
	ns, name := m.Namespace.ValueString(), m.StatefulSet.ValueString()
	p, ok := c.PlannedStatefulSet(ns, name)
	if !ok || len(p.Stranded) == 0 {
		return nil
	}
	moved := map[int32]bool{}
	for _, mv := range moves {
		moved[mv.Ordinal] = true
	}
	var lines []string
	for _, o := range p.Stranded {
		if !moved[o.Ordinal] {
			why := o.Short
			if why == "" {
				why = strings.TrimPrefix(o.Reason, fmt.Sprintf("ordinal %d: ", o.Ordinal))
			}
			lines = append(lines, fmt.Sprintf("- %s: %s", o.Pod, why))
		}
	}
	if len(lines) == 0 {
		return nil
	}
	return diagnostics.Warning("Stale Ordinals Not Moved", diagnostics.Detail{
		Checked: fmt.Sprintf("The ordinals olapgke_statefulset leaves on the old revision of StatefulSet %s/%s in this run "+
			"against this migration's moves.", ns, name),
		Found: "These Pods keep running on the old template, would stay Pending if deleted or evicted, and this " +
			"migration does not move them:\n" + strings.Join(lines, "\n"),
		Do: "Add them to this migration's ordinals (or run another migration for them) before their nodes go away; " +
			"do not delete these Pods by hand.",
	})
}

// copyBandwidth is copy.bandwidth in bytes per second (0: unbounded, or not known yet).
func copyBandwidth(ctx context.Context, o types.Object) int64 {
	spec, _ := copySpec(ctx, o)
	if spec == nil {
		return 0
	}
	return spec.BandwidthBytes
}

// copiesUnderWay says how far each running warm-move copy of the set is (the sink's or the
// final pass's log, read by engine.CopyProgressOf as the apply's Events are), e.g.
// "historical-3 to node n (historical-3-copy-sink): claim cache (1 of 1): 4.0 GiB copied (40%),
// 100.0 MiB/s, about 1m left". The copiers are among the snapshot's Pods; only a running one
// costs a request (its log). A log that cannot be read names the copy without its progress.
func (r *migrationResource) copiesUnderWay(ctx context.Context, m resourceModel, ev *evaluation) []string {
	if m.Copy.IsNull() || ev == nil || ev.snap == nil || ev.snap.Live == nil {
		return nil
	}
	set := ev.snap.Live
	var out []string
	var kube kubernetes.Interface
	for i := range ev.snap.AllPods {
		p := &ev.snap.AllPods[i]
		role := p.Labels[planmigration.LabelCopierRole]
		if p.Namespace != set.Namespace || p.Status.Phase != corev1.PodRunning || (role != planmigration.CopierSink && role != planmigration.CopierFinal) {
			continue
		}
		if owner := p.Labels[planmigration.LabelWarmMove]; stsutil.OrdinalOf(owner) < 0 || stsutil.PodName(set.Name, stsutil.OrdinalOf(owner)) != owner {
			continue // another set's copy
		}
		what := fmt.Sprintf("%s to node %s (%s)", p.Labels[planmigration.LabelWarmMove], p.Spec.NodeName, p.Name)
		if kube == nil {
			k, err := r.clients.Kube(ctx)
			if err != nil {
				return nil
			}
			kube = k
		}
		switch prog, ok, err := engine.CopyProgressOf(ctx, kube, set.Namespace, p.Name); {
		case err != nil:
			what += ": progress unknown (its log cannot be read)"
		case ok:
			what += ": " + prog.Describe()
		}
		out = append(out, what)
	}
	sort.Strings(out)
	return out
}
