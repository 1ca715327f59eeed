package schedsim

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
)

// TestPodCacheSameAnswers builds Sims one after another over changing snapshots, as the
// migration executor does, with one PodCache and without: the answers are the same, an
// unchanged pod is reused, a pod at a new resourceVersion is not, and a pod that left the
// snapshot is dropped from the cache.
func TestPodCacheSameAnswers(t *testing.T) {
	bound := func(name, node, cpu, rv string) corev1.Pod {
		p := *mkPod(name, cpu, "1Gi", onNode(node))
		p.UID, p.ResourceVersion = types.UID("uid-"+name), rv
		return p
	}
	nodes := []corev1.Node{mkNode("n0", "4", "16Gi"), mkNode("n1", "4", "16Gi")}
	looks := []struct {
		pods []corev1.Pod
		// want: the incoming 2-CPU pod's node ("" = does not fit) and the cache counters after.
		want         string
		hits, misses int
	}{
		{pods: []corev1.Pod{bound("a", "n0", "3", "1"), bound("b", "n1", "1", "1")}, want: "n1", hits: 0, misses: 2},
		// Unchanged: both reused.
		{pods: []corev1.Pod{bound("a", "n0", "3", "1"), bound("b", "n1", "1", "1")}, want: "n1", hits: 2, misses: 2},
		// b resized at a new resourceVersion: recomputed, and n1 no longer fits.
		{pods: []corev1.Pod{bound("a", "n0", "3", "1"), bound("b", "n1", "3", "2")}, want: "", hits: 3, misses: 3},
		// a gone: n0 fits again.
		{pods: []corev1.Pod{bound("b", "n1", "3", "2")}, want: "n0", hits: 4, misses: 3},
	}
	cache := NewPodCache()
	for i, l := range looks {
		w := World{Nodes: nodes, Pods: l.pods}
		for _, opts := range []Options{{}, {Pods: cache}} {
			s := newSim(t, w, opts)
			got, _, err := s.Place(mkPod("new", "2", "1Gi"))
			if err != nil {
				t.Fatal(err)
			}
			if got != l.want {
				t.Errorf("look %d (cache %v): placed on %q, want %q", i, opts.Pods != nil, got, l.want)
			}
		}
		if cache.Hits != l.hits || cache.Misses != l.misses {
			t.Errorf("look %d: hits %d misses %d, want %d %d", i, cache.Hits, cache.Misses, l.hits, l.misses)
		}
	}
	if _, ok := cache.entries["uid-a"]; ok {
		t.Error("pod a left the snapshot but stays cached")
	}
	// The cached copy is the pod as it was: changing the caller's object later does not reach it.
	p := bound("c", "n0", "1", "1")
	newSim(t, World{Nodes: nodes, Pods: []corev1.Pod{p}}, Options{Pods: cache})
	p.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse("4")
	if got := cache.entries["uid-c"].pod.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU]; got.String() != "1" {
		t.Errorf("cached pod changed with the caller's copy: cpu %s", got.String())
	}
}
