package statefulset

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-log/tflog"
	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ktypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/olapgke/terraform-provider-olapgke/internal/diagnostics"
	"github.com/olapgke/terraform-provider-olapgke/internal/engine"
	olapkube "github.com/olapgke/terraform-provider-olapgke/internal/kube"
	"github.com/olapgke/terraform-provider-olapgke/internal/planner"
	"github.com/olapgke/terraform-provider-olapgke/internal/planner/rollout"
	"github.com/olapgke/terraform-provider-olapgke/internal/resources/apifailure"
	"github.com/olapgke/terraform-provider-olapgke/internal/snapshot"
	"github.com/olapgke/terraform-provider-olapgke/internal/stsutil"
)

const (
	defaultWriteTimeout  = 20 * time.Minute
	defaultDeleteTimeout = 10 * time.Minute
)

// deletePollInterval is how often Delete checks that the StatefulSet is gone.
var deletePollInterval = 500 * time.Millisecond

func (r *statefulSetResource) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	defer identitySpec.Write(ctx, resp.Identity, &resp.Diagnostics, &resp.State)
	var plan resourceModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	if resp.Diagnostics.HasError() {
		return
	}
	timeout, d := plan.Timeouts.Create(ctx, defaultWriteTimeout)
	resp.Diagnostics.Append(d...)
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	r.write(ctx, &plan, nil, &resp.Diagnostics, func(m *resourceModel, snap *planner.Snapshot) {
		resp.Diagnostics.Append(resp.State.Set(ctx, m)...)
		recordNodes(ctx, nil, resp.Private, snap, &resp.Diagnostics)
	})
}

func (r *statefulSetResource) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	defer identitySpec.Write(ctx, resp.Identity, &resp.Diagnostics, &resp.State)
	var plan, prior resourceModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	resp.Diagnostics.Append(req.State.Get(ctx, &prior)...)
	if resp.Diagnostics.HasError() {
		return
	}
	timeout, d := plan.Timeouts.Update(ctx, defaultWriteTimeout)
	resp.Diagnostics.Append(d...)
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	r.write(ctx, &plan, &prior, &resp.Diagnostics, func(m *resourceModel, snap *planner.Snapshot) {
		resp.Diagnostics.Append(resp.State.Set(ctx, m)...)
		recordNodes(ctx, req.Private, resp.Private, snap, &resp.Diagnostics)
	})
}

