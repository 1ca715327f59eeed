package plannertest

import (
	"fmt"

	"github.com/olapgke/terraform-provider-olapgke/internal/planner"
	"github.com/olapgke/terraform-provider-olapgke/internal/stsutil"
	"github.com/olapgke/terraform-provider-olapgke/internal/topolvm"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// WithTopoLVM returns a copy of s completed as a GKE + TopoLVM cluster looks to the scheduler,
// from the fixtures' shorthand: every node gets allocatable resources (8 CPU, 32Gi, 110 Pods)
// unless it has some; TopoLVM StorageClasses bind WaitForFirstConsumer; the topolvm.io CSIDriver
// has storageCapacity: true; each node's capacity.topolvm.io/<device-class> annotation becomes
// the CSIStorageCapacity external-provisioner publishes for each StorageClass of that class
// (unless the test wrote CSIStorageCapacity objects for that class itself); PVs pinned by
// topology.topolvm.io/node are TopoLVM CSI volumes.
func WithTopoLVM(s planner.Snapshot) planner.Snapshot {
	c := s
	c.Nodes = make([]corev1.Node, len(s.Nodes))
	for i := range s.Nodes {
		n := *s.Nodes[i].DeepCopy()
		if n.Status.Allocatable == nil {
			n.Status.Allocatable = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8"),
				corev1.ResourceMemory: resource.MustParse("32Gi"), corev1.ResourcePods: resource.MustParse("110")}
			n.Status.Capacity = n.Status.Allocatable.DeepCopy()
		}
		c.Nodes[i] = n
	}
	c.StorageClasses = make([]storagev1.StorageClass, len(s.StorageClasses))
	explicit := map[string]bool{}
	for _, c := range s.Capacities {
		explicit[c.StorageClassName] = true
	}
	c.Capacities = append([]storagev1.CSIStorageCapacity(nil), s.Capacities...)
	for i := range s.StorageClasses {
		sc := *s.StorageClasses[i].DeepCopy()
		if sc.Provisioner == stsutil.ProvisionerTopoLVM && sc.VolumeBindingMode == nil {
			sc.VolumeBindingMode = ptr.To(storagev1.VolumeBindingWaitForFirstConsumer)
		}
		c.StorageClasses[i] = sc
		if sc.Provisioner != stsutil.ProvisionerTopoLVM || explicit[sc.Name] {
			continue
		}
		dc := topolvm.ClassOfStorageClass(&sc, stsutil.DefaultDeviceClassKey)
		for _, n := range c.Nodes {
			v, ok := n.Annotations[stsutil.AnnotationCapacityPrefix+dc]
			if !ok {
				continue
			}
			q, err := resource.ParseQuantity(v)
			if err != nil {
				continue
			}
			c.Capacities = append(c.Capacities, storagev1.CSIStorageCapacity{
				ObjectMeta:       metav1.ObjectMeta{Namespace: "topolvm-system", Name: fmt.Sprintf("csisc-%s-%s", sc.Name, n.Name)},
				NodeTopology:     &metav1.LabelSelector{MatchLabels: map[string]string{stsutil.LabelTopoLVMNode: n.Labels[stsutil.LabelTopoLVMNode]}},
				StorageClassName: sc.Name,
				Capacity:         &q,
			})
		}
	}
	hasDriver := false
	for _, d := range s.CSIDrivers {
		hasDriver = hasDriver || d.Name == stsutil.ProvisionerTopoLVM
	}
	if !hasDriver {
		c.CSIDrivers = append(append([]storagev1.CSIDriver(nil), s.CSIDrivers...), storagev1.CSIDriver{
			ObjectMeta: metav1.ObjectMeta{Name: stsutil.ProvisionerTopoLVM},
			Spec:       storagev1.CSIDriverSpec{StorageCapacity: ptr.To(true), AttachRequired: ptr.To(false)},
		})
	}
	c.PVCs = make([]corev1.PersistentVolumeClaim, len(s.PVCs))
	for i := range s.PVCs {
		pvc := *s.PVCs[i].DeepCopy()
		if pvc.Spec.VolumeName != "" {
			// What the PV controller leaves on a bound claim (the scheduler checks it).
			if pvc.Annotations == nil {
				pvc.Annotations = map[string]string{}
			}
			pvc.Annotations["pv.kubernetes.io/bind-completed"] = "yes"
			pvc.Status.Phase = corev1.ClaimBound
		}
		c.PVCs[i] = pvc
	}
	c.PVs = make([]corev1.PersistentVolume, len(s.PVs))
	for i := range s.PVs {
		pv := *s.PVs[i].DeepCopy()
		if pv.Spec.PersistentVolumeSource == (corev1.PersistentVolumeSource{}) && pv.Spec.NodeAffinity != nil {
			pv.Spec.CSI = &corev1.CSIPersistentVolumeSource{Driver: stsutil.ProvisionerTopoLVM, VolumeHandle: pv.Name}
		}
		if pv.Spec.ClaimRef != nil {
			pv.Status.Phase = corev1.VolumeBound
		}
		c.PVs[i] = pv
	}
	return c
}

// Final is w's snapshot as the scheduler would see the cluster (withTopoLVM).
func (w *World) Final() planner.Snapshot { return WithTopoLVM(w.Snap) }

// Final is w's snapshot as the scheduler would see the cluster (withTopoLVM).
func (w *MigWorld) Final() *planner.Snapshot {
	s := WithTopoLVM(w.S)
	return &s
}
