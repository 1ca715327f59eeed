package rollout

import (
	"fmt"
	"testing"

	"github.com/olapgke/terraform-provider-olapgke/internal/planner/plannertest"
)

// BenchmarkBuildScale runs the OnDelete incident of BenchmarkBuild at growing sizes (ordinals x
// nodes, nodes = 5 x ordinals, half per pool) so `make bench` can show how time and allocations
// grow between 125 x 625 and 1,000 x 5,000.
func BenchmarkBuildScale(b *testing.B) {
	for _, ords := range []int{125, 250, 500, 1000} {
		nodes := append(plannertest.MkPool("pool-a", ords*5/2, 1000), plannertest.MkPool("pool-b", ords*5-ords*5/2, 1000)...)
		live := plannertest.MkSet(int32(ords))
		plannertest.OnDelete(live)
		snap := plannertest.NewWorld(b, live, nodes).Desire(plannertest.ToPoolB).Snap
		b.Run(fmt.Sprintf("ordinals=%d/nodes=%d", ords, len(nodes)), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := PlanRollout(snap); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
