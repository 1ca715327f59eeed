package gke

import (
	"context"
	"fmt"
	"slices"
	"time"

	"cloud.google.com/go/container/apiv1/containerpb"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
)

// AnnotationRecreatedAt (RFC 3339) marks a Node whose VM GKE recreated (RecreateNode): the new
// node of a new-name recreation, or the kept Node object of a same-name one. Sandbox-only, for
// tests; GKE writes no such annotation.
const AnnotationRecreatedAt = "sandbox.olapgke.io/recreated-at"

// RecreateMode is how GKE recreates a node's VM (RecreateNode).
type RecreateMode string

const (
	// RecreateNewName deletes the node and creates a new one (new name, new UID) in the same
	// pool and zone, as a surge upgrade or an auto-repair that replaces the instance does.
	RecreateNewName RecreateMode = "new-name"
	// RecreateSameName recreates the VM under the same name: the Node object stays (same UID),
	// its VM identity changes (instance ID, system UUID, machine ID, and the boot ID with them),
	// and its Local SSDs come back empty, which TopoLVM's node agent finds as an empty volume
	// group (the sandbox keys a node's disks on its system UUID: see RebootNode for the case
	// where only the boot ID changes).
	RecreateSameName RecreateMode = "same-name"
)

// RecreateNode recreates the VM behind a node the way GKE's node auto-repair does, in an
// AUTO_REPAIR_NODES operation on the node's pool (listed by ListOperations, so a provider's
// Read can see it): the node is cordoned and drained first, then replaced (RecreateNewName) or
// rebooted empty (RecreateSameName). GKE starts these operations itself, so the concurrent
// operations quota is not checked; an operation on the cluster or the pool refuses it. For tests
// (the sandbox's control endpoint).
func (s *Server) RecreateNode(nodeName string, mode RecreateMode) (*containerpb.Operation, error) {
	if mode != RecreateNewName && mode != RecreateSameName {
		return nil, invalid("Invalid recreation mode %q: use %q or %q.", mode, RecreateNewName, RecreateSameName)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	c, p, rec, ok := s.nodeLocked(nodeName)
	if !ok {
		return nil, status.Errorf(codes.NotFound, "Not found: node %s is in no node pool of the emulator.", nodeName)
	}
	if err := clusterBusyErrLocked(c); err != nil {
		return nil, err
	}
	if err := busyErrLocked(p); err != nil {
		return nil, err
	}
	snap, cpb := clonePool(p.np), cloneCluster(c.pb)
	work := func(ctx context.Context) (string, error) {
		if mode == RecreateSameName {
			return s.rebootEmpty(ctx, nodeName)
		}
		return s.replaceNode(ctx, p, cpb, snap, rec)
	}
	return s.startOpLocked(p.key, p, containerpb.Operation_AUTO_REPAIR_NODES, "repairing", work, nil), nil
}

// nodeLocked finds the pool a node belongs to.
func (s *Server) nodeLocked(name string) (*cluster, *pool, nodeRec, bool) {
	for _, c := range s.clusters {
		for _, p := range c.pools {
			if i := slices.IndexFunc(p.nodes, func(r nodeRec) bool { return r.Name == name }); i >= 0 {
				return c, p, p.nodes[i], true
			}
		}
	}
	return nil, nil, nodeRec{}, false
}

// replaceNode creates the replacement first (surge), then drains and deletes the old node.
func (s *Server) replaceNode(ctx context.Context, p *pool, cpb *containerpb.Cluster, snap *containerpb.NodePool, old nodeRec) (string, error) {
	at := time.Now().UTC().Format(time.RFC3339)
	name, err := s.addNodeWith(ctx, p, cpb, snap, old.Zone, func(n *corev1.Node) {
		n.Annotations[AnnotationRecreatedAt] = at
	})
	if err != nil {
		return "", status.Errorf(codes.Internal, "Failed to create replacement node in zone %s for node pool %s: %v", old.Zone, p.key, err)
	}
	if err := s.removeNode(ctx, p, old.Name); err != nil {
		return "", status.Errorf(codes.Internal, "Failed to delete node %s of node pool %s: %v", old.Name, p.key, err)
	}
	return fmt.Sprintf("auto-repair recreated node %s as %s", old.Name, name), nil
}

// rebootEmpty cordons and drains the node, then does what a VM recreated under the same name
// shows in the Node object it re-registers with: a new VM identity (system UUID and machine ID,
// which the kubelet reads from the VM's SMBIOS and /etc/machine-id; the instance ID GKE writes
// in the container.googleapis.com/instance_id annotation) and so a new boot ID, fresh
// conditions, the recreated-at annotation, and schedulable again. The Node keeps its UID, labels
// and taints; its Pods were drained.
func (s *Server) rebootEmpty(ctx context.Context, name string) (string, error) {
	fail := func(err error) (string, error) {
		return "", status.Errorf(codes.Internal, "Failed to recreate the VM of node %s: %v", name, err)
	}
	if err := s.cordon(ctx, name); err != nil {
		return fail(err)
	}
	if err := s.drain(ctx, name); err != nil {
		return fail(err)
	}
	nodes := s.o.Kube.CoreV1().Nodes()
	boot := randHex(16)
	var oldBoot string
	// Status first: an observer that sees the annotation also sees the new boot ID.
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n, err := nodes.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		n = n.DeepCopy()
		oldBoot = n.Status.NodeInfo.BootID
		n.Status.NodeInfo.BootID = boot
		n.Status.NodeInfo.SystemUUID = randHex(16)
		n.Status.NodeInfo.MachineID = randHex(16)
		n.Status.Conditions = registeredConditions(metav1.Now())
		_, err = nodes.UpdateStatus(ctx, n, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return fail(err)
	}
	at := time.Now().UTC().Format(time.RFC3339)
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n, err := nodes.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		n = n.DeepCopy()
		if n.Annotations == nil {
			n.Annotations = map[string]string{}
		}
		n.Annotations[AnnotationRecreatedAt] = at
		n.Annotations[AnnotationInstanceID] = randDigits(19)
		n.Spec.Unschedulable = false
		_, err = nodes.Update(ctx, n, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return fail(err)
	}
	return fmt.Sprintf("auto-repair recreated the VM of node %s under the same name (boot ID %s -> %s); its Local SSDs are empty", name, oldBoot, boot), nil
}
