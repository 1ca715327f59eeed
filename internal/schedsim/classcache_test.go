package schedsim

import (
	"fmt"
	"math/rand"
	"testing"

	corev1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
)

// The class cache must not change any answer or message: StatefulSet-like Pods (one template,
// pinned PVs on random nodes, some too big, some on a pool they are not pinned to), placed,
// assumed and removed in turn, give the same node and the same message with and without it.
func TestClassCacheIsResultPreserving(t *testing.T) {
	rng := rand.New(rand.NewSource(7))
	scs, drvs := topolvmStorage()
	w := World{StorageClasses: scs, CSIDrivers: drvs}
	const nNodes = 40
	for i := 0; i < nNodes; i++ {
		name := fmt.Sprintf("n%02d", i)
		pool := "a"
		if i >= nNodes/2 {
			pool = "b"
		}
		opts := []nodeOpt{withLabel("pool", pool)}
		if rng.Intn(10) == 0 {
			opts = append(opts, cordoned())
		}
		if rng.Intn(10) == 0 {
			opts = append(opts, withTaint("dedicated", "x"))
		}
		w.Nodes = append(w.Nodes, mkNode(name, fmt.Sprint(1+rng.Intn(4)), "8Gi", opts...))
		w.Capacities = append(w.Capacities, capacityFor(name, fmt.Sprintf("%dGi", 1+rng.Intn(30))))
	}
	var pods []*corev1.Pod
	for i := 0; i < 120; i++ {
		var opts []podOpt
		if rng.Intn(2) == 0 {
			pvc, pv := boundPinned(fmt.Sprintf("pin%d", i), fmt.Sprintf("n%02d", rng.Intn(nNodes)))
			w.PVCs, w.PVs = append(w.PVCs, pvc), append(w.PVs, pv)
			opts = append(opts, withPVC(pvc.Name))
		} else {
			claim := fmt.Sprintf("new%d", i)
			w.PVCs = append(w.PVCs, unboundPVC(claim, fmt.Sprintf("%dGi", 1+rng.Intn(10))))
			opts = append(opts, withPVC(claim))
		}
		p := mkPod(fmt.Sprintf("hist-%d", i), []string{"500m", "1500m", "3"}[rng.Intn(3)], "1Gi", opts...)
		p.Spec.NodeSelector = map[string]string{"pool": []string{"a", "b"}[rng.Intn(2)]}
		pods = append(pods, p)
	}
	with := placeAll(t, w, Options{TrackStorageCapacity: true}, pods, 5, 2)
	without := placeAll(t, w, Options{TrackStorageCapacity: true, noClassCache: true}, pods, 5, 2)
	for i := range with {
		if with[i] != without[i] {
			t.Errorf("pod %d: with the class cache %q, without %q", i, with[i], without[i])
		}
	}
	bothOutcomes(t, with)
}

// histogramMessage is FitError.Error() for Filter failures.
func TestHistogramMessageIsFitErrorMessage(t *testing.T) {
	d := framework.Diagnosis{NodeToStatus: framework.NewDefaultNodeToStatus()}
	reasons := map[string]int{}
	for i, r := range [][]string{{"Insufficient cpu"}, {"node(s) didn't match Pod's node affinity/selector"}, {"Insufficient cpu", "Insufficient memory"}} {
		st := fwk.NewStatus(fwk.Unschedulable, r...)
		d.NodeToStatus.Set(fmt.Sprintf("n%d", i), st)
		for _, x := range r {
			reasons[x]++
		}
	}
	fe := &framework.FitError{Pod: mkPod("p", "1", "1Gi"), NumAllNodes: 3, Diagnosis: d}
	if got, want := histogramMessage(3, reasons), fe.Error(); got != want {
		t.Fatalf("histogramMessage %q, FitError %q", got, want)
	}
}
