package planner

import (
	"fmt"
	"testing"
	"time"
)

// BenchmarkMigrationLook is what the migration executor pays per look at the cluster between two
// ordinals: a Migration view over the snapshot, the placement re-check of the next ordinal
// (kube-scheduler's plugins) and its next step. The restart bench's per-ordinal overhead over
// the StatefulSet controller's own roll is this, plus the informer round trip.
func BenchmarkMigrationLook(b *testing.B) {
	for _, size := range []struct{ nodes, ordinals int }{{50, 10}, {500, 200}} {
		nodes := append(mkPool("pool-a", size.nodes/2, 1000), mkPool("pool-b", size.nodes/2, 1000)...)
		live := mkSet(int32(size.ordinals))
		onDelete(live)
		snap := withTopoLVM(newWorld(b, live, nodes).desire(newImage).snap)
		snap.Live.Spec.Template = snap.Desired.Spec.Template
		b.Run(fmt.Sprintf("nodes=%d/ordinals=%d", size.nodes, size.ordinals), func(b *testing.B) {
			b.ReportAllocs()
			o := int32(size.ordinals - 1)
			for b.Loop() {
				v := NewMigration(&snap)
				if why := v.StepProblem(o, MigrationRestart, []string{"data"}); why != "" {
					b.Fatal(why)
				}
				v.NextStep(o, []string{"data"}, v.StartProgress(o, []string{"data"}), 0, time.Now())
			}
		})
	}
}
