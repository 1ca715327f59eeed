package topolvm

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
)

// AnnLogicalVolumeLost (RFC 3339) marks a PV whose logical volume the simulator dropped because
// the node's VM was recreated under the same name. Sandbox-only, for tests: real TopoLVM writes
// nothing (see noticeBoot).
const AnnLogicalVolumeLost = "sandbox.olapgke.io/logical-volume-lost"

// noticeBoot records the node's VM (its system UUID) and, when it changed since the simulator
// last saw the node, forgets the node's logical volumes: GKE recreated the VM under the same name
// (auto-repair, or the sandbox's same-name recreation), so the Node object and its UID stay but
// the Local SSDs are new and empty. A reboot (a new boot ID on the same VM: the sandbox's
// `reboot`) keeps them: Compute Engine keeps Local SSD data through a guest reboot or a reset.
//
// What real TopoLVM shows then: lvmd starts on an empty volume group (recreated by the node's
// setup on the new disks) and reports its whole size as free, so the capacity annotations and
// CSIStorageCapacity go back to full; the PVs and LogicalVolume objects of the old volumes still
// exist and still pin their claims to the node (LogicalVolume status.volumeID is set, so
// topolvm-node does not create them again); a Pod using one stays ContainerCreating with the
// kubelet's FailedMount event carrying the node plugin's NodePublishVolume error "rpc error: code
// = NotFound desc = failed to find LV: <volume ID>" (topolvm/topolvm driver/node.go). The
// simulator frees the space, keeps the PVs, and annotates them AnnLogicalVolumeLost; KWOK's Pods
// have no mounts, so a Pod on such a PV still runs in the sandbox.
func (s *simulator) noticeBoot(ctx context.Context, node *corev1.Node) error {
	vm := node.Status.NodeInfo.SystemUUID
	if vm == "" {
		return nil
	}
	s.mu.Lock()
	prev, seen := s.vms[node.Name]
	s.vms[node.Name] = vm
	if seen && prev != vm {
		n := 0
		for pv, v := range s.ledger {
			if v.node == node.Name {
				delete(s.ledger, pv)
				s.lvLost[pv] = node.Name
				n++
			}
		}
		klog.FromContext(ctx).Info("node's VM recreated with an empty volume group: its logical volumes are lost", "node", node.Name, "systemUUID", vm, "previousSystemUUID", prev, "volumes", n)
	}
	var lost []string
	for pv, n := range s.lvLost {
		if n == node.Name {
			lost = append(lost, pv)
		}
	}
	s.mu.Unlock()
	// Marked on every sync of the node until each PV carries the annotation, so a failed patch
	// is retried.
	at := time.Now().UTC().Format(time.RFC3339)
	for _, name := range lost {
		pv, err := s.pvs.Get(name)
		if apierrors.IsNotFound(err) || err == nil && pv.Annotations[AnnLogicalVolumeLost] != "" {
			continue
		}
		if err != nil {
			return err
		}
		err = s.patchPV(ctx, name, map[string]any{"metadata": map[string]any{"annotations": map[string]string{AnnLogicalVolumeLost: at}}})
		if err != nil && !apierrors.IsNotFound(err) {
			return err
		}
	}
	return nil
}

// forgetBoot drops what the simulator knew of a node that is gone.
func (s *simulator) forgetBoot(node string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.vms, node)
}

// lostLocked reports whether pv's logical volume was lost with its node's volume group (also
// after a simulator restart: the annotation says so). Call with s.mu held.
func (s *simulator) lostLocked(pv *corev1.PersistentVolume) bool {
	_, lost := s.lvLost[pv.Name]
	return lost || pv.Annotations[AnnLogicalVolumeLost] != ""
}

func (s *simulator) patchPV(ctx context.Context, name string, patch map[string]any) error {
	body, err := json.Marshal(patch)
	if err != nil {
		return err
	}
	_, err = s.kube.CoreV1().PersistentVolumes().Patch(ctx, name, types.MergePatchType, body, metav1.PatchOptions{})
	if err != nil {
		return fmt.Errorf("patch PV %s: %w", name, err)
	}
	return nil
}
