package topolvm

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/util/retry"
	"k8s.io/klog/v2"
)

// provisionerIdentity mimics external-provisioner's storage.kubernetes.io/csiProvisionerIdentity
// volume attribute (<start time ms>-<random>-<driver>).
var provisionerIdentity = strconv.FormatInt(time.Now().UnixMilli(), 10) + "-" + strconv.Itoa(rand.IntN(10000)) + "-" + DriverName

// multiNodeModes maps the access modes TopoLVM cannot serve to the CSI names external-provisioner
// translates them to.
var multiNodeModes = map[corev1.PersistentVolumeAccessMode]string{
	corev1.ReadWriteMany: "MULTI_NODE_MULTI_WRITER",
	corev1.ReadOnlyMany:  "MULTI_NODE_READER_ONLY",
}

// pvName is external-provisioner's deterministic PV name: one PV per PVC, even across restarts.
func pvName(pvc *corev1.PersistentVolumeClaim) string { return "pvc-" + string(pvc.UID) }

// syncPVC provisions a PV for a PVC the scheduler has given a node (delayed binding), the way
// external-provisioner + TopoLVM's CreateVolume do, or reports why it cannot.
func (s *simulator) syncPVC(ctx context.Context, namespace, name string) error {
	pvc, err := s.pvcs.PersistentVolumeClaims(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if pvc.Spec.VolumeName != "" {
		return s.expand(ctx, pvc)
	}
	nodeName := pvc.Annotations[AnnSelectedNode]
	if pvc.DeletionTimestamp != nil || nodeName == "" || pvc.Status.Phase == corev1.ClaimBound {
		return nil
	}
	prov := pvc.Annotations[AnnStorageProvisioner]
	if prov == "" {
		prov = pvc.Annotations[AnnBetaStorageProvisioner]
	}
	if prov != DriverName || pvc.Spec.StorageClassName == nil {
		return nil
	}
	scName := *pvc.Spec.StorageClassName
	sc, err := s.scs.Get(scName)
	if apierrors.IsNotFound(err) {
		s.recorder.Eventf(pvc, corev1.EventTypeWarning, "ProvisioningFailed", "storageclass.storage.k8s.io %q not found", scName)
		return nil
	}
	if err != nil {
		return err
	}
	if sc.Provisioner != DriverName {
		return nil
	}
	name = pvName(pvc)
	if _, err := s.pvs.Get(name); err == nil {
		return nil // already provisioned; the PV binder binds it
	}
	s.mu.Lock()
	if _, ok := s.ledger[name]; ok {
		s.mu.Unlock()
		return nil // created by us, not yet in the cache
	}
	s.mu.Unlock()

	s.recorder.Eventf(pvc, corev1.EventTypeNormal, "Provisioning", "External provisioner is provisioning volume for claim %q", pvc.Namespace+"/"+pvc.Name)
	fail := func(format string, args ...any) {
		s.recorder.Eventf(pvc, corev1.EventTypeWarning, "ProvisioningFailed", "failed to provision volume with StorageClass %q: "+format, append([]any{scName}, args...)...)
	}

	node, err := s.nodes.Get(nodeName)
	if apierrors.IsNotFound(err) {
		// The cache may lag behind a just-created node: ask the API server before giving up.
		node, err = s.kube.CoreV1().Nodes().Get(ctx, nodeName, metav1.GetOptions{})
	}
	if apierrors.IsNotFound(err) {
		s.recorder.Eventf(pvc, corev1.EventTypeWarning, "ProvisioningFailed", "failed to get target node: node %q not found", nodeName)
		return s.reschedule(ctx, pvc, nodeName)
	}
	if err != nil {
		return err
	}

	// TopoLVM volumes are node-local: CreateVolume refuses multi-node access modes.
	for _, m := range pvc.Spec.AccessModes {
		if csiMode, multi := multiNodeModes[m]; multi {
			fail("rpc error: code = InvalidArgument desc = unsupported access mode: %s", csiMode)
			return nil
		}
	}
	req := pvc.Spec.Resources.Requests[corev1.ResourceStorage]
	requested := roundUpGiB(req.Value())
	vg, size := nodeVolumeGroup(node)

	s.mu.Lock()
	classes := s.classes
	dc, ok := findClass(classes, sc.Parameters[DeviceClassParam])
	if !ok {
		s.mu.Unlock()
		// TopoLVM refuses an unknown device class as an invalid argument: no rescheduling
		// helps, so external-provisioner keeps the node and retries later.
		fail("rpc error: code = InvalidArgument desc = device class not found: %q", sc.Parameters[DeviceClassParam])
		return nil
	}
	var free int64
	if size > 0 && dc.VolumeGroup == vg {
		free = classCapacity(dc, classes, size, nodeThinPools(node), s.volumesOnLocked(nodeName))
	}
	if requested > free {
		s.mu.Unlock()
		fail("rpc error: code = ResourceExhausted desc = no enough space left on VG: free=%d, requested=%d", free, requested)
		return s.reschedule(ctx, pvc, nodeName)
	}
	// Reserve the space before the API call so a concurrent provisioning sees it.
	s.ledger[name] = volume{node: nodeName, class: dc.Name, bytes: requested}
	s.mu.Unlock()

	pv := buildPV(pvc, sc.Name, sc.ReclaimPolicy, sc.MountOptions, sc.Parameters[FSTypeParam], dc.Name, nodeName, requested)
	if _, err := s.kube.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{}); err != nil {
		if apierrors.IsAlreadyExists(err) {
			return nil
		}
		s.mu.Lock()
		delete(s.ledger, name)
		s.mu.Unlock()
		return fmt.Errorf("create PV %s for PVC %s/%s: %w", name, pvc.Namespace, pvc.Name, err)
	}
	klog.FromContext(ctx).Info("provisioned", "pvc", pvc.Namespace+"/"+pvc.Name, "pv", name, "node", nodeName, "class", dc.Name, "bytes", requested)
	s.recorder.Eventf(pvc, corev1.EventTypeNormal, "ProvisioningSucceeded", "Successfully provisioned volume %s", name)
	s.queue.Add(key{kind: kindNode, name: nodeName})
	return nil
}

