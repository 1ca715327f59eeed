package schedsim_test

import (
	"context"
	"fmt"
	"math/rand"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/olapgke/terraform-provider-olapgke/internal/acctest"
	"github.com/olapgke/terraform-provider-olapgke/internal/planner"
	"github.com/olapgke/terraform-provider-olapgke/internal/stsutil"
)

// The default world, with external-provisioner's CSIStorageCapacity writes unthrottled: each
// batch of worlds creates ~100 Local SSD nodes at once, and at its default rate (1/s after a
// burst of 5, as on GKE) real TopoLVM took ~100 s a batch to publish their capacity (11 min for
// the test). The test is about the scheduler's verdicts, not the publishing rate.
const diffWorld = `topolvm:
  bringUp:
    capacityQPS: 500
    capacityBurst: 500
`

func TestMain(m *testing.M) { acctest.MainWithWorld(m, diffWorld) }

// The differential test: in generated worlds (nodes of mixed sizes, taints, cordons, existing
// Pods, anti-affinity, topology spread, resource requests, host ports, PVs pinned or not, TopoLVM
// capacity short or not), the planner's verdict for a Pod (planner.PodCanSchedule, which runs
// internal/schedsim) must equal what the sandbox's real kube-scheduler does with it: bound, or
// left Pending as Unschedulable. Worlds are isolated by a label every node carries and every Pod
// selects, so a batch of them runs at once. OLAPGKE_DIFF_WORLDS sets how many (default 200);
// OLAPGKE_DIFF_SEED reruns one world.

const diffNS = "schedsim-diff"

// diffStorageClass is the default world's TopoLVM StorageClass, which the worlds' new claims use.
const diffStorageClass = "topolvm-provisioner"

type genWorld struct {
	id    int
	seed  int64
	nodes []*corev1.Node
	// existing are Pods bound to nodes before the probe (nodeName set: not scheduled).
	existing []*corev1.Pod
	pvs      []*corev1.PersistentVolume
	pvcs     []*corev1.PersistentVolumeClaim
	probe    *corev1.Pod
	what     []string // what the generator chose, for the failure message
}

func q(s string) resource.Quantity { return resource.MustParse(s) }

