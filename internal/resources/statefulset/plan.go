package statefulset

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-log/tflog"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/olapgke/terraform-provider-olapgke/internal/clients"
	"github.com/olapgke/terraform-provider-olapgke/internal/cputime"
	"github.com/olapgke/terraform-provider-olapgke/internal/diagnostics"
	"github.com/olapgke/terraform-provider-olapgke/internal/planner"
	"github.com/olapgke/terraform-provider-olapgke/internal/planner/migration"
	"github.com/olapgke/terraform-provider-olapgke/internal/planner/rollout"
	"github.com/olapgke/terraform-provider-olapgke/internal/resources/apifailure"
	"github.com/olapgke/terraform-provider-olapgke/internal/snapshot"
	"github.com/olapgke/terraform-provider-olapgke/internal/stsutil"
)

var manifestPath = path.Root("manifest")

// ModifyPlan is thin: it returns early on destroy, unknown manifests and deferred provider
// configuration; otherwise dry run -> snapshot -> planner, then maps the verdicts to the planned
// `ordinals`, warnings and errors.
func (r *statefulSetResource) ModifyPlan(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse) {
	if req.Plan.Raw.IsNull() {
		return
	}
	var plan resourceModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	var state *resourceModel
	if !req.State.Raw.IsNull() {
		state = &resourceModel{}
		resp.Diagnostics.Append(req.State.Get(ctx, state)...)
	}
	if resp.Diagnostics.HasError() {
		return
	}
	if state != nil {
		resp.Diagnostics.Append(stallWarnings(ctx, state)...)
		if req.Plan.Raw.Equal(req.State.Raw) {
			return // nothing changes: keep the recorded ordinals
		}
	}
	start := time.Now()
	cpu0 := cpuNow()
	replace := r.planChange(ctx, &plan, state, &resp.Diagnostics)
	if replace {
		resp.RequiresReplace = append(resp.RequiresReplace, manifestPath)
	}
	resp.Diagnostics.Append(resp.Plan.Set(ctx, &plan)...)
	// Read by `make bench` (internal/bench): the provider's own time for the per-ordinal plan,
	// wall and (where the platform counts it) the process's CPU.
	timing := map[string]any{
		"statefulset": plan.ID.ValueString(),
		"ordinals":    len(plan.Ordinals.Elements()),
		"ms":          msOf(time.Since(start)),
	}
	if cpu1 := cpuNow(); cpu0 >= 0 && cpu1 >= 0 {
		timing["cpu_ms"] = msOf(cpu1 - cpu0)
	}
	tflog.Debug(ctx, "olapgke plan timing", timing)
}

