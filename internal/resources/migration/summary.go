package migration

import (
	"context"

	"github.com/olapgke/terraform-provider-olapgke/internal/planner"
	planmigration "github.com/olapgke/terraform-provider-olapgke/internal/planner/migration"
	"github.com/olapgke/terraform-provider-olapgke/internal/stsutil"
)

// planSummary is `plan_summary` for the moves p plans on snapshot s (planmigration.MigrationSummary):
// the set's size and the nodes' pools from s, the settings from m, the estimates from the steps
// recorded in history.
func planSummary(ctx context.Context, p *planmigration.MigrationPlan, s *planner.Snapshot, m resourceModel, history []completedModel) string {
	in := planmigration.MigrationSummaryInput{
		Parallelism: p.Parallelism,
		SoakSeconds: m.MinReadySeconds.ValueInt64(),
		OthersReady: m.RequireOthersReady.IsNull() || m.RequireOthersReady.ValueBool(),
	}
	if !m.Copy.IsNull() && !m.Copy.IsUnknown() {
		in.CopyBandwidth = copyBandwidth(ctx, m.Copy)
	}
	set := s.Desired
	if set == nil {
		set = s.Live
	}
	if set != nil {
		in.Replicas = len(stsutil.OrdinalRange(set))
	}
	pools := make(map[string]string, len(s.Nodes))
	for _, n := range s.Nodes {
		pools[n.Name] = n.Labels[stsutil.LabelNodePool]
	}
	in.PoolOf = func(node string) string { return pools[node] }
	gates, _ := gatesFrom(ctx, m.Gates, false)
	for _, g := range gates {
		in.Gates = append(in.Gates, g.Name)
	}
	records := stepHistory(history)
	in.Estimate = func(a planmigration.MigrationAction) (float64, bool) { return planmigration.EstimateStep(records, a) }
	return planmigration.MigrationSummary(p.Moves, p.Target, in)
}
