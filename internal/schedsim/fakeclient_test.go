package schedsim

import (
	"context"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
)

func worldObjects(w World) []runtime.Object {
	var objs []runtime.Object
	for i := range w.Nodes {
		objs = append(objs, &w.Nodes[i])
	}
	for i := range w.PVs {
		objs = append(objs, &w.PVs[i])
	}
	for i := range w.PVCs {
		objs = append(objs, &w.PVCs[i])
	}
	for i := range w.StorageClasses {
		objs = append(objs, &w.StorageClasses[i])
	}
	for i := range w.CSINodes {
		objs = append(objs, &w.CSINodes[i])
	}
	for i := range w.CSIDrivers {
		objs = append(objs, &w.CSIDrivers[i])
	}
	for i := range w.Capacities {
		objs = append(objs, &w.Capacities[i])
	}
	return objs
}

func newFakeClientSim(t testing.TB, w World, o Options) (*Sim, time.Duration) {
	t0 := time.Now()
	cs := fake.NewClientset(worldObjects(w)...)
	o.clientFactory = informers.NewSharedInformerFactory(cs, 0)
	s, err := NewWithOptions(context.Background(), w, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s, time.Since(t0)
}

// Same answers through a fake clientset + started/synced informers.
func TestFakeClientsetPath(t *testing.T) {
	w := pvWorld(mkNode("n0", "8", "8Gi"), mkNode("n1", "1", "8Gi"), mkNode("n2", "8", "8Gi"))
	pvc, pv := boundPinned("data", "n1")
	w.PVCs, w.PVs = append(w.PVCs, pvc), append(w.PVs, pv)
	s, _ := newFakeClientSim(t, w, Options{})
	expectFail(t, s, mkPod("p", "2", "", withPVC("data")),
		"0/3 nodes are available: 1 Insufficient cpu, 2 node(s) didn't match PersistentVolume's node affinity.")
}

func TestFakeClientsetCost(t *testing.T) {
	perfOnly(t)
	sc := buildScenario(5000, 1000, true)
	t0 := time.Now()
	s1, err := NewWithOptions(context.Background(), sc.world, Options{})
	if err != nil {
		t.Fatal(err)
	}
	direct := time.Since(t0)
	s1.Close()
	_, viaFake := newFakeClientSim(t, sc.world, Options{})
	t.Logf("New() for 5000 nodes/5000 CSINodes/5000 capacities/1500 PVCs/500 PVs: direct indexer add=%v, fake clientset+Start+WaitForCacheSync=%v",
		direct.Round(time.Millisecond), viaFake.Round(time.Millisecond))
}