// planChange fills the planned computed values and reports whether the StatefulSet object must be
// replaced.
func (r *statefulSetResource) planChange(ctx context.Context, plan, state *resourceModel, diags *diag.Diagnostics) bool {
	plan.UpdateRevision = types.StringUnknown()
	plan.Rollout = types.ObjectUnknown(rolloutAttrTypes)
	plan.Ordinals = types.ListUnknown(ordinalType)
	plan.PlanSummary = types.StringUnknown()
	plan.ClaimResizes = types.ListUnknown(claimResizeType)
	m, err := parseManifest(ctx, plan.Manifest)
	if err != nil {
		if plan.Manifest.IsUnknown() || plan.Manifest.IsUnderlyingValueUnknown() || errors.Is(err, errNotKnown) {
			plan.ID, plan.Namespace, plan.Name, plan.UID, plan.ServiceName = types.StringUnknown(), types.StringUnknown(), types.StringUnknown(), types.StringUnknown(), types.StringUnknown()
			return false
		}
		diags.Append(diagnostics.AttributeError(manifestPath, "Invalid StatefulSet Manifest", diagnostics.Detail{
			Checked: "The manifest attribute.",
			Found:   err.Error() + ".",
			Do:      "Set manifest to the whole StatefulSet object, e.g. manifest = yamldecode(file(\"historical.yaml\")).",
		}))
		return false
	}
	plan.ID = types.StringValue(m.Namespace + "/" + m.Name)
	plan.Namespace, plan.Name = types.StringValue(m.Namespace), types.StringValue(m.Name)
	plan.ServiceName = types.StringValue(m.Set.Spec.ServiceName)
	plan.UID = types.StringUnknown()
	replace := false
	if state != nil {
		if state.Namespace.ValueString() != m.Namespace || state.Name.ValueString() != m.Name {
			replace = true
		} else {
			plan.UID = state.UID
		}
	}
	if m.Set.Spec.ServiceName == "" && plan.ManageService.ValueBool() {
		// The API server accepts a StatefulSet without serviceName, but its Pods then get no
		// stable DNS names and there is no governing Service to manage.
		diags.Append(diagnostics.AttributeError(manifestPath, "StatefulSet Has No serviceName", diagnostics.Detail{
			Checked: "spec.serviceName of the manifest (manage_service = true).",
			Found:   fmt.Sprintf("StatefulSet %s/%s sets no spec.serviceName, so its Pods get no stable network identity and there is no headless Service to manage.", m.Namespace, m.Name),
			Do:      "Set spec.serviceName (the provider creates the headless Service of that name), or set manage_service = false to run without one.",
		}))
		return replace
	}
	if r.clients.Deferred() {
		checkClaimTemplatesMounted(m, diags)
		diags.Append(diagnostics.Deferred("the per-ordinal StatefulSet plan (dry run, placement checks)"))
		return replace
	}
	kube, err := r.kube(ctx)
	if err != nil {
		diags.Append(diagnostics.KubeClientUnavailable("The Kubernetes client for the per-ordinal plan.", err))
		return replace
	}

	if plan.ManageService.ValueBool() {
		// The Service is applied after the StatefulSet: a failure there would come after the
		// StatefulSet and its Pods were written, so it is judged here, by the API server's dry run.
		diags.Append(checkService(ctx, kube, m, plan.ForceConflicts.ValueBool())...)
	}
	pr := predict(ctx, kube, m, FieldManager, plan.ForceConflicts.ValueBool(), replace, diags)
	if pr == nil {
		return replace
	}
	desired, imm, p := pr.desired, pr.imm, pr.plan
	atRisk, fresh := splitStranded(ctx, strandedOrdinals(p), state)
	// An olapgke_statefulset_migration planned after this resource judges what
	// this run writes (see clients.PlannedStatefulSet), and warns for the ordinals
	// this change strands that it does not move.
	planned := clients.PlannedStatefulSet{Set: desired, Recreated: imm != nil || replace}
	for _, o := range fresh {
		planned.Stranded = append(planned.Stranded, clients.StrandedOrdinal{Ordinal: o.Ordinal, Pod: o.Pod, Reason: o.Reason, Short: o.ShortReason})
	}
	r.clients.RecordPlannedStatefulSet(m.Namespace, m.Name, planned)
	ords, d := ordinalsValue(viewsFromPlan(p))
	diags.Append(d...)
	plan.Ordinals = ords
	plan.PlanSummary = types.StringValue(rollout.RolloutSummary(p))
	resizes, d := claimResizesValue(p)
	diags.Append(d...)
	plan.ClaimResizes = resizes
	if imm != nil {
		plan.UID = types.StringUnknown()
		if p.Replace != nil && p.Replace.Mode == rollout.RecreateForeground {
			// The selector changes: Terraform replaces the object (delete with its Pods, create).
			replace = true
			if state == nil {
				// The create half of a replacement is planned again during apply, after the old
				// object is gone, so its ordinals are only known then.
				plan.Ordinals = types.ListUnknown(ordinalType)
				plan.PlanSummary = types.StringUnknown()
				plan.ClaimResizes = types.ListUnknown(claimResizeType)
			}
		}
		diags.Append(replacementWarning(m, p))
		if p.Replace != nil && len(p.Replace.Problems) > 0 {
			diags.Append(diagnostics.AttributeError(manifestPath, "Claim Template Change Not Possible", diagnostics.Detail{
				Checked: fmt.Sprintf("The volumeClaimTemplates of StatefulSet %s/%s against its existing PVCs, their StorageClasses and the free TopoLVM capacity of the nodes their PVs are pinned to.", m.Namespace, m.Name),
				Found:   "The change cannot be made to the existing PVCs:\n- " + strings.Join(p.Replace.Problems, "\n- "),
				Do:      "Revert the claim template change, or free capacity on those nodes (or move the ordinals elsewhere with olapgke_statefulset_migration) and plan again. Nothing was changed.",
			}))
		}
	}
	if state == nil && pr.live != nil && stsutil.AppliedBy(pr.live, FieldManager) {
		// A create of an object olapgke already wrote: Terraform replaces a tainted resource (an
		// earlier apply failed after the write), deleting the object and its Pods before it plans
		// the create again, or the state was removed and the apply adopts the live object. The
		// plan cannot tell which, and the ordinals differ between the two, so they are known only
		// at apply (Terraform refuses a known value that changes).
		plan.Ordinals = types.ListUnknown(ordinalType)
		plan.PlanSummary = types.StringUnknown()
		plan.ClaimResizes = types.ListUnknown(claimResizeType)
		if imm == nil { // an immutable change has its own replacement warning
			diags.Append(existingObjectWarning(m))
		}
	}
	diags.Append(rolloutDiagnostics(m, p, plan.AllowUnschedulable.ValueBool())...)
	diags.Append(staleWarning(m, atRisk)...)
	return replace
}

