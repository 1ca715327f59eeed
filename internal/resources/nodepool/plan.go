package nodepool

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/types"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/olapgke/terraform-provider-olapgke/internal/diagnostics"
	"github.com/olapgke/terraform-provider-olapgke/internal/gkerules"
)

// ModifyPlan fills provider defaults, computes ephemeral_storage and local_ssd_gib_per_node, and
// runs the data-loss guard for changes that delete or recreate nodes.
func (r *nodePoolResource) ModifyPlan(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse) {
	if req.Plan.Raw.IsNull() {
		r.planDestroy(ctx, req, resp)
		return
	}
	var plan model
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	var state *model
	if !req.State.Raw.IsNull() {
		state = &model{}
		resp.Diagnostics.Append(req.State.Get(ctx, state)...)
	}
	if resp.Diagnostics.HasError() {
		return
	}
	r.fillProviderDefaults(&plan, &resp.Diagnostics)
	if resp.Diagnostics.HasError() {
		return
	}
	if !plan.Name.IsUnknown() && !plan.Project.IsUnknown() && !plan.Location.IsUnknown() && !plan.Cluster.IsUnknown() {
		plan.ID = types.StringValue(poolID(plan.ref(), plan.Name.ValueString()))
	}

	// Local SSD: an unset count on a known machine type is the type's count (0 or the -lssd count).
	if !plan.MachineType.IsUnknown() && !plan.EphemeralLocalSSDCount.IsUnknown() {
		mt := plan.MachineType.ValueString()
		if _, known := gkerules.LookupMachineType(mt); known && plan.LocalNVMeSSDCount.IsUnknown() {
			plan.LocalNVMeSSDCount = types.Int64Value(gkerules.EffectiveLocalSSDCount(mt, 0, plan.EphemeralLocalSSDCount.ValueInt64()))
		}
		if !plan.LocalNVMeSSDCount.IsUnknown() {
			n := gkerules.EffectiveLocalSSDCount(mt, plan.LocalNVMeSSDCount.ValueInt64(), plan.EphemeralLocalSSDCount.ValueInt64())
			plan.LocalSSDGiBPerNode = types.Int64Value(n * gkerules.LocalSSDGiB)
		} else {
			plan.LocalSSDGiBPerNode = types.Int64Unknown()
		}
	} else {
		plan.LocalSSDGiBPerNode = types.Int64Unknown()
	}

	changed, effect := changes(state, &plan)
	resp.RequiresReplace = append(resp.RequiresReplace, replacing(state, &plan, changed)...)
	live := r.c != nil && !r.c.Deferred()
	if !live {
		resp.Diagnostics.Append(diagnostics.Deferred("node pool data-loss, ephemeral-storage demand and release-channel checks"))
	} else {
		resp.Diagnostics.Append(r.checkReleaseChannel(ctx, &plan)...)
	}
	if live && state != nil && len(changed) > 0 && !plan.Name.IsUnknown() {
		if api, err := r.c.GKE(ctx); err == nil {
			if ops, err := r.activeOperations(ctx, api, plan.ref(), plan.Name.ValueString()); err == nil && len(ops) > 0 {
				resp.Diagnostics.Append(operationInProgress(plan.Name.ValueString(), ops, plan.ref().Name()))
			}
		}
	}
	loss := lossOf(ctx, state, &plan, changed, effect)
	if state != nil && (effect >= gkerules.RecreatesNodes || changed["node_count"] || changed["autoscaling"] || changed["node_locations"]) {
		plan.Nodes = types.ListUnknown(types.StringType)
		if effect == gkerules.Replace || changed["node_locations"] {
			plan.InstanceGroupURLs = types.ListUnknown(types.StringType)
		}
	}
	if state != nil && effect == gkerules.Replace && state.DeletionProtection.ValueBool() {
		resp.Diagnostics.Append(deletionProtected(state, "replace", changedOf(changed, gkerules.Replace)))
	}

	var cs *clusterState
	if live && !plan.Name.IsUnknown() {
		kc, err := r.c.Kube(ctx)
		if err == nil {
			cs, err = readClusterState(ctx, kc, plan.Name.ValueString(), loss.kind != "")
		}
		if err != nil {
			if loss.kind != "" && !plan.AllowLocalDataLoss.ValueBool() {
				resp.Diagnostics.Append(diagnostics.Error("Data-Loss Check Failed", diagnostics.Detail{
					Checked: fmt.Sprintf("Which PersistentVolumes live on the nodes of node pool %s that this change would %s.", plan.Name.ValueString(), loss.verb()),
					Found:   "The Kubernetes API could not be read, so the provider cannot tell whether StatefulSet data would be lost.",
					Do:      "Make the cluster's API server reachable and plan again, or set allow_local_data_loss = true to proceed without the check.",
					Err:     err,
				}))
				return
			}
			resp.Diagnostics.Append(diagnostics.Warning("Cluster Not Readable", diagnostics.Detail{
				Checked: "Pods targeting node pool " + plan.Name.ValueString() + " (ephemeral-storage demand), for the DiskPressure check.",
				Found:   "The Kubernetes API could not be read, so the DiskPressure check ran on the demand recorded at the last refresh (none before the pool exists).",
				Do:      "Plan again once the API server answers, or set expected_ephemeral_gib.",
				Err:     err,
			}))
		}
	}

	plan.EphemeralStorage = r.planEphemeral(ctx, &plan, state, cs, demandFromState, &resp.Diagnostics)

	if loss.kind != "" && cs != nil {
		in := gkerules.GuardInput{Kind: loss.kind, Nodes: loss.nodes(cs.Nodes), Removed: loss.removed,
			PVs: cs.PVs, PVCs: cs.PVCs, Pods: cs.Pods, StatefulSets: cs.StatefulSets, NoExecuteTaints: loss.taints}
		if v := gkerules.Guard(in); v.Loses() {
			resp.Diagnostics.Append(dataLossDiag(plan.Name.ValueString(), loss, v, plan.AllowLocalDataLoss.ValueBool()))
		}
	}
	resp.Diagnostics.Append(resp.Plan.Set(ctx, &plan)...)
}

