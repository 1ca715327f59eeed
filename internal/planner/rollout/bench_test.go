package rollout

import (
	"testing"

	"github.com/olapgke/terraform-provider-olapgke/internal/planner"
	"github.com/olapgke/terraform-provider-olapgke/internal/planner/plannertest"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
)

// bigWorld: 1,000 ordinals on a 5,000-node cluster (2,500 per pool), PVs
// pinned to pool-a, template moved to pool-b: the incident at scale.
func bigWorld(b testing.TB, strategy func(*appsv1.StatefulSet)) planner.Snapshot {
	nodes := append(plannertest.MkPool("pool-a", 2500, 1000), plannertest.MkPool("pool-b", 2500, 1000)...)
	live := plannertest.MkSet(1000)
	if strategy != nil {
		strategy(live)
	}
	w := plannertest.NewWorld(b, live, nodes)
	return plannertest.WithTopoLVM(w.Desire(plannertest.ToPoolB).Snap)
}

func BenchmarkBuild(b *testing.B) {
	for name, strategy := range map[string]func(*appsv1.StatefulSet){
		"RollingUpdate": nil,
		"OnDelete":      plannertest.OnDelete,
		"Parallel":      func(s *appsv1.StatefulSet) { plannertest.Parallel(s); plannertest.NewImage(s) },
	} {
		snap := bigWorld(b, strategy)
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := PlanRollout(snap); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	// Scale-up from 1 to 1,000: every new ordinal needs capacity, and each
	// placement reserves it for the next.
	nodes := append(plannertest.MkPool("pool-a", 2500, 1000), plannertest.MkPool("pool-b", 2500, 1000)...)
	up := plannertest.WithTopoLVM(plannertest.NewWorld(b, plannertest.MkSet(1), nodes).Desire(plannertest.Replicas(1000), plannertest.Parallel).Snap)
	b.Run("ScaleUpParallel", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := PlanRollout(up); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// TestBuildLarge checks the answers at the benchmark's size (the timing is
// BenchmarkBuild's job).
func TestBuildLarge(t *testing.T) {
	t.Parallel()
	snap := bigWorld(t, plannertest.OnDelete)
	p, err := PlanRollout(snap)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Ordinals) != 1000 || p.Stall != nil {
		t.Fatalf("%d ordinals, stall %+v", len(p.Ordinals), p.Stall)
	}
	for _, o := range p.Ordinals {
		if o.Action != ActionStranded || !o.Schedulable {
			t.Fatalf("ordinal %d: %s schedulable=%v", o.Ordinal, o.Action, o.Schedulable)
		}
	}
	// A node outside both pools must not be found for a free Pod either.
	ix := planner.NewIndex(&snap)
	pod := &corev1.Pod{Spec: corev1.PodSpec{NodeSelector: map[string]string{plannertest.PoolKey: "pool-c"}}}
	pod.Name = "olap-1000"
	if v := planner.PodCanSchedule(pod, nil, ix); v.OK || v.Reason != "0/5000 nodes are available: 5000 node(s) didn't match Pod's node affinity/selector." {
		t.Errorf("verdict %+v", v)
	}
}
