package migration

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-log/tflog"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/olapgke/terraform-provider-olapgke/internal/diagnostics"
	"github.com/olapgke/terraform-provider-olapgke/internal/engine"
	"github.com/olapgke/terraform-provider-olapgke/internal/planner"
	planmigration "github.com/olapgke/terraform-provider-olapgke/internal/planner/migration"
	"github.com/olapgke/terraform-provider-olapgke/internal/snapshot"
)

func (r *migrationResource) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	defer identitySpec.Write(ctx, resp.Identity, &resp.Diagnostics, &resp.State)
	var plan resourceModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	if resp.Diagnostics.HasError() {
		return
	}
	var cfgGates types.List
	resp.Diagnostics.Append(req.Config.GetAttribute(ctx, path.Root("gate"), &cfgGates)...)
	timeout, diags := plan.Timeouts.Create(ctx, mustDuration(DefaultApplyTimeout))
	resp.Diagnostics.Append(diags...)
	if resp.Diagnostics.HasError() {
		return
	}
	r.apply(ctx, plan, cfgGates, nil, timeout, &resp.State, &resp.Diagnostics)
}

func (r *migrationResource) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	defer identitySpec.Write(ctx, resp.Identity, &resp.Diagnostics, &resp.State)
	var plan, state resourceModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	var cfgGates types.List
	resp.Diagnostics.Append(req.Config.GetAttribute(ctx, path.Root("gate"), &cfgGates)...)
	prior, diags := completedFromState(ctx, state.Completed)
	resp.Diagnostics.Append(diags...)
	timeout, diags := plan.Timeouts.Update(ctx, mustDuration(DefaultApplyTimeout))
	resp.Diagnostics.Append(diags...)
	if resp.Diagnostics.HasError() {
		return
	}
	r.apply(ctx, plan, cfgGates, prior, timeout, &resp.State, &resp.Diagnostics)
}

