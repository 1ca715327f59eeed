package schedsim

import (
	"fmt"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
)

func TestInsufficientCPU(t *testing.T) {
	s := newSim(t, World{Nodes: []corev1.Node{mkNode("n0", "1", "4Gi"), mkNode("n1", "1", "4Gi")}})
	expectFail(t, s, mkPod("p", "2", "1Gi"), "0/2 nodes are available: 2 Insufficient cpu.")
}

func TestInsufficientMemory(t *testing.T) {
	s := newSim(t, World{Nodes: []corev1.Node{mkNode("n0", "4", "1Gi"), mkNode("n1", "4", "1Gi")}})
	expectFail(t, s, mkPod("p", "1", "2Gi"), "0/2 nodes are available: 2 Insufficient memory.")
}

func TestAssumeAndRemoveReleaseResources(t *testing.T) {
	s := newSim(t, World{Nodes: []corev1.Node{mkNode("n0", "2", "4Gi")}})
	a, b := mkPod("a", "1500m", "1Gi"), mkPod("b", "1", "1Gi")
	if err := s.Assume(a, mustPlace(t, s, a)); err != nil {
		t.Fatal(err)
	}
	expectFail(t, s, b, "0/1 nodes are available: 1 Insufficient cpu.")
	if err := s.Remove(a); err != nil {
		t.Fatal(err)
	}
	if n := mustPlace(t, s, b); n != "n0" {
		t.Fatal(n)
	}
}

// The example from the brief: two different reasons histogrammed.
func TestMixedReasons(t *testing.T) {
	w := World{}
	for i := 0; i < 3; i++ {
		w.Nodes = append(w.Nodes, mkNode(fmt.Sprintf("small-%d", i), "1", "4Gi"))
		big := fmt.Sprintf("big-%d", i)
		w.Nodes = append(w.Nodes, mkNode(big, "8", "16Gi"))
		w.Pods = append(w.Pods, *mkPod("web-"+big, "1", "1Gi", podLabel("app", "web"), onNode(big)))
	}
	s := newSim(t, w)
	expectFail(t, s, mkPod("web-new", "2", "1Gi", podLabel("app", "web"), antiAffinityHostname("app", "web")),
		"0/6 nodes are available: 3 Insufficient cpu, 3 node(s) didn't match pod anti-affinity rules.")
}

func TestAntiAffinityMorePodsThanNodes(t *testing.T) {
	s := newSim(t, World{Nodes: []corev1.Node{mkNode("n0", "8", "8Gi"), mkNode("n1", "8", "8Gi"), mkNode("n2", "8", "8Gi")}})
	seen := map[string]bool{}
	for i := 0; i < 3; i++ {
		p := mkPod(fmt.Sprintf("web-%d", i), "100m", "100Mi", podLabel("app", "web"), antiAffinityHostname("app", "web"))
		n := mustPlace(t, s, p)
		if seen[n] {
			t.Fatalf("anti-affinity ignored: %s twice", n)
		}
		seen[n] = true
		if err := s.Assume(p, n); err != nil {
			t.Fatal(err)
		}
	}
	fourth := mkPod("web-3", "100m", "100Mi", podLabel("app", "web"), antiAffinityHostname("app", "web"))
	expectFail(t, s, fourth, "0/3 nodes are available: 3 node(s) didn't match pod anti-affinity rules.")
	// A pod without its own anti-affinity but matching the label is
	// rejected by the existing pods' anti-affinity.
	expectFail(t, s, mkPod("plain", "100m", "100Mi", podLabel("app", "web")),
		"0/3 nodes are available: 3 node(s) didn't satisfy existing pods anti-affinity rules.")
	if err := s.Remove(mkPod("web-1", "", "", podLabel("app", "web"))); err != nil {
		t.Fatal(err)
	}
	if n := mustPlace(t, s, fourth); n != "n1" {
		t.Fatalf("want n1 after removal, got %s", n)
	}
}

func TestHostPortConflict(t *testing.T) {
	s := newSim(t, World{
		Nodes: []corev1.Node{mkNode("n0", "8", "8Gi")},
		Pods:  []corev1.Pod{*mkPod("existing", "100m", "", hostPort(8080), onNode("n0"))},
	})
	expectFail(t, s, mkPod("p", "100m", "", hostPort(8080)),
		"0/1 nodes are available: 1 node(s) didn't have free ports for the requested pod ports.")
	mustPlace(t, s, mkPod("p2", "100m", "", hostPort(8081)))
}

