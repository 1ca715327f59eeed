package topolvm

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// harness runs Install + Run against a fake clientset.
type harness struct {
	t         *testing.T
	ctx       context.Context
	kube      *fake.Clientset
	registrar *Registrar // starts empty; the simulator fills it from the lvmd ConfigMap
}

// startSim installs TopoLVM with the given classes (nil: defaults), seeds objs and runs the
// simulator until the test ends.
func startSim(t *testing.T, classes []DeviceClass, objs ...runtime.Object) *harness {
	t.Helper()
	return newHarness(t, func(ctx context.Context, kube *fake.Clientset) error {
		return Install(ctx, kube, InstallOptions{DeviceClasses: classes})
	}, objs...)
}

// runSim starts Run on a fake clientset seeded with objs, without installing anything.
func runSim(t *testing.T, objs ...runtime.Object) *harness {
	t.Helper()
	return newHarness(t, func(context.Context, *fake.Clientset) error { return nil }, objs...)
}

func newHarness(t *testing.T, beforeRun func(context.Context, *fake.Clientset) error, objs ...runtime.Object) *harness {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	kube := fake.NewClientset(objs...)
	// The fake tracker does not implement generateName; the API server does.
	var seq atomic.Int64
	kube.PrependReactor("create", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if o, ok := a.(k8stesting.CreateAction).GetObject().(metav1.Object); ok {
			if o.GetName() == "" && o.GetGenerateName() != "" {
				o.SetName(o.GetGenerateName() + strconv.FormatInt(seq.Add(1), 10))
			}
			o.SetResourceVersion(strconv.FormatInt(seq.Add(1), 10))
		}
		return false, nil, nil
	})
	// Nor does it check resourceVersion on update; the API server does (optimistic
	// concurrency), and the simulator's retry-on-conflict paths must be exercised.
	kube.PrependReactor("update", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
		o, ok := a.(k8stesting.UpdateAction).GetObject().(metav1.Object)
		if !ok {
			return false, nil, nil
		}
		cur, err := kube.Tracker().Get(a.GetResource(), a.GetNamespace(), o.GetName())
		if err == nil {
			if c, ok := cur.(metav1.Object); ok && o.GetResourceVersion() != "" && c.GetResourceVersion() != o.GetResourceVersion() {
				return true, nil, apierrors.NewConflict(a.GetResource().GroupResource(), o.GetName(),
					fmt.Errorf("resourceVersion %s is stale, current %s", o.GetResourceVersion(), c.GetResourceVersion()))
			}
		}
		o.SetResourceVersion(strconv.FormatInt(seq.Add(1), 10))
		return false, nil, nil
	})
	if err := beforeRun(ctx, kube); err != nil {
		cancel()
		t.Fatal(err)
	}
	done := make(chan error, 1)
	registrar := NewRegistrar(nil)
	go func() { done <- Run(ctx, Options{Kube: kube, Resync: time.Hour, Registrar: registrar}) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	return &harness{t: t, ctx: ctx, kube: kube, registrar: registrar}
}

// eventually polls cond until it returns "" (ok) or the timeout hits; the last reason is reported.
func (h *harness) eventually(what string, cond func() string) {
	h.t.Helper()
	var last string
	err := wait.PollUntilContextTimeout(h.ctx, 10*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		last = cond()
		return last == "", nil
	})
	if err != nil {
		h.t.Fatalf("%s: not reached: %s", what, last)
	}
}

func ssdNode(name string, count int) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{
		Name: name, UID: types.UID("uid-" + name),
		Annotations: map[string]string{AnnSSDCount: strconv.Itoa(count)},
	}}
}

func pvc(name, sc, node string, size string) *corev1.PersistentVolumeClaim {
	return &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: "default", Name: name, UID: types.UID("uid-" + name),
			Annotations: map[string]string{AnnSelectedNode: node, AnnStorageProvisioner: DriverName},
		},
		Spec: corev1.PersistentVolumeClaimSpec{
			StorageClassName: &sc,
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(size)}},
		},
		Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimPending},
	}
}

func (h *harness) create(obj runtime.Object) {
	h.t.Helper()
	var err error
	switch o := obj.(type) {
	case *corev1.PersistentVolumeClaim:
		_, err = h.kube.CoreV1().PersistentVolumeClaims(o.Namespace).Create(h.ctx, o, metav1.CreateOptions{})
	case *corev1.Node:
		_, err = h.kube.CoreV1().Nodes().Create(h.ctx, o, metav1.CreateOptions{})
	case *storagev1.StorageClass:
		_, err = h.kube.StorageV1().StorageClasses().Create(h.ctx, o, metav1.CreateOptions{})
	default:
		h.t.Fatalf("create %T not supported", obj)
	}
	if err != nil {
		h.t.Fatal(err)
	}
}

// waitNodeCapacity waits until the node annotation for class shows want bytes.
func (h *harness) waitNodeCapacity(node, class string, want int64) {
	h.t.Helper()
	h.eventually(fmt.Sprintf("node %s capacity %s = %d GiB", node, class, want/gib), func() string {
		n, err := h.kube.CoreV1().Nodes().Get(h.ctx, node, metav1.GetOptions{})
		if err != nil {
			return err.Error()
		}
		if got := n.Annotations[CapacityAnnPrefix+class]; got != strconv.FormatInt(want, 10) {
			return fmt.Sprintf("annotation %q = %q", CapacityAnnPrefix+class, got)
		}
		return ""
	})
}

