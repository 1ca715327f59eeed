package planner

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
)

// bigWorld: 1,000 ordinals on a 5,000-node cluster (2,500 per pool), PVs
// pinned to pool-a, template moved to pool-b: the incident at scale.
func bigWorld(b testing.TB, strategy func(*appsv1.StatefulSet)) Snapshot {
	nodes := append(MkPool("pool-a", 2500, 1000), MkPool("pool-b", 2500, 1000)...)
	live := MkSet(1000)
	if strategy != nil {
		strategy(live)
	}
	w := NewWorld(b, live, nodes)
	return WithTopoLVM(w.Desire(ToPoolB).Snap)
}

func BenchmarkBuild(b *testing.B) {
	for name, strategy := range map[string]func(*appsv1.StatefulSet){
		"RollingUpdate": nil,
		"OnDelete":      OnDelete,
		"Parallel":      func(s *appsv1.StatefulSet) { Parallel(s); NewImage(s) },
	} {
		snap := bigWorld(b, strategy)
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Build(snap); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	// Scale-up from 1 to 1,000: every new ordinal needs capacity, and each
	// placement reserves it for the next.
	nodes := append(MkPool("pool-a", 2500, 1000), MkPool("pool-b", 2500, 1000)...)
	up := WithTopoLVM(NewWorld(b, MkSet(1), nodes).Desire(Replicas(1000), Parallel).Snap)
	b.Run("ScaleUpParallel", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := Build(up); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// TestBuildLarge checks the answers at the benchmark's size (the timing is
// BenchmarkBuild's job).
func TestBuildLarge(t *testing.T) {
	t.Parallel()
	snap := bigWorld(t, OnDelete)
	p, err := Build(snap)
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
	ix := NewIndex(&snap)
	pod := &corev1.Pod{Spec: corev1.PodSpec{NodeSelector: map[string]string{PoolKey: "pool-c"}}}
	pod.Name = "olap-1000"
	if v := PodCanSchedule(pod, nil, ix); v.OK || v.Reason != "0/5000 nodes are available: 5000 node(s) didn't match Pod's node affinity/selector." {
		t.Errorf("verdict %+v", v)
	}
}
