package migration

import (
	"context"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-timeouts/resource/timeouts"
	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-framework/types/basetypes"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/olapgke/terraform-provider-olapgke/internal/engine"
	"github.com/olapgke/terraform-provider-olapgke/internal/planner/gates"
	planmigration "github.com/olapgke/terraform-provider-olapgke/internal/planner/migration"
)

type resourceModel struct {
	ID                            types.String   `tfsdk:"id"`
	Namespace                     types.String   `tfsdk:"namespace"`
	StatefulSet                   types.String   `tfsdk:"statefulset"`
	Ordinals                      types.List     `tfsdk:"ordinals"`
	Order                         types.String   `tfsdk:"order"`
	VolumeClaims                  types.List     `tfsdk:"volume_claims"`
	MaxUnavailable                types.Int64    `tfsdk:"max_unavailable"`
	MinReadySeconds               types.Int64    `tfsdk:"min_ready_seconds"`
	RequireOthersReady            types.Bool     `tfsdk:"require_others_ready"`
	ForceDeleteOnUnreachableNodes types.Bool     `tfsdk:"force_delete_on_unreachable_nodes"`
	OrdinalTimeout                types.String   `tfsdk:"ordinal_timeout"`
	UnschedulableTimeout          types.String   `tfsdk:"unschedulable_timeout"`
	PlannedManifest               types.String   `tfsdk:"planned_manifest"`
	Triggers                      types.Map      `tfsdk:"triggers"`
	PlanSummary                   types.String   `tfsdk:"plan_summary"`
	Moves                         types.List     `tfsdk:"moves"`
	UpdateRevision                types.String   `tfsdk:"update_revision"`
	Completed                     types.List     `tfsdk:"completed"`
	Gates                         types.List     `tfsdk:"gate"`
	Copy                          types.Object   `tfsdk:"copy"`
	Timeouts                      timeouts.Value `tfsdk:"timeouts"`
}

// copyModel is the `copy` block (warm moves).
type copyModel struct {
	Image          types.String `tfsdk:"image"`
	SourceCommand  types.List   `tfsdk:"source_command"`
	SinkCommand    types.List   `tfsdk:"sink_command"`
	Bandwidth      types.String `tfsdk:"bandwidth"`
	Timeout        types.String `tfsdk:"timeout"`
	PodAnnotations types.Map    `tfsdk:"pod_annotations"`
	FinalSync      types.Bool   `tfsdk:"final_sync"`
}

var volumeType = types.ObjectType{AttrTypes: map[string]attr.Type{
	"claim": types.StringType, "pvc": types.StringType, "pv": types.StringType, "pinned_node": types.StringType,
}}

var moveType = types.ObjectType{AttrTypes: map[string]attr.Type{
	"name": types.StringType, "ordinal": types.Int64Type, "pod": types.StringType, "action": types.StringType, "from_node": types.StringType,
	"to_pool_or_selector": types.StringType, "volumes": types.ListType{ElemType: volumeType}, "reason": types.StringType,
	"gates": types.ListType{ElemType: types.StringType}, "estimated_seconds": types.Float64Type, "mode": types.StringType,
	"copy_bytes": types.Int64Type, "copy_max_seconds": types.Float64Type,
}}

var completedType = types.ObjectType{AttrTypes: map[string]attr.Type{
	"name": types.StringType, "ordinal": types.Int64Type, "action": types.StringType, "pod": types.StringType, "pod_uid": types.StringType, "node": types.StringType,
	"pvs": types.ListType{ElemType: types.StringType}, "duration_seconds": types.Float64Type, "finished_at": types.StringType,
	"gates": types.ListType{ElemType: gateResultType},
}}

type volumeModel struct {
	Claim      string `tfsdk:"claim"`
	PVC        string `tfsdk:"pvc"`
	PV         string `tfsdk:"pv"`
	PinnedNode string `tfsdk:"pinned_node"`
}

