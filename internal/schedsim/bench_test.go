package schedsim

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
)

type scenario struct {
	world World
	pods  []*corev1.Pod
}

// buildScenario: nNodes nodes in 3 zones, 10% tainted, 5% cordoned, one
// topolvm CSIStorageCapacity per node (if withCaps), nPods pods each with
// requests and a new WFFC claim; every second pod also mounts a bound PV
// pinned to some schedulable node.
func buildScenario(nNodes, nPods int, withCaps bool) scenario {
	scs, drvs := topolvmStorage()
	w := World{StorageClasses: scs}
	if withCaps {
		w.CSIDrivers = drvs // capacity tracking only when the driver opts in
	}
	var schedulable []string
	for i := 0; i < nNodes; i++ {
		name := fmt.Sprintf("node-%05d", i)
		opts := []nodeOpt{withLabel("topology.kubernetes.io/zone", "zone-"+strconv.Itoa(i%3)), withLabel("pool", "pool-"+strconv.Itoa(i%7))}
		switch {
		case i%10 == 3:
			opts = append(opts, withTaint("dedicated", "infra"))
		case i%20 == 7:
			opts = append(opts, cordoned())
		default:
			schedulable = append(schedulable, name)
		}
		w.Nodes = append(w.Nodes, mkNode(name, "16", "64Gi", opts...))
		if withCaps {
			w.Capacities = append(w.Capacities, capacityFor(name, "500Gi"))
		}
		w.CSINodes = append(w.CSINodes, storagev1.CSINode{ObjectMeta: metavObj(name),
			Spec: storagev1.CSINodeSpec{Drivers: []storagev1.CSINodeDriver{{Name: "topolvm.io", NodeID: name, TopologyKeys: []string{topolvmKey}}}}})
	}
	var pods []*corev1.Pod
	for i := 0; i < nPods; i++ {
		claim := fmt.Sprintf("data-%d", i)
		w.PVCs = append(w.PVCs, unboundPVC(claim, "10Gi"))
		opts := []podOpt{withPVC(claim), podLabel("app", "bench")}
		if i%2 == 1 {
			pin := schedulable[(i*37)%len(schedulable)]
			pvc, pv := boundPinned(fmt.Sprintf("pinned-%d", i), pin)
			w.PVCs, w.PVs = append(w.PVCs, pvc), append(w.PVs, pv)
			opts = append(opts, withPVC(pvc.Name))
		}
		pods = append(pods, mkPod(fmt.Sprintf("bench-%d", i), "500m", "1Gi", opts...))
	}
	return scenario{world: w, pods: pods}
}

func runScenario(tb testing.TB, sc scenario, opts Options) (newDur, placeDur time.Duration, unsched int) {
	t0 := time.Now()
	s, err := NewWithOptions(context.Background(), sc.world, opts)
	if err != nil {
		tb.Fatal(err)
	}
	defer s.Close()
	t1 := time.Now()
	for _, p := range sc.pods {
		n, _, err := s.Place(p)
		if err != nil {
			tb.Fatal(err)
		}
		if n == "" {
			unsched++
			continue
		}
		if err := s.Assume(p, n); err != nil {
			tb.Fatal(err)
		}
	}
	return t1.Sub(t0), time.Since(t1), unsched
}

func envInt(k string, d int) int {
	if v, err := strconv.Atoi(os.Getenv(k)); err == nil {
		return v
	}
	return d
}

// perfOnly skips a test that only logs timings (it asserts nothing a figure could break) unless
// SCHEDSIM_PERF=1: run by hand, never in the suites (the race detector made TestPerf take 146 s
// of CI for a log line). Performance targets live in `make bench`.
func perfOnly(t *testing.T) {
	t.Helper()
	if os.Getenv("SCHEDSIM_PERF") != "1" {
		t.Skip("timings only: SCHEDSIM_PERF=1 go test -run " + t.Name() + " -v ./internal/schedsim/")
	}
}

// SCHEDSIM_PERF=1 go test -run TestPerf -v ./internal/schedsim   (SCHEDSIM_NODES / SCHEDSIM_PODS override)
func TestPerf(t *testing.T) {
	perfOnly(t)
	nodes, pods := envInt("SCHEDSIM_NODES", 5000), envInt("SCHEDSIM_PODS", 1000)
	for _, c := range []struct {
		name string
		caps bool
		opts Options
	}{
		{"caps/first-fit", true, Options{TrackStorageCapacity: true}},
		{"nocaps/first-fit", false, Options{}},
		{"caps/all-nodes", true, Options{EvaluateAllNodes: true, TrackStorageCapacity: true}},
	} {
		n := pods
		if c.opts.EvaluateAllNodes && n > 200 {
			n = 200 // full evaluation is ~40-50ms/pod at 5000 nodes
		}
		sc := buildScenario(nodes, n, c.caps)
		nd, pd, u := runScenario(t, sc, c.opts)
		pods := n
		t.Logf("%-18s nodes=%d pods=%d New=%v Place+Assume=%v (%.2fms/pod) total=%v unschedulable=%d",
			c.name, nodes, pods, nd.Round(time.Millisecond), pd.Round(time.Millisecond),
			float64(pd.Microseconds())/1000/float64(pods), (nd + pd).Round(time.Millisecond), u)
	}
}

func BenchmarkScenario(b *testing.B) {
	nodes, pods := envInt("SCHEDSIM_NODES", 5000), envInt("SCHEDSIM_PODS", 1000)
	caps := os.Getenv("SCHEDSIM_NOCAPS") == ""
	all := os.Getenv("SCHEDSIM_ALL") != ""
	sc := buildScenario(nodes, pods, caps)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		nd, pd, u := runScenario(b, sc, Options{TrackStorageCapacity: true, EvaluateAllNodes: all, NoShortcuts: os.Getenv("SCHEDSIM_NOSHORTCUTS") != ""})
		b.ReportMetric(float64(nd.Microseconds())/1000, "ms-New")
		b.ReportMetric(float64(pd.Microseconds())/1000, "ms-Place+Assume")
		b.ReportMetric(float64(u), "unschedulable")
	}
}