func (r *nodePoolResource) fillProviderDefaults(plan *model, diags *diag.Diagnostics) {
	fill := func(v *types.String, def, attr string) {
		if !v.IsUnknown() && !v.IsNull() {
			return
		}
		if r.c != nil && def != "" {
			*v = types.StringValue(def)
			return
		}
		if r.c != nil && r.c.Deferred() {
			*v = types.StringUnknown()
			return
		}
		diags.Append(diagnostics.AttributeError(path.Root(attr), "Missing "+strings.ToUpper(attr[:1])+attr[1:], diagnostics.Detail{
			Checked: "The resource's " + attr + " and the provider's " + attr + ".",
			Found:   "Neither is set.",
			Do:      "Set " + attr + " on the resource or on the provider (or its environment variable).",
		}))
	}
	var p, l, c string
	if r.c != nil {
		p, l, c = r.c.Project, r.c.Location, r.c.Cluster
	}
	fill(&plan.Project, p, "project")
	fill(&plan.Location, l, "location")
	fill(&plan.Cluster, c, "cluster")
}

// changes lists the attributes whose planned value differs from the state, and the worst effect.
func changes(state, plan *model) (map[string]bool, gkerules.Effect) {
	if state == nil {
		return nil, gkerules.NoEffect
	}
	c := map[string]bool{}
	// Every attribute of the model is compared (its tfsdk tag names it), so an attribute added to
	// the schema is never missed; gkerules.EffectOf says what its change does (an attribute it
	// does not classify replaces the pool). Provider-side attributes (NoEffect) and the three
	// compared below by their own rules are skipped here.
	sv, pv := reflect.ValueOf(state).Elem(), reflect.ValueOf(plan).Elem()
	for i := range sv.NumField() {
		name := sv.Type().Field(i).Tag.Get("tfsdk")
		if name == "" || name == "network_config" || name == "boot_disk" || name == "local_nvme_ssd_count" || gkerules.EffectOf(name) == gkerules.NoEffect {
			continue
		}
		a, okA := sv.Field(i).Interface().(attr.Value)
		b, okB := pv.Field(i).Interface().(attr.Value)
		if okA && okB && !a.Equal(b) {
			c[name] = true
		}
	}
	diff := func(name string, a, b attr.Value) {
		if !a.Equal(b) {
			c[name] = true
		}
	}
	// network_config's fields take different update paths (gkerules: network_config.*).
	if sa, pa := attrsOf(state.NetworkConfig), attrsOf(plan.NetworkConfig); !plan.NetworkConfig.IsUnknown() {
		for _, f := range []string{"pod_range", "enable_private_nodes", "network_performance_config"} {
			if pv := pa[f]; pv != nil && !pv.IsUnknown() && (sa[f] == nil || !sa[f].Equal(pv)) && (!pv.IsNull() || sa[f] != nil) {
				c["network_config."+f] = true
			}
		}
		// create_pod_range is not reported by GKE: a value recorded after an import is no change.
		if sv, pv := sa["create_pod_range"], pa["create_pod_range"]; known(sv) && pv != nil && !sv.Equal(pv) {
			c["network_config.create_pod_range"] = true
		}
	}
	if !plan.BootDisk.IsUnknown() {
		diff("boot_disk", state.BootDisk, plan.BootDisk)
	}
	if !plan.LocalNVMeSSDCount.IsUnknown() && !plan.MachineType.IsUnknown() &&
		!gkerules.SameLocalSSDCount(plan.MachineType.ValueString(), plan.LocalNVMeSSDCount.ValueInt64(), state.LocalNVMeSSDCount.ValueInt64(), plan.EphemeralLocalSSDCount.ValueInt64()) {
		c["local_nvme_ssd_count"] = true
	}
	var names []string
	for k := range c {
		names = append(names, k)
	}
	return c, gkerules.Worst(names)
}

