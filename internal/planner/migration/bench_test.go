package migration

import (
	"fmt"
	"testing"
	"time"

	"github.com/olapgke/terraform-provider-olapgke/internal/planner"
	"github.com/olapgke/terraform-provider-olapgke/internal/planner/plannertest"
	"k8s.io/apimachinery/pkg/types"
)

// BenchmarkMigrationLook is what the migration executor pays per look at the cluster between two
// ordinals: a Migration view over the snapshot, the placement re-check of the next ordinal
// (kube-scheduler's plugins) and its next step. The restart bench's per-ordinal overhead over
// the StatefulSet controller's own roll is this, plus the informer round trip.
func BenchmarkMigrationLook(b *testing.B) {
	for _, size := range []struct{ nodes, ordinals, others int }{{50, 10, 0}, {50, 10, 200}, {500, 200, 0}} {
		nodes := append(plannertest.MkPool("pool-a", size.nodes/2, 1000), plannertest.MkPool("pool-b", size.nodes/2, 1000)...)
		live := plannertest.MkSet(int32(size.ordinals))
		plannertest.OnDelete(live)
		snap := plannertest.WithTopoLVM(plannertest.NewWorld(b, live, nodes).Desire(plannertest.NewImage).Snap)
		snap.Live.Spec.Template = snap.Desired.Spec.Template
		// Pods of other workloads (another namespace), which the scheduler's plugins see too.
		for i := range size.others {
			p := *snap.Pods[0].DeepCopy()
			p.Namespace, p.Name, p.UID = "other", fmt.Sprintf("other-%d", i), types.UID(fmt.Sprintf("other-%d", i))
			p.Spec.NodeName = nodes[i%len(nodes)].Name
			p.Spec.Volumes = nil
			snap.AllPods = append(snap.AllPods, p)
		}
		snap.AllPods = append(snap.AllPods, snap.Pods...)
		// As the executor does: one PodCache across looks. Fixture Pods carry a resourceVersion.
		for i := range snap.AllPods {
			snap.AllPods[i].ResourceVersion = "1"
			if snap.AllPods[i].UID == "" {
				snap.AllPods[i].UID = types.UID("uid-" + snap.AllPods[i].Name)
			}
		}
		snap.PodCache = planner.NewPodCache()
		b.Run(fmt.Sprintf("nodes=%d/ordinals=%d/other-pods=%d", size.nodes, size.ordinals, size.others), func(b *testing.B) {
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