// apply runs the planned moves. State is written after every finished
// ordinal's callback is recorded, and also when the run fails, so the next
// apply resumes (finished ordinals stay in `completed`). cfgGates are the
// configuration's gate blocks (with the write-only header values).
func (r *migrationResource) apply(ctx context.Context, plan resourceModel, cfgGates types.List, prior []completedModel, timeout time.Duration,
	state *tfsdk.State, out *diag.Diagnostics) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	ns, name := plan.Namespace.ValueString(), plan.StatefulSet.ValueString()
	plan.ID = types.StringValue(ns + "/" + name)
	if !plan.Completed.IsUnknown() {
		// The plan moves nothing (ModifyPlan leaves `completed` unknown exactly
		// when it does): only arguments changed.
		if plan.VolumeClaims.IsUnknown() {
			plan.VolumeClaims = types.ListValueMust(types.StringType, nil)
		}
		if plan.Moves.IsUnknown() {
			plan.Moves, _ = flattenMoves(ctx, nil, moveContext{})
		}
		if plan.PlanSummary.IsUnknown() {
			plan.PlanSummary = types.StringValue(planmigration.MigrationSummary(nil, "", planmigration.MigrationSummaryInput{}))
		}
		if plan.UpdateRevision.IsUnknown() {
			plan.UpdateRevision = types.StringValue("")
		}
		out.Append(state.Set(ctx, &plan)...)
		return
	}

	kube, err := r.clients.Kube(ctx)
	if err != nil {
		out.Append(diagnostics.KubeClientUnavailable("The provider's Kubernetes connection, for the migration.", err))
		return
	}

	// The planned ordinals and claims; unknown at plan only when the
	// provider configuration was (then the checks run now).
	var claimsCfg types.List
	if !plan.VolumeClaims.IsUnknown() {
		claimsCfg = plan.VolumeClaims
	} else {
		claimsCfg = types.ListNull(types.StringType)
	}
	gates, diags := gatesFrom(ctx, cfgGates, true)
	out.Append(diags...)
	if out.HasError() {
		return
	}
	ev, diags := r.evaluate(ctx, plan, claimsCfg, false)
	out.Append(diags...)
	if out.HasError() {
		return
	}
	var ordinals []int32
	var actions map[int32]planmigration.MigrationAction
	if plan.Moves.IsUnknown() {
		out.Append(problemDiagnostics(plan, ev)...)
		if out.HasError() {
			return
		}
		plan.Moves, diags = flattenMoves(ctx, ev.plan.Moves, movesContext(ctx, plan, prior))
		out.Append(diags...)
		plan.PlanSummary = types.StringValue(planSummary(ctx, ev.plan, ev.snap, plan, prior))
		actions = map[int32]planmigration.MigrationAction{}
		for _, m := range ev.plan.Moves {
			ordinals = append(ordinals, m.Ordinal)
			actions[m.Ordinal] = m.Action
		}
	} else {
		ordinals, actions, diags = moveOrdinals(ctx, plan.Moves)
		out.Append(diags...)
	}
	plannedRev := ""
	if plan.UpdateRevision.IsUnknown() {
		plan.UpdateRevision = types.StringValue(ev.plan.UpdateRevision)
	} else {
		plannedRev = plan.UpdateRevision.ValueString()
	}
	if plan.VolumeClaims.IsUnknown() {
		plan.VolumeClaims, diags = types.ListValueFrom(ctx, types.StringType, nonNil(ev.plan.Claims))
		out.Append(diags...)
	}
	var claims []string
	out.Append(plan.VolumeClaims.ElementsAs(ctx, &claims, false)...)
	if out.HasError() {
		return
	}
	var placement *corev1.PodTemplateSpec
	if !plan.PlannedManifest.IsNull() && plan.PlannedManifest.ValueString() != "" {
		d, err := decodeManifest(plan.PlannedManifest.ValueString(), ns, name)
		if err == nil {
			placement = &d.Spec.Template
		}
	}

	completed := prior
	save := func() {
		plan.Completed, diags = flattenCompleted(ctx, completed)
		out.Append(diags...)
		out.Append(state.Set(ctx, &plan)...)
	}
	cp, cpDiags := copySpec(ctx, plan.Copy)
	out.Append(cpDiags...)
	run := engine.MigrationRun{
		Copy:      cp,
		Namespace: ns, Name: name, Ordinals: ordinals, Actions: actions, Claims: claims,
		UpdateRevision:                plannedRev,
		Parallelism:                   ev.plan.Parallelism,
		RequireOthersReady:            plan.RequireOthersReady.ValueBool(),
		ForceDeleteOnUnreachableNodes: plan.ForceDeleteOnUnreachableNodes.ValueBool(),
		MinReady:                      time.Duration(plan.MinReadySeconds.ValueInt64()) * time.Second,
		OrdinalTimeout:                parseDuration(plan.OrdinalTimeout, DefaultOrdinalTimeout),
		UnschedulableGrace:            parseDuration(plan.UnschedulableTimeout, DefaultUnschedulable),
		Resync:                        r.resync,
		Placement:                     placement,
		Gates:                         gates,
		Log: func(line string) {
			tflog.Info(ctx, line, map[string]any{"statefulset": ns + "/" + name})
		},
		Done: func(m engine.MigratedOrdinal) {
			completed = mergeCompleted(completed, m)
			tflog.Debug(ctx, "ordinal recorded in state", map[string]any{"ordinal": m.Ordinal, "seconds": m.Duration.Seconds()})
		},
	}
	if len(ordinals) > 0 {
		tflog.Info(ctx, fmt.Sprintf("migrating StatefulSet %s/%s: ordinals %v (%s), %d at a time", ns, name, ordinals, describeActions(ordinals, actions), run.Parallelism))
	}
	// Warm hand-overs the controllers finished after a killed apply: their volumes get their
	// reclaim policy back first (the plan warned Warm Hand-Over To Finish).
	var finish []planmigration.WarmStep
	if ev.view != nil {
		finish = ev.view.HandOversToFinish()
	}
	err = engine.FinishHandOvers(ctx, kube, finish, run.Log)
	if err == nil {
		err = engine.Migrate(ctx, kube, run)
	}
	save()
	if err != nil {
		out.Append(migrationDiagnostic(ns, name, ordinals, completed, err))
	}
}