// write applies the manifest (server-side apply), the Service and PDB, verifies what the API
// server stored, waits for the rollout and saves the state. The state is saved even when a later
// step fails, since the object was written.
func (r *statefulSetResource) write(ctx context.Context, plan, prior *resourceModel, diags *diag.Diagnostics, save func(*resourceModel, *planner.Snapshot)) {
	m, err := parseManifest(ctx, plan.Manifest)
	if err != nil {
		diags.Append(diagnostics.AttributeError(manifestPath, "Invalid StatefulSet Manifest", diagnostics.Detail{Checked: "The manifest attribute.", Found: err.Error() + "."}))
		return
	}
	kube, err := r.kube(ctx)
	if err != nil {
		diags.Append(diagnostics.KubeClientUnavailable("The Kubernetes client for applying the StatefulSet.", err))
		return
	}
	force := plan.ForceConflicts.ValueBool()
	manageService := plan.ManageService.ValueBool() && m.Set.Spec.ServiceName != ""
	if manageService {
		// The plan judged the Service already; ask again before writing anything, so a Service
		// changed since (or a plan that could not check) fails here with nothing written rather
		// than after the StatefulSet and its Pods. Warnings were shown at plan.
		for _, d := range checkService(ctx, kube, m, force) {
			if d.Severity() == diag.SeverityError {
				diags.Append(d)
			}
		}
		if diags.HasError() {
			return
		}
	}
	stored, err := applyStatefulSet(ctx, kube, m, force, false)
	if err != nil && apierrors.IsInvalid(err) {
		// Immutable fields: re-create the object orphaning its Pods (growing the PVCs first),
		// as the plan said; the same planner decides here.
		switch r.recreate(ctx, kube, m, force, diags) {
		case recreated:
			stored, err = applyStatefulSet(ctx, kube, m, force, false)
		case recreateFailed:
			return
		}
	}
	if err != nil {
		a := apifailure.Advice{Found: "The API server refused it.", Do: "Fix the manifest where the message points.", Conflict: &apifailure.Advice{
			Found: "Another field manager owns fields this manifest sets.",
			Do:    "Remove those fields from the manifest, or set force_conflicts = true to take them over.",
		}}
		diags.Append(diagnostics.AttributeError(manifestPath, "StatefulSet Apply Failed",
			apifailure.Detail(fmt.Sprintf("Server-side apply of StatefulSet %s/%s (field manager olapgke).", m.Namespace, m.Name), err, a)))
		return
	}
	plan.ID = types.StringValue(m.Namespace + "/" + m.Name)
	plan.Namespace, plan.Name = types.StringValue(m.Namespace), types.StringValue(m.Name)
	plan.UID = types.StringValue(string(stored.UID))
	plan.ServiceName = types.StringValue(m.Set.Spec.ServiceName)
	views := ordinalsFromState(ctx, plan.Ordinals)
	if plan.Ordinals.IsUnknown() {
		// Provider configuration was deferred at plan time: record the live map instead.
		views = nil
	}
	// The state must be saved whatever happens next; finish() makes every computed value known.
	finish := func() {
		save(plan, r.finishState(ctx, kube, plan, stored, diags))
	}

	if manageService {
		if err := applyService(ctx, kube, m, force); err != nil {
			diags.Append(serviceApplyFailed(m, err))
		}
	}
	if plan.PodDisruptionBudget != nil {
		if err := applyPDB(ctx, kube, m, plan.PodDisruptionBudget, force); err != nil {
			a := apifailure.Advice{Found: "The API server refused it.", Do: "Fix pod_disruption_budget where the message points and apply again.", Conflict: &apifailure.Advice{
				Found: "Another field manager owns fields of this PodDisruptionBudget.",
				Do:    "Remove pod_disruption_budget if another tool manages it, or set force_conflicts = true to take them over.",
			}}
			diags.Append(diagnostics.Error("PodDisruptionBudget Apply Failed",
				apifailure.Detail(fmt.Sprintf("Server-side apply of PodDisruptionBudget %s/%s.", m.Namespace, m.Name), err, a)))
		}
	} else if prior != nil && prior.PodDisruptionBudget != nil {
		if err := deletePDB(ctx, kube, m.Namespace, m.Name); err != nil {
			diags.Append(diagnostics.Error("PodDisruptionBudget Delete Failed", kubeError("Deleting the PodDisruptionBudget no longer configured.", err)))
		}
	}

	storedJSON, err := setJSON(stored)
	if err != nil {
		diags.Append(diagnostics.ProviderBug("Stored StatefulSet Unreadable", "Encoding the StatefulSet the API server returned.", err))
		finish()
		return
	}
	if diffs := withoutGatedDiffs(userFieldDiffs(m.Obj, storedJSON), droppedGated(m.Obj, storedJSON)); len(diffs) > 0 {
		lines := make([]string, 0, len(diffs))
		for _, d := range diffs {
			lines = append(lines, "- "+d.String())
		}
		diags.Append(diagnostics.AttributeError(manifestPath, "Applied StatefulSet Differs From Configuration", diagnostics.Detail{
			Checked: fmt.Sprintf("Every field the manifest sets against what the API server stored for StatefulSet %s/%s after the apply.", m.Namespace, m.Name),
			Found:   "The stored object differs (a mutating admission webhook or policy, or an operator, changed it):\n" + strings.Join(lines, "\n"),
			Do:      "Find what mutates StatefulSets in this namespace (kubectl get mutatingwebhookconfigurations,mutatingadmissionpolicies) and exempt this object, or write the mutated values into the manifest. The next plan shows the stored values as drift.",
		}))
		finish()
		return
	}

	await, deleted := awaitedOrdinals(m.Set, views)
	if !plan.WaitForRollout.ValueBool() {
		await, deleted = nil, nil // still wait for the controller to observe the generation, for update_revision
	}
	_, err = engine.WaitForRollout(ctx, kube, engine.RolloutWait{
		Namespace: m.Namespace, Name: m.Name, UID: stored.UID, Generation: stored.Generation, Ordinals: await, Deleted: deleted,
		Progress: func(p engine.OrdinalProgress) {
			tflog.Info(ctx, "StatefulSet rollout progress", map[string]any{
				"statefulset": m.Namespace + "/" + m.Name, "ordinal": p.Ordinal, "pod": p.Pod, "node": p.Node, "state": p.State, "message": p.Message,
			})
		},
		Log: func(s string) { tflog.Warn(ctx, s) },
	})
	if err != nil {
		diags.Append(rolloutError(m, err))
	}
	finish()
}