// existingObjectWarning says what a create of a StatefulSet olapgke already wrote does: a
// tainted resource's replacement restarts every Pod.
func existingObjectWarning(m *manifest) diag.Diagnostic {
	set := m.Namespace + "/" + m.Name
	return diagnostics.AttributeWarning(manifestPath, "StatefulSet Already Exists", diagnostics.Detail{
		Checked: fmt.Sprintf("The live StatefulSet %s against this resource's state.", set),
		Found: fmt.Sprintf("StatefulSet %s exists and olapgke wrote it, but Terraform plans a create: an earlier apply failed after writing it "+
			"(the resource is tainted and is replaced: the StatefulSet and all its Pods are deleted and created again; the PVCs are kept and adopted again), "+
			"or its state was removed. The ordinals are known after apply.", set),
		Do: "To keep the running Pods, run terraform untaint on this resource (tainted) or terraform import it (state removed) before applying.",
	})
}

// prediction is what the planner says applying a manifest does to the live StatefulSet.
type prediction struct {
	desired *appsv1.StatefulSet // as the API server's dry run stores it
	live    *appsv1.StatefulSet // the object as it exists now; nil when there is none
	imm     *planner.ImmutableChange
	plan    *rollout.Plan
}

// predict dry-runs m as field manager fm, reads the cluster snapshot and asks the planner (replace:
// plan m as a new object). It is the one path from a manifest to per-ordinal verdicts, for
// olapgke_statefulset and the olapgke_statefulset_plan data source. On failure it adds the
// diagnostic and returns nil.
func predict(ctx context.Context, kube kubernetes.Interface, m *manifest, fm string, force, replace bool, diags *diag.Diagnostics) *prediction {
	t0 := time.Now()
	desired, err := applyStatefulSetAs(ctx, kube, m, fm, force, true)
	var imm *planner.ImmutableChange
	if err != nil && apierrors.IsInvalid(err) && !replace {
		// The server may refuse the in-place update of immutable fields: ask it (never a hand-kept
		// list) and get the object the replacement would store. Without state this is the create
		// half of a replacement Terraform plans after RequiresReplace; the old object still exists.
		if d, i, derr := snapshot.DryRunApply(ctx, kube, m.Set, fm, force); i != nil && derr == nil {
			desired, imm, err = d, i, nil
		}
	}
	if err != nil {
		diags.Append(rejected(err))
		return nil
	}
	// After the server's own validation, so its messages (e.g. a mount naming no volume) come first.
	if !checkClaimTemplatesMounted(m, diags) {
		return nil
	}
	if replace {
		// A new name or namespace is a new object: plan it as a create.
		desired, _ = applyStatefulSetAs(ctx, kube, m, fm, force, true)
	}
	t1, c1 := time.Now(), cpuNow()
	snap, err := snapshot.Read(ctx, kube, desired, m.Namespace, m.Name)
	if err != nil {
		diags.Append(diagnostics.Error("Cluster Snapshot Failed", kubeError(fmt.Sprintf("The cluster objects the per-ordinal plan of StatefulSet %s/%s needs (Pods, PVCs, PVs, Nodes, StorageClasses).", m.Namespace, m.Name), err)))
		return nil
	}
	snap.Immutable = imm
	live := snap.Live
	if d := versionWarning(m, snap.Server); d != nil {
		diags.Append(d)
	}
	if dropped := observeGated(m, desired, snap); len(dropped) > 0 {
		diags.Append(gatedWarning(m, snap.Server, dropped))
	}
	if replace {
		snap.Live, snap.Pods, snap.Revisions = nil, nil, nil
	}
	t2, c2 := time.Now(), cpuNow()
	p, err := rollout.PlanRollout(*snap)
	if err != nil {
		diags.Append(diagnostics.ProviderBug("Rollout Planner Failed", fmt.Sprintf("The planner could not predict the rollout of StatefulSet %s/%s.", m.Namespace, m.Name), err))
		return nil
	}
	// Read by make bench with the plan timing line: where the provider's time goes (wall, and the
	// process's CPU where the platform counts it).
	c3 := cpuNow()
	phases := map[string]any{"dry_run_ms": msOf(t1.Sub(t0)), "snapshot_ms": msOf(t2.Sub(t1)),
		"planner_ms": msOf(time.Since(t2)), "nodes": len(snap.Nodes), "pods": len(snap.AllPods)}
	if c1 >= 0 && c2 >= 0 && c3 >= 0 {
		phases["snapshot_cpu_ms"], phases["planner_cpu_ms"] = msOf(c2-c1), msOf(c3-c2)
	}
	tflog.Debug(ctx, "olapgke plan phases", phases)
	return &prediction{desired: desired, live: live, imm: imm, plan: p}
}

