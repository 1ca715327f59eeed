package sandboxtest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"
)

// TopoLVM's real node lifecycle on `up --topolvm real` (issue #17): the startup taint, a VM
// recreated under the same name, restart_lvmd's rollout, and the bring-up stages of the world
// file. Each test starts its own sandbox with its own world.

const (
	startupTaint   = "olapgke.io/storage-not-ready"
	annBootstrapVG = "olapgke.io/volume-group"
	capacityPrefix = "capacity.topolvm.io/"
	annConfigHash  = "sandbox.olapgke.io/lvmd-config-hash"
	lvmdNamespace  = "topolvm-system"
	lvmdConfigMap  = "topolvm-lvmd-0" // also the lvmd DaemonSet's name
	localSSDBytes  = int64(375) << 30
	spareBytes     = int64(10) << 30 // lvmd's default spare-gb
)

type realSandbox struct {
	kube    kubernetes.Interface
	dyn     dynamic.Interface
	control string // OLAPGKE_SANDBOX_CONTROL
}

// startRealSandboxWorld is startRealTopoLVMSandbox with a world of the test's own (env: extra
// variables of the sandbox's environment).
func startRealSandboxWorld(t *testing.T, worldYAML string, env ...string) *realSandbox {
	t.Helper()
	topolvmBin := topolvmBinOrSkip(t)
	p := startRealProcess(t, worldYAML, topolvmBin, nil, env...)
	return &realSandbox{kube: kubernetes.NewForConfigOrDie(p.rest), dyn: dynamic.NewForConfigOrDie(p.rest), control: p.env["OLAPGKE_SANDBOX_CONTROL"]}
}

func (sb *realSandbox) nodesOf(t *testing.T, pool string) []corev1.Node {
	t.Helper()
	l, err := sb.kube.CoreV1().Nodes().List(t.Context(), metav1.ListOptions{LabelSelector: poolLabel + "=" + pool})
	if err != nil || len(l.Items) == 0 {
		t.Fatalf("nodes of %s: %v (%d)", pool, err, len(l.Items))
	}
	return l.Items
}

// capacityOf is external-provisioner's CSIStorageCapacity for the default StorageClass on node.
func (sb *realSandbox) capacityOf(ctx context.Context, node string) (*resource.Quantity, error) {
	caps, err := sb.kube.StorageV1().CSIStorageCapacities(lvmdNamespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	for _, c := range caps.Items {
		if c.StorageClassName == storageClass && c.NodeTopology != nil && c.NodeTopology.MatchLabels[topolvmNode] == node && c.Capacity != nil {
			return c.Capacity, nil
		}
	}
	return nil, fmt.Errorf("no CSIStorageCapacity for %s on %s", storageClass, node)
}

// topolvmOn is what TopoLVM's node agent leaves on a node: its topology label, the driver in the
// node's CSINode, the capacity annotations.
func (sb *realSandbox) topolvmOn(ctx context.Context, node string) (label, csiNode bool, capacity []string, err error) {
	n, err := sb.kube.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
	if err != nil {
		return false, false, nil, err
	}
	_, label = n.Labels[topolvmNode]
	for k := range n.Annotations {
		if strings.HasPrefix(k, capacityPrefix) {
			capacity = append(capacity, k)
		}
	}
	slices.Sort(capacity)
	cn, err := sb.kube.StorageV1().CSINodes().Get(ctx, node, metav1.GetOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return false, false, nil, err
	}
	if err == nil {
		csiNode = slices.ContainsFunc(cn.Spec.Drivers, func(d storagev1.CSINodeDriver) bool { return d.Name == "topolvm.io" })
	}
	return label, csiNode, capacity, nil
}

func hasStartupTaint(n *corev1.Node) bool {
	return slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == startupTaint })
}