func generate(id int, seed int64) *genWorld {
	rng := rand.New(rand.NewSource(seed))
	g := &genWorld{id: id, seed: seed}
	wl := fmt.Sprintf("w%d", id)
	labelsOf := func(extra map[string]string) map[string]string {
		m := map[string]string{"diff-world": wl}
		for k, v := range extra {
			m[k] = v
		}
		return m
	}
	nNodes := 1 + rng.Intn(4)
	cpus := []string{"2", "4", "8"}
	mems := []string{"8Gi", "16Gi", "32Gi"}
	for i := 0; i < nNodes; i++ {
		name := fmt.Sprintf("diff-%s-n%d", wl, i)
		cpu, mem := cpus[rng.Intn(3)], mems[rng.Intn(3)]
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name,
			Labels: map[string]string{"diff-world": wl, "kubernetes.io/hostname": name,
				"topology.kubernetes.io/zone": fmt.Sprintf("%s-z%d", wl, i%2), "diff-pool": fmt.Sprintf("p%d", rng.Intn(2))},
			Annotations: map[string]string{"kwok.x-k8s.io/node": "fake", "sandbox.olapgke.io/local-nvme-ssd-count": strconv.Itoa(rng.Intn(3))}},
			Status: corev1.NodeStatus{
				Allocatable: corev1.ResourceList{corev1.ResourceCPU: q(cpu), corev1.ResourceMemory: q(mem), corev1.ResourcePods: q("110")},
				Capacity:    corev1.ResourceList{corev1.ResourceCPU: q(cpu), corev1.ResourceMemory: q(mem), corev1.ResourcePods: q("110")},
			}}
		if n.Annotations["sandbox.olapgke.io/local-nvme-ssd-count"] != "0" {
			// GKE labels nodes with raw-block Local SSDs; TopoLVM's DaemonSets select them by it
			// (`up --topolvm real` starts node agents only there; the simulator reads the count).
			n.Labels["cloud.google.com/gke-local-nvme-ssd"] = "true"
		}
		if rng.Intn(5) == 0 {
			n.Spec.Taints = []corev1.Taint{{Key: "diff-dedicated", Value: "x", Effect: corev1.TaintEffectNoSchedule}}
		}
		if rng.Intn(6) == 0 {
			n.Spec.Unschedulable = true
		}
		g.what = append(g.what, fmt.Sprintf("node %s cpu=%s mem=%s pool=%s ssd=%s taint=%v cordon=%v", name, cpu, mem,
			n.Labels["diff-pool"], n.Annotations["sandbox.olapgke.io/local-nvme-ssd-count"], len(n.Spec.Taints) > 0, n.Spec.Unschedulable))
		g.nodes = append(g.nodes, n)
	}
	ports := rng.Intn(3) == 0
	anti := rng.Intn(3) == 0
	spread := !anti && rng.Intn(4) == 0
	app := wl + "-app"
	podSpec := func(cpu string) corev1.PodSpec {
		s := corev1.PodSpec{
			NodeSelector: map[string]string{"diff-world": wl},
			Containers: []corev1.Container{{Name: "c", Image: "x", Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: q(cpu), corev1.ResourceMemory: q("1Gi")}}}},
		}
		if ports {
			s.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 9000, HostPort: 9000, Protocol: corev1.ProtocolTCP}}
		}
		return s
	}
	for i, nExisting := 0, rng.Intn(3); i < nExisting && len(g.nodes) > 0; i++ {
		n := g.nodes[rng.Intn(len(g.nodes))]
		cpu := []string{"500m", "1", "2"}[rng.Intn(3)]
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: diffNS, Name: fmt.Sprintf("%s-e%d", wl, i), Labels: labelsOf(map[string]string{"app": app})},
			Spec: podSpec(cpu)}
		p.Spec.NodeName = n.Name
		p.Spec.Tolerations = []corev1.Toleration{{Operator: corev1.TolerationOpExists}}
		g.existing = append(g.existing, p)
		g.what = append(g.what, fmt.Sprintf("existing pod on %s cpu=%s port=%v", n.Name, cpu, ports))
	}
	cpu := []string{"500m", "2", "3", "6", "16"}[rng.Intn(5)]
	probe := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: diffNS, Name: wl + "-probe", Labels: labelsOf(map[string]string{"app": app})},
		Spec: podSpec(cpu)}
	if rng.Intn(3) == 0 {
		probe.Spec.NodeSelector["diff-pool"] = "p0"
	}
	if rng.Intn(2) == 0 {
		probe.Spec.Tolerations = []corev1.Toleration{{Key: "diff-dedicated", Operator: corev1.TolerationOpExists}}
	}
	if anti {
		probe.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}}, TopologyKey: "kubernetes.io/hostname"}}}}
	}
	if spread {
		probe.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: "topology.kubernetes.io/zone",
			WhenUnsatisfiable: corev1.DoNotSchedule, MinDomains: ptr.To[int32](2), LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}}}}
	}
	// Volumes: a new TopoLVM claim (capacity short or not), a PV pinned to one node, or none.
	switch rng.Intn(3) {
	case 0:
		size := []string{"10Gi", "500Gi", "1000Gi"}[rng.Intn(3)]
		pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: diffNS, Name: wl + "-new"},
			Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				StorageClassName: ptr.To(diffStorageClass), Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: q(size)}}}}
		g.pvcs = append(g.pvcs, pvc)
		addClaim(probe, pvc.Name)
		g.what = append(g.what, "new TopoLVM claim "+size)
	case 1:
		if len(g.nodes) > 0 {
			n := g.nodes[rng.Intn(len(g.nodes))]
			pv := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: wl + "-pinned"},
				Spec: corev1.PersistentVolumeSpec{StorageClassName: "", AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
					Capacity:                      corev1.ResourceList{corev1.ResourceStorage: q("1Gi")},
					PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
					PersistentVolumeSource:        corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: "diff.example.com", VolumeHandle: wl}},
					ClaimRef:                      &corev1.ObjectReference{Namespace: diffNS, Name: wl + "-pinned"},
					NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
						MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "kubernetes.io/hostname", Operator: corev1.NodeSelectorOpIn, Values: []string{n.Name}}}}}}}}}
			pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: diffNS, Name: wl + "-pinned"},
				Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
					StorageClassName: ptr.To(""), VolumeName: pv.Name, Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: q("1Gi")}}}}
			g.pvs, g.pvcs = append(g.pvs, pv), append(g.pvcs, pvc)
			addClaim(probe, pvc.Name)
			g.what = append(g.what, "PV pinned to "+n.Name)
		}
	}
	g.probe = probe
	g.what = append(g.what, fmt.Sprintf("probe cpu=%s pool=%s tolerates=%v anti=%v spread=%v port=%v", cpu,
		probe.Spec.NodeSelector["diff-pool"], len(probe.Spec.Tolerations) > 0, anti, spread, ports))
	return g
}