func (r *migrationResource) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	defer identitySpec.Write(ctx, resp.Identity, &resp.Diagnostics, &resp.State, &req.State)
	var st resourceModel
	resp.Diagnostics.Append(req.State.Get(ctx, &st)...)
	if resp.Diagnostics.HasError() {
		return
	}
	// Defaults after import.
	if st.Order.IsNull() {
		st.Order = types.StringValue("descending")
	}
	if st.MaxUnavailable.IsNull() {
		st.MaxUnavailable = types.Int64Value(1)
	}
	if st.MinReadySeconds.IsNull() {
		st.MinReadySeconds = types.Int64Value(0)
	}
	if st.RequireOthersReady.IsNull() {
		st.RequireOthersReady = types.BoolValue(true)
	}
	if st.ForceDeleteOnUnreachableNodes.IsNull() {
		st.ForceDeleteOnUnreachableNodes = types.BoolValue(false)
	}
	if st.OrdinalTimeout.IsNull() {
		st.OrdinalTimeout = types.StringValue(DefaultOrdinalTimeout)
	}
	if st.UnschedulableTimeout.IsNull() {
		st.UnschedulableTimeout = types.StringValue(DefaultUnschedulable)
	}
	if st.Completed.IsNull() {
		st.Completed, _ = flattenCompleted(ctx, nil)
	}
	st.ID = types.StringValue(st.Namespace.ValueString() + "/" + st.StatefulSet.ValueString())
	if r.clients == nil || r.clients.Deferred() {
		resp.Diagnostics.Append(resp.State.Set(ctx, &st)...)
		return
	}
	kube, err := r.clients.Kube(ctx)
	if err != nil {
		resp.Diagnostics.Append(diagnostics.KubeClientUnavailable("The provider's Kubernetes connection, for refreshing the migration.", err))
		return
	}
	s, err := snapshot.Read(ctx, kube, nil, st.Namespace.ValueString(), st.StatefulSet.ValueString())
	if err != nil {
		resp.Diagnostics.Append(snapshotFailed("The StatefulSet and its Pods, PVCs, PVs and Nodes (LIST calls).", err))
		return
	}
	if s.Live == nil {
		tflog.Info(ctx, "StatefulSet gone; removing the migration from state", map[string]any{"id": st.ID.ValueString()})
		resp.State.RemoveResource(ctx)
		return
	}
	claims := st.VolumeClaims
	if claims.IsUnknown() {
		claims = types.ListNull(types.StringType)
	}
	opts, diags := options(ctx, st, claims)
	resp.Diagnostics.Append(diags...)
	if resp.Diagnostics.HasError() {
		return
	}
	v := planmigration.NewMigration(s)
	p := v.Plan(opts)
	st.UpdateRevision = types.StringValue(v.UpdateRevision())
	history, _ := completedFromState(ctx, st.Completed)
	st.Moves, diags = flattenMoves(ctx, p.Moves, movesContext(ctx, st, history))
	resp.Diagnostics.Append(diags...)
	st.PlanSummary = types.StringValue(planSummary(ctx, &p, s, st, history))
	if st.VolumeClaims.IsNull() || st.VolumeClaims.IsUnknown() {
		st.VolumeClaims, diags = types.ListValueFrom(ctx, types.StringType, nonNil(p.Claims))
		resp.Diagnostics.Append(diags...)
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, &st)...)
}

// migrationDiagnostic explains a stopped migration: which ordinal, why
// (quoting the scheduler or provisioner), what is kept, what to do.
func migrationDiagnostic(ns, name string, ordinals []int32, completed []completedModel, err error) diag.Diagnostic {
	var done []string
	for _, c := range completed {
		done = append(done, fmt.Sprintf("%d (%.1fs on %s)", c.Ordinal, c.DurationSeconds, c.Node))
	}
	kept := "No ordinal is recorded as finished."
	if len(done) > 0 {
		kept = "Finished ordinals are kept in state: " + strings.Join(done, ", ") + "."
	}
	return stoppedDiagnostic(ns, name, ordinals, "run terraform apply again", "migration", kept, err)
}