type moveModel struct {
	Name     string        `tfsdk:"name"`
	Ordinal  int64         `tfsdk:"ordinal"`
	Pod      string        `tfsdk:"pod"`
	Action   string        `tfsdk:"action"`
	FromNode string        `tfsdk:"from_node"`
	Target   string        `tfsdk:"to_pool_or_selector"`
	Volumes  []volumeModel `tfsdk:"volumes"`
	Reason   string        `tfsdk:"reason"`
	Gates    []string      `tfsdk:"gates"`
	Estimate types.Float64 `tfsdk:"estimated_seconds"`
	Mode     types.String  `tfsdk:"mode"`
	// CopyBytes and CopyMaxSeconds: a warm move's copy (planmigration.Move.CopyBytes; at
	// copy.bandwidth, the longest it can take).
	CopyBytes      types.Int64   `tfsdk:"copy_bytes"`
	CopyMaxSeconds types.Float64 `tfsdk:"copy_max_seconds"`
}

type completedModel struct {
	Name            types.String `tfsdk:"name"` // the Pod name; null only if a state upgrade found no pod
	Ordinal         int64        `tfsdk:"ordinal"`
	Action          types.String `tfsdk:"action"` // null in state written before actions existed
	Pod             string       `tfsdk:"pod"`
	PodUID          string       `tfsdk:"pod_uid"`
	Node            string       `tfsdk:"node"`
	PVs             []string     `tfsdk:"pvs"`
	DurationSeconds float64      `tfsdk:"duration_seconds"`
	FinishedAt      string       `tfsdk:"finished_at"`
	Gates           types.List   `tfsdk:"gates"` // null in state written before gates existed
}

// gateResults are the record's gate waits (none for records without gates).
func (c completedModel) gateResults() []gateResultModel {
	if c.Gates.IsNull() || c.Gates.IsUnknown() {
		return nil
	}
	var out []gateResultModel
	_ = c.Gates.ElementsAs(context.Background(), &out, false)
	return out
}

// moveContext is what `moves` shows besides the planner's moves: the gates of each step (for
// the ordinal, without header values) and estimates from earlier runs.
type moveContext struct {
	namespace, statefulset string
	gates                  []gates.Gate
	history                []planmigration.StepRecord
	warm                   bool  // a copy block: moves are warm
	bandwidth              int64 // copy.bandwidth in bytes per second, 0: unbounded
}

// flattenMoves converts the planner's moves to the `moves` attribute.
func flattenMoves(ctx context.Context, moves []planmigration.Move, mc moveContext) (types.List, diag.Diagnostics) {
	out := make([]moveModel, 0, len(moves))
	for _, m := range moves {
		mm := moveModel{Name: m.Pod, Ordinal: int64(m.Ordinal), Pod: m.Pod, Action: string(m.Action), FromNode: m.FromNode, Target: m.Target, Reason: m.Reason,
			Volumes: make([]volumeModel, 0, len(m.Volumes)), Gates: make([]string, 0, len(mc.gates)), Estimate: types.Float64Null(), Mode: types.StringNull(),
			CopyBytes: types.Int64Null(), CopyMaxSeconds: types.Float64Null()}
		if m.Action == planmigration.MigrationMove {
			mm.Mode = types.StringValue("cold")
			if mc.warm {
				mm.Mode = types.StringValue("warm")
				mm.CopyBytes = types.Int64Value(m.CopyBytes)
				if s, ok := planmigration.CopyMaxSeconds(m.CopyBytes, mc.bandwidth); ok {
					mm.CopyMaxSeconds = types.Float64Value(s)
				}
			}
		}
		// The node is known at plan only for a Pod that stays where it is; a moved Pod's
		// {node} and every {pod_ip} are filled at apply.
		t := gates.GateTarget{Namespace: mc.namespace, StatefulSet: mc.statefulset, Pod: m.Pod, Ordinal: m.Ordinal}
		if m.Action != planmigration.MigrationMove {
			t.Node = m.FromNode
		}
		for _, g := range mc.gates {
			mm.Gates = append(mm.Gates, gates.DescribeGate(g, t))
		}
		if est, ok := planmigration.EstimateStep(mc.history, m.Action); ok {
			mm.Estimate = types.Float64Value(est)
		}
		for _, v := range m.Volumes {
			mm.Volumes = append(mm.Volumes, volumeModel{Claim: v.Claim, PVC: v.PVC, PV: v.PV, PinnedNode: v.PinnedNode})
		}
		out = append(out, mm)
	}
	return types.ListValueFrom(ctx, moveType, out)
}