func addClaim(p *corev1.Pod, claim string) {
	p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "v", VolumeSource: corev1.VolumeSource{
		PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}})
	p.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "v", MountPath: "/v"}}
}

func (g *genWorld) create(ctx context.Context, kube kubernetes.Interface) error {
	for _, n := range g.nodes {
		if _, err := kube.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{}); err != nil {
			return err
		}
	}
	for _, pv := range g.pvs {
		if _, err := kube.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{}); err != nil {
			return err
		}
	}
	for _, c := range g.pvcs {
		if _, err := kube.CoreV1().PersistentVolumeClaims(diffNS).Create(ctx, c, metav1.CreateOptions{}); err != nil {
			return err
		}
	}
	for _, p := range g.existing {
		if _, err := kube.CoreV1().Pods(diffNS).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			return err
		}
	}
	return nil
}

// unsettled says what of the world is not ready yet on one poll's view of the cluster ("" when
// all is): nodes Ready with TopoLVM's label (and capacity where they have Local SSDs), existing
// Pods Running, static PVCs Bound. A batch that never settles reports it per world.
func (g *genWorld) unsettled(v *clusterView) string {
	for _, n := range g.nodes {
		got := v.nodes[n.Name]
		if got == nil {
			return "node " + n.Name + " not listed"
		}
		hasSSD := n.Annotations["sandbox.olapgke.io/local-nvme-ssd-count"] != "0"
		if hasSSD && got.Labels["topology.topolvm.io/node"] == "" {
			return "node " + n.Name + " has no topology.topolvm.io/node label (TopoLVM's node plugin not registered)"
		}
		if stsutil.NodeReady(got) != corev1.ConditionTrue {
			return "node " + n.Name + " not Ready"
		}
		for _, t := range got.Spec.Taints {
			if t.Key == corev1.TaintNodeNotReady {
				return "node " + n.Name + " still has the " + t.Key + " taint"
			}
		}
		if hasSSD && !v.caps[n.Name] {
			return "node " + n.Name + " has no CSIStorageCapacity above 0 for " + diffStorageClass
		}
	}
	for _, p := range g.existing {
		got := v.pods[p.Name]
		if got == nil {
			return "Pod " + p.Name + " not listed"
		}
		if got.Status.Phase != corev1.PodRunning {
			return fmt.Sprintf("Pod %s is %q, not Running", p.Name, got.Status.Phase)
		}
	}
	for _, c := range g.pvcs {
		if c.Spec.VolumeName == "" {
			continue
		}
		got := v.pvcs[c.Name]
		if got == nil {
			return "PVC " + c.Name + " not listed"
		}
		if got.Status.Phase != corev1.ClaimBound {
			return fmt.Sprintf("PVC %s is %q, not Bound", c.Name, got.Status.Phase)
		}
	}
	return ""
}

// clusterView is what one settle poll reads: one LIST per kind for the whole batch of worlds
// (GETs per object were ~150 requests a poll for 25 worlds).
type clusterView struct {
	nodes map[string]*corev1.Node
	pods  map[string]*corev1.Pod                   // in diffNS
	pvcs  map[string]*corev1.PersistentVolumeClaim // in diffNS
	caps  map[string]bool                          // nodes with a CSIStorageCapacity
}

func readView(ctx context.Context, kube kubernetes.Interface) (*clusterView, error) {
	v := &clusterView{nodes: map[string]*corev1.Node{}, pods: map[string]*corev1.Pod{}, pvcs: map[string]*corev1.PersistentVolumeClaim{}}
	nodes, err := kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	for i := range nodes.Items {
		v.nodes[nodes.Items[i].Name] = &nodes.Items[i]
	}
	pods, err := kube.CoreV1().Pods(diffNS).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	for i := range pods.Items {
		v.pods[pods.Items[i].Name] = &pods.Items[i]
	}
	pvcs, err := kube.CoreV1().PersistentVolumeClaims(diffNS).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	for i := range pvcs.Items {
		v.pvcs[pvcs.Items[i].Name] = &pvcs.Items[i]
	}
	if v.caps, err = capacityNodes(ctx, kube); err != nil {
		return nil, err
	}
	return v, nil
}