// stoppedDiagnostic explains a stopped run of the migration engine. again says how to resume
// ("run terraform apply again", or invoke the action again), what names the run in the
// advice, kept what is recorded of the ordinals that finished.
func stoppedDiagnostic(ns, name string, ordinals []int32, again, what, kept string, err error) diag.Diagnostic {
	Again := strings.ToUpper(again[:1]) + again[1:]
	checked := fmt.Sprintf("Restarting or moving ordinal(s) %s of StatefulSet %s/%s.", planmigration.JoinOrdinals(ordinals), ns, name)
	if errors.Is(err, context.Canceled) { // Ctrl-C, or a run cancelled in HCP Terraform
		return diagnostics.Error("Migration Cancelled", diagnostics.Detail{
			Checked: checked,
			Found: "The " + map[bool]string{true: "apply", false: "action"}[what == "migration"] + " was cancelled " + engine.StoppedAt(err) + ". Ordinals after it were not touched " +
				"(the StatefulSet's Events, reason " + engine.ReasonCancelled + ", say the same).",
			Do: Again + " when ready: the " + what + " resumes from the cluster as it is, with " +
				"that ordinal first, from the step it reached. " + kept,
		})
	}
	var pe *engine.PreconditionError
	if errors.As(err, &pe) {
		return diagnostics.Error("Migration Precondition Failed", diagnostics.Detail{
			Checked: checked, Found: capitalize(pe.Msg) + ". Nothing was deleted for the ordinal that was next.",
			Do: "Fix the cause and " + again + "; the " + what + " resumes with the ordinals that still need a move. " + kept,
		})
	}
	var ge *engine.GateError
	if errors.As(err, &ge) {
		found := fmt.Sprintf("Ordinal %d (Pod %s) is back, but gate %s did not pass", ge.Ordinal, ge.Pod, ge.Gate)
		if ge.Timeout {
			found += " within its timeout"
		}
		found += fmt.Sprintf(" (%d polls in %s). Last answer: %s.", ge.Polls, ge.Waited.Round(time.Second), ge.Answer)
		return diagnostics.Error("Gate Did Not Pass", diagnostics.Detail{
			Checked: checked,
			Found:   found + " The next ordinals were not touched.",
			Do: "Fix what the gate waits for (or its timeout) and " + again + ": the " + what + " resumes at ordinal " +
				fmt.Sprint(ge.Ordinal) + "'s gates (the StatefulSet's olapgke.io/gates-pending annotation marks it) without " +
				"deleting anything of it. " + kept,
			Err: ge.Err,
		})
	}
	var me *engine.MigrationError
	if errors.As(err, &me) && me.Cause == planner.CauseUnreachableNode {
		return diagnostics.Error("Ordinal On Unreachable Node", diagnostics.Detail{
			Checked: checked,
			Found: fmt.Sprintf("Ordinal %d stopped: %s. Node %s: %s. Ordinals that were not being moved were not touched.",
				me.Ordinal, me.Reason, me.Node, me.Quote),
			Do: unreachableDo + " " + kept,
		})
	}
	if errors.As(err, &me) {
		summary := "Migration Step Failed"
		switch {
		case me.Cause == planner.CauseProvisioningFailed:
			summary = "Volume Provisioning Failed"
		case me.Cause == planner.CausePVNodeAffinity || me.Cause == planner.CauseUnschedulable:
			summary = "Moved Pod Cannot Be Scheduled"
		case me.Cause == planner.CauseImagePull || me.Cause == planner.CauseCrashLoop || me.Cause == planner.CauseContainerError:
			summary = "Moved Pod Cannot Start"
		case me.Cause == planner.CauseFailedMount:
			summary = "Moved Pod Volume Not Mounted"
		case me.Timeout:
			summary = "Moved Pod Not Ready In Time"
		}
		found := fmt.Sprintf("Ordinal %d (Pod %s) stopped: %s.", me.Ordinal, me.Pod, me.Reason)
		if me.Quote != "" {
			found += fmt.Sprintf(" %s says: %q.", capitalize(me.Source), me.Quote)
		}
		return diagnostics.Error(summary, diagnostics.Detail{
			Checked: checked,
			Found:   found + " Ordinals that were not being moved were not touched.",
			Do: fixCause(me.Cause) + " and " + again + ": " +
				"the " + what + " resumes with ordinal " + fmt.Sprint(me.Ordinal) + " from the step it reached. " + kept,
			Err: me.Err,
		})
	}
	if apierrors.IsForbidden(err) {
		return diagnostics.Error("Migration Not Permitted", diagnostics.Detail{Checked: checked,
			Found: "The API server refused a request the migration needs (RBAC); nothing was deleted after that.",
			Do: "Grant the provider's credentials the verb and resource the API server names (the guide " +
				"\"Least-privilege Kubernetes access\" in the provider's documentation lists them) and " + again + ". " + kept, Err: err})
	}
	return diagnostics.Error("Migration Failed", diagnostics.Detail{Checked: checked, Found: "The migration stopped with an error.",
		Do: "Fix the cause and " + again + ". " + kept, Err: err})
}

func mustDuration(s string) time.Duration {
	d, err := time.ParseDuration(s)
	if err != nil {
		panic(err)
	}
	return d
}

var _ = path.Root

// describeActions names the planned action of each ordinal ("2 restart, 1 move").
func describeActions(ordinals []int32, actions map[int32]planmigration.MigrationAction) string {
	parts := make([]string, 0, len(ordinals))
	for _, o := range ordinals {
		a := actions[o]
		if a == "" {
			a = "decided at its turn"
		}
		parts = append(parts, fmt.Sprintf("%d %s", o, a))
	}
	return strings.Join(parts, ", ")
}

// fixCause opens the advice of a stopped ordinal: planner.StuckCause.Advice for the wait
// judgement's causes, else the general list.
func fixCause(c planner.StuckCause) string {
	if a := c.Advice(); a != "" {
		return strings.TrimSuffix(a, ".") + ";"
	}
	return "Fix the cause (target nodes cordoned or missing, capacity, the Pod's readiness)"
}