// waitCSISC waits until the node has exactly one CSIStorageCapacity for sc, of want bytes.
func (h *harness) waitCSISC(node, sc string, want int64) {
	h.t.Helper()
	h.eventually(fmt.Sprintf("CSIStorageCapacity %s/%s = %d GiB", node, sc, want/gib), func() string {
		l, err := h.kube.StorageV1().CSIStorageCapacities(DefaultNamespace).List(h.ctx, metav1.ListOptions{})
		if err != nil {
			return err.Error()
		}
		var found []string
		for _, c := range l.Items {
			if c.NodeTopology == nil || c.NodeTopology.MatchLabels[TopologyKey] != node || c.StorageClassName != sc {
				continue
			}
			if !strings.HasPrefix(c.Name, "csisc-") || c.Labels[LabelDriverName] != DriverName || c.Labels[LabelManagedBy] != ManagedByValue {
				return fmt.Sprintf("object %s has name/labels %v", c.Name, c.Labels)
			}
			found = append(found, fmt.Sprintf("%s cap=%v max=%v", c.Name, c.Capacity, c.MaximumVolumeSize))
			if c.Capacity == nil || c.Capacity.Value() != want || c.MaximumVolumeSize == nil || c.MaximumVolumeSize.Value() != want {
				return "found " + strings.Join(found, ", ")
			}
		}
		if len(found) != 1 {
			return fmt.Sprintf("want 1 object, found %v", found)
		}
		return ""
	})
}

func (h *harness) getPV(name string) (*corev1.PersistentVolume, error) {
	return h.kube.CoreV1().PersistentVolumes().Get(h.ctx, name, metav1.GetOptions{})
}

func (h *harness) waitPV(name string) *corev1.PersistentVolume {
	h.t.Helper()
	var pv *corev1.PersistentVolume
	h.eventually("PV "+name+" created", func() string {
		var err error
		pv, err = h.getPV(name)
		if err != nil {
			return err.Error()
		}
		return ""
	})
	return pv
}