func (g *genWorld) delete(kube kubernetes.Interface) {
	ctx := context.Background()
	zero := int64(0)
	for _, p := range append(append([]*corev1.Pod{}, g.existing...), g.probe) {
		_ = kube.CoreV1().Pods(diffNS).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
	}
	for _, c := range g.pvcs {
		_ = kube.CoreV1().PersistentVolumeClaims(diffNS).Delete(ctx, c.Name, metav1.DeleteOptions{})
	}
	for _, pv := range g.pvs {
		_ = kube.CoreV1().PersistentVolumes().Delete(ctx, pv.Name, metav1.DeleteOptions{})
	}
	for _, n := range g.nodes {
		_ = kube.CoreV1().Nodes().Delete(ctx, n.Name, metav1.DeleteOptions{})
	}
}

// readSnapshot lists what the planner reads for placement.
func readSnapshot(ctx context.Context, kube kubernetes.Interface) (planner.Snapshot, error) {
	var s planner.Snapshot
	pods, err := kube.CoreV1().Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	if err != nil {
		return s, err
	}
	nodes, err := kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return s, err
	}
	pvs, err := kube.CoreV1().PersistentVolumes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return s, err
	}
	pvcs, err := kube.CoreV1().PersistentVolumeClaims(diffNS).List(ctx, metav1.ListOptions{})
	if err != nil {
		return s, err
	}
	scs, err := kube.StorageV1().StorageClasses().List(ctx, metav1.ListOptions{})
	if err != nil {
		return s, err
	}
	caps, err := kube.StorageV1().CSIStorageCapacities(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	if err != nil {
		return s, err
	}
	drivers, err := kube.StorageV1().CSIDrivers().List(ctx, metav1.ListOptions{})
	if err != nil {
		return s, err
	}
	csiNodes, err := kube.StorageV1().CSINodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return s, err
	}
	s.AllPods, s.Nodes, s.PVs, s.PVCs, s.StorageClasses = pods.Items, nodes.Items, pvs.Items, pvcs.Items, scs.Items
	s.Capacities, s.CSIDrivers, s.CSINodes = caps.Items, drivers.Items, csiNodes.Items
	return s, nil
}

// capacityNodes are the nodes whose CSIStorageCapacity for the probes' StorageClass is published
// and not zero. Every Local-SSD node of a world has a volume group (375 GiB per disk), so a zero is
// a first publication that raced TopoLVM's capacity annotation (external-provisioner's
// GetCapacity answered from a topolvm-controller cache that had not seen it yet): it is corrected
// on the next capacity poll, and judging the world before then would compare the planner on one
// capacity with the scheduler on the next.
func capacityNodes(ctx context.Context, kube kubernetes.Interface) (map[string]bool, error) {
	l, err := kube.StorageV1().CSIStorageCapacities(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	out := map[string]bool{}
	for _, c := range l.Items {
		if c.NodeTopology != nil && c.StorageClassName == diffStorageClass && c.Capacity != nil && c.Capacity.Sign() > 0 {
			out[c.NodeTopology.MatchLabels["topology.topolvm.io/node"]] = true
		}
	}
	return out, nil
}

// outcome waits until the real scheduler has decided about the probe: bound to a node, or
// PodScheduled=False (Unschedulable).
func outcome(ctx context.Context, kube kubernetes.Interface, name string) (node, msg string, err error) {
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 90*time.Second, true, func(ctx context.Context) (bool, error) {
		p, err := kube.CoreV1().Pods(diffNS).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if p.Spec.NodeName != "" {
			node = p.Spec.NodeName
			return true, nil
		}
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
				msg = c.Message
				return true, nil
			}
		}
		return false, nil
	})
	return node, msg, err
}

