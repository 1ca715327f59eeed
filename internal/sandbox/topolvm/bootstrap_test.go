package topolvm

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func taintedSSDNode(name string, count int) *corev1.Node {
	n := ssdNode(name, count)
	n.Labels = map[string]string{LabelLocalNVMeSSD: "true"}
	n.Spec.Taints = []corev1.Taint{{Key: "other", Effect: corev1.TaintEffectNoSchedule},
		{Key: StartupTaintKey, Value: "true", Effect: corev1.TaintEffectNoSchedule}}
	return n
}

func bootstrapDaemonSet() *appsv1.DaemonSet {
	return &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Namespace: "olapgke-system", Name: "vg-bootstrap",
		Labels: map[string]string{BootstrapLabel: BootstrapName}}}
}

// TestStartupTaintWaitsForBootstrap: a node registered with the startup taint has no volume group
// (no TopoLVM metadata, no capacity) until the bootstrap DaemonSet exists; then the taint goes
// (other taints stay), the annotation the script writes appears and capacity is published. A
// node without Local SSDs keeps the taint (the script finds no empty device).
func TestStartupTaintWaitsForBootstrap(t *testing.T) {
	t.Parallel()
	h := startSim(t, nil)
	h.runBootstrap()
	h.eventually("registrar learns the lvmd device classes", func() string {
		h.registrar.mu.Lock()
		defer h.registrar.mu.Unlock()
		if len(h.registrar.classes) == 0 {
			return "no classes"
		}
		return ""
	})
	tainted := taintedSSDNode("t1", 2)
	h.registrar.RegisterNode(tainted)
	if len(tainted.Finalizers) != 0 || tainted.Labels[TopologyKey] != "" || len(tainted.Annotations) != 1 {
		t.Fatalf("registrar completed a node whose volume group is not created: %+v", tainted.ObjectMeta)
	}
	noSSD := taintedSSDNode("t0", 0)
	h.create(tainted)
	h.create(noSSD)
	h.create(ssdNode("plain", 1))
	h.waitCSISC("plain", DefaultStorageClassName, LocalSSDBytes-10*gib)

	n, err := h.kube.CoreV1().Nodes().Get(h.ctx, "t1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !hasStartupTaint(n) || n.Annotations[CapacityAnnPrefix+DefaultDeviceClass] != "" || n.Annotations[AnnBootstrapVolumeGroup] != "" {
		t.Fatalf("before the bootstrap: taints %v annotations %v", n.Spec.Taints, n.Annotations)
	}
	caps, err := h.kube.StorageV1().CSIStorageCapacities(DefaultNamespace).List(h.ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range caps.Items {
		if capacityNode(&c) == "t1" {
			t.Fatalf("capacity published before the bootstrap: %s", c.Name)
		}
	}

	if _, err := h.kube.AppsV1().DaemonSets("olapgke-system").Create(h.ctx, bootstrapDaemonSet(), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	h.waitCSISC("t1", DefaultStorageClassName, 2*LocalSSDBytes-10*gib)
	want := regexp.MustCompile(`^vg-ssd created \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ on /dev/nvme0n1,/dev/nvme0n2$`)
	h.eventually("t1 bootstrapped", func() string {
		n, err := h.kube.CoreV1().Nodes().Get(h.ctx, "t1", metav1.GetOptions{})
		if err != nil {
			return err.Error()
		}
		if hasStartupTaint(n) || len(n.Spec.Taints) != 1 || n.Spec.Taints[0].Key != "other" {
			return fmt.Sprintf("taints %v", n.Spec.Taints)
		}
		if v := n.Annotations[AnnBootstrapVolumeGroup]; !want.MatchString(v) {
			return fmt.Sprintf("annotation %q", v)
		}
		if n.Labels[TopologyKey] != "t1" {
			return fmt.Sprintf("labels %v", n.Labels)
		}
		return ""
	})
	h.waitNodeCapacity("t1", DefaultDeviceClass, 2*LocalSSDBytes-10*gib)
	n, err = h.kube.CoreV1().Nodes().Get(h.ctx, "t0", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !hasStartupTaint(n) || n.Annotations[AnnBootstrapVolumeGroup] != "" {
		t.Errorf("node without Local SSDs: taints %v annotations %v", n.Spec.Taints, n.Annotations)
	}
	if n, _ := h.kube.CoreV1().Nodes().Get(h.ctx, "plain", metav1.GetOptions{}); n.Annotations[AnnBootstrapVolumeGroup] != "" {
		t.Errorf("node without the Local-SSD label annotated: %v", n.Annotations)
	}
}

// TestVolumeGroupCreated: the decision nodeVolumeGroup builds on.
func TestVolumeGroupCreated(t *testing.T) {
	t.Parallel()
	taint := []corev1.Taint{{Key: StartupTaintKey, Effect: corev1.TaintEffectNoSchedule}}
	for name, tc := range map[string]struct {
		n    corev1.Node
		want bool
	}{
		"no taint":     {corev1.Node{}, true},
		"taint":        {corev1.Node{Spec: corev1.NodeSpec{Taints: taint}}, false},
		"bootstrapped": {corev1.Node{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{AnnBootstrapVolumeGroup: "vg-ssd created"}}, Spec: corev1.NodeSpec{Taints: taint}}, true},
		"registered":   {corev1.Node{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{TopologyKey: "n"}}, Spec: corev1.NodeSpec{Taints: taint}}, true},
	} {
		if got := volumeGroupCreated(&tc.n); got != tc.want {
			t.Errorf("%s: volumeGroupCreated = %v, want %v", name, got, tc.want)
		}
	}
}

// runBootstrap runs the simulated bootstrap DaemonSet's effect next to the simulator.
func (h *harness) runBootstrap() {
	go func() { _ = RunBootstrap(h.ctx, BootstrapOptions{Kube: h.kube}) }()
}

// nodeEvents returns "Type Reason: message" of the events about a Node.
func (h *harness) nodeEvents(node string) []string {
	l, err := h.kube.CoreV1().Events("").List(h.ctx, metav1.ListOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	var out []string
	for _, e := range l.Items {
		if e.InvolvedObject.Kind == "Node" && e.InvolvedObject.Name == node {
			for range max(e.Count, 1) {
				out = append(out, e.Type+" "+e.Reason+": "+e.Message)
			}
		}
	}
	return out
}

func (h *harness) node(name string) *corev1.Node {
	n, err := h.kube.CoreV1().Nodes().Get(h.ctx, name, metav1.GetOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	return n
}

// TestBootstrapLeavesForeignVolumeGroupAlone: a node whose Local SSDs hold another tool's volume
// group keeps the startup taint and gets no capacity; the bootstrap reports each skipped device
// and the missing group as Warning events (the script's LocalSSDSkipped, VolumeGroupNotCreated)
// and writes nothing. A foreign group named like the bootstrap's VG_NAME is adopted. The
// DaemonSet's VG_NAME is the group the nodes get.
func TestBootstrapLeavesForeignVolumeGroupAlone(t *testing.T) {
	t.Parallel()
	h := startSim(t, nil)
	h.runBootstrap()
	foreign := taintedSSDNode("f1", 2)
	foreign.Annotations[AnnForeignVolumeGroup] = "data"
	adopt := taintedSSDNode("a1", 1)
	adopt.Annotations[AnnForeignVolumeGroup] = "vg-ssd"
	h.create(foreign)
	h.create(adopt)
	h.create(taintedSSDNode("ok", 1))
	if _, err := h.kube.AppsV1().DaemonSets("olapgke-system").Create(h.ctx, bootstrapDaemonSet(), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	h.waitCSISC("ok", DefaultStorageClassName, LocalSSDBytes-10*gib)
	h.waitCSISC("a1", DefaultStorageClassName, LocalSSDBytes-10*gib)
	h.eventually("foreign node reported", func() string {
		ev := strings.Join(h.nodeEvents("f1"), "\n")
		for _, want := range []string{
			"Warning LocalSSDSkipped: /dev/nvme0n1 holds data (foreign-pv), not created by olapgke-vg-bootstrap: left untouched",
			"Warning LocalSSDSkipped: /dev/nvme0n2 holds data (foreign-pv), not created by olapgke-vg-bootstrap: left untouched",
			"Warning VolumeGroupNotCreated: no empty Local SSD matches /dev/disk/by-id/google-local-nvme-ssd-*; taint olapgke.io/storage-not-ready kept",
		} {
			if !strings.Contains(ev, want) {
				return "events: " + ev
			}
		}
		return ""
	})
	n := h.node("f1")
	if !hasStartupTaint(n) || n.Annotations[AnnBootstrapVolumeGroup] != "" || n.Labels[TopologyKey] != "" || n.Annotations[CapacityAnnPrefix+DefaultDeviceClass] != "" {
		t.Errorf("foreign node was touched: taints %v labels %v annotations %v", n.Spec.Taints, n.Labels, n.Annotations)
	}
	if v := h.node("a1").Annotations[AnnBootstrapVolumeGroup]; !strings.HasPrefix(v, "vg-ssd adopted ") {
		t.Errorf("adopted group annotated %q", v)
	}
	for _, e := range h.nodeEvents("a1") {
		if strings.Contains(e, "VolumeGroupCreated") {
			t.Errorf("adopted group was created again: %s", e)
		}
	}
	if got := h.nodeEvents("f1"); len(got) != 3 {
		t.Errorf("events repeat within one boot: %q", got)
	}

	// VG_NAME changed: new nodes get that group; a node whose devices are in the old group is
	// left alone (to the script they hold another volume group).
	ds := bootstrapDaemonSet()
	ds.Spec.Template.Spec.Containers = []corev1.Container{{Name: "vg-bootstrap", Env: []corev1.EnvVar{{Name: "VG_NAME", Value: "vg-x"}}}}
	if _, err := h.kube.AppsV1().DaemonSets(ds.Namespace).Update(h.ctx, ds, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The bootstrap has seen the new DaemonSet once it reports the bootstrapped node (as the
	// new Pods do after the rollout); a node registered before that gets the old VG_NAME.
	h.eventually("ok reported", func() string {
		ev := strings.Join(h.nodeEvents("ok"), "\n")
		if !strings.Contains(ev, "Warning LocalSSDSkipped: /dev/nvme0n1 holds vg-ssd (foreign-pv)") {
			return "events: " + ev
		}
		return ""
	})
	h.create(taintedSSDNode("x1", 1))
	h.eventually("x1 gets vg-x", func() string {
		n := h.node("x1")
		if n.Annotations[AnnVolumeGroup] != "vg-x" || !strings.HasPrefix(n.Annotations[AnnBootstrapVolumeGroup], "vg-x created ") {
			return fmt.Sprintf("annotations %v", n.Annotations)
		}
		return ""
	})
	if n := h.node("ok"); n.Annotations[AnnVolumeGroup] != "vg-ssd" || !strings.HasPrefix(n.Annotations[AnnBootstrapVolumeGroup], "vg-ssd created ") {
		t.Errorf("bootstrapped node rewritten after VG_NAME changed: %v", n.Annotations)
	}
}

// TestBootstrapRecreatesVolumeGroupAfterVMRecreation: a VM recreated under the same name (new
// system UUID and boot ID, same Node, no startup taint: GKE puts node-pool taints only on a Node
// it registers) has empty Local SSDs: the bootstrap creates the group again, says so in an Event
// and rewrites the annotation, as vg-bootstrap.sh does.
func TestBootstrapRecreatesVolumeGroupAfterVMRecreation(t *testing.T) {
	t.Parallel()
	h := startSim(t, nil)
	h.runBootstrap()
	n := taintedSSDNode("r1", 1)
	n.Status.NodeInfo.BootID, n.Status.NodeInfo.SystemUUID = "boot-1", "vm-1"
	h.create(n)
	if _, err := h.kube.AppsV1().DaemonSets("olapgke-system").Create(h.ctx, bootstrapDaemonSet(), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var first string
	h.eventually("r1 bootstrapped", func() string {
		n := h.node("r1")
		first = n.Annotations[AnnBootstrapVolumeGroup]
		if first == "" || n.Annotations[AnnBootstrapVM] != "vm-1" || hasStartupTaint(n) {
			return fmt.Sprintf("annotations %v taints %v", n.Annotations, n.Spec.Taints)
		}
		return ""
	})
	// Make the rewrite observable even within the same second.
	cur := h.node("r1")
	cur.Annotations[AnnBootstrapVolumeGroup] = "vg-ssd created 2000-01-01T00:00:00Z on /dev/nvme0n1"
	cur.Status.NodeInfo.BootID, cur.Status.NodeInfo.SystemUUID = "boot-2", "vm-2"
	if _, err := h.kube.CoreV1().Nodes().Update(h.ctx, cur, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	h.eventually("r1 bootstrapped again", func() string {
		n := h.node("r1")
		if n.Annotations[AnnBootstrapVM] != "vm-2" || strings.Contains(n.Annotations[AnnBootstrapVolumeGroup], "2000-01-01") {
			return fmt.Sprintf("annotations %v", n.Annotations)
		}
		return ""
	})
	// Events are written asynchronously (the recorder's broadcaster), the second as a count.
	h.eventually("one VolumeGroupCreated per boot", func() string {
		created := 0
		for _, e := range h.nodeEvents("r1") {
			if strings.HasPrefix(e, "Normal VolumeGroupCreated: created volume group vg-ssd on /dev/nvme0n1") {
				created++
			}
		}
		if created != 2 {
			return fmt.Sprintf("VolumeGroupCreated events: %d, want 2: %q", created, h.nodeEvents("r1"))
		}
		return ""
	})
}

// TestBootstrapCreatesThinPools: with THIN_POOLS the bootstrap carves each pool from the group
// it created (its percent of the group's size), reports them (olapgke.io/thin-pools) and only
// then removes the start-up taint; a thin class on the pool gets capacity, and the thick class
// sees the group less the pool. Shares past the group leave the node tainted with a Warning.
func TestBootstrapCreatesThinPools(t *testing.T) {
	t.Parallel()
	classes := []DeviceClass{
		{Name: "ssd", VolumeGroup: "vg-ssd", Default: true},
		{Name: "thin", VolumeGroup: "vg-ssd", Type: TypeThin, ThinPool: &ThinPool{Name: "pool0", OverprovisionRatio: 2}},
	}
	h := startSim(t, classes)
	h.runBootstrap()
	h.create(taintedSSDNode("p1", 2))
	ds := bootstrapDaemonSet()
	ds.Spec.Template.Spec.Containers = []corev1.Container{{Name: "vg-bootstrap", Env: []corev1.EnvVar{{Name: "THIN_POOLS", Value: "pool0:40"}}}}
	if _, err := h.kube.AppsV1().DaemonSets("olapgke-system").Create(h.ctx, ds, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	h.waitNodeCapacity("p1", "thin", 2*300*gib) // 40% of 750 GiB, x2
	h.waitNodeCapacity("p1", "ssd", 750*gib-300*gib-10*gib)
	n := h.node("p1")
	if n.Annotations[AnnBootstrapThinPools] != "pool0" || hasStartupTaint(n) {
		t.Fatalf("after the bootstrap: annotations %v taints %v", n.Annotations, n.Spec.Taints)
	}

	// A second pool that does not fit: the node is left as it is, with a Warning.
	ds, _ = h.kube.AppsV1().DaemonSets("olapgke-system").Get(h.ctx, "vg-bootstrap", metav1.GetOptions{})
	ds.Spec.Template.Spec.Containers[0].Env[0].Value = "pool0:40,pool1:70"
	if _, err := h.kube.AppsV1().DaemonSets("olapgke-system").Update(h.ctx, ds, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	h.eventually("the bootstrap sees the new THIN_POOLS", func() string {
		if d, err := h.kube.AppsV1().DaemonSets("olapgke-system").Get(h.ctx, "vg-bootstrap", metav1.GetOptions{}); err != nil || d.Spec.Template.Spec.Containers[0].Env[0].Value != "pool0:40,pool1:70" {
			return fmt.Sprint(err)
		}
		for _, e := range h.nodeEvents("p1") {
			if strings.Contains(e, "ThinPoolNotCreated") {
				return ""
			}
		}
		return "no Warning on p1 yet"
	})
	h.create(taintedSSDNode("p2", 1))
	h.eventually("p2 left tainted with a Warning", func() string {
		for _, e := range h.nodeEvents("p2") {
			if strings.HasPrefix(e, "Warning ThinPoolNotCreated: lvcreate --type thin-pool -l 70%VG -n pool1 vg-ssd failed") {
				if n := h.node("p2"); !hasStartupTaint(n) || n.Annotations[AnnBootstrapThinPools] != "" {
					return fmt.Sprintf("p2 annotations %v taints %v", n.Annotations, n.Spec.Taints)
				}
				return ""
			}
		}
		return fmt.Sprint(h.nodeEvents("p2"))
	})
}