// events returns "reason: message" of the events about a PVC.
func (h *harness) events(pvcName string) []string {
	l, err := h.kube.CoreV1().Events("default").List(h.ctx, metav1.ListOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	var out []string
	for _, e := range l.Items {
		if e.InvolvedObject.Kind == "PersistentVolumeClaim" && e.InvolvedObject.Name == pvcName {
			out = append(out, e.Type+" "+e.Reason+": "+e.Message)
		}
	}
	return out
}

func TestProvisionCreatesPinnedPV(t *testing.T) {
	t.Parallel()
	h := startSim(t, nil, ssdNode("n1", 2), ssdNode("plain", 0))
	h.waitNodeCapacity("n1", "ssd", 740*gib)
	h.waitNodeCapacity("n1", "00default", 740*gib)
	h.waitCSISC("n1", DefaultStorageClassName, 740*gib)

	h.create(pvc("data-0", DefaultStorageClassName, "n1", "9.5Gi"))
	pv := h.waitPV("pvc-uid-data-0")
	if got := pinnedNode(pv); got != "n1" {
		t.Errorf("PV pinned to %q, want n1", got)
	}
	checks := map[string][2]string{
		"driver":       {pv.Spec.CSI.Driver, DriverName},
		"fsType":       {pv.Spec.CSI.FSType, "xfs"},
		"device class": {pv.Spec.CSI.VolumeAttributes[DeviceClassParam], "ssd"},
		"capacity":     {pv.Spec.Capacity.Storage().String(), "10Gi"},
		"claimRef":     {pv.Spec.ClaimRef.Namespace + "/" + pv.Spec.ClaimRef.Name + "/" + string(pv.Spec.ClaimRef.UID), "default/data-0/uid-data-0"},
		"sc":           {pv.Spec.StorageClassName, DefaultStorageClassName},
		"reclaim":      {string(pv.Spec.PersistentVolumeReclaimPolicy), "Delete"},
		"provisioned":  {pv.Annotations[AnnProvisionedBy], DriverName},
		"access":       {fmt.Sprint(pv.Spec.AccessModes), "[ReadWriteOnce]"},
		"volumeMode":   {string(*pv.Spec.VolumeMode), "Filesystem"},
	}
	for what, c := range checks {
		if c[0] != c[1] {
			t.Errorf("PV %s = %q, want %q", what, c[0], c[1])
		}
	}
	if pv.Spec.CSI.VolumeHandle == "" {
		t.Error("PV has no volumeHandle")
	}
	h.waitNodeCapacity("n1", "ssd", 730*gib)
	h.waitCSISC("n1", DefaultStorageClassName, 730*gib)

	n, err := h.kube.CoreV1().Nodes().Get(h.ctx, "n1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if n.Labels[TopologyKey] != "n1" || !slices.Contains(n.Finalizers, NodeFinalizer) {
		t.Errorf("node n1 labels %v finalizers %v", n.Labels, n.Finalizers)
	}
	plain, err := h.kube.CoreV1().Nodes().Get(h.ctx, "plain", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := plain.Labels[TopologyKey]; ok || len(plain.Finalizers) > 0 {
		t.Errorf("node without Local SSD got TopoLVM metadata: %v %v", plain.Labels, plain.Finalizers)
	}
	h.eventually("ProvisioningSucceeded event", func() string {
		ev := h.events("data-0")
		if !slices.ContainsFunc(ev, func(s string) bool { return strings.HasPrefix(s, "Normal ProvisioningSucceeded") }) {
			return fmt.Sprint(ev)
		}
		return ""
	})
	// Re-syncing the PVC must not create a second PV.
	l, err := h.kube.CoreV1().PersistentVolumes().List(h.ctx, metav1.ListOptions{})
	if err != nil || len(l.Items) != 1 {
		t.Errorf("PVs: %d, err %v", len(l.Items), err)
	}
}

func TestCapacityShortage(t *testing.T) {
	t.Parallel()
	h := startSim(t, nil, ssdNode("n1", 1))
	h.waitNodeCapacity("n1", "ssd", 365*gib)

	h.create(pvc("big", DefaultStorageClassName, "n1", "300Gi"))
	h.waitPV("pvc-uid-big")
	h.waitNodeCapacity("n1", "ssd", 65*gib)

	h.create(pvc("too-big", DefaultStorageClassName, "n1", "100Gi"))
	want := fmt.Sprintf(`Warning ProvisioningFailed: failed to provision volume with StorageClass "topolvm-provisioner": rpc error: code = ResourceExhausted desc = no enough space left on VG: free=%d, requested=%d`, 65*gib, 100*gib)
	h.eventually("ProvisioningFailed event and selected-node removed", func() string {
		if ev := h.events("too-big"); !slices.Contains(ev, want) {
			return fmt.Sprintf("events %q", ev)
		}
		c, err := h.kube.CoreV1().PersistentVolumeClaims("default").Get(h.ctx, "too-big", metav1.GetOptions{})
		if err != nil {
			return err.Error()
		}
		if v, ok := c.Annotations[AnnSelectedNode]; ok {
			return "selected-node still " + v
		}
		return ""
	})
	if _, err := h.getPV("pvc-uid-too-big"); !apierrors.IsNotFound(err) {
		t.Errorf("PV for too-big: err = %v, want NotFound", err)
	}
	h.waitNodeCapacity("n1", "ssd", 65*gib)

	// Multi-node access modes are refused without rescheduling.
	rwx := pvc("shared", DefaultStorageClassName, "n1", "1Gi")
	rwx.Spec.AccessModes = []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany}
	h.create(rwx)
	h.eventually("ProvisioningFailed for ReadWriteMany", func() string {
		ev := h.events("shared")
		if !slices.ContainsFunc(ev, func(s string) bool { return strings.HasSuffix(s, "unsupported access mode: MULTI_NODE_MULTI_WRITER") }) {
			return fmt.Sprint(ev)
		}
		return ""
	})
	if c, _ := h.kube.CoreV1().PersistentVolumeClaims("default").Get(h.ctx, "shared", metav1.GetOptions{}); c.Annotations[AnnSelectedNode] != "n1" {
		t.Errorf("ReadWriteMany PVC lost its selected node: %v", c.Annotations)
	}

	// A node without Local SSDs has nothing to give: same failure, free=0.
	h.create(ssdNode("plain", 0))
	h.create(pvc("on-plain", DefaultStorageClassName, "plain", "1Gi"))
	h.eventually("ProvisioningFailed on a node without volume group", func() string {
		ev := h.events("on-plain")
		if !slices.ContainsFunc(ev, func(s string) bool { return strings.Contains(s, "free=0, requested=1073741824") }) {
			return fmt.Sprint(ev)
		}
		return ""
	})
}

func TestSpareAndThinCapacity(t *testing.T) {
	t.Parallel()
	classes := []DeviceClass{
		{Name: "ssd", VolumeGroup: "vg-ssd", Default: true, SpareGB: new(uint64(50))},
		{Name: "thin", VolumeGroup: "vg-ssd", Type: TypeThin, SpareGB: new(uint64(0)), ThinPool: &ThinPool{Name: "pool0", OverprovisionRatio: 5}},
		{Name: "elsewhere", VolumeGroup: "vg-other"},
	}
	// A 400 GiB thin pool carved from the node's 750 GiB group.
	n1 := ssdNode("n1", 2)
	n1.Annotations[AnnThinPools] = FormatThinPools(map[string]int64{"pool0": 400 * gib})
	h := startSim(t, classes, n1)
	thinSC := &storagev1.StorageClass{
		ObjectMeta:  metav1.ObjectMeta{Name: "topolvm-thin"},
		Provisioner: DriverName,
		Parameters:  map[string]string{DeviceClassParam: "thin", FSTypeParam: "ext4"},
	}
	h.create(thinSC)
	h.waitNodeCapacity("n1", "ssd", 300*gib) // 750 - the pool's 400 - spare 50
	h.waitNodeCapacity("n1", "00default", 300*gib)
	h.waitNodeCapacity("n1", "thin", 2000*gib) // 5 x 400
	h.waitCSISC("n1", DefaultStorageClassName, 300*gib)
	h.waitCSISC("n1", "topolvm-thin", 2000*gib)
	n, _ := h.kube.CoreV1().Nodes().Get(h.ctx, "n1", metav1.GetOptions{})
	if _, ok := n.Annotations[CapacityAnnPrefix+"elsewhere"]; ok {
		t.Errorf("class on another volume group published on n1: %v", n.Annotations)
	}

	// Thin volumes may exceed the pool; they use its overprovisioned room only.
	h.create(pvc("thin-a", "topolvm-thin", "n1", "1000Gi"))
	pv := h.waitPV("pvc-uid-thin-a")
	if pv.Spec.CSI.FSType != "ext4" || pv.Spec.CSI.VolumeAttributes[DeviceClassParam] != "thin" {
		t.Errorf("thin PV csi = %+v", pv.Spec.CSI)
	}
	h.waitNodeCapacity("n1", "thin", 1000*gib)
	h.waitCSISC("n1", "topolvm-thin", 1000*gib)
	h.waitNodeCapacity("n1", "ssd", 300*gib)

	// Deleting the StorageClass removes its CSIStorageCapacity objects.
	if err := h.kube.StorageV1().StorageClasses().Delete(h.ctx, "topolvm-thin", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	h.eventually("stale CSIStorageCapacity deleted", func() string {
		l, _ := h.kube.StorageV1().CSIStorageCapacities(DefaultNamespace).List(h.ctx, metav1.ListOptions{})
		for _, c := range l.Items {
			if c.StorageClassName == "topolvm-thin" {
				return "still there: " + c.Name
			}
		}
		return ""
	})
	h.waitCSISC("n1", DefaultStorageClassName, 300*gib)
}

func TestReleasedPVIsDeletedAndFreesCapacity(t *testing.T) {
	t.Parallel()
	h := startSim(t, nil, ssdNode("n1", 1))
	h.create(pvc("data", DefaultStorageClassName, "n1", "100Gi"))
	pv := h.waitPV("pvc-uid-data")
	h.waitNodeCapacity("n1", "ssd", 265*gib)

	// Bound PVs stay.
	pv.Status.Phase = corev1.VolumeBound
	pv, err := h.kube.CoreV1().PersistentVolumes().UpdateStatus(h.ctx, pv, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// What the PV binder does when the PVC is deleted.
	pv.Status.Phase = corev1.VolumeReleased
	if _, err := h.kube.CoreV1().PersistentVolumes().UpdateStatus(h.ctx, pv, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	h.eventually("released PV deleted", func() string {
		if _, err := h.getPV(pv.Name); !apierrors.IsNotFound(err) {
			return fmt.Sprintf("get PV: %v", err)
		}
		return ""
	})
	h.waitNodeCapacity("n1", "ssd", 365*gib)
	h.waitCSISC("n1", DefaultStorageClassName, 365*gib)
}

func TestRetainedPVIsKept(t *testing.T) {
	t.Parallel()
	retain := corev1.PersistentVolumeReclaimRetain
	h := startSim(t, nil, ssdNode("n1", 1))
	h.create(&storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "keep"}, Provisioner: DriverName, ReclaimPolicy: &retain})
	h.create(pvc("data", "keep", "n1", "100Gi"))
	pv := h.waitPV("pvc-uid-data")
	if pv.Spec.PersistentVolumeReclaimPolicy != retain {
		t.Fatalf("reclaim policy %s", pv.Spec.PersistentVolumeReclaimPolicy)
	}
	pv.Status.Phase = corev1.VolumeReleased
	if _, err := h.kube.CoreV1().PersistentVolumes().UpdateStatus(h.ctx, pv, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The space stays booked; once the PV object is deleted by hand, it comes back.
	h.waitNodeCapacity("n1", "ssd", 265*gib)
	if _, err := h.getPV(pv.Name); err != nil {
		t.Fatalf("retained PV: %v", err)
	}
	if err := h.kube.CoreV1().PersistentVolumes().Delete(h.ctx, pv.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	h.waitNodeCapacity("n1", "ssd", 365*gib)
}

func TestNodeDeletionRunsFinalizer(t *testing.T) {
	t.Parallel()
	n1 := ssdNode("n1", 2)
	n1.Finalizers = []string{"example.com/other"}
	h := startSim(t, nil, n1, ssdNode("n2", 2))
	h.create(pvc("bound", DefaultStorageClassName, "n1", "10Gi"))
	h.waitPV("pvc-uid-bound")
	other := pvc("other", DefaultStorageClassName, "n2", "10Gi")
	h.create(other)
	h.waitPV("pvc-uid-other")
	h.waitCSISC("n1", DefaultStorageClassName, 730*gib)

	// A pending PVC whose selected node is n1 but that is not provisioned (class missing).
	pending := pvc("pending", "no-such-class", "n1", "10Gi")
	h.create(pending)

	h.eventually("finalizer on n1", func() string {
		n, err := h.kube.CoreV1().Nodes().Get(h.ctx, "n1", metav1.GetOptions{})
		if err != nil || !slices.Contains(n.Finalizers, NodeFinalizer) {
			return fmt.Sprintf("finalizers %v, err %v", n.Finalizers, err)
		}
		return ""
	})
	// The fake clientset deletes at once regardless of finalizers; set what the API server
	// sets on a delete of an object with finalizers.
	n, err := h.kube.CoreV1().Nodes().Get(h.ctx, "n1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	now := metav1.Now()
	n.DeletionTimestamp = &now
	if _, err := h.kube.CoreV1().Nodes().Update(h.ctx, n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	h.eventually("node finalizer done", func() string {
		n, err := h.kube.CoreV1().Nodes().Get(h.ctx, "n1", metav1.GetOptions{})
		if err != nil {
			return err.Error()
		}
		if !slices.Equal(n.Finalizers, []string{"example.com/other"}) {
			return fmt.Sprintf("finalizers %v, want only example.com/other", n.Finalizers)
		}
		return ""
	})
	for _, name := range []string{"bound"} {
		if _, err := h.kube.CoreV1().PersistentVolumeClaims("default").Get(h.ctx, name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("PVC %s on the deleted node: err = %v, want NotFound", name, err)
		}
	}
	if _, err := h.getPV("pvc-uid-bound"); !apierrors.IsNotFound(err) {
		t.Errorf("PV pinned to the deleted node: err = %v, want NotFound", err)
	}
	// PVCs and PVs elsewhere are untouched.
	if _, err := h.kube.CoreV1().PersistentVolumeClaims("default").Get(h.ctx, "other", metav1.GetOptions{}); err != nil {
		t.Errorf("PVC on n2: %v", err)
	}
	if _, err := h.getPV("pvc-uid-other"); err != nil {
		t.Errorf("PV on n2: %v", err)
	}
	// "pending" names a StorageClass that does not exist, so it is not TopoLVM's to delete.
	if _, err := h.kube.CoreV1().PersistentVolumeClaims("default").Get(h.ctx, "pending", metav1.GetOptions{}); err != nil {
		t.Errorf("non-TopoLVM PVC: %v", err)
	}
	// Capacity objects of the deleted node go away.
	h.eventually("n1 CSIStorageCapacity removed", func() string {
		l, _ := h.kube.StorageV1().CSIStorageCapacities(DefaultNamespace).List(h.ctx, metav1.ListOptions{})
		for _, c := range l.Items {
			if c.NodeTopology.MatchLabels[TopologyKey] == "n1" {
				return "still there: " + c.Name
			}
		}
		return ""
	})
}

func TestNodeFinalizerDeletesPendingPVCsOfTheNode(t *testing.T) {
	t.Parallel()
	h := startSim(t, nil, ssdNode("n1", 1))
	h.waitNodeCapacity("n1", "ssd", 365*gib)
	// Too big to provision: it stays Pending with selected-node removed by then; put it back as
	// the scheduler would and delete the node in the same breath.
	c := pvc("waiting", DefaultStorageClassName, "n1", "10Gi")
	c.Annotations = map[string]string{AnnSelectedNode: "n1"} // no storage-provisioner yet: not provisioned
	h.create(c)
	n, err := h.kube.CoreV1().Nodes().Get(h.ctx, "n1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	now := metav1.Now()
	n.DeletionTimestamp = &now
	if _, err := h.kube.CoreV1().Nodes().Update(h.ctx, n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	h.eventually("pending PVC of the deleted node removed", func() string {
		if _, err := h.kube.CoreV1().PersistentVolumeClaims("default").Get(h.ctx, "waiting", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			return fmt.Sprintf("get: %v", err)
		}
		return ""
	})
}

func TestConfigMapChangeRecomputesCapacity(t *testing.T) {
	t.Parallel()
	n1 := ssdNode("n1", 2)
	n1.Annotations[AnnThinPools] = "pool-f=" + strconv.FormatInt(100*gib, 10)
	h := startSim(t, nil, n1)
	h.waitNodeCapacity("n1", "ssd", 640*gib) // 750 - the pool's 100 - spare 10
	h.waitCSISC("n1", DefaultStorageClassName, 640*gib)

	cms := h.kube.CoreV1().ConfigMaps(DefaultNamespace)
	cm, err := cms.Get(h.ctx, DefaultConfigMapName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(cm.Data[DefaultConfigKey], "socket-name") {
		t.Errorf("installed lvmd.yaml lacks socket-name:\n%s", cm.Data[DefaultConfigKey])
	}
	cm.Data[DefaultConfigKey] = "socket-name: /run/topolvm/lvmd.sock\ndevice-classes:\n- name: ssd\n  volume-group: vg-ssd\n  default: true\n  spare-gb: 100\n- name: fast\n  volume-group: vg-ssd\n  type: thin\n  thin-pool: {name: pool-f, overprovision-ratio: 7.5}\n"
	if _, err := cms.Update(h.ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	h.waitNodeCapacity("n1", "ssd", 550*gib)
	h.waitNodeCapacity("n1", "00default", 550*gib)
	h.waitNodeCapacity("n1", "fast", 750*gib)
	h.waitCSISC("n1", DefaultStorageClassName, 550*gib)

	// An invalid config is refused with an event and the previous one stays.
	cm, _ = cms.Get(h.ctx, DefaultConfigMapName, metav1.GetOptions{})
	cm.Data[DefaultConfigKey] = "device-classes:\n- {name: ssd, volume-group: vg-ssd, default: true}\n- {name: fast, volume-group: vg-ssd}\n"
	if _, err := cms.Update(h.ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	h.eventually("InvalidLVMDConfig event", func() string {
		l, _ := h.kube.CoreV1().Events(DefaultNamespace).List(h.ctx, metav1.ListOptions{})
		for _, e := range l.Items {
			if e.Reason == "InvalidLVMDConfig" && e.InvolvedObject.Name == DefaultConfigMapName && strings.Contains(e.Message, "duplicate volumegroup/thinpool name: fast, vg-ssd") {
				return ""
			}
		}
		return fmt.Sprintf("%d events, none InvalidLVMDConfig", len(l.Items))
	})
	h.waitNodeCapacity("n1", "ssd", 550*gib)

	// Removing a class removes its annotation.
	cm, _ = cms.Get(h.ctx, DefaultConfigMapName, metav1.GetOptions{})
	cm.Data[DefaultConfigKey] = "device-classes:\n- {name: ssd, volume-group: vg-ssd, default: true}\n"
	if _, err := cms.Update(h.ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	h.waitNodeCapacity("n1", "ssd", 640*gib)
	h.eventually("annotation of removed class gone", func() string {
		n, _ := h.kube.CoreV1().Nodes().Get(h.ctx, "n1", metav1.GetOptions{})
		if v, ok := n.Annotations[CapacityAnnPrefix+"fast"]; ok {
			return "still " + v
		}
		return ""
	})
}

func TestRestartRebuildsUsage(t *testing.T) {
	t.Parallel()
	// A PV left by an earlier run: 700 GiB of the 740 GiB usable on n1.
	old := buildPV(pvc("old", DefaultStorageClassName, "n1", "700Gi"), DefaultStorageClassName, nil, nil, "xfs", "ssd", "n1", 700*gib)
	old.Annotations[AnnProvisionedBy] = DriverName
	old.Status.Phase = corev1.VolumeBound
	h := startSim(t, nil, ssdNode("n1", 2), old)
	h.waitNodeCapacity("n1", "ssd", 40*gib)
	h.waitCSISC("n1", DefaultStorageClassName, 40*gib)

	h.create(pvc("too-big", DefaultStorageClassName, "n1", "50Gi"))
	h.eventually("ProvisioningFailed for too-big", func() string {
		ev := h.events("too-big")
		if !slices.ContainsFunc(ev, func(s string) bool { return strings.Contains(s, fmt.Sprintf("free=%d, requested=%d", 40*gib, 50*gib)) }) {
			return fmt.Sprint(ev)
		}
		return ""
	})
	h.create(pvc("fits", DefaultStorageClassName, "n1", "30Gi"))
	h.waitPV("pvc-uid-fits")
	h.waitNodeCapacity("n1", "ssd", 10*gib)
}

func TestConcurrentClaimsDoNotOverbook(t *testing.T) {
	t.Parallel()
	h := startSim(t, nil, ssdNode("n1", 1))
	h.waitNodeCapacity("n1", "ssd", 365*gib)
	// Ten 50 GiB claims at once on 365 GiB: exactly seven fit.
	for i := range 10 {
		h.create(pvc(fmt.Sprintf("c%d", i), DefaultStorageClassName, "n1", "50Gi"))
	}
	h.waitNodeCapacity("n1", "ssd", 15*gib)
	h.eventually("three claims refused", func() string {
		failed := 0
		for i := range 10 {
			c, _ := h.kube.CoreV1().PersistentVolumeClaims("default").Get(h.ctx, fmt.Sprintf("c%d", i), metav1.GetOptions{})
			if _, ok := c.Annotations[AnnSelectedNode]; !ok {
				failed++
			}
		}
		if failed != 3 {
			return fmt.Sprintf("%d refused", failed)
		}
		return ""
	})
	l, _ := h.kube.CoreV1().PersistentVolumes().List(h.ctx, metav1.ListOptions{})
	if len(l.Items) != 7 {
		t.Errorf("%d PVs, want 7", len(l.Items))
	}
}

func TestInstallIsIdempotent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	kube := fake.NewClientset()
	for range 2 {
		if err := Install(ctx, kube, InstallOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	d, err := kube.StorageV1().CSIDrivers().Get(ctx, DriverName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !*d.Spec.StorageCapacity || *d.Spec.AttachRequired || !*d.Spec.PodInfoOnMount || !slices.Equal(d.Spec.VolumeLifecycleModes, []storagev1.VolumeLifecycleMode{storagev1.VolumeLifecyclePersistent}) {
		t.Errorf("CSIDriver spec %+v", d.Spec)
	}
	sc, err := kube.StorageV1().StorageClasses().Get(ctx, DefaultStorageClassName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if sc.Provisioner != DriverName || sc.Parameters[DeviceClassParam] != "ssd" || sc.Parameters[FSTypeParam] != "xfs" ||
		*sc.VolumeBindingMode != storagev1.VolumeBindingWaitForFirstConsumer || !*sc.AllowVolumeExpansion || *sc.ReclaimPolicy != corev1.PersistentVolumeReclaimDelete {
		t.Errorf("StorageClass %+v", sc)
	}
	cm, err := kube.CoreV1().ConfigMaps(DefaultNamespace).Get(ctx, DefaultConfigMapName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	classes, err := ParseLVMDConfig(cm.Data[DefaultConfigKey])
	if err != nil || len(classes) != 1 || classes[0].Name != "ssd" || classes[0].VolumeGroup != "vg-ssd" || !classes[0].Default {
		t.Errorf("lvmd.yaml classes %+v, err %v:\n%s", classes, err, cm.Data[DefaultConfigKey])
	}
	if _, err := kube.AppsV1().DaemonSets(DefaultNamespace).Get(ctx, DefaultConfigMapName, metav1.GetOptions{}); err != nil {
		t.Errorf("lvmd DaemonSet: %v", err)
	}

	// A different default class re-points the StorageClass; other lvmd.yaml fields survive.
	cm.Data[DefaultConfigKey] = "metrics-port: 9999\n" + cm.Data[DefaultConfigKey]
	if _, err := kube.CoreV1().ConfigMaps(DefaultNamespace).Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	err = Install(ctx, kube, InstallOptions{DeviceClasses: []DeviceClass{{Name: "nvme", VolumeGroup: "vg-ssd", Default: true}}})
	if err != nil {
		t.Fatal(err)
	}
	sc, _ = kube.StorageV1().StorageClasses().Get(ctx, DefaultStorageClassName, metav1.GetOptions{})
	cm, _ = kube.CoreV1().ConfigMaps(DefaultNamespace).Get(ctx, DefaultConfigMapName, metav1.GetOptions{})
	if sc.Parameters[DeviceClassParam] != "nvme" || !strings.Contains(cm.Data[DefaultConfigKey], "metrics-port: 9999") || !strings.Contains(cm.Data[DefaultConfigKey], "name: nvme") {
		t.Errorf("after re-install: sc params %v, lvmd.yaml:\n%s", sc.Parameters, cm.Data[DefaultConfigKey])
	}

	if err := Install(ctx, kube, InstallOptions{DeviceClasses: []DeviceClass{{Name: "x", VolumeGroup: "v"}, {Name: "y", VolumeGroup: "v"}}}); err == nil {
		t.Error("Install accepted two thick classes on one volume group (lvmd refuses them)")
	}
}

func TestExpandBoundVolume(t *testing.T) {
	t.Parallel()
	h := startSim(t, nil, ssdNode("n1", 1))
	h.create(pvc("data", DefaultStorageClassName, "n1", "100Gi"))
	h.waitPV("pvc-uid-data")
	h.waitNodeCapacity("n1", "ssd", 265*gib)

	// What the PV binder does: bind the PVC.
	pvcs := h.kube.CoreV1().PersistentVolumeClaims("default")
	c, err := pvcs.Get(h.ctx, "data", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c.Spec.VolumeName = "pvc-uid-data"
	if c, err = pvcs.Update(h.ctx, c, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	c.Status.Phase = corev1.ClaimBound
	c.Status.Capacity = corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("100Gi")}
	if c, err = pvcs.UpdateStatus(h.ctx, c, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}

	c.Spec.Resources.Requests[corev1.ResourceStorage] = resource.MustParse("200Gi")
	if _, err = pvcs.Update(h.ctx, c, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	h.eventually("PV and PVC at 200Gi", func() string {
		pv, err := h.getPV("pvc-uid-data")
		if err != nil {
			return err.Error()
		}
		c, err := pvcs.Get(h.ctx, "data", metav1.GetOptions{})
		if err != nil {
			return err.Error()
		}
		if pv.Spec.Capacity.Storage().Value() != 200*gib || c.Status.Capacity.Storage().Value() != 200*gib {
			return fmt.Sprintf("PV %v, PVC status %v", pv.Spec.Capacity.Storage(), c.Status.Capacity.Storage())
		}
		return ""
	})
	h.waitNodeCapacity("n1", "ssd", 165*gib)

	// Growing by more than the free space fails with an event and changes nothing.
	c, _ = pvcs.Get(h.ctx, "data", metav1.GetOptions{})
	c.Spec.Resources.Requests[corev1.ResourceStorage] = resource.MustParse("400Gi")
	if _, err = pvcs.Update(h.ctx, c, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	h.eventually("VolumeResizeFailed", func() string {
		ev := h.events("data")
		if !slices.ContainsFunc(ev, func(s string) bool {
			// What real TopoLVM (ControllerExpandVolume) answers through external-resizer.
			return s == `Warning VolumeResizeFailed: resize volume "pvc-uid-data" by resizer "topolvm.io" failed: rpc error: code = Internal desc = not enough space`
		}) {
			return fmt.Sprint(ev)
		}
		return ""
	})
	if pv, _ := h.getPV("pvc-uid-data"); pv.Spec.Capacity.Storage().Value() != 200*gib {
		t.Errorf("PV capacity after refused expansion: %v", pv.Spec.Capacity.Storage())
	}
	h.waitNodeCapacity("n1", "ssd", 165*gib)
}

func TestConfigMapAppearsAfterStart(t *testing.T) {
	t.Parallel()
	h := runSim(t, ssdNode("n1", 2))
	h.eventually("topology label without any lvmd config", func() string {
		n, err := h.kube.CoreV1().Nodes().Get(h.ctx, "n1", metav1.GetOptions{})
		if err != nil {
			return err.Error()
		}
		if n.Labels[TopologyKey] != "n1" {
			return fmt.Sprintf("labels %v", n.Labels)
		}
		return ""
	})
	if err := Install(h.ctx, h.kube, InstallOptions{}); err != nil {
		t.Fatal(err)
	}
	h.waitNodeCapacity("n1", "ssd", 740*gib)
	h.waitCSISC("n1", DefaultStorageClassName, 740*gib)
}

// A node completed by the Registrar before it is created (as the GKE emulator does) already
// carries everything the simulator would patch in: the simulator only publishes its
// CSIStorageCapacity, without writing the Node again.
func TestRegisteredNodeNeedsNoPatch(t *testing.T) {
	h := startSim(t, []DeviceClass{
		{Name: "ssd", VolumeGroup: DefaultVolumeGroup, Default: true, SpareGB: new(uint64(10))},
		{Name: "other", VolumeGroup: "vg-other"},
	})
	h.eventually("registrar learns the lvmd device classes", func() string {
		h.registrar.mu.Lock()
		defer h.registrar.mu.Unlock()
		if len(h.registrar.classes) != 2 {
			return fmt.Sprintf("%d classes", len(h.registrar.classes))
		}
		return ""
	})
	n := ssdNode("n1", 2)
	h.registrar.RegisterNode(n)
	free := strconv.FormatInt(2*LocalSSDBytes-10*gib, 10)
	if n.Labels[TopologyKey] != "n1" || !slices.Contains(n.Finalizers, NodeFinalizer) ||
		n.Annotations[CapacityAnnPrefix+"ssd"] != free || n.Annotations[DefaultCapacityKey] != free {
		t.Fatalf("registered node: labels %v finalizers %v annotations %v", n.Labels, n.Finalizers, n.Annotations)
	}
	if _, ok := n.Annotations[CapacityAnnPrefix+"other"]; ok {
		t.Errorf("class on another volume group published: %v", n.Annotations)
	}
	plain := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "no-ssd"}}
	h.registrar.RegisterNode(plain)
	if len(plain.Labels)+len(plain.Annotations)+len(plain.Finalizers) != 0 {
		t.Errorf("node without Local SSDs was changed: %+v", plain.ObjectMeta)
	}

	h.create(n)
	h.waitCSISC("n1", DefaultStorageClassName, 2*LocalSSDBytes-10*gib)
	for _, a := range h.kube.Actions() {
		if a.GetVerb() == "patch" && a.GetResource().Resource == "nodes" {
			t.Errorf("registered node was patched: %s", a.(k8stesting.PatchAction).GetPatch())
		}
	}
}

// TestRecreatedVMLosesItsVolumes: a new system UUID on a known node (its VM recreated under the
// same name, as GKE's auto-repair can do) means an empty volume group: the node's space is free
// again and its PVs, still pinned to it, are marked lost; other nodes keep theirs. A reboot
// before it (a new boot ID on the same VM) loses nothing: Compute Engine keeps Local SSD data
// through a guest reboot.
func TestRecreatedVMLosesItsVolumes(t *testing.T) {
	t.Parallel()
	n1 := ssdNode("n1", 2)
	n1.Status.NodeInfo.BootID, n1.Status.NodeInfo.SystemUUID = "boot-1", "vm-1"
	n2 := ssdNode("n2", 2)
	n2.Status.NodeInfo.BootID, n2.Status.NodeInfo.SystemUUID = "boot-n2", "vm-n2"
	h := startSim(t, nil, n1, n2)
	h.create(pvc("a", DefaultStorageClassName, "n1", "100Gi"))
	h.create(pvc("b", DefaultStorageClassName, "n2", "10Gi"))
	h.waitPV("pvc-uid-a")
	h.waitPV("pvc-uid-b")
	h.waitNodeCapacity("n1", "ssd", 640*gib)

	setVM := func(boot, vm string) {
		t.Helper()
		n, err := h.kube.CoreV1().Nodes().Get(h.ctx, "n1", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		n.Status.NodeInfo.BootID, n.Status.NodeInfo.SystemUUID = boot, vm
		if _, err := h.kube.CoreV1().Nodes().UpdateStatus(h.ctx, n, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// A reboot: the 100 GiB volume stays (a wiped group would show 740 - 10 GiB).
	setVM("boot-1b", "vm-1")
	h.create(pvc("r", DefaultStorageClassName, "n1", "10Gi"))
	h.waitPV("pvc-uid-r")
	h.waitNodeCapacity("n1", "ssd", 630*gib)
	if pv, err := h.getPV("pvc-uid-a"); err != nil || pv.Annotations[AnnLogicalVolumeLost] != "" {
		t.Fatalf("PV on n1 after a reboot: %v, annotations %v", err, pv.GetAnnotations())
	}

	setVM("boot-2", "vm-2")
	h.waitNodeCapacity("n1", "ssd", 740*gib)
	h.waitCSISC("n1", DefaultStorageClassName, 740*gib)
	h.eventually("PV on n1 marked lost", func() string {
		pv, err := h.getPV("pvc-uid-a")
		if err != nil {
			return err.Error()
		}
		if _, err := time.Parse(time.RFC3339, pv.Annotations[AnnLogicalVolumeLost]); err != nil || pinnedNode(pv) != "n1" {
			return fmt.Sprintf("annotations %v, pinned to %q", pv.Annotations, pinnedNode(pv))
		}
		return ""
	})
	if pv, err := h.getPV("pvc-uid-b"); err != nil || pv.Annotations[AnnLogicalVolumeLost] != "" {
		t.Errorf("PV on n2: %v, annotations %v", err, pv.GetAnnotations())
	}
	h.waitNodeCapacity("n2", "ssd", 730*gib)
	// The freed space is really free: 700 GiB fit where 100 GiB were taken before.
	h.create(pvc("c", DefaultStorageClassName, "n1", "700Gi"))
	h.waitPV("pvc-uid-c")
	h.waitNodeCapacity("n1", "ssd", 40*gib)
	// A later status write with the same VM loses nothing more.
	setVM("boot-2", "vm-2")
	h.create(pvc("d", DefaultStorageClassName, "n1", "10Gi"))
	h.waitPV("pvc-uid-d")
	h.waitNodeCapacity("n1", "ssd", 30*gib)
	if pv, err := h.getPV("pvc-uid-c"); err != nil || pv.Annotations[AnnLogicalVolumeLost] != "" {
		t.Errorf("PV provisioned after the recreation: %v, annotations %v", err, pv.GetAnnotations())
	}
}