func TestAccSchedulerDifferential(t *testing.T) {
	env := acctest.Sandbox(t)
	// The test's own client, above client-go's default 5 QPS: each world's creation and its
	// probe's outcome poll are many requests (settling once read every object one by one, ~150
	// GETs a poll for 25 worlds, ~30 s a poll at 5 QPS: a CI failure; now a LIST per kind).
	cfg := rest.CopyConfig(env.REST)
	cfg.QPS, cfg.Burst = 200, 400
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: diffNS}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	n, base := 200, int64(20261201)
	if v := os.Getenv("OLAPGKE_DIFF_WORLDS"); v != "" {
		n, _ = strconv.Atoi(v)
	}
	var seeds []int64
	if v := os.Getenv("OLAPGKE_DIFF_SEED"); v != "" {
		s, _ := strconv.ParseInt(v, 10, 64)
		seeds = []int64{s}
	} else {
		for i := 0; i < n; i++ {
			seeds = append(seeds, base+int64(i))
		}
	}
	const batch = 25
	agree, boundN := 0, 0
	for start := 0; start < len(seeds); start += batch {
		var worlds []*genWorld
		for i := start; i < min(start+batch, len(seeds)); i++ {
			worlds = append(worlds, generate(i, seeds[i]))
		}
		for _, g := range worlds {
			if err := g.create(ctx, kube); err != nil {
				t.Fatalf("seed %d: creating the world: %v", g.seed, err)
			}
		}
		// A read that fails (the API server is busy on 2 shared cores: a client timeout) is
		// asked again on the next poll; the last such error is reported if the worlds never settle.
		var lastErr error
		var waiting []string
		err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
			v, err := readView(ctx, kube)
			if err != nil {
				lastErr = err
				return false, nil //nolint:nilerr // retried on the next poll
			}
			waiting = waiting[:0]
			for _, g := range worlds {
				if why := g.unsettled(v); why != "" {
					waiting = append(waiting, fmt.Sprintf("seed %d: %s", g.seed, why))
				}
			}
			return len(waiting) == 0, nil
		})
		if err != nil {
			t.Fatalf("worlds %d..%d did not settle: %v (last read error: %v); still waiting on:\n%s",
				start, start+len(worlds)-1, err, lastErr, strings.Join(waiting, "\n"))
		}
		snap, err := readSnapshot(ctx, kube)
		if err != nil {
			t.Fatal(err)
		}
		// One verdict per world; worlds do not see each other (node selector, labels), so they
		// are judged on one snapshot, each without the others' probes.
		verdicts := map[int]planner.Verdict{}
		for _, g := range worlds {
			ix := planner.NewIndex(&snap)
			verdicts[g.id] = planner.PodCanSchedule(g.probe, nil, ix)
		}
		var wg sync.WaitGroup
		type result struct {
			node, msg string
			err       error
		}
		results := make([]result, len(worlds))
		for i, g := range worlds {
			if _, err := kube.CoreV1().Pods(diffNS).Create(ctx, g.probe, metav1.CreateOptions{}); err != nil {
				t.Fatalf("seed %d: creating the probe: %v", g.seed, err)
			}
			wg.Go(func() {
				n, m, err := outcome(ctx, kube, g.probe.Name)
				results[i] = result{n, m, err}
			})
		}
		wg.Wait()
		for i, g := range worlds {
			r, v := results[i], verdicts[g.id]
			if r.err != nil {
				t.Errorf("seed %d: the scheduler did not decide: %v\n%s", g.seed, r.err, strings.Join(g.what, "\n"))
				continue
			}
			bound := r.node != ""
			if bound != v.OK {
				t.Errorf("seed %d (rerun with OLAPGKE_DIFF_SEED=%d): planner OK=%v (%s), scheduler bound=%v (node %q, %q)\n%s",
					g.seed, g.seed, v.OK, v.Reason, bound, r.node, r.msg, strings.Join(g.what, "\n"))
				continue
			}
			agree++
			if bound {
				boundN++
			}
		}
		for _, g := range worlds {
			g.delete(kube)
		}
	}
	t.Logf("planner and kube-scheduler agree on %d of %d worlds (%d bound, %d left Pending)", agree, len(seeds), boundN, agree-boundN)
	if boundN == 0 || boundN == agree {
		t.Errorf("the worlds need both outcomes to prove anything (%d bound of %d)", boundN, agree)
	}
	_ = storagev1.StorageClass{}
}
