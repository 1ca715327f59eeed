package rollout

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/olapgke/terraform-provider-olapgke/internal/planner"
	"github.com/olapgke/terraform-provider-olapgke/internal/planner/plannertest"
	"github.com/olapgke/terraform-provider-olapgke/internal/stsutil"
)

// TestRolloutWaitsForTopoLVM: a new StatefulSet on a pool whose lvmd has not loaded the claims'
// device class yet (no capacity annotation; external-provisioner published 0 for it, as real
// TopoLVM does right after a device class is added) cannot be placed now, but would be once the
// class is loaded: the plan names the nodes to wait for. Published capacity that is merely too
// small is not a wait: the unschedulable ordinals stand. So does a template no node admits.
func TestRolloutWaitsForTopoLVM(t *testing.T) {
	t.Parallel()
	world := func(loaded bool, freeGiB int64) planner.Snapshot {
		nodes := plannertest.MkPool("pool-a", 3, freeGiB)
		var caps []storagev1.CSIStorageCapacity
		for i := range nodes {
			nodes[i].Status.Allocatable = corev1.ResourceList{corev1.ResourcePods: resource.MustParse("110"),
				corev1.ResourceCPU: resource.MustParse("8"), corev1.ResourceMemory: resource.MustParse("32Gi")}
			if !loaded {
				delete(nodes[i].Annotations, stsutil.AnnotationCapacityPrefix+"ssd")
			}
			q := resource.NewQuantity(freeGiB*plannertest.Gib, resource.BinarySI)
			if !loaded {
				q = resource.NewQuantity(0, resource.BinarySI)
			}
			caps = append(caps, storagev1.CSIStorageCapacity{
				ObjectMeta:       metav1.ObjectMeta{Name: "cap-" + nodes[i].Name, Namespace: "topolvm-system"},
				NodeTopology:     &metav1.LabelSelector{MatchLabels: map[string]string{stsutil.LabelTopoLVMNode: nodes[i].Name}},
				StorageClassName: plannertest.SCName, Capacity: q,
			})
		}
		sc := plannertest.StorageClass()
		sc.VolumeBindingMode = ptr.To(storagev1.VolumeBindingWaitForFirstConsumer)
		return planner.Snapshot{
			Desired:        plannertest.MkSet(3),
			Nodes:          nodes,
			StorageClasses: []storagev1.StorageClass{sc},
			CSIDrivers:     []storagev1.CSIDriver{{ObjectMeta: metav1.ObjectMeta{Name: "topolvm.io"}, Spec: storagev1.CSIDriverSpec{StorageCapacity: ptr.To(true)}}},
			Capacities:     caps,
		}
	}
	unschedulable := func(p *Plan) int {
		n := 0
		for _, o := range p.Ordinals {
			if o.Action == ActionCreate && !o.Schedulable {
				n++
			}
		}
		return n
	}

	p, err := PlanRollout(world(false, 100))
	if err != nil {
		t.Fatal(err)
	}
	if unschedulable(p) != 3 || len(p.TopoLVMWaits) != 3 {
		t.Fatalf("class not loaded: %d unschedulable, waits %v", unschedulable(p), p.TopoLVMWaits)
	}
	for i, w := range p.TopoLVMWaits {
		if w.Node != plannertest.NodeName("pool-a", i) || !strings.Contains(w.Reason, "no capacity.topolvm.io/ssd annotation yet (its lvmd has not loaded the device class)") {
			t.Errorf("wait %d: %+v", i, w)
		}
	}

	if p, _ := PlanRollout(world(true, 100)); unschedulable(p) != 0 || len(p.TopoLVMWaits) != 0 {
		t.Errorf("class loaded with room: %d unschedulable, waits %v", unschedulable(p), p.TopoLVMWaits)
	}
	// mkSet claims 10 GiB per ordinal: 1 GiB free is a real shortage, not a wait.
	if p, _ := PlanRollout(world(true, 1)); unschedulable(p) != 3 || len(p.TopoLVMWaits) != 0 {
		t.Errorf("published capacity too small: %d unschedulable, waits %v", unschedulable(p), p.TopoLVMWaits)
	}
	// A template no node admits is refused whatever TopoLVM does.
	s := world(false, 100)
	s.Desired.Spec.Template.Spec.NodeSelector = map[string]string{plannertest.PoolKey: "pool-z"}
	if p, _ := PlanRollout(s); unschedulable(p) != 3 || len(p.TopoLVMWaits) != 0 {
		t.Errorf("no node admits the template: %d unschedulable, waits %v", unschedulable(p), p.TopoLVMWaits)
	}
}