// reschedule removes the selected-node annotation, as external-provisioner does after a final
// error under WaitForFirstConsumer, so the scheduler picks a node again.
func (s *simulator) reschedule(ctx context.Context, cached *corev1.PersistentVolumeClaim, nodeName string) error {
	first := true
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		pvc := cached.DeepCopy()
		if !first {
			fresh, err := s.kube.CoreV1().PersistentVolumeClaims(cached.Namespace).Get(ctx, cached.Name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			pvc = fresh
		}
		first = false
		if pvc.UID != cached.UID || pvc.Annotations[AnnSelectedNode] != nodeName || pvc.Spec.VolumeName != "" {
			return nil
		}
		delete(pvc.Annotations, AnnSelectedNode)
		_, err := s.kube.CoreV1().PersistentVolumeClaims(pvc.Namespace).Update(ctx, pvc, metav1.UpdateOptions{})
		return err
	})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// buildPV is the PV external-provisioner writes for TopoLVM's CreateVolume answer.
func buildPV(pvc *corev1.PersistentVolumeClaim, scName string, reclaim *corev1.PersistentVolumeReclaimPolicy, mountOptions []string, fsType, class, node string, bytes int64) *corev1.PersistentVolume {
	policy := corev1.PersistentVolumeReclaimDelete
	if reclaim != nil {
		policy = *reclaim
	}
	mode := corev1.PersistentVolumeFilesystem
	if pvc.Spec.VolumeMode != nil {
		mode = *pvc.Spec.VolumeMode
	}
	if mode == corev1.PersistentVolumeBlock {
		fsType = ""
	}
	return &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{
			Name:        pvName(pvc),
			Annotations: map[string]string{AnnProvisionedBy: DriverName},
		},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:    corev1.ResourceList{corev1.ResourceStorage: *resource.NewQuantity(bytes, resource.BinarySI)},
			AccessModes: pvc.Spec.AccessModes,
			VolumeMode:  &mode,
			PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{
				Driver:       DriverName,
				VolumeHandle: string(uuid.NewUUID()),
				FSType:       fsType,
				VolumeAttributes: map[string]string{
					DeviceClassParam: class,
					"storage.kubernetes.io/csiProvisionerIdentity": provisionerIdentity,
				},
			}},
			ClaimRef: &corev1.ObjectReference{
				Kind: "PersistentVolumeClaim", APIVersion: "v1",
				Namespace: pvc.Namespace, Name: pvc.Name, UID: pvc.UID,
			},
			StorageClassName:              scName,
			PersistentVolumeReclaimPolicy: policy,
			MountOptions:                  mountOptions,
			NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{
				NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{
					Key: TopologyKey, Operator: corev1.NodeSelectorOpIn, Values: []string{node},
				}}}},
			}},
		},
	}
}

// syncPV deletes a Released TopoLVM PV with reclaim policy Delete (external-provisioner calls
// DeleteVolume, TopoLVM removes the LV, then the PV object is deleted) and frees its space.
func (s *simulator) syncPV(ctx context.Context, name string) error {
	pv, err := s.pvs.Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if !isTopoLVMPV(pv) || pv.Annotations[AnnProvisionedBy] != DriverName || pv.DeletionTimestamp != nil {
		return nil
	}
	if pv.Status.Phase != corev1.VolumeReleased || pv.Spec.PersistentVolumeReclaimPolicy != corev1.PersistentVolumeReclaimDelete {
		return nil
	}
	err = s.kube.CoreV1().PersistentVolumes().Delete(ctx, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &pv.UID}})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete released PV %s: %w", name, err)
	}
	s.mu.Lock()
	v, had := s.ledger[name]
	delete(s.ledger, name)
	if err == nil {
		s.lvGone[name] = true // until the informer reports the PV object gone
	}
	s.mu.Unlock()
	if had {
		s.queue.Add(key{kind: kindNode, name: v.node})
	}
	klog.FromContext(ctx).Info("deleted released volume", "pv", name)
	return nil
}