// awaitedOrdinals are the ordinals whose Pods must be Ready at the update revision: those the plan
// creates or recreates; and the ordinals whose Pods must be gone: those a scale-down deletes.
// Without a plan (deferred provider config) every ordinal in range under RollingUpdate, none under
// OnDelete.
func awaitedOrdinals(set *appsv1.StatefulSet, views []ordinalView) (out, deleted []int32) {
	if views != nil {
		for _, v := range views {
			switch v.Action {
			case string(rollout.ActionCreate), string(rollout.ActionRecreate):
				out = append(out, int32(v.Ordinal))
			case string(rollout.ActionDelete):
				deleted = append(deleted, int32(v.Ordinal))
			}
		}
		return out, deleted
	}
	if set.Spec.UpdateStrategy.Type == appsv1.OnDeleteStatefulSetStrategyType {
		return nil, nil
	}
	return stsutil.OrdinalRange(set), nil
}

func rolloutError(m *manifest, err error) diag.Diagnostic {
	set := m.Namespace + "/" + m.Name
	var stuck *engine.StuckError
	var tout *engine.RolloutTimeoutError
	switch {
	case errors.As(err, &stuck):
		return diagnostics.Error("Rollout Cannot Progress", diagnostics.Detail{
			Checked: fmt.Sprintf("The rollout of StatefulSet %s: every ordinal this apply creates or recreates must become Ready at the update revision.", set),
			Found:   stuckFound(stuck),
			Do:      stuckAdvice(stuck.Cause),
		})
	case errors.As(err, &tout):
		return diagnostics.Error("Rollout Timed Out", diagnostics.Detail{
			Checked: fmt.Sprintf("The rollout of StatefulSet %s until the timeout.", set),
			Found:   tout.Error(),
			Do:      "Inspect the Pods listed (kubectl describe pod); raise the timeouts block if they were only slow, or set wait_for_rollout = false.",
		})
	case errors.Is(err, engine.ErrSetGone):
		return diagnostics.Error("StatefulSet Disappeared", diagnostics.Detail{
			Checked: fmt.Sprintf("The rollout of StatefulSet %s.", set),
			Found:   "The object was deleted or replaced by someone else during the wait.",
			Do:      "Run terraform apply again to recreate it.",
		})
	}
	return diagnostics.Error("Rollout Wait Failed", kubeError(fmt.Sprintf("Watching the rollout of StatefulSet %s.", set), err))
}