// moveOrdinals reads the ordinals of a known `moves` list, in order, and
// their planned actions.
func moveOrdinals(ctx context.Context, l types.List) ([]int32, map[int32]planmigration.MigrationAction, diag.Diagnostics) {
	var ms []moveModel
	diags := l.ElementsAs(ctx, &ms, false)
	out := make([]int32, 0, len(ms))
	actions := make(map[int32]planmigration.MigrationAction, len(ms))
	for _, m := range ms {
		out = append(out, int32(m.Ordinal))
		actions[int32(m.Ordinal)] = planmigration.MigrationAction(m.Action)
	}
	return out, actions, diags
}

func completedFromState(ctx context.Context, l types.List) ([]completedModel, diag.Diagnostics) {
	if l.IsNull() || l.IsUnknown() {
		return nil, nil
	}
	var out []completedModel
	diags := l.ElementsAs(ctx, &out, false)
	return out, diags
}

// mergeCompleted records a finished ordinal, replacing an older record of
// the same ordinal; the list stays sorted by ordinal.
func mergeCompleted(list []completedModel, m engine.MigratedOrdinal) []completedModel {
	gates, _ := types.ListValueFrom(context.Background(), gateResultType, gateRecords(m.Gates))
	rec := completedModel{Name: types.StringValue(m.Pod), Ordinal: int64(m.Ordinal), Action: types.StringValue(string(m.Action)), Pod: m.Pod, PodUID: string(m.PodUID), Node: m.Node,
		PVs: append([]string{}, m.PVs...), DurationSeconds: float64(m.Duration.Milliseconds()) / 1000,
		FinishedAt: m.Finished.UTC().Format(time.RFC3339), Gates: gates}
	if m.Action == planmigration.MigrationGate {
		// Gates waited for again after an earlier run finished the step: that run's record
		// of the step stays, with the gates' waits added.
		for _, c := range list {
			if c.Ordinal == rec.Ordinal && c.PodUID == rec.PodUID {
				c.Gates, c.FinishedAt = gates, rec.FinishedAt
				rec = c
			}
		}
	}
	out := make([]completedModel, 0, len(list)+1)
	inserted := false
	for _, c := range list {
		if c.Ordinal == rec.Ordinal {
			continue
		}
		if !inserted && c.Ordinal > rec.Ordinal {
			out = append(out, rec)
			inserted = true
		}
		out = append(out, c)
	}
	if !inserted {
		out = append(out, rec)
	}
	return out
}

func flattenCompleted(ctx context.Context, list []completedModel) (types.List, diag.Diagnostics) {
	if list == nil {
		list = []completedModel{}
	}
	return types.ListValueFrom(ctx, completedType, list)
}

// DefaultCopyTimeout is copy.timeout's default.
const DefaultCopyTimeout = 2 * time.Hour

// copySpec converts the `copy` block (nil without one).
func copySpec(ctx context.Context, o types.Object) (*planmigration.CopySpec, diag.Diagnostics) {
	if o.IsNull() || o.IsUnknown() {
		return nil, nil
	}
	var c copyModel
	diags := o.As(ctx, &c, basetypes.ObjectAsOptions{})
	if diags.HasError() {
		return nil, diags
	}
	spec := &planmigration.CopySpec{Image: c.Image.ValueString(), Timeout: DefaultCopyTimeout, FinalSync: c.FinalSync.ValueBool()}
	if !c.SourceCommand.IsNull() {
		diags.Append(c.SourceCommand.ElementsAs(ctx, &spec.SourceCommand, false)...)
	}
	if !c.SinkCommand.IsNull() {
		diags.Append(c.SinkCommand.ElementsAs(ctx, &spec.SinkCommand, false)...)
	}
	if !c.PodAnnotations.IsNull() {
		diags.Append(c.PodAnnotations.ElementsAs(ctx, &spec.Annotations, false)...)
	}
	if v := c.Bandwidth.ValueString(); v != "" {
		if q, err := resource.ParseQuantity(v); err == nil {
			spec.BandwidthBytes = q.Value()
		}
	}
	if v := c.Timeout.ValueString(); v != "" {
		if d, err := time.ParseDuration(v); err == nil {
			spec.Timeout = d
		}
	}
	return spec, diags
}