func TestTopologySpreadSequential(t *testing.T) {
	zone := "topology.kubernetes.io/zone"
	s := newSim(t, World{Nodes: []corev1.Node{
		mkNode("a-1", "8", "8Gi", withLabel(zone, "a")), mkNode("a-2", "8", "8Gi", withLabel(zone, "a")),
		mkNode("b-1", "8", "8Gi", withLabel(zone, "b")),
	}})
	var got []string
	for i := 0; i < 4; i++ {
		p := mkPod(fmt.Sprintf("s-%d", i), "100m", "", podLabel("app", "s"), spreadZone(1, "app", "s"))
		n := mustPlace(t, s, p)
		got = append(got, n)
		if err := s.Assume(p, n); err != nil {
			t.Fatal(err)
		}
	}
	// first feasible in name order, subject to maxSkew=1 across zones
	if fmt.Sprint(got) != "[a-1 b-1 a-1 b-1]" {
		t.Fatalf("placement %v", got)
	}
}

func TestTopologySpreadMaxSkewViolation(t *testing.T) {
	zone := "topology.kubernetes.io/zone"
	s := newSim(t, World{
		Nodes: []corev1.Node{
			mkNode("a-1", "8", "8Gi", withLabel(zone, "a")),
			mkNode("b-1", "8", "8Gi", withLabel(zone, "b"), cordoned()),
		},
		Pods: []corev1.Pod{*mkPod("s-0", "100m", "", podLabel("app", "s"), onNode("a-1"))},
	})
	expectFail(t, s, mkPod("s-1", "100m", "", podLabel("app", "s"), spreadZone(1, "app", "s")),
		"0/2 nodes are available: 1 node(s) didn't match pod topology spread constraints, 1 node(s) were unschedulable.")
}

func TestUntoleratedTaint(t *testing.T) {
	s := newSim(t, World{Nodes: []corev1.Node{mkNode("n0", "8", "8Gi", withTaint("dedicated", "gpu")), mkNode("n1", "1", "8Gi")}})
	expectFail(t, s, mkPod("p", "2", ""),
		"0/2 nodes are available: 1 Insufficient cpu, 1 node(s) had untolerated taint(s).")
	tol := mkPod("tol", "2", "")
	tol.Spec.Tolerations = []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "gpu", Effect: corev1.TaintEffectNoSchedule}}
	if n := mustPlace(t, s, tol); n != "n0" {
		t.Fatal(n)
	}
}

func TestCordonedNode(t *testing.T) {
	s := newSim(t, World{Nodes: []corev1.Node{mkNode("n0", "8", "8Gi", cordoned())}})
	expectFail(t, s, mkPod("p", "1", ""), "0/1 nodes are available: 1 node(s) were unschedulable.")
}

func TestPreFilterResultNarrowing(t *testing.T) {
	s := newSim(t, World{Nodes: []corev1.Node{mkNode("n0", "8", "8Gi"), mkNode("n1", "1", "8Gi"), mkNode("n2", "8", "8Gi")}})
	p := mkPod("p", "2", "")
	p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
		NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchFields: []corev1.NodeSelectorRequirement{{
			Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{"n1"}}}}}}}}
	expectFail(t, s, p, "0/3 nodes are available: 1 Insufficient cpu, 2 node(s) didn't satisfy plugin(s) [NodeAffinity].")
}

func TestMissingPVCIsPreFilterFailure(t *testing.T) {
	s := newSim(t, World{Nodes: []corev1.Node{mkNode("n0", "8", "8Gi"), mkNode("n1", "8", "8Gi")}})
	expectFail(t, s, mkPod("p", "1", "", withPVC("nope")), `0/2 nodes are available: persistentvolumeclaim "nope" not found.`)
}

func pvWorld(nodes ...corev1.Node) World {
	scs, drvs := topolvmStorage()
	return World{Nodes: nodes, StorageClasses: scs, CSIDrivers: drvs}
}

