package gke

import (
	"context"
	"fmt"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
)

// RebootNode restarts a node's VM in place, as a guest reboot (`sudo reboot`, a kernel panic), a
// Compute Engine `instances reset` or a host-error restart that recovers does: the VM is the
// same instance on the same host's disks, so its Local SSDs keep their data (Compute Engine,
// "About Local SSD disks": data persists through a guest-initiated reboot and a reset; it is
// lost when the VM is deleted or recreated). The Node object shows only a new boot ID (the
// kubelet reads /proc/sys/kernel/random/boot_id at start); the instance ID, system UUID and
// machine ID stay, and so do the Node's UID, labels, taints and Pods (the kubelet restarts their
// containers in place). The kubelet that comes back records a Warning Rebooted Event on the Node
// (kubernetes v1.37.2 pkg/kubelet/nodestatus/setters.go MachineInfo: "Node %s has been rebooted,
// boot id: %s"). Not a GKE operation: nothing is listed by ListOperations. For tests (the
// sandbox's control endpoint).
func (s *Server) RebootNode(ctx context.Context, name string) (oldBoot, newBoot string, err error) {
	s.mu.Lock()
	_, _, _, ok := s.nodeLocked(name)
	s.mu.Unlock()
	if !ok {
		return "", "", status.Errorf(codes.NotFound, "Not found: node %s is in no node pool of the emulator.", name)
	}
	nodes := s.o.Kube.CoreV1().Nodes()
	boot := randHex(16)
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n, err := nodes.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		n = n.DeepCopy()
		oldBoot = n.Status.NodeInfo.BootID
		n.Status.NodeInfo.BootID = boot
		n.Status.Conditions = registeredConditions(metav1.Now())
		_, err = nodes.UpdateStatus(ctx, n, metav1.UpdateOptions{})
		return err
	})
	if apierrors.IsNotFound(err) {
		return "", "", status.Errorf(codes.NotFound, "Not found: node %s.", name)
	}
	if err != nil {
		return "", "", status.Errorf(codes.Internal, "Failed to reboot node %s: %v", name, err)
	}
	now := metav1.NewTime(time.Now())
	ev := &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{GenerateName: name + ".", Namespace: metav1.NamespaceDefault},
		// The kubelet's node reference names the node as its UID too (kubelet.go nodeRef).
		InvolvedObject: corev1.ObjectReference{Kind: "Node", Name: name, UID: types.UID(name)},
		Reason:         "Rebooted",
		Message:        fmt.Sprintf("Node %s has been rebooted, boot id: %s", name, boot),
		Type:           corev1.EventTypeWarning,
		Source:         corev1.EventSource{Component: "kubelet", Host: name},
		FirstTimestamp: now, LastTimestamp: now, Count: 1,
	}
	if _, err := s.o.Kube.CoreV1().Events(metav1.NamespaceDefault).Create(ctx, ev, metav1.CreateOptions{}); err != nil {
		return oldBoot, boot, status.Errorf(codes.Internal, "Rebooted node %s but could not record its Event: %v", name, err)
	}
	return oldBoot, boot, nil
}
