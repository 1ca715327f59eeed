package topolvm

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
)

// resizeNoSpaceMessage is external-resizer v1.14.0's VolumeResizeFailed message
// (pkg/controller/expand_and_recover.go callResizeOnPlugin: resize volume %q by resizer %q
// failed: <gRPC error>) for TopoLVM v0.41.0's answer when the growth exceeds the node's capacity
// annotation (internal/driver/controller.go ControllerExpandVolume: codes.Internal "not enough
// space"). The simulator's free space is the annotation's figure, so this is the answer real
// TopoLVM gives; lvmd's own ResizeLV refusal (ResourceExhausted "no enough space left on VG")
// is reached only with a stale annotation.
const resizeNoSpaceMessage = "resize volume %q by resizer %q failed: rpc error: code = Internal desc = not enough space"

// wantsExpansion reports whether a bound PVC asks for more than its status capacity.
func wantsExpansion(c *corev1.PersistentVolumeClaim) bool {
	if c.Spec.VolumeName == "" || c.Status.Phase != corev1.ClaimBound {
		return false
	}
	req := c.Spec.Resources.Requests[corev1.ResourceStorage]
	cur := c.Status.Capacity[corev1.ResourceStorage]
	return req.Cmp(cur) > 0
}

// expand grows a bound TopoLVM volume the way external-resizer (ControllerExpandVolume) and then
// the kubelet (NodeExpandVolume, filesystem grow) would, in one go since KWOK nodes have no
// kubelet: PV capacity first, then the PVC status. Space on the node is checked like at
// provisioning; a shortage gives a VolumeResizeFailed event and the PVC keeps its size.
func (s *simulator) expand(ctx context.Context, pvc *corev1.PersistentVolumeClaim) error {
	if !wantsExpansion(pvc) || pvc.Spec.StorageClassName == nil {
		return nil
	}
	pv, err := s.pvs.Get(pvc.Spec.VolumeName)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if !isTopoLVMPV(pv) || pv.Annotations[AnnProvisionedBy] != DriverName {
		return nil
	}
	s.mu.Lock()
	lost := s.lostLocked(pv)
	s.mu.Unlock()
	if lost {
		// lvmd has no such LV to grow (TopoLVM's node plugin cannot finish the resize); the
		// PVC keeps its size. The event is the sandbox's own wording.
		s.recorder.Eventf(pvc, corev1.EventTypeWarning, "VolumeResizeFailed",
			"sandbox: the logical volume of PV %s was lost with node %s's volume group (its VM was recreated); not resized", pv.Name, pinnedNode(pv))
		return nil
	}
	if sc, err := s.scs.Get(*pvc.Spec.StorageClassName); err != nil || sc.AllowVolumeExpansion == nil || !*sc.AllowVolumeExpansion {
		return nil // the API server refuses the PVC edit without allowVolumeExpansion
	}
	reqQ := pvc.Spec.Resources.Requests[corev1.ResourceStorage]
	want := roundUpGiB(reqQ.Value())
	curQ := pv.Spec.Capacity[corev1.ResourceStorage]
	if cur := curQ.Value(); want > cur {
		v, ok := volumeOf(pv)
		if !ok {
			return nil
		}
		node, err := s.nodes.Get(v.node)
		if err != nil && !apierrors.IsNotFound(err) {
			return err
		}
		s.mu.Lock()
		classes := s.classes
		dc, found := findClass(classes, v.class)
		var free int64
		if node != nil && found {
			if vg, size := nodeVolumeGroup(node); size > 0 && vg == dc.VolumeGroup {
				free = classCapacity(dc, classes, size, nodeThinPools(node), s.volumesOnLocked(v.node))
			}
		}
		if want-cur > free {
			s.mu.Unlock()
			s.recorder.Eventf(pvc, corev1.EventTypeWarning, "VolumeResizeFailed", resizeNoSpaceMessage, pv.Name, DriverName)
			return nil
		}
		v.bytes = want
		s.ledger[pv.Name] = v
		s.mu.Unlock()
		s.recorder.Eventf(pvc, corev1.EventTypeNormal, "Resizing", "External resizer is resizing volume %s", pv.Name)
		err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
			fresh, err := s.kube.CoreV1().PersistentVolumes().Get(ctx, pv.Name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			fresh.Spec.Capacity[corev1.ResourceStorage] = *resource.NewQuantity(want, resource.BinarySI)
			_, err = s.kube.CoreV1().PersistentVolumes().Update(ctx, fresh, metav1.UpdateOptions{})
			return err
		})
		if err != nil {
			s.mu.Lock()
			v.bytes = cur
			if _, still := s.ledger[pv.Name]; still {
				s.ledger[pv.Name] = v
			}
			s.mu.Unlock()
			return fmt.Errorf("expand PV %s to %d bytes: %w", pv.Name, want, err)
		}
		s.queue.Add(key{kind: kindNode, name: v.node})
	} else {
		want = cur
	}
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		fresh, err := s.kube.CoreV1().PersistentVolumeClaims(pvc.Namespace).Get(ctx, pvc.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if fresh.UID != pvc.UID {
			return nil
		}
		q := *resource.NewQuantity(want, resource.BinarySI)
		if fresh.Status.Capacity == nil {
			fresh.Status.Capacity = corev1.ResourceList{}
		}
		fresh.Status.Capacity[corev1.ResourceStorage] = q
		if fresh.Status.AllocatedResources == nil {
			fresh.Status.AllocatedResources = corev1.ResourceList{}
		}
		fresh.Status.AllocatedResources[corev1.ResourceStorage] = q
		delete(fresh.Status.AllocatedResourceStatuses, corev1.ResourceStorage)
		var conds []corev1.PersistentVolumeClaimCondition
		for _, c := range fresh.Status.Conditions {
			if c.Type != corev1.PersistentVolumeClaimResizing && c.Type != corev1.PersistentVolumeClaimFileSystemResizePending {
				conds = append(conds, c)
			}
		}
		fresh.Status.Conditions = conds
		_, err = s.kube.CoreV1().PersistentVolumeClaims(pvc.Namespace).UpdateStatus(ctx, fresh, metav1.UpdateOptions{})
		return err
	})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("update status of PVC %s/%s after expansion: %w", pvc.Namespace, pvc.Name, err)
	}
	s.recorder.Eventf(pvc, corev1.EventTypeNormal, "VolumeResizeSuccessful", "Volume %s expanded to %s", pv.Name, resource.NewQuantity(want, resource.BinarySI))
	return nil
}
