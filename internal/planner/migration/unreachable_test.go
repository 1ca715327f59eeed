package migration

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/olapgke/terraform-provider-olapgke/internal/planner/plannertest"
)

// The plan names an ordinal to move whose Pod is on an unreachable node as a problem, unless
// force_delete_on_unreachable_nodes; its moves stay the same either way (Plan = apply), and a
// node Unknown for less than the grace, or an ordinal left alone on a dead node, is no problem.
func TestPlanMigrationUnreachableNode(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		ago       time.Duration
		taint     bool
		force     bool
		ordinals  []int32
		wantProbs bool
	}{
		"tainted":                      {ago: time.Minute, taint: true, wantProbs: true},
		"unknown beyond the grace":     {ago: time.Minute, wantProbs: true},
		"unknown within the grace":     {ago: 10 * time.Second},
		"tainted, force":               {ago: time.Minute, taint: true, force: true},
		"dead ordinal not in the move": {ago: time.Minute, taint: true, ordinals: []int32{0, 2}},
	} {
		t.Run(name, func(t *testing.T) {
			w := plannertest.NewMigWorld(3, "pool-a")
			w.SwitchTemplate("pool-b")
			w.KillNode("gke-olap-pool-a-1", tc.ago, tc.taint)
			p := NewMigration(&w.S).Plan(MigrationOptions{Order: OrderDescending, MaxUnavailable: 1,
				Ordinals: tc.ordinals, ForceDeleteOnUnreachableNodes: tc.force, Now: w.Now})
			var moves []int32
			for _, m := range p.Moves {
				moves = append(moves, m.Ordinal)
			}
			want := []int32{2, 1, 0}
			if tc.ordinals != nil {
				want = []int32{2, 0}
			}
			if !slices.Equal(moves, want) {
				t.Errorf("moves %v, want %v", moves, want)
			}
			var unreachable []string
			for _, pr := range p.Problems {
				// Other problems (this fixture's nodes have no allocatable) are other tests'.
				if pr.Kind == ProblemUnreachableNode {
					unreachable = append(unreachable, pr.Message)
				}
			}
			if !tc.wantProbs {
				if len(unreachable) > 0 {
					t.Errorf("problems %q, want none", unreachable)
				}
				if tc.force && (len(p.Unreachable) != 1 || p.Unreachable[0].Ordinal != 1) {
					t.Errorf("Unreachable %+v, want ordinal 1 (force-deleted at apply)", p.Unreachable)
				}
				return
			}
			if len(unreachable) != 1 || !strings.Contains(unreachable[0], "ordinal 1: Pod hist-1 on node gke-olap-pool-a-1 (condition Ready=Unknown since") {
				t.Errorf("problems %q, want ordinal 1 on gke-olap-pool-a-1", unreachable)
			}
		})
	}
}