// finishState sets every computed value that is still unknown from the live object.
func (r *statefulSetResource) finishState(ctx context.Context, kube kubernetes.Interface, plan *resourceModel, stored *appsv1.StatefulSet, diags *diag.Diagnostics) *planner.Snapshot {
	live, err := kube.AppsV1().StatefulSets(stored.Namespace).Get(ctx, stored.Name, metav1.GetOptions{})
	if err != nil {
		live = stored
	}
	plan.UpdateRevision = types.StringValue(live.Status.UpdateRevision)
	snap, err := snapshot.Read(ctx, kube, live, live.Namespace, live.Name)
	if err != nil {
		snap = &planner.Snapshot{Desired: live, Live: live}
	}
	ro, d := rolloutValue(rollout.Rollout(live, snap.Pods))
	diags.Append(d...)
	plan.Rollout = ro
	if plan.Ordinals.IsUnknown() || plan.Ordinals.IsNull() {
		views, err := liveViews(snap)
		if err != nil {
			views = nil
		}
		l, d := ordinalsValue(views)
		diags.Append(d...)
		plan.Ordinals = l
	}
	if plan.ClaimResizes.IsUnknown() || plan.ClaimResizes.IsNull() {
		plan.ClaimResizes = noClaimResizes()
	}
	if plan.PlanSummary.IsUnknown() || plan.PlanSummary.IsNull() {
		// Unknown at plan only with the ordinals (provider configuration deferred, the create
		// half of a replacement): the summary of the live view, as Read records it.
		plan.PlanSummary = types.StringValue("")
		if p, err := livePlan(snap); err == nil {
			plan.PlanSummary = types.StringValue(rollout.RolloutSummary(p))
		}
	}
	return snap
}

// livePlan is the planner run with the live object as the desired one: every ordinal as it is
// today ("unchanged", or "stale" for a Pod not at the update revision). nil without a live object.
func livePlan(snap *planner.Snapshot) (*rollout.Plan, error) {
	if snap.Live == nil {
		return nil, nil
	}
	s := *snap
	s.Desired = snap.Live
	return rollout.PlanRollout(s)
}

// liveViews is the current ordinal -> Pod -> node -> PVC -> PV -> pinned node map (livePlan's
// ordinals).
func liveViews(snap *planner.Snapshot) ([]ordinalView, error) {
	p, err := livePlan(snap)
	if err != nil || p == nil {
		return nil, err
	}
	return viewsFromPlan(p), nil
}

