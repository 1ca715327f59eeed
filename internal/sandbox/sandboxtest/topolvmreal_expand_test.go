package sandboxtest

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
)

// capacityAnn is the annotation TopoLVM's metrics exporter writes on the Node per device class
// (the sandbox's StorageClass topolvm-provisioner uses class "ssd").
const capacityAnn = "capacity.topolvm.io/ssd"

// grownClaim is a one-ordinal StatefulSet with a 10Gi TopoLVM claim, running on real TopoLVM,
// and what the test needs of it.
type grownClaim struct {
	ns, pvc, pv, node string
}

func runOneOrdinal(t *testing.T, k kubernetes.Interface, name string) grownClaim {
	t.Helper()
	ctx := t.Context()
	ns, err := k.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "topolvm-grow-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	poll(t, 30*time.Second, "default ServiceAccount", func(ctx context.Context) (bool, error) {
		_, err := k.CoreV1().ServiceAccounts(ns.Name).Get(ctx, "default", metav1.GetOptions{})
		return err == nil, err
	})
	sts := statefulSet(name, "pool-a", appsv1.RollingUpdateStatefulSetStrategyType, "10Gi")
	sts.Spec.Replicas = new(int32(1))
	if _, err := k.AppsV1().StatefulSets(ns.Name).Create(ctx, sts, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	poll(t, 2*time.Minute, "StatefulSet "+name+" ready", func(ctx context.Context) (bool, error) {
		s, err := k.AppsV1().StatefulSets(ns.Name).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return s.Status.ObservedGeneration == s.Generation && s.Status.ReadyReplicas == 1, nil
	})
	g := grownClaim{ns: ns.Name, pvc: "data-" + name + "-0"}
	pvc, err := k.CoreV1().PersistentVolumeClaims(g.ns).Get(ctx, g.pvc, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pv, err := k.CoreV1().PersistentVolumes().Get(ctx, pvc.Spec.VolumeName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if g.node, err = pvNode(pv); err != nil {
		t.Fatal(err)
	}
	g.pv = pv.Name
	return g
}

func growClaim(t *testing.T, k kubernetes.Interface, g grownClaim, to string) {
	t.Helper()
	patch := fmt.Sprintf(`{"spec":{"resources":{"requests":{"storage":%q}}}}`, to)
	if _, err := k.CoreV1().PersistentVolumeClaims(g.ns).Patch(t.Context(), g.pvc, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatalf("grow %s to %s: %v", g.pvc, to, err)
	}
}

func nodeCapacityAnn(ctx context.Context, k kubernetes.Interface, node string) (int64, error) {
	n, err := k.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
	if err != nil {
		return 0, err
	}
	q, err := resource.ParseQuantity(n.Annotations[capacityAnn])
	if err != nil {
		return 0, fmt.Errorf("node %s annotation %s=%q: %v", node, capacityAnn, n.Annotations[capacityAnn], err)
	}
	return q.Value(), nil
}

func csiCapacity(ctx context.Context, k kubernetes.Interface, node string) (int64, error) {
	caps, err := k.StorageV1().CSIStorageCapacities("topolvm-system").List(ctx, metav1.ListOptions{})
	if err != nil {
		return 0, err
	}
	for _, c := range caps.Items {
		if c.StorageClassName == storageClass && c.NodeTopology != nil && c.NodeTopology.MatchLabels[topolvmNode] == node && c.Capacity != nil {
			return c.Capacity.Value(), nil
		}
	}
	return 0, fmt.Errorf("no CSIStorageCapacity for %s on %s", storageClass, node)
}

func lvSizes(ctx context.Context, d dynamic.Interface, pv string) (spec, current string, err error) {
	lv, err := d.Resource(logicalVolumes).Get(ctx, pv, metav1.GetOptions{})
	if err != nil {
		return "", "", err
	}
	spec, _, _ = unstructured.NestedString(lv.Object, "spec", "size")
	current, _, _ = unstructured.NestedString(lv.Object, "status", "currentSize")
	return spec, current, nil
}

// hasResizeState is whether the claim still shows a resize under way or failed: a resize
// condition or a storage entry in allocatedResourceStatuses.
func hasResizeState(c *corev1.PersistentVolumeClaim) string {
	for _, cond := range c.Status.Conditions {
		switch cond.Type {
		case corev1.PersistentVolumeClaimResizing, corev1.PersistentVolumeClaimFileSystemResizePending,
			corev1.PersistentVolumeClaimControllerResizeError, corev1.PersistentVolumeClaimNodeResizeError:
			return "condition " + string(cond.Type)
		}
	}
	if s, ok := c.Status.AllocatedResourceStatuses[corev1.ResourceStorage]; ok {
		return "allocatedResourceStatuses storage=" + string(s)
	}
	return ""
}

// TestRealTopoLVM_ExpandsClaimThroughResizer grows a 10Gi TopoLVM claim used by a running Pod to
// 20Gi on `up --topolvm real`: external-resizer calls TopoLVM's ControllerExpandVolume, which
// raises the LogicalVolume's spec.size; the node's LogicalVolume reconciler has lvmd (the fake)
// grow the volume and sets status.currentSize; external-resizer sets the PV's capacity and marks
// the claim NodeResizePending; the kubelet shim finishes the claim's status as the kubelet does
// after NodeExpandVolume. The node's free space drops by the 10Gi more: at once in TopoLVM's
// capacity annotation, at external-provisioner's next capacity poll (1 min) in its
// CSIStorageCapacity.
func TestRealTopoLVM_ExpandsClaimThroughResizer(t *testing.T) {
	t.Parallel() // own sandbox, waits on its controllers: beside the others that do (CI time, issue 44)
	bin := topolvmBinOrSkip(t)
	k, d := startRealTopoLVMSandbox(t, bin)
	g := runOneOrdinal(t, k, "grow")

	var ann0, csi0 int64
	poll(t, 90*time.Second, "capacity of "+g.node+" after provisioning", func(ctx context.Context) (bool, error) {
		a, err := nodeCapacityAnn(ctx, k, g.node)
		if err != nil {
			return false, err
		}
		c, err := csiCapacity(ctx, k, g.node)
		if err != nil {
			return false, err
		}
		ann0, csi0 = a, c
		// external-provisioner refreshes the node's segment after provisioning: both agree.
		if a != c {
			return false, fmt.Errorf("annotation %d, CSIStorageCapacity %d", a, c)
		}
		return true, nil
	})
	t.Logf("node %s: %d GiB free before the growth", g.node, ann0>>30)

	start := time.Now()
	growClaim(t, k, g, "20Gi")
	const gi20 = "20Gi"
	poll(t, 60*time.Second, "LogicalVolume "+g.pv+" grown to 20Gi", func(ctx context.Context) (bool, error) {
		spec, cur, err := lvSizes(ctx, d, g.pv)
		if err != nil {
			return false, err
		}
		if spec != gi20 || cur != gi20 {
			return false, fmt.Errorf("spec.size %s, status.currentSize %s", spec, cur)
		}
		return true, nil
	})
	poll(t, 60*time.Second, "PV and PVC at 20Gi, resize finished", func(ctx context.Context) (bool, error) {
		pv, err := k.CoreV1().PersistentVolumes().Get(ctx, g.pv, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		pvc, err := k.CoreV1().PersistentVolumeClaims(g.ns).Get(ctx, g.pvc, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if p, c, s := qty(pv.Spec.Capacity), qty(pvc.Status.Capacity), hasResizeState(pvc); p != gi20 || c != gi20 || s != "" {
			return false, fmt.Errorf("PV capacity %s, PVC status capacity %s, resize state %q", p, c, s)
		}
		return true, nil
	})
	t.Logf("claim grown 10Gi -> 20Gi in %s", time.Since(start).Round(time.Millisecond))
	// Each step is what the real components record on the claim. Event recorders write
	// asynchronously (client-go's broadcaster), after the status writes the wait above saw: the
	// Events are polled for.
	want := map[string]string{"Resizing": "external-resizer topolvm.io", "FileSystemResizeRequired": "external-resizer topolvm.io", "FileSystemResizeSuccessful": "kubelet"}
	poll(t, 30*time.Second, "the resize Events on "+g.pvc, func(ctx context.Context) (bool, error) {
		evs, err := k.CoreV1().Events(g.ns).List(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("involvedObject.name", g.pvc).String()})
		if err != nil {
			return false, err
		}
		seen := map[string]string{}
		for _, e := range evs.Items {
			seen[e.Reason] = e.Source.Component
		}
		for reason, from := range want {
			if seen[reason] != from {
				return false, fmt.Errorf("event %s from %q, want from %q (events: %v)", reason, seen[reason], from, seen)
			}
		}
		return true, nil
	})

	grown := int64(10) << 30
	poll(t, 30*time.Second, "capacity annotation of "+g.node+" lowered by 10Gi", func(ctx context.Context) (bool, error) {
		a, err := nodeCapacityAnn(ctx, k, g.node)
		if err != nil {
			return false, err
		}
		if a != ann0-grown {
			return false, fmt.Errorf("annotation %d, want %d", a, ann0-grown)
		}
		return true, nil
	})
	// external-provisioner's CSIStorageCapacity follows at its next poll (--capacity-poll-interval
	// 1m): a resize does not go through the provisioner, so nothing refreshes the segment sooner.
	poll(t, 90*time.Second, "CSIStorageCapacity of "+g.node+" lowered by 10Gi", func(ctx context.Context) (bool, error) {
		c, err := csiCapacity(ctx, k, g.node)
		if err != nil {
			return false, err
		}
		if c != csi0-grown {
			return false, fmt.Errorf("CSIStorageCapacity %d, want %d", c, csi0-grown)
		}
		return true, nil
	})
	t.Logf("CSIStorageCapacity lowered %s after the growth started", time.Since(start).Round(time.Second))
}

// TestRealTopoLVM_ExpansionBeyondVolumeGroupFails grows a 10Gi claim past its node's volume
// group (2 Local SSDs: 750 GiB): TopoLVM's ControllerExpandVolume refuses it against the node's
// capacity annotation before it touches the LogicalVolume, external-resizer records the failure
// as a VolumeResizeFailed event on the claim (the event the provider's engine quotes,
// internal/engine/recreate.go resizeFailure) and the claim, PV and LogicalVolume keep 10Gi.
func TestRealTopoLVM_ExpansionBeyondVolumeGroupFails(t *testing.T) {
	t.Parallel() // own sandbox, waits on its controllers: beside the others that do (CI time, issue 44)
	bin := topolvmBinOrSkip(t)
	k, d := startRealTopoLVMSandbox(t, bin)
	g := runOneOrdinal(t, k, "toobig")
	pvc0, err := k.CoreV1().PersistentVolumeClaims(g.ns).Get(t.Context(), g.pvc, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	growClaim(t, k, g, "2Ti")

	// external-resizer v1.14.0 (pkg/controller/expand_and_recover.go, callResizeOnPlugin) records
	// Warning VolumeResizeFailed with the message
	//   resize volume "<pv>" by resizer "topolvm.io" failed: <gRPC error>
	// and TopoLVM v0.41.0's ControllerExpandVolume (internal/driver/controller.go) answers
	//   rpc error: code = Internal desc = not enough space
	// when the node's capacity annotation is below the growth.
	want := fmt.Sprintf("resize volume %q by resizer %q failed: rpc error: code = Internal desc = not enough space", g.pv, "topolvm.io")
	poll(t, 60*time.Second, "VolumeResizeFailed event on "+g.pvc, func(ctx context.Context) (bool, error) {
		evs, err := k.CoreV1().Events(g.ns).List(ctx, metav1.ListOptions{FieldSelector: fields.AndSelectors(
			fields.OneTermEqualSelector("involvedObject.uid", string(pvc0.UID)),
			fields.OneTermEqualSelector("reason", "VolumeResizeFailed")).String()})
		if err != nil {
			return false, err
		}
		for _, e := range evs.Items {
			if e.Type == corev1.EventTypeWarning && e.Message == want {
				return true, nil
			}
		}
		var got []string
		for _, e := range evs.Items {
			got = append(got, e.Message)
		}
		return false, fmt.Errorf("VolumeResizeFailed messages %q, want %q", got, want)
	})
	check := func(ctx context.Context) error {
		pvc, err := k.CoreV1().PersistentVolumeClaims(g.ns).Get(ctx, g.pvc, metav1.GetOptions{})
		if err != nil {
			return err
		}
		pv, err := k.CoreV1().PersistentVolumes().Get(ctx, g.pv, metav1.GetOptions{})
		if err != nil {
			return err
		}
		spec, cur, err := lvSizes(ctx, d, g.pv)
		if err != nil {
			return err
		}
		if c, p := qty(pvc.Status.Capacity), qty(pv.Spec.Capacity); c != "10Gi" || p != "10Gi" || spec != "10Gi" || cur != "10Gi" {
			return fmt.Errorf("PVC status capacity %s, PV capacity %s, LogicalVolume spec.size %s status.currentSize %s; want all 10Gi", c, p, spec, cur)
		}
		// external-resizer keeps the claim in ControllerResizeInProgress (allocated 2Ti) with a
		// ControllerResizeError condition (Internal is a final, not an infeasible, error:
		// markControllerExpansionFailedCondition) and retries with its backoff.
		alloc := pvc.Status.AllocatedResources[corev1.ResourceStorage]
		if s := pvc.Status.AllocatedResourceStatuses[corev1.ResourceStorage]; s != corev1.PersistentVolumeClaimControllerResizeInProgress || alloc.String() != "2Ti" {
			return fmt.Errorf("allocatedResourceStatuses storage=%q allocatedResources %s, want ControllerResizeInProgress 2Ti", s, alloc.String())
		}
		for _, c := range pvc.Status.Conditions {
			if c.Type == corev1.PersistentVolumeClaimControllerResizeError && c.Status == corev1.ConditionTrue && strings.Contains(c.Message, "not enough space") {
				return nil
			}
		}
		return fmt.Errorf("no ControllerResizeError condition quoting the failure: %+v", pvc.Status.Conditions)
	}
	poll(t, 30*time.Second, "failed resize recorded on "+g.pvc, func(ctx context.Context) (bool, error) {
		err := check(ctx)
		return err == nil, err
	})
	holds(t, 3*time.Second, g.pvc+" keeps 10Gi", check)
}
