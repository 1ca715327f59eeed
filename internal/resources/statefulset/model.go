package statefulset

import (
	"context"

	"github.com/hashicorp/terraform-plugin-framework-timeouts/resource/timeouts"
	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/olapgke/terraform-provider-olapgke/internal/planner"
	"github.com/olapgke/terraform-provider-olapgke/internal/planner/rollout"
)

type resourceModel struct {
	ID                  types.String   `tfsdk:"id"`
	Manifest            types.Dynamic  `tfsdk:"manifest"`
	Namespace           types.String   `tfsdk:"namespace"`
	Name                types.String   `tfsdk:"name"`
	UID                 types.String   `tfsdk:"uid"`
	UpdateRevision      types.String   `tfsdk:"update_revision"`
	ServiceName         types.String   `tfsdk:"service_name"`
	ForceConflicts      types.Bool     `tfsdk:"force_conflicts"`
	ManageService       types.Bool     `tfsdk:"manage_service"`
	AllowUnschedulable  types.Bool     `tfsdk:"allow_unschedulable"`
	WaitForRollout      types.Bool     `tfsdk:"wait_for_rollout"`
	PodDisruptionBudget *pdbModel      `tfsdk:"pod_disruption_budget"`
	PlanSummary         types.String   `tfsdk:"plan_summary"`
	Ordinals            types.List     `tfsdk:"ordinals"`
	ClaimResizes        types.List     `tfsdk:"claim_resizes"`
	Rollout             types.Object   `tfsdk:"rollout"`
	Timeouts            timeouts.Value `tfsdk:"timeouts"`
}

type pdbModel struct {
	MaxUnavailable types.String `tfsdk:"max_unavailable"`
	MinAvailable   types.String `tfsdk:"min_available"`
}

var volumeType = types.ObjectType{AttrTypes: map[string]attr.Type{
	"claim": types.StringType, "pvc": types.StringType, "pv": types.StringType, "pinned_node": types.StringType,
}}

var ordinalType = types.ObjectType{AttrTypes: map[string]attr.Type{
	"name": types.StringType, "ordinal": types.Int64Type, "pod": types.StringType, "node": types.StringType, "action": types.StringType,
	"wave": types.Int64Type, "schedulable": types.BoolType, "reason": types.StringType, "blocked": types.BoolType,
	"volumes": types.ListType{ElemType: volumeType}, "pvcs_after": types.StringType,
}}

// claimResizeType is one PVC a claim template change resizes, or leaves at its size.
var claimResizeType = types.ObjectType{AttrTypes: map[string]attr.Type{
	"name": types.StringType, "ordinal": types.Int64Type, "claim": types.StringType, "retained": types.BoolType,
	"size_before": types.StringType, "size_after": types.StringType, "fate": types.StringType, "reason": types.StringType,
}}

// Fates of a claim in claim_resizes.
const (
	claimGrows     = "grows"
	claimKeepsSize = "keeps_size"
)

// claimResizesValue is claim_resizes from a plan: every PVC a claim growth grows in place (the
// live ordinals' and the retained claims of scaled-down ordinals) and every retained claim that
// keeps its size, with why. Empty when the plan grows no claim.
func claimResizesValue(p *rollout.Plan) (types.List, diag.Diagnostics) {
	var diags diag.Diagnostics
	elems := []attr.Value{}
	add := func(e rollout.ClaimExpansion, fate string) {
		after := e.To
		if fate == claimKeepsSize {
			after = e.From
		}
		v, d := types.ObjectValue(claimResizeType.AttrTypes, map[string]attr.Value{
			"name": types.StringValue(e.PVC), "ordinal": types.Int64Value(int64(e.Ordinal)), "claim": types.StringValue(e.Claim),
			"retained": types.BoolValue(e.Retained), "size_before": types.StringValue(quantity(e.From)),
			"size_after": types.StringValue(quantity(after)), "fate": types.StringValue(fate), "reason": types.StringValue(e.Why),
		})
		diags.Append(d...)
		elems = append(elems, v)
	}
	if p != nil && p.Replace != nil {
		for _, e := range p.Replace.Expansions {
			add(e, claimGrows)
		}
		for _, e := range p.Replace.Kept {
			add(e, claimKeepsSize)
		}
	}
	lv, d := types.ListValue(claimResizeType, elems)
	diags.Append(d...)
	return lv, diags
}