func TestPVNodeAffinity(t *testing.T) {
	w := pvWorld(mkNode("n0", "8", "8Gi"), mkNode("n1", "8", "8Gi"), mkNode("n2", "8", "8Gi"))
	pvc, pv := boundPinned("data", "n1")
	w.PVCs, w.PVs = append(w.PVCs, pvc), append(w.PVs, pv)
	s := newSim(t, w)
	if n := mustPlace(t, s, mkPod("p", "1", "", withPVC("data"))); n != "n1" {
		t.Fatalf("want n1 (PV pinned), got %s", n)
	}
}

func TestPVNodeAffinityConflict(t *testing.T) {
	w := pvWorld(mkNode("n0", "8", "8Gi"), mkNode("n1", "1", "8Gi"), mkNode("n2", "8", "8Gi"))
	pvc, pv := boundPinned("data", "n1")
	w.PVCs, w.PVs = append(w.PVCs, pvc), append(w.PVs, pv)
	s := newSim(t, w)
	// No PreFilterResult narrowing in 1.37: the other nodes are rejected by
	// VolumeBinding's Filter, the pinned node by NodeResourcesFit.
	expectFail(t, s, mkPod("p", "2", "", withPVC("data")),
		"0/3 nodes are available: 1 Insufficient cpu, 2 node(s) didn't match PersistentVolume's node affinity.")
}

func TestNotEnoughStorageCapacity(t *testing.T) {
	w := pvWorld(mkNode("n0", "8", "8Gi"), mkNode("n1", "8", "8Gi"), mkNode("n2", "8", "8Gi"))
	w.Capacities = []storagev1.CSIStorageCapacity{capacityFor("n0", "5Gi"), capacityFor("n1", "1Gi")} // n2: none
	w.PVCs = []corev1.PersistentVolumeClaim{unboundPVC("big", "10Gi"), unboundPVC("small", "2Gi")}
	s := newSim(t, w)
	expectFail(t, s, mkPod("p", "1", "", withPVC("big")),
		"0/3 nodes are available: 3 node(s) did not have enough free storage.")
	if n := mustPlace(t, s, mkPod("p2", "1", "", withPVC("small"))); n != "n0" {
		t.Fatal(n)
	}
}

func TestStorageCapacityTrackedOnAssume(t *testing.T) {
	w := pvWorld(mkNode("n0", "8", "8Gi"))
	w.Capacities = []storagev1.CSIStorageCapacity{capacityFor("n0", "10Gi")}
	w.PVCs = []corev1.PersistentVolumeClaim{unboundPVC("a", "6Gi"), unboundPVC("b", "6Gi")}
	s := newSim(t, w, Options{TrackStorageCapacity: true})
	pa, pb := mkPod("pa", "1", "", withPVC("a")), mkPod("pb", "1", "", withPVC("b"))
	if err := s.Assume(pa, mustPlace(t, s, pa)); err != nil {
		t.Fatal(err)
	}
	expectFail(t, s, pb, "0/1 nodes are available: 1 node(s) did not have enough free storage.")
	if err := s.Remove(pa); err != nil {
		t.Fatal(err)
	}
	mustPlace(t, s, pb)
}

// The PVC/PV assume caches are fed from the informer indexers: after Assume,
// a second pod sharing the same WaitForFirstConsumer claim must follow it.
func TestSharedWFFCClaimFollowsSelectedNode(t *testing.T) {
	w := pvWorld(mkNode("n0", "1", "8Gi"), mkNode("n1", "8", "8Gi"))
	w.Capacities = []storagev1.CSIStorageCapacity{capacityFor("n0", "10Gi"), capacityFor("n1", "10Gi")}
	w.PVCs = []corev1.PersistentVolumeClaim{unboundPVC("shared", "1Gi")}
	s := newSim(t, w)
	p1 := mkPod("p1", "1", "", withPVC("shared"))
	n := mustPlace(t, s, p1)
	if n != "n0" {
		t.Fatal(n)
	}
	if err := s.Assume(p1, n); err != nil {
		t.Fatal(err)
	}
	expectFail(t, s, mkPod("p2", "1", "", withPVC("shared")),
		"0/2 nodes are available: 1 Insufficient cpu, 1 node(s) didn't find available persistent volumes to bind.")
	if err := s.Remove(p1); err != nil {
		t.Fatal(err)
	}
	mustPlace(t, s, mkPod("p2", "1", "", withPVC("shared")))
}