func (r *statefulSetResource) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	defer identitySpec.Write(ctx, resp.Identity, &resp.Diagnostics, &resp.State, &req.State)
	var state resourceModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	kube, err := r.kube(ctx)
	if err != nil {
		resp.Diagnostics.Append(diagnostics.KubeClientUnavailable("The Kubernetes client for reading the StatefulSet.", err))
		return
	}
	ns, name := state.Namespace.ValueString(), state.Name.ValueString()
	live, err := olapkube.Get(ctx, kube.AppsV1().StatefulSets(ns).Get, name)
	if apierrors.IsNotFound(err) {
		resp.State.RemoveResource(ctx)
		return
	}
	if err != nil {
		resp.Diagnostics.Append(diagnostics.Error("StatefulSet Read Failed", kubeError(fmt.Sprintf("Reading StatefulSet %s/%s.", ns, name), err)))
		return
	}
	liveJSON, err := setJSON(live)
	if err != nil {
		resp.Diagnostics.Append(diagnostics.ProviderBug("Stored StatefulSet Unreadable", "Encoding the live StatefulSet.", err))
		return
	}
	snap, err := snapshot.Read(ctx, kube, live, ns, name)
	if err != nil {
		resp.Diagnostics.Append(diagnostics.Error("StatefulSet Read Failed", kubeError(fmt.Sprintf("Listing the Pods, PVCs and PVs of StatefulSet %s/%s.", ns, name), err)))
		return
	}
	if state.Manifest.IsNull() || state.Manifest.IsUnderlyingValueNull() {
		man, err := importedManifest(live)
		if err == nil {
			state.Manifest, err = jsonToDynamic(ctx, man, nil)
		}
		if err != nil {
			resp.Diagnostics.Append(diagnostics.ProviderBug("Import Failed", "Building the manifest from the live StatefulSet.", err))
			return
		}
	} else {
		prior, err := dynamicToJSON(ctx, state.Manifest)
		if err != nil {
			resp.Diagnostics.Append(diagnostics.ProviderBug("Invalid Manifest In State", "Converting the manifest recorded in state.", err))
			return
		}
		// Drift: every field the manifest sets takes the live value, so the plan shows the difference.
		// Gated fields the server drops (its feature gate off) are not drift.
		liveJSON = withGatedKept(prior, liveJSON, snap.Server)
		merged := mergeLive(prior, liveJSON)
		if len(userFieldDiffs(prior, liveJSON)) > 0 {
			tv, err := state.Manifest.ToTerraformValue(ctx)
			if err == nil {
				state.Manifest, err = jsonToDynamic(ctx, merged, tv.Type())
			}
			if err != nil {
				resp.Diagnostics.Append(diagnostics.ProviderBug("Drift Conversion Failed", "Recording the live StatefulSet in state.", err))
				return
			}
		}
	}
	state.ID = types.StringValue(ns + "/" + name)
	state.UID = types.StringValue(string(live.UID))
	state.ServiceName = types.StringValue(live.Spec.ServiceName)
	for _, b := range []struct {
		v   *types.Bool
		def bool
	}{{&state.ForceConflicts, false}, {&state.ManageService, true}, {&state.AllowUnschedulable, false}, {&state.WaitForRollout, true}} {
		if b.v.IsNull() || b.v.IsUnknown() {
			*b.v = types.BoolValue(b.def)
		}
	}
	if state.Timeouts.IsNull() {
		state.Timeouts.Object = types.ObjectNull(state.Timeouts.AttributeTypes(ctx))
	}
	state.UpdateRevision = types.StringValue(live.Status.UpdateRevision)
	ro, d := rolloutValue(rollout.Rollout(live, snap.Pods))
	resp.Diagnostics.Append(d...)
	state.Rollout = ro
	judged := recordNodes(ctx, req.Private, resp.Private, snap, &resp.Diagnostics)
	if len(judged.Lost) > 0 {
		resp.Diagnostics.Append(lostDataWarning(live, judged.Lost))
	}
	if len(judged.Restarted) > 0 {
		resp.Diagnostics.Append(restartedWarning(live, judged.Restarted))
	}
	// The live view of every ordinal, so that a plan's ordinals read "today -> planned" (the
	// apply recorded its prediction, which the cluster has since carried out or not).
	p, err := livePlan(snap)
	if err != nil {
		resp.Diagnostics.Append(diagnostics.ProviderBug("Rollout Planner Failed", "Mapping the live ordinals.", err))
		return
	}
	l, d := ordinalsValue(viewsFromPlan(p))
	resp.Diagnostics.Append(d...)
	state.Ordinals = l
	state.PlanSummary = types.StringValue(rollout.RolloutSummary(p))
	state.ClaimResizes = noClaimResizes() // nothing pending once the apply is done
	resp.Diagnostics.Append(resp.State.Set(ctx, &state)...)
}

// importedManifest is what olapgke's field manager owns in the live object (the applied manifest,
// extracted with client-go's managed-fields extraction); for an object olapgke never applied, the
// live object without status and server-set metadata.
func importedManifest(live *appsv1.StatefulSet) (any, error) {
	ac, err := appsv1ac.ExtractStatefulSet(live, FieldManager)
	if err != nil {
		return nil, err
	}
	if ac.Spec != nil {
		v, err := objectJSON(ac)
		if err != nil {
			return nil, err
		}
		// Claim templates are an atomic list, owned whole by the applier, so the extraction also
		// carries their server-populated status; no manifest sets it.
		if spec, ok := v.(map[string]any)["spec"].(map[string]any); ok {
			if vcts, ok := spec["volumeClaimTemplates"].([]any); ok {
				for _, t := range vcts {
					if m, ok := t.(map[string]any); ok {
						delete(m, "status")
					}
				}
			}
		}
		return v, nil
	}
	cp := live.DeepCopy()
	cp.APIVersion, cp.Kind = "apps/v1", "StatefulSet"
	cp.Status = appsv1.StatefulSetStatus{}
	cp.ObjectMeta = metav1.ObjectMeta{Name: live.Name, Namespace: live.Namespace, Labels: live.Labels, Annotations: live.Annotations}
	delete(cp.Annotations, "kubectl.kubernetes.io/last-applied-configuration")
	v, err := objectJSON(cp)
	if err != nil {
		return nil, err
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("the StatefulSet encodes as %T, not an object", v)
	}
	delete(obj, "status")
	if md, ok := obj["metadata"].(map[string]any); ok {
		delete(md, "creationTimestamp")
	}
	return obj, nil
}