// replacing is the paths of changed attributes that replace the pool by gkerules' table, whose
// old and new values are both known: Terraform replaces the pool for them even where the schema
// names no RequiresReplace modifier (an attribute added without one fails closed).
func replacing(state, plan *model, changed map[string]bool) path.Paths {
	if state == nil {
		return nil
	}
	sv, pv := reflect.ValueOf(state).Elem(), reflect.ValueOf(plan).Elem()
	valueOf := func(v reflect.Value, name string) attr.Value {
		for i := range v.NumField() {
			if v.Type().Field(i).Tag.Get("tfsdk") == name {
				a, _ := v.Field(i).Interface().(attr.Value)
				return a
			}
		}
		return nil
	}
	var out path.Paths
	for _, name := range changedOf(changed, gkerules.Replace) {
		top, field, nested := strings.Cut(name, ".")
		a, b := valueOf(sv, top), valueOf(pv, top)
		if nested {
			a, b = attrsOf(a)[field], attrsOf(b)[field]
		}
		if a == nil || b == nil || a.IsUnknown() || b.IsUnknown() {
			continue
		}
		p := path.Root(top)
		if nested {
			p = p.AtName(field)
		}
		out = append(out, p)
	}
	return out
}

func changedOf(c map[string]bool, e gkerules.Effect) []string {
	var out []string
	for k := range c {
		if gkerules.EffectOf(k) == e {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// loss describes which nodes a planned change deletes or recreates.
type loss struct {
	kind    gkerules.LossKind
	attrs   []string // attributes causing it
	removed int
	zones   []string       // removed zones (LossZones)
	taints  []corev1.Taint // NoExecute taints added to every node (LossEvict)
	detail  string
}

func (l loss) verb() string {
	switch l.kind {
	case gkerules.LossRecreate:
		return "recreate"
	case gkerules.LossEvict:
		return "taint NoExecute"
	default:
		return "delete"
	}
}

func (l loss) nodes(all []corev1.Node) []corev1.Node {
	if l.kind != gkerules.LossZones {
		return all
	}
	var out []corev1.Node
	for _, n := range all {
		if slices.Contains(l.zones, n.Labels[corev1.LabelTopologyZone]) {
			out = append(out, n)
		}
	}
	return out
}

func lossOf(ctx context.Context, state, plan *model, changed map[string]bool, effect gkerules.Effect) loss {
	if state == nil {
		return loss{}
	}
	switch effect {
	case gkerules.Replace:
		a := changedOf(changed, gkerules.Replace)
		return loss{kind: gkerules.LossReplace, attrs: a, detail: "changing " + strings.Join(a, ", ") + " replaces the node pool (GKE cannot update it), deleting every node"}
	case gkerules.RecreatesNodes:
		a := changedOf(changed, gkerules.RecreatesNodes)
		return loss{kind: gkerules.LossRecreate, attrs: a, detail: describeRecreate(ctx, state, plan, a) + ", which GKE applies by recreating every VM of the pool"}
	}
	var diags diag.Diagnostics
	zonesOld, zonesNew := stringSet(ctx, state.NodeLocations, &diags), stringSet(ctx, plan.NodeLocations, &diags)
	if changed["node_locations"] && !plan.NodeLocations.IsUnknown() {
		var gone []string
		for _, z := range zonesOld {
			if !slices.Contains(zonesNew, z) {
				gone = append(gone, z)
			}
		}
		if len(gone) > 0 {
			return loss{kind: gkerules.LossZones, attrs: []string{"node_locations"}, zones: gone,
				detail: "removing zone(s) " + strings.Join(gone, ", ") + " from node_locations deletes their nodes"}
		}
	}
	zones := max(len(zonesNew), 1)
	oldCount := state.NodeCount.ValueInt64()
	if plan.Autoscaling.IsNull() && changed["node_count"] && !plan.NodeCount.IsUnknown() && plan.NodeCount.ValueInt64() < oldCount {
		n := plan.NodeCount.ValueInt64()
		return loss{kind: gkerules.LossShrink, attrs: []string{"node_count"}, removed: int(oldCount-n) * zones,
			detail: fmt.Sprintf("node_count goes from %d to %d per zone", oldCount, n)}
	}
	if !plan.Autoscaling.IsNull() && !plan.Autoscaling.IsUnknown() && changed["autoscaling"] {
		var a autoscalingModel
		diags.Append(plan.Autoscaling.As(ctx, &a, objAs)...)
		if mx := a.MaxNodeCount.ValueInt64(); !a.MaxNodeCount.IsUnknown() && mx < oldCount {
			return loss{kind: gkerules.LossAutoscale, attrs: []string{"autoscaling"}, removed: int(oldCount-mx) * zones,
				detail: fmt.Sprintf("autoscaling.max_node_count %d is below the current %d nodes per zone, so GKE shrinks the pool", mx, oldCount)}
		}
	}
	// Taints change in place, but a NoExecute taint that arrives evicts the Pods that do not
	// tolerate it; removing a taint or a NoSchedule / PreferNoSchedule change evicts nothing.
	if changed["taints"] {
		before, _ := kubeTaints(ctx, state.Taints, &diags)
		if after, known := kubeTaints(ctx, plan.Taints, &diags); known {
			if added := gkerules.NoExecuteTaintsAdded(before, after); len(added) > 0 {
				return loss{kind: gkerules.LossEvict, attrs: []string{"taints"}, taints: added,
					detail: "taints add " + gkerules.TaintsString(added) + " to every node, and the taint-eviction controller evicts the Pods that do not tolerate it"}
			}
		}
	}
	return loss{}
}

func describeRecreate(ctx context.Context, state, plan *model, attrs []string) string {
	var parts []string
	for _, a := range attrs {
		switch a {
		case "machine_type":
			parts = append(parts, fmt.Sprintf("machine_type changes from %s to %s", state.MachineType.ValueString(), plan.MachineType.ValueString()))
		case "boot_disk":
			var diags diag.Diagnostics
			parts = append(parts, fmt.Sprintf("the boot disk changes (%s -> %s)", bootDiskText(ctx, state, &diags), bootDiskText(ctx, plan, &diags)))
		case "image_type":
			parts = append(parts, fmt.Sprintf("image_type changes from %s to %s", state.ImageType.ValueString(), plan.ImageType.ValueString()))
		case "version":
			parts = append(parts, fmt.Sprintf("version changes from %s to %s", state.Version.ValueString(), plan.Version.ValueString()))
		default:
			parts = append(parts, a+" changes")
		}
	}
	return strings.Join(parts, "; ")
}

func bootDiskText(ctx context.Context, m *model, diags *diag.Diagnostics) string {
	bd := bootDisk(ctx, m, diags)
	if bd == nil {
		return "unknown"
	}
	return fmt.Sprintf("%s %d GiB", bd.Type.ValueString(), bd.SizeGB.ValueInt64())
}

func dataLossDiag(pool string, l loss, v gkerules.Verdict, allowed bool) diag.Diagnostic {
	lines := make([]string, 0, len(v.AtRisk))
	for _, a := range v.AtRisk {
		lines = append(lines, "  - "+a.String())
	}
	found := fmt.Sprintf("Data on these nodes is lost (%s):\n%s", v.Ordinals(), strings.Join(lines, "\n"))
	if !v.Certain {
		found = fmt.Sprintf("GKE chooses which %d of the %d node(s) to delete, so any of these is at risk (%s):\n%s",
			v.Removed, v.Nodes, v.Ordinals(), strings.Join(lines, "\n"))
	}
	d := diagnostics.Detail{
		Checked: fmt.Sprintf("PersistentVolumes pinned by node affinity to the nodes of node pool %s, because %s; and the PVCs and StatefulSet ordinals bound to them.", pool, l.detail),
		Found:   found,
		Do: "Move these ordinals to another node pool first (olapgke_statefulset_migration deletes each ordinal's PVCs and Pod and waits until it is Ready on the target pool), " +
			"then plan again; or set allow_local_data_loss = true to accept losing this data.",
	}
	if v.ScaledDown() {
		d.Do += " PVCs of scaled-down ordinals (retained by whenScaled: Retain) have no Pod to move: delete them if their data is not needed, " +
			"or scale the StatefulSet up again and move those ordinals."
	}
	summary, allowedSummary, allowedDo := "Local Data Would Be Lost", "Local Data Will Be Lost", "allow_local_data_loss = true, so apply proceeds and this data is lost."
	if l.kind == gkerules.LossEvict {
		// The nodes and the data stay; the Pods go and cannot come back while the taint is there.
		summary, allowedSummary = "Pinned Ordinals Would Be Evicted", "Pinned Ordinals Will Be Evicted"
		allowedDo = "allow_local_data_loss = true, so apply proceeds: these Pods are evicted and stay Pending until the taint is removed or their PVCs are deleted (losing the data)."
		d.Checked = fmt.Sprintf("PersistentVolumes pinned by node affinity to the nodes of node pool %s, because %s; the PVCs and StatefulSet ordinals bound to them, and whether their Pods (or, without one, the StatefulSet's pod template) tolerate it.", pool, l.detail)
		d.Found = fmt.Sprintf("These Pods are evicted and cannot come back: their volumes are pinned to these nodes, which they do not tolerate, so they stay Pending (%s):\n%s",
			v.Ordinals(), strings.Join(lines, "\n"))
		d.Do = "Any of:\n" +
			"  - Tolerate the taint first: add a toleration (effect NoExecute, no tolerationSeconds) to the StatefulSet's pod template and restart these ordinals on their nodes (olapgke_statefulset_migration restarts ordinals whose template changed), then plan again.\n" +
			"  - Move these ordinals to another node pool first (olapgke_statefulset_migration).\n" +
			"  - Use effect NO_SCHEDULE, which keeps new Pods off and evicts none.\n" +
			"  - Set allow_local_data_loss = true to accept the evictions."
	}
	p := path.Root("machine_type")
	if len(l.attrs) > 0 {
		p = path.Root(l.attrs[0])
	}
	if allowed {
		d.Do = allowedDo
		return diagnostics.AttributeWarning(p, allowedSummary, d)
	}
	return diagnostics.AttributeError(p, summary, d)
}

func deletionProtected(state *model, what string, attrs []string) diag.Diagnostic {
	why := "Destroying it deletes every node and the Local SSD data on them."
	if what == "replace" {
		why = "Changing " + strings.Join(attrs, ", ") + " replaces it (GKE cannot update these), which deletes every node and the Local SSD data on them."
	}
	return diagnostics.Error("Deletion Protection Enabled", diagnostics.Detail{
		Checked: "deletion_protection of node pool " + state.ID.ValueString() + ".",
		Found:   "It is true. " + why,
		Do:      "Set deletion_protection = false and apply that first, then run this plan again.",
	})
}

func (r *nodePoolResource) planDestroy(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse) {
	var state model
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	if state.DeletionProtection.ValueBool() {
		resp.Diagnostics.Append(deletionProtected(&state, "destroy", nil))
		return
	}
	if state.AllowLocalDataLoss.ValueBool() || r.c == nil || r.c.Deferred() {
		return
	}
	kc, cs, v, err := r.destroyVerdict(ctx, &state)
	if err != nil {
		resp.Diagnostics.Append(diagnostics.Error("Data-Loss Check Failed", diagnostics.Detail{
			Checked: "Which PersistentVolumes live on the nodes of node pool " + state.Name.ValueString() + ", which destroy would delete.",
			Found:   "The Kubernetes API could not be read.",
			Do:      "Make the cluster's API server reachable and plan again, or set allow_local_data_loss = true (and apply) before destroying.",
			Err:     err,
		}))
		return
	}
	if !v.Loses() {
		return
	}
	name := state.Name.ValueString()
	if others, err := nodesOutside(ctx, kc, name); err == nil && gkerules.Evacuable(v, cs.StatefulSets, others) {
		// The data could be moved off first in this run (olapgke_evacuate_node_pool as a
		// before_destroy action_trigger): Delete checks again and refuses if it was not.
		resp.Diagnostics.Append(diagnostics.Warning("Local Data Must Move Before Destroy", diagnostics.Detail{
			Checked: "Which PersistentVolumes live on the nodes of node pool " + name + ", which destroy would delete.",
			Found: "Ordinals keep Local SSD data there (" + v.Ordinals() + "); their templates also admit nodes outside " +
				"the pool, so they can be moved off first.",
			Do: "Move them before the pool goes: an olapgke_evacuate_node_pool action in this resource's " +
				"lifecycle.action_trigger (events = [before_destroy]) does it in the same run. Apply checks again " +
				"and refuses to delete the pool while the data is still there.",
		}))
		return
	}
	d := dataLossDiag(name, loss{kind: gkerules.LossDestroy, detail: "destroying the node pool deletes every node"}, v, false)
	resp.Diagnostics.Append(diagnostics.Error(d.Summary(), diagnostics.Detail{Found: d.Detail()}))
}

// destroyVerdict reads the pool's nodes and what is pinned to them, and judges what destroying
// the pool loses: the one question planDestroy (at plan) and destroyGuard (in Delete) ask.
func (r *nodePoolResource) destroyVerdict(ctx context.Context, state *model) (kubernetes.Interface, *clusterState, gkerules.Verdict, error) {
	kc, err := r.c.Kube(ctx)
	if err != nil {
		return nil, nil, gkerules.Verdict{}, err
	}
	cs, err := readClusterState(ctx, kc, state.Name.ValueString(), true)
	if err != nil {
		return nil, nil, gkerules.Verdict{}, err
	}
	v := gkerules.Guard(gkerules.GuardInput{Kind: gkerules.LossDestroy, Nodes: cs.Nodes, PVs: cs.PVs, PVCs: cs.PVCs, Pods: cs.Pods, StatefulSets: cs.StatefulSets})
	return kc, cs, v, nil
}

// destroyGuard is the data-loss check of Delete, at apply: the plan may have let the destroy
// through because the data could be moved off first (Local Data Must Move Before Destroy).
// It fails closed: a cluster that cannot be read deletes nothing.
func (r *nodePoolResource) destroyGuard(ctx context.Context, state *model) diag.Diagnostics {
	var diags diag.Diagnostics
	if state.AllowLocalDataLoss.ValueBool() || r.c == nil || r.c.Deferred() {
		return diags
	}
	_, _, v, err := r.destroyVerdict(ctx, state)
	if err != nil {
		diags.Append(diagnostics.Error("Data-Loss Check Failed", diagnostics.Detail{
			Checked: "Which PersistentVolumes live on the nodes of node pool " + state.Name.ValueString() + ", before deleting it.",
			Found:   "The Kubernetes API could not be read; the pool was not deleted.",
			Do:      "Make the cluster's API server reachable and apply again, or set allow_local_data_loss = true (and apply) before destroying.",
			Err:     err,
		}))
		return diags
	}
	if v.Loses() {
		d := dataLossDiag(state.Name.ValueString(), loss{kind: gkerules.LossDestroy, detail: "destroying the node pool deletes every node"}, v, false)
		diags.Append(diagnostics.Error(d.Summary(), diagnostics.Detail{Found: d.Detail() + " The pool was not deleted."}))
	}
	return diags
}

// demandMode says where planEphemeral takes the ephemeral-storage demand from when
// expected_ephemeral_gib is unset.
type demandMode int

const (
	// demandFromState (plan): the demand the last refresh recorded in state; unknown when there is
	// none (create). A value read from the cluster now could differ when Terraform plans again at
	// apply (a saved plan, a Pod added in between), so the plan never takes it.
	demandFromState demandMode = iota
	// demandFromCluster (refresh, apply): the demand the cluster shows now.
	demandFromCluster
)

// planEphemeral computes the ephemeral_storage block. In a plan (demandFromState) it also warns
// when nodes will hit DiskPressure, judged with the cluster's current demand when it was read.
func (r *nodePoolResource) planEphemeral(ctx context.Context, plan, state *model, cs *clusterState, mode demandMode, diags *diag.Diagnostics) types.Object {
	unknown := types.ObjectUnknown(ephemeralAttrTypes)
	if plan.BootDisk.IsUnknown() && state != nil || plan.EphemeralLocalSSDCount.IsUnknown() || plan.KubeletConfig.IsUnknown() ||
		plan.ExpectedEphemeralGiB.IsUnknown() || plan.MachineType.IsUnknown() {
		return unknown
	}
	var bd *bootDiskModel
	if !plan.BootDisk.IsUnknown() {
		bd = bootDisk(ctx, plan, diags)
	}
	size := int64(gkerules.DefaultBootDiskGiB)
	if bd != nil {
		if bd.SizeGB.IsUnknown() {
			if state == nil {
				size = gkerules.DefaultBootDiskGiB
			} else {
				return unknown
			}
		} else if !bd.SizeGB.IsNull() {
			size = bd.SizeGB.ValueInt64()
		}
	}
	in := gkerules.EphemeralInput{BootDiskGiB: size, EphemeralLocalSSDs: plan.EphemeralLocalSSDCount.ValueInt64(), SoftNodefsAvailablePercent: softNodefs(ctx, plan, diags)}
	source, known := "expected_ephemeral_gib", true
	live := func() (float64, string, bool) {
		if cs == nil {
			return 0, "", false
		}
		d := gkerules.PoolDemand(plan.Name.ValueString(), stringMap(ctx, plan.Labels, diags), cs.Nodes, cs.Pods, plannedNodes(ctx, plan, cs, diags))
		return d.PerNodeGiB, d.Source, true
	}
	switch {
	case !plan.ExpectedEphemeralGiB.IsNull():
		in.DemandGiB = plan.ExpectedEphemeralGiB.ValueFloat64()
	case mode == demandFromCluster:
		if in.DemandGiB, source, known = live(); !known {
			source, known = "none: expected_ephemeral_gib is unset and the cluster was not read", true
		}
	default:
		in.DemandGiB, source, known = stateDemand(ctx, state)
	}
	e := gkerules.ComputeEphemeral(in)
	if mode == demandFromState {
		// The warning may use what the cluster shows now: a diagnostic is not a planned value.
		check, checkSource := in, source
		if plan.ExpectedEphemeralGiB.IsNull() {
			if d, s, ok := live(); ok {
				check.DemandGiB, checkSource = d, s
			}
		}
		if ce := gkerules.ComputeEphemeral(check); (known || checkSource != source) && ce.DiskPressure() {
			diags.Append(diskPressureDiag(plan, ce, check, checkSource))
		}
	}
	demand, demandSource, headroom := types.Float64Value(e.DemandGiB), types.StringValue(source), types.Float64Value(e.HeadroomGiB)
	if !known {
		demand, demandSource, headroom = types.Float64Unknown(), types.StringUnknown(), types.Float64Unknown()
	}
	return objectOf(ephemeralAttrTypes, map[string]attr.Value{
		"backing": types.StringValue(e.Backing), "boot_disk_gib": types.Float64Value(e.BootDiskGiB), "capacity_gib": types.Float64Value(e.CapacityGiB),
		"reserved_gib": types.Float64Value(e.ReservedGiB), "eviction_threshold_gib": types.Float64Value(e.EvictionThresholdGiB),
		"eviction_signal": types.StringValue(e.EvictionSignal), "allocatable_gib": types.Float64Value(e.AllocatableGiB),
		"demand_gib": demand, "demand_source": demandSource, "headroom_gib": headroom,
	}, diags)
}

// stateDemand is the demand the last refresh recorded (demand_gib, demand_source), and whether
// there is one.
func stateDemand(ctx context.Context, state *model) (float64, string, bool) {
	if state == nil || state.EphemeralStorage.IsNull() || state.EphemeralStorage.IsUnknown() {
		return 0, "", false
	}
	var e ephemeralModel
	if d := state.EphemeralStorage.As(ctx, &e, objAs); d.HasError() || e.DemandGiB.IsNull() || e.DemandGiB.IsUnknown() ||
		e.DemandSource.IsUnknown() || e.DemandSource.ValueString() == expectedSource {
		// A demand that came from expected_ephemeral_gib, since unset, says nothing of the cluster.
		return 0, "", false
	}
	return e.DemandGiB.ValueFloat64(), e.DemandSource.ValueString(), true
}

const expectedSource = "expected_ephemeral_gib"

// plannedNodes is the node count the pool's demand is spread over: node_count (or the autoscaling
// minimum, at least 1) per zone, or the current node count when neither is known.
func plannedNodes(ctx context.Context, plan *model, cs *clusterState, diags *diag.Diagnostics) int {
	zones := max(len(stringSet(ctx, plan.NodeLocations, diags)), 1)
	if !plan.Autoscaling.IsNull() && !plan.Autoscaling.IsUnknown() {
		var a autoscalingModel
		diags.Append(plan.Autoscaling.As(ctx, &a, objAs)...)
		return int(max(a.MinNodeCount.ValueInt64(), 1)) * zones
	}
	if !plan.NodeCount.IsNull() && !plan.NodeCount.IsUnknown() {
		return int(plan.NodeCount.ValueInt64()) * zones
	}
	return len(cs.Nodes)
}

func softNodefs(ctx context.Context, plan *model, diags *diag.Diagnostics) float64 {
	if plan.KubeletConfig.IsNull() {
		return 0
	}
	var k kubeletConfigModel
	diags.Append(plan.KubeletConfig.As(ctx, &k, objAs)...)
	v := stringMap(ctx, k.EvictionSoft, diags)["nodefs.available"]
	f, err := strconv.ParseFloat(strings.TrimSuffix(v, "%"), 64)
	if err != nil || !strings.HasSuffix(v, "%") {
		return 0
	}
	return f
}

func diskPressureDiag(plan *model, e gkerules.Ephemeral, in gkerules.EphemeralInput, source string) diag.Diagnostic {
	mt := plan.MachineType.ValueString()
	raw := plan.LocalNVMeSSDCount.ValueInt64()
	var fixes []string
	if e.Backing == "boot-disk" {
		if need := gkerules.MinBootDiskForDemand(in); need > 0 {
			fixes = append(fixes, fmt.Sprintf("Use a larger boot disk: boot_disk.size_gb = %d or more fits %g GiB per node (a boot disk change recreates the VMs; move ordinals off first).", need, e.DemandGiB))
		}
	}
	fixes = append(fixes, fmt.Sprintf("Lower the ephemeral demand per node (image sizes, container log retention, emptyDir use, Pods per node), or correct it if %s overstates it.", source))
	opts, known := gkerules.EphemeralLocalSSDOptions(mt, raw)
	switch {
	case e.Backing == "local-ssd":
	case !known:
		fixes = append(fixes, fmt.Sprintf("Move ephemeral storage to Local SSD (ephemeral_storage_local_ssd_count): whether machine type %s accepts that is GKE's decision, not in olapgke's table; GKE's answer at apply is final.", mt))
	case len(opts) > 0:
		fixes = append(fixes, fmt.Sprintf("Move ephemeral storage to Local SSD (ephemeral_storage_local_ssd_count): by Google's Local SSD table %s takes %s more Local SSD(s) next to the %d raw-block one(s); GKE decides at apply whether one pool may mix raw-block and ephemeral Local SSDs (if it refuses, its error names the reason; a separate pool then works).",
			mt, joinCounts(opts), raw))
	}
	return diagnostics.AttributeWarning(path.Root("boot_disk"), "Nodes Will Hit DiskPressure", diagnostics.Detail{
		Checked: fmt.Sprintf("The ephemeral storage of one node of pool %s (%s; demand from %s).", plan.Name.ValueString(), mt, source),
		Found: fmt.Sprintf("Per node: %s. Usable space is %g GiB short, so kubelet evicts Pods (and the scheduler cannot place Pods that request it).",
			e.String(), -e.HeadroomGiB),
		Do: "Any of:\n  - " + strings.Join(fixes, "\n  - "),
	})
}

func joinCounts(v []int64) string {
	s := make([]string, len(v))
	for i, n := range v {
		s[i] = strconv.FormatInt(n, 10)
	}
	return strings.Join(s, " or ")
}
