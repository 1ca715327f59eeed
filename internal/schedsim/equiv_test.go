package schedsim

import (
	"context"
	"fmt"
	"math/rand"
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The shortcuts in fastpath.go must not change any answer or message.
func TestShortcutsAreResultPreserving(t *testing.T) {
	// Per-node capacities (TopoLVM's) and per-zone ones, never two for one node and class:
	// external-provisioner publishes one object per segment and class, and segments do not
	// overlap (with two, which one VolumeBinding takes follows the informer's map order).
	for _, layout := range []string{"node", "zone"} {
		t.Run(layout, func(t *testing.T) {
			rng := rand.New(rand.NewSource(42))
			scs, drvs := topolvmStorage()
			w := World{StorageClasses: scs, CSIDrivers: drvs}
			const nNodes = 60
			for i := 0; i < nNodes; i++ {
				name := fmt.Sprintf("n%02d", i)
				var opts []nodeOpt
				opts = append(opts, withLabel("topology.kubernetes.io/zone", fmt.Sprintf("z%d", i%3)))
				if rng.Intn(8) == 0 {
					opts = append(opts, withTaint("dedicated", "x"))
				}
				if rng.Intn(12) == 0 {
					opts = append(opts, cordoned())
				}
				w.Nodes = append(w.Nodes, mkNode(name, fmt.Sprint(2+rng.Intn(6)), "16Gi", opts...))
				if layout == "node" && rng.Intn(6) != 0 { // some nodes have no capacity object at all
					w.Capacities = append(w.Capacities, capacityFor(name, fmt.Sprintf("%dGi", 5+rng.Intn(40))))
				}
			}
			// A segment no node is in, in both layouts.
			w.Capacities = append(w.Capacities, capacityFor("no-such-node", "500Gi"))
			if layout == "zone" {
				// One capacity per zone, each selected another way: by one label (the one-label path),
				// by an expression and by two labels (the general path).
				zone := func(name, size string, t *metav1.LabelSelector) storagev1.CSIStorageCapacity {
					c := capacityFor(name, size)
					c.NodeTopology = t
					return c
				}
				const z = "topology.kubernetes.io/zone"
				w.Capacities = append(w.Capacities,
					zone("z0", "300Gi", &metav1.LabelSelector{MatchLabels: map[string]string{z: "z0"}}),
					zone("z1", "200Gi", &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
						{Key: z, Operator: metav1.LabelSelectorOpIn, Values: []string{"z1"}}}}),
					zone("z2", "250Gi", &metav1.LabelSelector{MatchLabels: map[string]string{z: "z2", "kubernetes.io/os": "linux"}}))
				for i := range w.Nodes {
					w.Nodes[i].Labels["kubernetes.io/os"] = "linux"
				}
			}
			var pods []*corev1.Pod
			for i := 0; i < 150; i++ {
				claim := fmt.Sprintf("c%d", i)
				w.PVCs = append(w.PVCs, unboundPVC(claim, fmt.Sprintf("%dGi", 1+rng.Intn(20))))
				opts := []podOpt{withPVC(claim)}
				if rng.Intn(2) == 0 {
					pvc, pv := boundPinned(fmt.Sprintf("pin%d", i), fmt.Sprintf("n%02d", rng.Intn(nNodes)))
					w.PVCs, w.PVs = append(w.PVCs, pvc), append(w.PVs, pv)
					opts = append(opts, withPVC(pvc.Name))
				}
				if rng.Intn(4) == 0 {
					opts = append(opts, podLabel("app", "aa"), antiAffinityHostname("app", "aa"))
				}
				if rng.Intn(5) == 0 {
					opts = append(opts, podLabel("sp", "s"), spreadZone(1, "sp", "s"))
				}
				pods = append(pods, mkPod(fmt.Sprintf("p%d", i), fmt.Sprintf("%dm", 200+rng.Intn(1800)), "1Gi", opts...))
			}
			a := placeAll(t, w, Options{TrackStorageCapacity: true}, pods, 7, 3)
			b := placeAll(t, w, Options{TrackStorageCapacity: true, NoShortcuts: true}, pods, 7, 3)
			for i := range a {
				if a[i] != b[i] {
					t.Fatalf("pod %d differs:\n fast: %s\n slow: %s", i, a[i], b[i])
				}
			}
			placed := bothOutcomes(t, a)
			t.Logf("%d/%d pods placed, all answers identical; sample failure: %s", placed, len(a), firstFail(a))
		})
	}
}

// placeAll places pods in order on a Sim over w built with o, as the planner does: each Pod
// placed is assumed on its node, and after every every-th Pod the one back places before it is
// removed if it was placed (the controller deleting a Pod). It returns each Pod's "node|message".
func placeAll(t *testing.T, w World, o Options, pods []*corev1.Pod, every, back int) []string {
	t.Helper()
	s, err := NewWithOptions(context.Background(), w, o)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var out []string
	for i, p := range pods {
		n, msg, err := s.Place(p)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, n+"|"+msg)
		if n != "" {
			if err := s.Assume(p, n); err != nil {
				t.Fatal(err)
			}
		}
		if i%every == every-1 && s.Placed(pods[i-back]) {
			if err := s.Remove(pods[i-back]); err != nil {
				t.Fatal(err)
			}
		}
	}
	return out
}

// bothOutcomes fails the test unless at least 10 of the answers place their Pod and 10 do not
// (a comparison of answers that are all alike proves little); it returns how many were placed.
func bothOutcomes(t *testing.T, answers []string) int {
	t.Helper()
	placed := 0
	for _, a := range answers {
		if a[0] != '|' {
			placed++
		}
	}
	if placed < 10 || placed > len(answers)-10 {
		t.Fatalf("%d of %d Pods placed: the test needs both outcomes", placed, len(answers))
	}
	return placed
}

func firstFail(r []string) string {
	for _, s := range r {
		if s[0] == '|' {
			return s[1:]
		}
	}
	return ""
}