func (r *statefulSetResource) Delete(ctx context.Context, req resource.DeleteRequest, resp *resource.DeleteResponse) {
	var state resourceModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	timeout, d := state.Timeouts.Delete(ctx, defaultDeleteTimeout)
	resp.Diagnostics.Append(d...)
	kube, err := r.kube(ctx)
	if err != nil {
		resp.Diagnostics.Append(diagnostics.KubeClientUnavailable("The Kubernetes client for deleting the StatefulSet.", err))
		return
	}
	ns, name := state.Namespace.ValueString(), state.Name.ValueString()
	// Foreground: the object goes away only after the garbage collector deleted its Pods. PVCs
	// follow spec.persistentVolumeClaimRetentionPolicy.whenDeleted (Retain by default: kept, and a
	// StatefulSet of the same name re-adopts them by name).
	fg := metav1.DeletePropagationForeground
	opts := metav1.DeleteOptions{PropagationPolicy: &fg}
	if uid := state.UID.ValueString(); uid != "" {
		u := ktypes.UID(uid)
		opts.Preconditions = &metav1.Preconditions{UID: &u}
	}
	err = kube.AppsV1().StatefulSets(ns).Delete(ctx, name, opts)
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		resp.Diagnostics.Append(diagnostics.Error("StatefulSet Delete Failed", kubeError(fmt.Sprintf("Deleting StatefulSet %s/%s.", ns, name), err)))
		return
	}
	err = wait.PollUntilContextTimeout(ctx, deletePollInterval, timeout, true, func(ctx context.Context) (bool, error) {
		got, err := kube.AppsV1().StatefulSets(ns).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		if err != nil {
			return false, err
		}
		return string(got.UID) != state.UID.ValueString(), nil
	})
	if err != nil {
		resp.Diagnostics.Append(diagnostics.Error("StatefulSet Delete Timed Out", diagnostics.Detail{
			Checked: fmt.Sprintf("That StatefulSet %s/%s and its Pods are gone (foreground deletion).", ns, name),
			Found:   "It still exists.",
			Do:      "Check for finalizers on the StatefulSet and its Pods (kubectl get statefulset,pods -o yaml) and raise timeouts.delete if Pods terminate slowly.",
			Err:     err,
		}))
		return
	}
	if state.ManageService.ValueBool() && state.ServiceName.ValueString() != "" {
		if err := deleteService(ctx, kube, ns, state.ServiceName.ValueString()); err != nil {
			resp.Diagnostics.Append(diagnostics.Error("Headless Service Delete Failed", kubeError("Deleting the headless Service.", err)))
		}
	}
	if state.PodDisruptionBudget != nil {
		if err := deletePDB(ctx, kube, ns, name); err != nil {
			resp.Diagnostics.Append(diagnostics.Error("PodDisruptionBudget Delete Failed", kubeError("Deleting the PodDisruptionBudget.", err)))
		}
	}
}

// recreateOutcome is what recreate did.
type recreateOutcome int

const (
	// notRecreated: not an orphaning re-creation (or it could not be judged): the caller reports
	// the apply's own error.
	notRecreated recreateOutcome = iota
	// recreated: the object is gone, its Pods and PVCs kept: create it again.
	recreated
	// recreateFailed: a diagnostic was added; nothing more to do.
	recreateFailed
)