// quantity writes bytes as the API server writes a storage request (binary suffixes: 50Gi).
func quantity(b int64) string { return resource.NewQuantity(b, resource.BinarySI).String() }

// noClaimResizes is claim_resizes when nothing is pending (state after apply or refresh).
func noClaimResizes() types.List { return types.ListValueMust(claimResizeType, []attr.Value{}) }

var stuckType = types.ObjectType{AttrTypes: map[string]attr.Type{
	"ordinal": types.Int64Type, "pod": types.StringType, "node": types.StringType, "phase": types.StringType,
	"revision": types.StringType, "reason": types.StringType, "message": types.StringType,
}}

var rolloutAttrTypes = map[string]attr.Type{
	"current_revision": types.StringType, "update_revision": types.StringType,
	"replicas": types.Int64Type, "ready_replicas": types.Int64Type, "updated_replicas": types.Int64Type,
	"current_replicas": types.Int64Type, "stalled": types.BoolType,
	"stuck": types.ListType{ElemType: stuckType},
}

// ordinalView is the Terraform shape of one ordinal, from the planner or from the live map.
type ordinalView struct {
	Ordinal     int64
	Pod, Node   string
	Action      string
	Wave        int64
	Schedulable bool
	Reason      string
	Blocked     bool
	Volumes     []planner.Volume
	PVCsAfter   string
}

func viewsFromPlan(p *rollout.Plan) []ordinalView {
	out := make([]ordinalView, 0, len(p.Ordinals))
	for _, o := range p.Ordinals {
		out = append(out, ordinalView{
			Ordinal: int64(o.Ordinal), Pod: o.Pod, Node: o.Node, Action: string(o.Action), Wave: int64(o.Wave),
			Schedulable: o.Schedulable, Reason: o.Reason, Blocked: o.Blocked, Volumes: o.Volumes, PVCsAfter: o.PVCsAfter,
		})
	}
	return out
}

func volumesValue(vols []planner.Volume) (types.List, diag.Diagnostics) {
	var diags diag.Diagnostics
	elems := make([]attr.Value, 0, len(vols))
	for _, v := range vols {
		ov, d := types.ObjectValue(volumeType.AttrTypes, map[string]attr.Value{
			"claim": types.StringValue(v.Claim), "pvc": types.StringValue(v.PVC),
			"pv": types.StringValue(v.PV), "pinned_node": types.StringValue(v.PinnedNode),
		})
		diags.Append(d...)
		elems = append(elems, ov)
	}
	lv, d := types.ListValue(volumeType, elems)
	diags.Append(d...)
	return lv, diags
}

func ordinalsValue(views []ordinalView) (types.List, diag.Diagnostics) {
	var diags diag.Diagnostics
	elems := make([]attr.Value, 0, len(views))
	for _, o := range views {
		vols, d := volumesValue(o.Volumes)
		diags.Append(d...)
		ov, d := types.ObjectValue(ordinalType.AttrTypes, map[string]attr.Value{
			"name": types.StringValue(o.Pod), "ordinal": types.Int64Value(o.Ordinal), "pod": types.StringValue(o.Pod), "node": types.StringValue(o.Node),
			"action": types.StringValue(o.Action), "wave": types.Int64Value(o.Wave),
			"schedulable": types.BoolValue(o.Schedulable), "reason": types.StringValue(o.Reason),
			"blocked": types.BoolValue(o.Blocked), "volumes": vols, "pvcs_after": types.StringValue(o.PVCsAfter),
		})
		diags.Append(d...)
		elems = append(elems, ov)
	}
	lv, d := types.ListValue(ordinalType, elems)
	diags.Append(d...)
	return lv, diags
}