func TestPreemptionSuffix(t *testing.T) {
	s := newSim(t, World{
		Nodes: []corev1.Node{mkNode("n0", "2", "8Gi"), mkNode("n1", "8", "8Gi", cordoned())},
		Pods:  []corev1.Pod{*mkPod("same-prio", "1500m", "", onNode("n0"))},
	}, Options{PreemptionMessage: true})
	expectFail(t, s, mkPod("p", "1", ""),
		"0/2 nodes are available: 1 Insufficient cpu, 1 node(s) were unschedulable. "+
			"preemption: 0/2 nodes are available: 1 No preemption victims found for incoming pod, 1 Preemption is not helpful for scheduling.")
	// A request larger than the node's allocatable is UnschedulableAndUnresolvable
	// in 1.37's NodeResourcesFit, so preemption is "not helpful" there too.
	expectFail(t, s, mkPod("huge", "3", ""),
		"0/2 nodes are available: 1 Insufficient cpu, 1 node(s) were unschedulable. "+
			"preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling.")
	if s.LastPreemptionSkipped {
		t.Fatal("skipped")
	}
	// With a lower-priority pod present preemption could actuate (evict), so
	// the simulator does not run PostFilter and says so.
	low := mkPod("low", "500m", "", priority(-1))
	if err := s.Assume(low, "n0"); err != nil {
		t.Fatal(err)
	}
	expectFail(t, s, mkPod("p", "1", ""), "0/2 nodes are available: 1 Insufficient cpu, 1 node(s) were unschedulable.")
	if !s.LastPreemptionSkipped {
		t.Fatal("expected skip")
	}
}

// A Sim reads the World's objects in place (World's contract): placing, assuming (claims
// bound, capacity lowered) and removing Pods must leave every one of them as it was, or a
// second Sim over the same snapshot would see the first one's guesses.
func TestSimLeavesWorldUnchanged(t *testing.T) {
	w := pvWorld(mkNode("n0", "8", "8Gi"), mkNode("n1", "8", "8Gi", withTaint("k", "v")))
	w.Capacities = []storagev1.CSIStorageCapacity{capacityFor("n0", "10Gi"), capacityFor("n1", "10Gi")}
	pvc, pv := boundPinned("pinned", "n0")
	w.PVCs = []corev1.PersistentVolumeClaim{unboundPVC("a", "6Gi"), pvc}
	w.PVs = []corev1.PersistentVolume{pv}
	bound := mkPod("bound", "1", "1Gi", onNode("n0"))
	bound.UID = "uid-bound"
	w.Pods = []corev1.Pod{*bound}
	before := World{Nodes: slices.Clone(w.Nodes), Pods: slices.Clone(w.Pods), PVs: slices.Clone(w.PVs), PVCs: slices.Clone(w.PVCs),
		StorageClasses: slices.Clone(w.StorageClasses), CSIDrivers: slices.Clone(w.CSIDrivers), Capacities: slices.Clone(w.Capacities)}
	for i := range before.Nodes {
		before.Nodes[i] = *before.Nodes[i].DeepCopy()
	}
	for i := range before.Pods {
		before.Pods[i] = *before.Pods[i].DeepCopy()
	}
	for i := range before.PVs {
		before.PVs[i] = *before.PVs[i].DeepCopy()
	}
	for i := range before.PVCs {
		before.PVCs[i] = *before.PVCs[i].DeepCopy()
	}
	for i := range before.Capacities {
		before.Capacities[i] = *before.Capacities[i].DeepCopy()
	}
	s := newSim(t, w, Options{TrackStorageCapacity: true})
	pa, pp := mkPod("pa", "1", "", withPVC("a")), mkPod("pp", "1", "", withPVC("pinned"))
	for _, p := range []*corev1.Pod{pa, pp} {
		if err := s.Assume(p, mustPlace(t, s, p)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Remove(bound); err != nil {
		t.Fatal(err)
	}
	if err := s.Remove(pa); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(before, w, cmpopts.EquateEmpty()); d != "" {
		t.Errorf("the Sim changed its World (-before +after):\n%s", d)
	}
}