// TestRealTopoLVM_StartupTaintGatesTheNodeAgent: on a node registered with the startup taint
// olapgke.io/storage-not-ready the node has no volume group yet. lvmd runs there (its DaemonSet
// tolerates the taint, as olapgke's chart values make it) and exits for lack of the group
// (BackOff Events), so the kubelet registers no plugin: no topology label, no CSINode driver, no
// capacity, and `up` does not wait for those nodes. Once the bootstrap created the group and
// removed the taint (one JSON patch writing olapgke.io/volume-group), lvmd's next restart finds
// it and capacity is published for the node.
func TestRealTopoLVM_StartupTaintGatesTheNodeAgent(t *testing.T) {
	t.Parallel() // own sandbox, waits on its controllers: beside the others that do (CI time, issue 44)
	sb := startRealSandboxWorld(t, `
clusters:
- name: olap
  location: us-central1-a
  nodePools:
  - name: pool-a
    nodeCount: 1
  - name: pool-s
    nodeCount: 2
    taints:
    - key: olapgke.io/storage-not-ready
      value: "true"
      effect: NO_SCHEDULE
`)
	tainted := sb.nodesOf(t, "pool-s")
	for _, n := range tainted {
		if !hasStartupTaint(&n) {
			t.Fatalf("node %s registered without the startup taint: %v", n.Name, n.Spec.Taints)
		}
	}
	// pool-a's agent ran through its whole bring-up before `up` was ready; those of the tainted
	// nodes would have started at the same time. Give them as long again, and more.
	holds(t, 3*time.Second, "no TopoLVM on tainted nodes", func(ctx context.Context) error {
		for _, n := range tainted {
			label, csiNode, capacity, err := sb.topolvmOn(ctx, n.Name)
			if err != nil {
				return err
			}
			if label || csiNode || len(capacity) > 0 {
				return fmt.Errorf("node %s carries the startup taint but has TopoLVM: label %v, CSINode driver %v, capacity annotations %v", n.Name, label, csiNode, capacity)
			}
		}
		return nil
	})

	// lvmd runs there (the lvmd DaemonSet tolerates the startup taint, as olapgke's chart values
	// do) and exits: the volume group does not exist until the bootstrap created it.
	poll(t, time.Minute, "lvmd crash-loops on the tainted nodes", func(ctx context.Context) (bool, error) {
		evs, err := nodeBackOffs(ctx, sb.kube)
		if err != nil {
			return false, err
		}
		seen := map[string]bool{}
		for _, e := range evs {
			if strings.Contains(e.Message, "container lvmd") && strings.Contains(e.Message, "vg-ssd") {
				seen[e.InvolvedObject.Name] = true
			}
		}
		for _, n := range tainted {
			if !seen[n.Name] {
				return false, fmt.Errorf("no lvmd BackOff naming vg-ssd on %s yet", n.Name)
			}
		}
		return true, nil
	})

	// The bootstrap's pass on the first tainted node: annotation, then taint gone, in one patch.
	node := tainted[0].Name
	idx := slices.IndexFunc(tainted[0].Spec.Taints, func(t corev1.Taint) bool { return t.Key == startupTaint })
	p := "/spec/taints/" + strconv.Itoa(idx)
	patch, _ := json.Marshal([]map[string]any{
		{"op": "test", "path": p + "/key", "value": startupTaint},
		{"op": "remove", "path": p},
		{"op": "add", "path": "/metadata/annotations/" + strings.ReplaceAll(annBootstrapVG, "/", "~1"), "value": "vg-ssd created by the test on /dev/nvme0n1,/dev/nvme0n2"},
	})
	if _, err := sb.kube.CoreV1().Nodes().Patch(t.Context(), node, types.JSONPatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	poll(t, time.Minute, "TopoLVM on "+node+" once the taint is gone", func(ctx context.Context) (bool, error) {
		label, csiNode, capacity, err := sb.topolvmOn(ctx, node)
		if err != nil {
			return false, err
		}
		if !label || !csiNode || len(capacity) == 0 {
			return false, fmt.Errorf("label %v, CSINode driver %v, capacity annotations %v", label, csiNode, capacity)
		}
		return true, nil
	})
	full := 2*localSSDBytes - spareBytes
	poll(t, 90*time.Second, "CSIStorageCapacity of "+node, func(ctx context.Context) (bool, error) {
		q, err := sb.capacityOf(ctx, node)
		if err != nil {
			return false, err
		}
		if q.Value() != full {
			return false, fmt.Errorf("capacity %s, want %d bytes", q, full)
		}
		return true, nil
	})
	// The other tainted node still has nothing.
	label, csiNode, capacity, err := sb.topolvmOn(t.Context(), tainted[1].Name)
	if err != nil || label || csiNode || len(capacity) > 0 {
		t.Errorf("node %s still carries the startup taint but has TopoLVM: label %v, CSINode driver %v, capacity annotations %v (%v)", tainted[1].Name, label, csiNode, capacity, err)
	}
}

// TestRealTopoLVM_SameNameRecreationEmptiesTheDisks: a reboot first (the control endpoint's
// reboot: a new boot ID on the same VM) keeps the node's Local SSD data: a volume provisioned
// after it is counted on top of the one made before. Then GKE recreates the node's VM under the
// same name (auto-repair; the control endpoint's same-name mode): the Node keeps its UID, gets a
// new system UUID and boot ID, and its Local SSDs are new and empty. lvmd starts again on the
// empty volume group and reports it whole: the capacity annotation and the CSIStorageCapacity go
// back to full, while the PV and the LogicalVolume of the lost volume stay (TopoLVM does not
// notice the loss).
func TestRealTopoLVM_SameNameRecreationEmptiesTheDisks(t *testing.T) {
	t.Parallel() // own sandbox, waits on its controllers: beside the others that do (CI time, issue 44)
	sb := startRealSandboxWorld(t, `
clusters:
- name: olap
  location: us-central1-a
  nodePools:
  - name: pool-a
topolvm:
  bringUp:
    capacityPoll: 3s
`)
	ns, sts := runOrdinals(t, sb.kube)
	_, pvs := storageOf(t, sb.kube, ns, sts.Name, int(*sts.Spec.Replicas))
	pv := pvs[0]
	node, err := pvNode(pv)
	if err != nil {
		t.Fatal(err)
	}
	before, err := sb.kube.CoreV1().Nodes().Get(t.Context(), node, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	full := 2*localSSDBytes - spareBytes
	annotated := func(n *corev1.Node) int64 {
		v, _ := strconv.ParseInt(n.Annotations[capacityPrefix+"00default"], 10, 64)
		return v
	}
	used := annotated(before)
	if used >= full {
		t.Fatalf("node %s capacity annotation %d before the recreation: its volume is not counted (full %d)", node, used, full)
	}

	// A reboot keeps the disks: a 1 GiB volume made after it leaves the annotation 1 GiB below
	// what it was (on new, empty disks it would be 1 GiB below full).
	if err := rebootVM(t.Context(), sb.control, node); err != nil {
		t.Fatal(err)
	}
	rebooted, err := sb.kube.CoreV1().Nodes().Get(t.Context(), node, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if rebooted.UID != before.UID || rebooted.Status.NodeInfo.BootID == before.Status.NodeInfo.BootID ||
		rebooted.Status.NodeInfo.SystemUUID != before.Status.NodeInfo.SystemUUID {
		t.Fatalf("not a reboot: UID %s -> %s, boot ID %s -> %s, system UUID %s -> %s", before.UID, rebooted.UID,
			before.Status.NodeInfo.BootID, rebooted.Status.NodeInfo.BootID, before.Status.NodeInfo.SystemUUID, rebooted.Status.NodeInfo.SystemUUID)
	}
	diffClaim(t, &diffSide{name: "real", kube: sb.kube, control: sb.control}, ns, "after-reboot", node, "1Gi", true)
	poll(t, time.Minute, "capacity annotation of "+node+" 1 GiB lower after the reboot", func(ctx context.Context) (bool, error) {
		n, err := sb.kube.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if got := annotated(n); got != used-1<<30 {
			return false, fmt.Errorf("annotation %d, want %d (%d before the reboot; full %d)", got, used-1<<30, used, full)
		}
		return true, nil
	})

	if err := recreateVM(t.Context(), sb.control, node, "same-name"); err != nil {
		t.Fatal(err)
	}
	after, err := sb.kube.CoreV1().Nodes().Get(t.Context(), node, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if after.UID != before.UID || after.Status.NodeInfo.BootID == rebooted.Status.NodeInfo.BootID || after.Status.NodeInfo.SystemUUID == before.Status.NodeInfo.SystemUUID {
		t.Fatalf("not a same-name recreation: UID %s -> %s, boot ID %s -> %s, system UUID %s -> %s", before.UID, after.UID,
			rebooted.Status.NodeInfo.BootID, after.Status.NodeInfo.BootID, before.Status.NodeInfo.SystemUUID, after.Status.NodeInfo.SystemUUID)
	}
	poll(t, time.Minute, "capacity annotation of "+node+" back to full", func(ctx context.Context) (bool, error) {
		n, err := sb.kube.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if got := annotated(n); got != full {
			return false, fmt.Errorf("annotation %d, want %d", got, full)
		}
		return true, nil
	})
	poll(t, time.Minute, "CSIStorageCapacity of "+node+" back to full", func(ctx context.Context) (bool, error) {
		q, err := sb.capacityOf(ctx, node)
		if err != nil {
			return false, err
		}
		if q.Value() != full {
			return false, fmt.Errorf("capacity %s, want %d bytes", q, full)
		}
		return true, nil
	})
	// The old volume's objects are still there, still pinned to the node.
	got, err := sb.kube.CoreV1().PersistentVolumes().Get(t.Context(), pv.Name, metav1.GetOptions{})
	if err != nil || got.UID != pv.UID {
		t.Errorf("PV %s after the recreation: %v", pv.Name, err)
	}
	lv, err := sb.dyn.Resource(logicalVolumes).Get(t.Context(), pv.Name, metav1.GetOptions{})
	if err != nil {
		t.Errorf("LogicalVolume %s after the recreation: %v", pv.Name, err)
	} else if lv.Object["spec"].(map[string]any)["nodeName"] != node {
		t.Errorf("LogicalVolume %s moved: %v", pv.Name, lv.Object["spec"])
	}
}

// TestRealTopoLVM_RestartLVMDRollsTheNodes: lvmd reads lvmd.yaml only when it starts, so a
// ConfigMap edit changes nothing on the nodes; restart_lvmd's pod-template annotation on the
// lvmd DaemonSet rolls it (RollingUpdate, one node at a time): every node's lvmd loads the new
// configuration (the new class's capacity annotation, the per-node config hash). A class on a
// volume group the nodes lack makes the first replaced lvmd crash-loop (Events BackOff on the
// Node naming the group) and stalls the rollout there; the next template change rolls on.
func TestRealTopoLVM_RestartLVMDRollsTheNodes(t *testing.T) {
	t.Parallel() // own sandbox, waits on its controllers: beside the others that do (CI time, issue 44)
	// The new class "fast" is thin: lvmd v0.41 allows one thick class per volume group, and a
	// thin class needs its pool on the node (the node's set-up makes fastpool and fast2pool, 100
	// GiB each; "fast2" below is thin for the same reason).
	sb := startRealSandboxWorld(t, `
clusters:
- name: olap
  location: us-central1-a
  nodePools:
  - name: pool-a
`, "OLAPGKE_SANDBOX_THIN_POOLS=fastpool=107374182400,fast2pool=107374182400")
	ctx := t.Context()
	nodes := sb.nodesOf(t, "pool-a")
	cms := sb.kube.CoreV1().ConfigMaps(lvmdNamespace)
	cm, err := cms.Get(ctx, lvmdConfigMap, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	original := cm.Data["lvmd.yaml"]
	fastClass := map[string]any{"name": "fast", "volume-group": "vg-ssd", "type": "thin",
		"thin-pool": map[string]any{"name": "fastpool", "overprovision-ratio": 2}}
	hash := func(s string) string {
		sum := sha256.Sum256([]byte(s))
		return hex.EncodeToString(sum[:])
	}
	// setClasses writes lvmd.yaml with extra device classes after the existing ones and returns
	// the text.
	setClasses := func(extra ...map[string]any) string {
		t.Helper()
		doc := map[string]any{}
		if err := yaml.Unmarshal([]byte(original), &doc); err != nil {
			t.Fatal(err)
		}
		classes, _ := doc["device-classes"].([]any)
		for _, e := range extra {
			classes = append(classes, e)
		}
		doc["device-classes"] = classes
		b, err := yaml.Marshal(doc)
		if err != nil {
			t.Fatal(err)
		}
		cm, err := cms.Get(ctx, lvmdConfigMap, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		cm.Data["lvmd.yaml"] = string(b)
		if _, err := cms.Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	// restartLVMD is what the provider's restart_lvmd does (deviceclass/effects.go restartLVMD).
	restartLVMD := func(text string) {
		t.Helper()
		patch, _ := json.Marshal(map[string]any{"spec": map[string]any{"template": map[string]any{"metadata": map[string]any{"annotations": map[string]string{"olapgke.io/lvmd-config-hash": hash(text)}}}}})
		if _, err := sb.kube.AppsV1().DaemonSets(lvmdNamespace).Patch(ctx, lvmdConfigMap, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// loaded: every node's lvmd runs the text (hash) and publishes capacity for the classes.
	loaded := func(text string, classes ...string) func(ctx context.Context) (bool, error) {
		return func(ctx context.Context) (bool, error) {
			for _, n := range nodes {
				got, err := sb.kube.CoreV1().Nodes().Get(ctx, n.Name, metav1.GetOptions{})
				if err != nil {
					return false, err
				}
				if got.Annotations[annConfigHash] != hash(text) {
					return false, fmt.Errorf("node %s: %s %q, want %q", n.Name, annConfigHash, got.Annotations[annConfigHash], hash(text))
				}
				for _, c := range classes {
					if _, ok := got.Annotations[capacityPrefix+c]; !ok {
						return false, fmt.Errorf("node %s has no %s%s", n.Name, capacityPrefix, c)
					}
				}
			}
			return true, nil
		}
	}
	if ok, err := loaded(original, "ssd")(ctx); !ok {
		t.Fatalf("before any change: %v", err)
	}

	// A new class on the same volume group: nothing changes until the DaemonSet is rolled.
	withFast := setClasses(fastClass)
	holds(t, 3*time.Second, "a ConfigMap edit alone reaches no lvmd", func(ctx context.Context) error {
		_, err := loaded(original, "ssd")(ctx)
		if err != nil {
			return err
		}
		for _, n := range nodes {
			got, err := sb.kube.CoreV1().Nodes().Get(ctx, n.Name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			if _, ok := got.Annotations[capacityPrefix+"fast"]; ok {
				return fmt.Errorf("node %s has %sfast before lvmd was restarted", n.Name, capacityPrefix)
			}
		}
		return nil
	})
	restartLVMD(withFast)
	poll(t, 2*time.Minute, "every lvmd restarted on the new config", loaded(withFast, "ssd", "fast"))

	// A class on a volume group no node has: the first new lvmd crash-loops, the rollout stops.
	withGhost := setClasses(fastClass,
		map[string]any{"name": "ghost", "volume-group": "vg-missing"})
	restartLVMD(withGhost)
	backOffNodes := func(ctx context.Context) (map[string]string, error) {
		evs, err := nodeBackOffs(ctx, sb.kube)
		if err != nil {
			return nil, err
		}
		out := map[string]string{}
		for _, e := range evs {
			if strings.Contains(e.Message, "vg-missing") && e.Type == corev1.EventTypeWarning {
				out[e.InvolvedObject.Name] = e.Message
			}
		}
		return out, nil
	}
	var crashing string
	poll(t, time.Minute, "BackOff Event naming vg-missing", func(ctx context.Context) (bool, error) {
		got, err := backOffNodes(ctx)
		for n, msg := range got {
			crashing = n
			t.Logf("node %s: BackOff: %s", n, msg)
		}
		return len(got) > 0, err
	})
	holds(t, 4*time.Second, "the rollout stalls on the crash-looping node", func(ctx context.Context) error {
		got, err := backOffNodes(ctx)
		if err != nil {
			return err
		}
		if len(got) != 1 {
			return fmt.Errorf("lvmd crash-loops on %d nodes, want the first replaced one only: %v", len(got), got)
		}
		for _, n := range nodes {
			if n.Name == crashing {
				continue
			}
			g, err := sb.kube.CoreV1().Nodes().Get(ctx, n.Name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			if g.Annotations[annConfigHash] != hash(withFast) {
				return fmt.Errorf("node %s left the previous config while the rollout should stall: %s %q", n.Name, annConfigHash, g.Annotations[annConfigHash])
			}
		}
		return nil
	})

	// Fixed: the class goes, the DaemonSet is rolled again, the crash-looping node first.
	fixed := setClasses(fastClass,
		map[string]any{"name": "fast2", "volume-group": "vg-ssd", "type": "thin",
			"thin-pool": map[string]any{"name": "fast2pool", "overprovision-ratio": 2}})
	restartLVMD(fixed)
	poll(t, 2*time.Minute, "every lvmd on the fixed config", loaded(fixed, "ssd", "fast", "fast2"))
	// The rollouts crashed nothing but the lvmd that lacked its volume group.
	evs, err := nodeBackOffs(ctx, sb.kube)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range evs {
		if e.InvolvedObject.Name != crashing || !strings.Contains(e.Message, "vg-missing") {
			t.Errorf("unexpected BackOff on node %s: %s", e.InvolvedObject.Name, e.Message)
		}
	}
}

// TestRealTopoLVM_BringUpDelaysFromTheWorld: the world's topolvm.bringUp stages hold back a new
// node's TopoLVM: its capacity annotation comes no earlier than lvmdStart after the Node was
// created, its topology label no earlier than lvmdStart + csiRegistration.
func TestRealTopoLVM_BringUpDelaysFromTheWorld(t *testing.T) {
	const lvmdStart, csiRegistration = 3 * time.Second, 2 * time.Second
	sb := startRealSandboxWorld(t, fmt.Sprintf(`
clusters:
- name: olap
  location: us-central1-a
  nodePools:
  - name: pool-a
    nodeCount: 1
topolvm:
  bringUp:
    lvmdStart: %s
    csiRegistration: %s
    capacityPoll: 1m
`, lvmdStart, csiRegistration))
	old := sb.nodesOf(t, "pool-a")[0]
	ctx := t.Context()
	w, err := sb.kube.CoreV1().Nodes().Watch(ctx, metav1.ListOptions{LabelSelector: poolLabel + "=pool-a"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	recreated := make(chan error, 1)
	go func() { recreated <- recreateVM(ctx, sb.control, old.Name, "new-name") }()

	var created time.Time
	var annotatedAt, labelledAt time.Time
	timeout := time.After(2 * time.Minute)
	for labelledAt.IsZero() {
		select {
		case err := <-recreated:
			if err != nil {
				t.Fatal(err)
			}
			recreated = nil
		case <-timeout:
			t.Fatalf("the new node got no TopoLVM within 2 minutes (annotation at %v)", annotatedAt)
		case ev, ok := <-w.ResultChan():
			if !ok {
				t.Fatal("node watch closed")
			}
			n, isNode := ev.Object.(*corev1.Node)
			if !isNode || n.Name == old.Name || ev.Type == watch.Deleted {
				continue
			}
			now := time.Now()
			created = n.CreationTimestamp.Time
			if _, ok := n.Annotations[capacityPrefix+"00default"]; ok && annotatedAt.IsZero() {
				annotatedAt = now
			}
			if _, ok := n.Labels[topolvmNode]; ok {
				labelledAt = now
			}
		}
	}
	// creationTimestamp has whole seconds (rounded down): the spans measured are at most a second
	// longer than the real ones, never shorter.
	toAnnotation, toLabel := annotatedAt.Sub(created), labelledAt.Sub(created)
	t.Logf("new node: capacity annotation %s after creation, topology label %s", toAnnotation, toLabel)
	if annotatedAt.IsZero() || toAnnotation < lvmdStart {
		t.Errorf("capacity annotation %s after the Node's creation, want >= lvmdStart %s", toAnnotation, lvmdStart)
	}
	if toLabel < lvmdStart+csiRegistration {
		t.Errorf("topology label %s after the Node's creation, want >= lvmdStart + csiRegistration %s", toLabel, lvmdStart+csiRegistration)
	}
}

// starvedWorld is the bench's 500-node world (internal/bench RealTopoLVMWorld): no bring-up
// delays, so the 500 node agents start in one burst.
const starvedWorld = `
clusters:
- name: olap
  location: us-central1-a
  nodePools:
  - name: pool-a
    nodeCount: 495
  - name: pool-b
    nodeCount: 5
topolvm:
  bringUp:
    lvmdStart: 0s
    csiRegistration: 0s
    capacityQPS: 500
    capacityBurst: 500
`

// A 500-node start-up with one CPU per process (GOMAXPROCS=1): olapgke-topolvm starts 500 node
// agents in one burst. csi-provisioner's and csi-resizer's connection to TopoLVM's controller
// (csi-lib-utils Connect) gives its HTTP/2 handshake 1 s and exits the process on a second dial
// ("Lost connection to CSI driver, exiting"). While the sidecars connected during the burst, this
// start-up died that way in 4 of 7 runs on a 2-core machine; they now connect before the node
// agents start.
func TestRealTopoLVM_StarvedStartKeepsTheSidecarsConnected(t *testing.T) {
	sb := startRealSandboxWorld(t, starvedWorld, "GOMAXPROCS=1")
	// startRealProcess fails when the sandbox exits before ready; ready means every node has its
	// CSIStorageCapacity, which only a connected csi-provisioner publishes.
	caps, err := sb.kube.StorageV1().CSIStorageCapacities(lvmdNamespace).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(caps.Items) != 500 {
		t.Errorf("%d CSIStorageCapacity objects at ready, want 500 (one per node)", len(caps.Items))
	}
}