// msOf is d in milliseconds, to the microsecond, for the timing lines.
func msOf(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// cpuNow is the process's CPU time so far, or -1 where the platform does not count it.
func cpuNow() time.Duration {
	if d, ok := cputime.Process(); ok {
		return d
	}
	return -1
}

// rejected explains a failed dry run of the manifest at plan: a field-manager conflict or a
// refusal of the manifest points at the manifest; a transient failure (after the dry run's
// retries), missing RBAC or credentials say so instead (apifailure), since the manifest may be
// fine.
func rejected(err error) diag.Diagnostic {
	const checked = "A server-side apply dry run of the manifest (field manager olapgke, strict field validation)."
	msg := err.Error()
	var se *apierrors.StatusError
	if errors.As(err, &se) {
		msg = se.ErrStatus.Message
		if d, ok := conflictDiagnostic(se); ok {
			return d
		}
	}
	if apifailure.Classify(err) != apifailure.Refused {
		return diagnostics.Error("StatefulSet Dry Run Failed", apifailure.Detail(checked+" Nothing was changed in the cluster.", err, apifailure.Advice{}))
	}
	return diagnostics.AttributeError(manifestPath, "StatefulSet Rejected By The API Server", diagnostics.Detail{
		Checked: checked,
		Found:   "The API server refused it: " + msg,
		Do:      "Fix the manifest where the message points; nothing was changed in the cluster.",
	})
}

// conflictDiagnostic explains a server-side apply conflict (the object exists and another field
// manager owns fields the manifest sets, e.g. after kubectl apply, Helm or an operator): who owns
// which fields, and the way to adopt them.
func conflictDiagnostic(se *apierrors.StatusError) (diag.Diagnostic, bool) {
	byManager := conflictsByManager(se)
	if len(byManager) == 0 {
		return nil, false
	}
	managers := make([]string, 0, len(byManager))
	for k := range byManager {
		managers = append(managers, k)
	}
	sort.Strings(managers)
	var lines []string
	for _, mg := range managers {
		fields := byManager[mg]
		sort.Strings(fields)
		lines = append(lines, fmt.Sprintf("- %q owns %s", mg, strings.Join(fields, ", ")))
	}
	return diagnostics.AttributeError(manifestPath, "StatefulSet Fields Owned By Another Manager", diagnostics.Detail{
		Checked: "A server-side apply dry run of the manifest (field manager olapgke) against the existing StatefulSet.",
		Found: "The StatefulSet exists and other field managers own fields the manifest sets " +
			"(it was created or changed by kubectl, Helm or an operator):\n" + strings.Join(lines, "\n"),
		Do: "To adopt the object, set force_conflicts = true: olapgke takes these fields over with the manifest's " +
			"values (a field whose value stays the same restarts no Pod; the plan's ordinals show what would). " +
			"Or remove the fields from the manifest to leave them to their owner. Nothing was changed.",
	}), true
}

// conflictsByManager reads a server-side apply conflict (409 with FieldManagerConflict causes):
// the fields each other field manager owns. Empty for any other error.
func conflictsByManager(se *apierrors.StatusError) map[string][]string {
	if se.ErrStatus.Code != http.StatusConflict || se.ErrStatus.Details == nil {
		return nil
	}
	byManager := map[string][]string{}
	for _, c := range se.ErrStatus.Details.Causes {
		if c.Type != metav1.CauseTypeFieldManagerConflict {
			continue
		}
		manager := c.Message
		if i, j := strings.Index(c.Message, `"`), strings.LastIndex(c.Message, `"`); i >= 0 && j > i {
			manager = c.Message[i+1 : j] // conflict with "kubectl-client-side-apply" using apps/v1
		}
		byManager[manager] = append(byManager[manager], c.Field)
	}
	return byManager
}

func replacementWarning(m *manifest, p *rollout.Plan) diag.Diagnostic {
	rp := p.Replace
	if rp == nil {
		return diagnostics.AttributeWarning(manifestPath, "StatefulSet Will Be Replaced", diagnostics.Detail{
			Checked: "A server-side apply dry run of the manifest against the live object.",
			Found:   fmt.Sprintf("The API server refuses to update StatefulSet %s/%s in place.", m.Namespace, m.Name),
		})
	}
	found := fmt.Sprintf("The API server refuses to update StatefulSet %s/%s in place (fields %s): %s. %s", m.Namespace, m.Name,
		strings.Join(rp.Fields, ", "), rp.Message, rp.Explanation)
	if rp.Mode == rollout.RecreateOrphan {
		var byController, stale []int32
		for _, o := range p.Ordinals {
			switch o.Action {
			case rollout.ActionRecreate:
				byController = append(byController, o.Ordinal)
			case rollout.ActionStale, rollout.ActionStranded:
				stale = append(stale, o.Ordinal)
			}
		}
		summary := fmt.Sprintf("PVCs expanded in place: %d. StatefulSet object re-created. Pods restarted by the re-creation: 0.", len(rp.Expansions))
		if len(rp.Kept) > 0 {
			summary += fmt.Sprintf(" Retained PVCs of scaled-down ordinals that keep their size: %d.", len(rp.Kept))
		}
		if len(byController) > 0 {
			summary += " Then restarted by the StatefulSet controller (RollingUpdate, the template changes too): ordinal(s) " + migration.JoinOrdinals(byController) + "."
		}
		if len(stale) > 0 {
			summary += " Then left at the old revision (OnDelete) for olapgke_statefulset_migration to restart in place: ordinal(s) " + migration.JoinOrdinals(stale) + "."
		}
		return diagnostics.AttributeWarning(manifestPath, "StatefulSet Object Will Be Re-created", diagnostics.Detail{
			Checked: "A server-side apply dry run of the manifest against the live object, and the existing PVCs of its claim templates.",
			Found:   found + "\n\n" + summary,
			Do:      "Nothing: apply grows the PVCs first and waits for their new capacity, then re-creates the object; no Pod is deleted for it. Stale ordinals (OnDelete) are restarted by olapgke_statefulset_migration.",
		})
	}
	return diagnostics.AttributeWarning(manifestPath, "StatefulSet Will Be Replaced", diagnostics.Detail{
		Checked: "A server-side apply dry run of the manifest against the live object.",
		Found:   found + " Terraform will delete the StatefulSet (its Pods go with it) and create it again.",
		Do:      "If the Pods must not all restart at once, keep the selector as it is: every other immutable change re-creates the object without deleting a Pod.",
	})
}

// volumesText lists vols ("PVC c -> PV p (pinned to node n)") without what said already names:
// a volume whose PVC and PV it names is left out, and a PV or node it names is not named again.
func volumesText(vols []planner.Volume, said string) string {
	named := func(s string) bool { return s != "" && strings.Contains(said, s) }
	var parts []string
	for _, v := range vols {
		if named(v.PVC) && (v.PV == "" || named(v.PV)) {
			continue
		}
		s := "PVC " + v.PVC
		if v.PV != "" && !named(v.PV) {
			s += " -> PV " + v.PV
		}
		if v.PinnedNode != "" && !named(v.PinnedNode) {
			s += " (pinned to node " + v.PinnedNode + ")"
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, ", ")
}

// ordinalBullet is one ordinal's line in a list of ordinals that cannot schedule: its Pod (and
// the action, when given), why, and the volumes the reason does not name, each thing once:
// "- hist-2 (recreate): PV pvc-1 of PVC cache-hist-2 is pinned to node n-1 (…), which …".
func ordinalBullet(o rollout.OrdinalPlan, action rollout.Action) string {
	l := "- " + o.Pod
	if o.Pod == "" {
		l = fmt.Sprintf("- ordinal %d", o.Ordinal)
	}
	if action != "" {
		l += " (" + string(action) + ")"
	}
	why := o.ShortReason
	if why == "" {
		why = strings.TrimPrefix(o.Reason, fmt.Sprintf("ordinal %d: ", o.Ordinal))
	}
	l += ": " + why
	if v := volumesText(o.Volumes, l); v != "" {
		l += "; volumes: " + v
	}
	return l
}

// verdictDiagnostics maps the planner's verdicts to the recreate table, the unschedulable error
// (or warning with allow_unschedulable), the ordinals node state holds now (held.go) and the
// stale-ordinal warning for every stranded ordinal (the plan data source: it has no
// configuration around it).
func verdictDiagnostics(m *manifest, p *rollout.Plan, allowUnschedulable bool) diag.Diagnostics {
	diags := rolloutDiagnostics(m, p, allowUnschedulable)
	diags.Append(staleWarning(m, strandedOrdinals(p))...)
	return diags
}

// strandedOrdinals are the ordinals p leaves on the old revision (OnDelete, partition) whose
// Pods could not come back in place if deleted: olapgke_statefulset_migration's to move.
func strandedOrdinals(p *rollout.Plan) []rollout.OrdinalPlan {
	var out []rollout.OrdinalPlan
	for _, o := range p.Ordinals {
		if o.Action == rollout.ActionStranded {
			out = append(out, o)
		}
	}
	return out
}

// splitStranded separates the stranded ordinals of a plan into those the refreshed state (the
// live view, Read) already shows stranded, whose Pods are at risk as the cluster is, and those
// this change strands. Terraform plans olapgke_statefulset before a migration that depends on
// it, so this plan cannot know whether the same configuration moves the latter: their warning
// is left to that migration (clients.PlannedStatefulSet.Stranded), the plan_summary and
// ordinals[*].reason say it, and once applied, the next plan's live view warns for those left.
func splitStranded(ctx context.Context, stranded []rollout.OrdinalPlan, state *resourceModel) (atRisk, fresh []rollout.OrdinalPlan) {
	if len(stranded) == 0 {
		return nil, nil // the common case: no need to read the state's ordinals (1,000 of them)
	}
	live := map[int64]bool{}
	if state != nil {
		for _, v := range ordinalsFromState(ctx, state.Ordinals) {
			// "stale" with schedulable false: state written before the stranded action.
			if v.Action == string(rollout.ActionStranded) || (v.Action == string(rollout.ActionStale) && !v.Schedulable) {
				live[v.Ordinal] = true
			}
		}
	}
	for _, o := range stranded {
		if live[int64(o.Ordinal)] {
			atRisk = append(atRisk, o)
		} else {
			fresh = append(fresh, o)
		}
	}
	return atRisk, fresh
}

// rolloutDiagnostics is verdictDiagnostics without the stale-ordinal warning.
func rolloutDiagnostics(m *manifest, p *rollout.Plan, allowUnschedulable bool) diag.Diagnostics {
	diags := heldDiagnostics(m, p, allowUnschedulable)
	var recreate, doomed []rollout.OrdinalPlan
	for _, o := range p.Ordinals {
		switch o.Action {
		case rollout.ActionRecreate:
			recreate = append(recreate, o)
			if !o.Schedulable {
				doomed = append(doomed, o)
			}
		case rollout.ActionCreate:
			if !o.Schedulable {
				doomed = append(doomed, o)
			}
		}
	}
	set := m.Namespace + "/" + m.Name
	if len(recreate) > 0 {
		sort.SliceStable(recreate, func(i, j int) bool {
			if recreate[i].Wave != recreate[j].Wave {
				return recreate[i].Wave < recreate[j].Wave
			}
			return recreate[i].Ordinal > recreate[j].Ordinal
		})
		found := fmt.Sprintf("The pod template of StatefulSet %s changes (update revision %s); the controller will delete and recreate these Pods, one wave after the other:\n\n%s", set, p.UpdateRevision, recreateTable(recreate))
		if p.Stall != nil {
			found += fmt.Sprintf("\nThe rollout stalls at wave %d: %s", p.Stall.Wave, p.Stall.Reason)
		}
		diags.Append(diagnostics.Warning("Ordinals Will Be Recreated", diagnostics.Detail{
			Checked: "The planned pod template against the live Pods, the update strategy, and the nodes each ordinal's PVs are pinned to.",
			Found:   found,
			Do:      "Expect these Pods to restart in this order. Use spec.updateStrategy.rollingUpdate.partition or OnDelete to limit which ordinals restart.",
		}))
	}
	if len(doomed) > 0 {
		var lines []string
		for _, o := range doomed {
			lines = append(lines, ordinalBullet(o, o.Action))
		}
		d := diagnostics.Detail{
			Checked: "For every ordinal this apply recreates or creates: whether a node satisfies the new Pod's nodeSelector, required node affinity and tolerations and also the node affinity of every PV the Pod keeps (local PVs are pinned to one node by topology.topolvm.io/node).",
			Found:   fmt.Sprintf("StatefulSet %s would get Pods that can never schedule; they would stay Pending and stall the rollout:\n%s", set, strings.Join(lines, "\n")),
			Do: "Keep these ordinals on their current Pods: set spec.updateStrategy.type = \"OnDelete\" in the same change as the template and apply (no Pod restarts), " +
				"then move the ordinals with the olapgke_statefulset_migration resource (it deletes each ordinal's PVCs and Pod and waits until it is Ready on the new nodes; " +
				"with depends_on on this resource it can run in the same apply). " +
				"A rollingUpdate.partition above every ordinal does not do: the migration refuses it while the template change is pending, " +
				"because the controller would recreate a deleted Pod from the old revision. " +
				"To apply anyway and leave the Pods Pending, set allow_unschedulable = true.",
		}
		if len(p.TopoLVMWaits) > 0 {
			// Not a refusal: the same ordinals are placed once TopoLVM is ready on these nodes
			// (a pool or a device class created in this apply), and the scheduler retries them.
			diags.Append(diagnostics.AttributeWarning(manifestPath, "Waiting For TopoLVM On Target Nodes", diagnostics.Detail{
				Checked: fmt.Sprintf("Where the Pods StatefulSet %s creates or recreates can land.", set),
				Found: fmt.Sprintf("%d ordinal(s) cannot be placed yet (ordinal %d: %s). TopoLVM is not ready yet on %d node(s) the template admits: %s. They would all fit once it is.",
					len(doomed), doomed[0].Ordinal, strings.TrimSuffix(doomed[0].Reason, "."), len(p.TopoLVMWaits), planner.DescribeNodeWaits(p.TopoLVMWaits)),
				Do: "Nothing: the Pods stay Pending until TopoLVM publishes capacity there, and the apply waits for them (wait_for_rollout). If they never land, check lvmd and topolvm-node on those nodes (and restart_lvmd for a new device class).",
			}))
		} else if allowUnschedulable {
			d.Do = "allow_unschedulable = true, so the apply proceeds and these Pods will stay Pending until their PVCs are deleted or the change is reverted; olapgke_statefulset_migration moves them safely."
			diags.Append(diagnostics.AttributeWarning(manifestPath, "Ordinals Would Stay Pending", d))
		} else {
			diags.Append(diagnostics.AttributeError(manifestPath, "Ordinals Would Stay Pending", d))
		}
	}
	var dropped []string
	for _, o := range p.Ordinals {
		if o.Action == rollout.ActionDelete && o.PVCsAfter == rollout.PVCsDeleted {
			for _, v := range o.Volumes {
				s := fmt.Sprintf("- ordinal %d: PVC %s", o.Ordinal, v.PVC)
				if v.PV != "" {
					s += " (PV " + v.PV
					if v.PinnedNode != "" {
						s += " on node " + v.PinnedNode
					}
					s += ")"
				}
				dropped = append(dropped, s)
			}
		}
	}
	if len(dropped) > 0 && p.Replace == nil && m.Set.Spec.Replicas != nil {
		diags.Append(diagnostics.AttributeWarning(manifestPath, "PVCs Deleted On Scale-Down", diagnostics.Detail{
			Checked: fmt.Sprintf("The ordinals StatefulSet %s leaves behind and spec.persistentVolumeClaimRetentionPolicy.whenScaled.", set),
			Found:   "whenScaled is Delete, so the controller deletes these PVCs with their ordinals; their data is lost:\n" + strings.Join(dropped, "\n"),
			Do:      "Expect a scale-up to provision empty volumes. Set whenScaled = Retain to keep the PVCs (and their pinned data) for a later scale-up.",
		}))
	}
	return diags
}

// staleWarning is the warning for stranded ordinals (strandedOrdinals); none without any.
func staleWarning(m *manifest, stranded []rollout.OrdinalPlan) diag.Diagnostics {
	var diags diag.Diagnostics
	set := m.Namespace + "/" + m.Name
	if len(stranded) > 0 {
		var lines []string
		for _, o := range stranded {
			lines = append(lines, ordinalBullet(o, ""))
		}
		diags.Append(diagnostics.Warning("Stale Ordinals Cannot Be Recreated In Place", diagnostics.Detail{
			Checked: "For every ordinal that keeps its old revision (OnDelete or below the partition): whether its Pod could schedule again if deleted while keeping its PVCs.",
			Found:   fmt.Sprintf("StatefulSet %s: these Pods keep running on the old template, but would stay Pending if deleted or evicted:\n%s", set, strings.Join(lines, "\n")),
			Do: "Move them with the olapgke_statefulset_migration resource (it deletes the PVCs with the Pod so they are provisioned on the new nodes; " +
				"a migration of this set in the same configuration lists them in its moves); do not delete these Pods by hand.",
		}))
	}
	return diags
}

// stallWarnings turns the rollout recorded by the last Read into a warning on every plan while
// some Pod cannot be scheduled: a stalled rollout is never invisible.
func stallWarnings(ctx context.Context, state *resourceModel) diag.Diagnostics {
	var diags diag.Diagnostics
	var lines []string
	for _, s := range stuckFromState(ctx, state.Rollout) {
		if s.Reason != "Unschedulable" && s.Phase != "Pending" {
			continue
		}
		lines = append(lines, "- "+s.Summary())
	}
	if len(lines) == 0 {
		return diags
	}
	cur, upd := "", ""
	if !state.Rollout.IsNull() && !state.Rollout.IsUnknown() {
		if v, ok := state.Rollout.Attributes()["current_revision"].(types.String); ok {
			cur = v.ValueString()
		}
		if v, ok := state.Rollout.Attributes()["update_revision"].(types.String); ok {
			upd = v.ValueString()
		}
	}
	diags.Append(diagnostics.Warning("Rollout Is Stalled", diagnostics.Detail{
		Checked: fmt.Sprintf("The live rollout of StatefulSet %s/%s (current revision %s, update revision %s) and its Pods.", state.Namespace.ValueString(), state.Name.ValueString(), cur, upd),
		Found:   "These Pods cannot become Ready, so the controller will not go on:\n" + strings.Join(lines, "\n"),
		Do: "Either revert the manifest to the previous pod template (the Pending Pod then comes back on its old node), " +
			"or move the stuck ordinal with the olapgke_statefulset_migration resource (it deletes the ordinal's PVCs and Pod so it is provisioned on a node the new template allows).",
	}))
	return diags
}

// checkClaimTemplatesMounted refuses claim templates no container mounts. The API server accepts
// them; the controller still creates and binds one PVC per ordinal, and on TopoLVM that PV pins
// the Pod to a node for nothing.
func checkClaimTemplatesMounted(m *manifest, diags *diag.Diagnostics) bool {
	unmounted := unmountedClaimTemplates(m.Set)
	if len(unmounted) == 0 {
		return true
	}
	diags.Append(diagnostics.AttributeError(manifestPath, "Volume Claim Template Not Mounted", diagnostics.Detail{
		Checked: "Every spec.volumeClaimTemplates[*].metadata.name against the volumeMounts and volumeDevices of the pod template's containers and initContainers.",
		Found:   fmt.Sprintf("StatefulSet %s/%s: no container mounts claim template(s) %s, yet the controller would create a PVC (and on TopoLVM a node-pinned PV) for each of them per ordinal.", m.Namespace, m.Name, strings.Join(unmounted, ", ")),
		Do:      "Add a volumeMount (or volumeDevice) naming each claim template to a container, or remove the unused claim templates.",
	}))
	return false
}

// unmountedClaimTemplates lists, in manifest order, the volumeClaimTemplates that no container or
// init container of the pod template mounts (volumeMounts) or attaches (volumeDevices).
func unmountedClaimTemplates(set *appsv1.StatefulSet) []string {
	used := map[string]bool{}
	spec := set.Spec.Template.Spec
	for _, cs := range [][]corev1.Container{spec.InitContainers, spec.Containers} {
		for _, c := range cs {
			for _, vm := range c.VolumeMounts {
				used[vm.Name] = true
			}
			for _, vd := range c.VolumeDevices {
				used[vd.Name] = true
			}
		}
	}
	var out []string
	for _, t := range set.Spec.VolumeClaimTemplates {
		if !used[t.Name] {
			out = append(out, t.Name)
		}
	}
	return out
}

// recreateTable lists the recreated ordinals vertically, two short lines each, so the warning
// stays readable where Terraform wraps diagnostics at 80 columns (a table with a column per
// field did not fit):
//
//	wave 1, ordinal 2 (Pod historical-2): schedulable
//	  node today: gke-olap-historical-a-75d730ab-jcog
func recreateTable(recreate []rollout.OrdinalPlan) string {
	var b strings.Builder
	for _, o := range recreate {
		ok := "schedulable"
		if !o.Schedulable {
			ok = "NOT schedulable"
		}
		fmt.Fprintf(&b, "wave %d, ordinal %d (Pod %s): %s\n", o.Wave, o.Ordinal, o.Pod, ok)
		node := o.Node
		if node == "" {
			node = "none (not scheduled)"
		}
		fmt.Fprintf(&b, "  node today: %s\n", node)
		if o.Blocked {
			b.WriteString("  blocked: an earlier wave stalls, the controller never gets here\n")
		}
	}
	return b.String()
}