func rolloutValue(st rollout.RolloutStatus) (types.Object, diag.Diagnostics) {
	var diags diag.Diagnostics
	stuck := make([]attr.Value, 0, len(st.Stuck))
	for _, s := range st.Stuck {
		ov, d := types.ObjectValue(stuckType.AttrTypes, map[string]attr.Value{
			"ordinal": types.Int64Value(int64(s.Ordinal)), "pod": types.StringValue(s.Pod),
			"node": types.StringValue(s.Node), "phase": types.StringValue(s.Phase), "revision": types.StringValue(s.Revision),
			"reason": types.StringValue(s.Reason), "message": types.StringValue(s.Message),
		})
		diags.Append(d...)
		stuck = append(stuck, ov)
	}
	sl, d := types.ListValue(stuckType, stuck)
	diags.Append(d...)
	ov, d := types.ObjectValue(rolloutAttrTypes, map[string]attr.Value{
		"current_revision": types.StringValue(st.CurrentRevision), "update_revision": types.StringValue(st.UpdateRevision),
		"replicas": types.Int64Value(int64(st.Replicas)), "ready_replicas": types.Int64Value(int64(st.ReadyReplicas)),
		"updated_replicas": types.Int64Value(int64(st.UpdatedReplicas)), "current_replicas": types.Int64Value(int64(st.CurrentReplicas)),
		"stalled": types.BoolValue(st.Stalled()), "stuck": sl,
	})
	diags.Append(d...)
	return ov, diags
}

// stuckFromState reads the stuck ordinals recorded by the last Read.
func stuckFromState(ctx context.Context, ro types.Object) []rollout.StuckOrdinal {
	if ro.IsNull() || ro.IsUnknown() {
		return nil
	}
	sv, ok := ro.Attributes()["stuck"].(types.List)
	if !ok || sv.IsNull() || sv.IsUnknown() {
		return nil
	}
	var raw []struct {
		Ordinal  int64  `tfsdk:"ordinal"`
		Pod      string `tfsdk:"pod"`
		Node     string `tfsdk:"node"`
		Phase    string `tfsdk:"phase"`
		Revision string `tfsdk:"revision"`
		Reason   string `tfsdk:"reason"`
		Message  string `tfsdk:"message"`
	}
	if d := sv.ElementsAs(ctx, &raw, false); d.HasError() {
		return nil
	}
	out := make([]rollout.StuckOrdinal, 0, len(raw))
	for _, s := range raw {
		out = append(out, rollout.StuckOrdinal{Ordinal: int32(s.Ordinal), Pod: s.Pod, Node: s.Node, Phase: s.Phase,
			Revision: s.Revision, Reason: s.Reason, Message: s.Message})
	}
	return out
}

// ordinalsFromState reads the planned ordinals (what apply should wait for).
func ordinalsFromState(ctx context.Context, l types.List) []ordinalView {
	if l.IsNull() || l.IsUnknown() {
		return nil
	}
	var raw []struct {
		Name        string `tfsdk:"name"`
		Ordinal     int64  `tfsdk:"ordinal"`
		Pod         string `tfsdk:"pod"`
		Node        string `tfsdk:"node"`
		Action      string `tfsdk:"action"`
		Wave        int64  `tfsdk:"wave"`
		Schedulable bool   `tfsdk:"schedulable"`
		Reason      string `tfsdk:"reason"`
		Blocked     bool   `tfsdk:"blocked"`
		PVCsAfter   string `tfsdk:"pvcs_after"`
		Volumes     []struct {
			Claim      string `tfsdk:"claim"`
			PVC        string `tfsdk:"pvc"`
			PV         string `tfsdk:"pv"`
			PinnedNode string `tfsdk:"pinned_node"`
		} `tfsdk:"volumes"`
	}
	if d := l.ElementsAs(ctx, &raw, false); d.HasError() {
		return nil
	}
	out := make([]ordinalView, 0, len(raw))
	for _, r := range raw {
		v := ordinalView{Ordinal: r.Ordinal, Pod: r.Pod, Node: r.Node, Action: r.Action, Wave: r.Wave,
			Schedulable: r.Schedulable, Reason: r.Reason, Blocked: r.Blocked, PVCsAfter: r.PVCsAfter}
		for _, vol := range r.Volumes {
			v.Volumes = append(v.Volumes, planner.Volume{Claim: vol.Claim, PVC: vol.PVC, PV: vol.PV, PinnedNode: vol.PinnedNode})
		}
		out = append(out, v)
	}
	return out
}
