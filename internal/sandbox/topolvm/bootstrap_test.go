package topolvm

import (
	"fmt"
	"regexp"
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