// recreate carries out an immutable change the API server refused: it asks the planner how (the
// same dry run, snapshot and planner as the plan) and, for an orphaning re-creation, grows the
// PVCs and deletes the object without its Pods.
func (r *statefulSetResource) recreate(ctx context.Context, kube kubernetes.Interface, m *manifest, force bool, diags *diag.Diagnostics) recreateOutcome {
	desired, imm, err := snapshot.DryRunApply(ctx, kube, m.Set, FieldManager, force)
	if err != nil || imm == nil {
		return notRecreated
	}
	snap, err := snapshot.Read(ctx, kube, desired, m.Namespace, m.Name)
	if err != nil || snap.Live == nil {
		return notRecreated
	}
	snap.Immutable = imm
	observeGated(m, desired, snap)
	p, err := rollout.PlanRollout(*snap)
	if err != nil || p.Replace == nil || p.Replace.Mode != rollout.RecreateOrphan {
		return notRecreated
	}
	if len(p.Replace.Problems) > 0 {
		diags.Append(diagnostics.AttributeError(manifestPath, "Claim Template Change Not Possible", diagnostics.Detail{
			Checked: fmt.Sprintf("The claim templates of StatefulSet %s/%s against its existing PVCs at apply time.", m.Namespace, m.Name),
			Found:   "- " + strings.Join(p.Replace.Problems, "\n- "),
			Do:      "Nothing was changed. Free capacity or revert the change and apply again.",
		}))
		return recreateFailed
	}
	err = engine.RecreateOrphaning(ctx, kube, engine.RecreateRun{
		Namespace: m.Namespace, Name: m.Name, UID: snap.Live.UID, Expansions: p.Replace.Expansions,
		Log: func(line string) {
			tflog.Info(ctx, line, map[string]any{"statefulset": m.Namespace + "/" + m.Name})
		},
	})
	if err != nil {
		var re *engine.RecreateError
		d := diagnostics.Detail{
			Checked: fmt.Sprintf("Re-creating StatefulSet %s/%s without its Pods: growing its PVCs, then deleting the object with orphan propagation.", m.Namespace, m.Name),
			Found:   "The step failed; no Pod was deleted.",
			Do:      "Fix the cause and apply again: expanded PVCs are not expanded twice, and a deleted object is created again.",
			Err:     err,
		}
		if errors.As(err, &re) && re.Quote != "" {
			d.Found = fmt.Sprintf("PVC %s could not be expanded; the resizer says: %q. No Pod was deleted and the StatefulSet object is unchanged.", re.PVC, re.Quote)
		}
		diags.Append(diagnostics.AttributeError(manifestPath, "StatefulSet Re-creation Failed", d))
		return recreateFailed
	}
	return recreated
}

// serviceApplyFailed explains a failed apply of the headless Service: another field manager owning
// its fields (a Service kept by another tool) or a refusal (the Service is built from the
// manifest's spec.serviceName, selector and ports) get their own advice; other failures (a
// transient error, RBAC) get what apifailure says.
func serviceApplyFailed(m *manifest, err error) diag.Diagnostic {
	a := apifailure.Advice{
		Found: "The API server refused it.",
		Do:    "Fix what the cause names, or set manage_service = false if another tool manages this Service.",
		Conflict: &apifailure.Advice{
			Found: "Another field manager owns fields of this Service.",
			Do:    "Set manage_service = false if another tool manages this Service, or set force_conflicts = true to take its fields over.",
		},
	}
	return diagnostics.Error("Headless Service Apply Failed", apifailure.Detail(
		fmt.Sprintf("Server-side apply of the headless Service %s/%s named by spec.serviceName.", m.Namespace, m.Set.Spec.ServiceName), err, a))
}

// stuckFound says what the wait judgement (planner.JudgeWait) stopped on.
func stuckFound(stuck *engine.StuckError) string {
	s := fmt.Sprintf("Ordinal %d (Pod %s) can never become Ready as things stand; %s says: %q", stuck.Ordinal, stuck.Pod, stuck.Source, stuck.Quote)
	if stuck.For > 0 {
		s += fmt.Sprintf(" (for %s)", stuck.For.Round(time.Second))
	}
	return s
}

// stuckAdvice is the Do of Rollout Cannot Progress for the judgement's cause.
func stuckAdvice(c planner.StuckCause) string {
	const stalled = "The StatefulSet was applied and the rollout is stalled at this Pod. "
	if a := c.Advice(); a != "" {
		return stalled + a + " Then run terraform apply again, or revert the manifest to the previous pod template."
	}
	return stalled + "Revert the manifest to the previous pod template, or move the ordinal with the olapgke_statefulset_migration " +
		"resource (it deletes its PVCs so they are provisioned on an allowed node)."
}
