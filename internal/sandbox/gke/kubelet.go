package gke

import (
	"context"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
)

// KubeletState is what a node's kubelet does (the control endpoint's :kubelet call).
type KubeletState string

const (
	// KubeletAlive: the kubelet runs (the default): KWOK renews the node's Lease and posts its
	// status, Pods start and finish their deletion, TopoLVM's agent runs.
	KubeletAlive KubeletState = "alive"
	// KubeletDead: the kubelet (or the whole VM: a hung host, a network partition) stopped. Nothing
	// renews the node's Lease or posts its status, so the node lifecycle controller marks it
	// Unknown after its grace period and taints it node.kubernetes.io/unreachable; its Pods'
	// deletions are never confirmed (they stay Terminating); its TopoLVM agent is down, its disks
	// kept.
	KubeletDead KubeletState = "dead"
)

// AnnotationKubelet (sandbox-only) on a Node says its kubelet is dead (KubeletDead); absent
// while it is alive. The sandbox's Pod terminator and starter leave such a node's Pods alone and
// the real TopoLVM's node agents stop there (internal/sandbox/topolvmreal nodes.go reads the same
// key), as a kubelet that is down confirms no deletion and runs no DaemonSet Pod.
const AnnotationKubelet = "sandbox.olapgke.io/kubelet"

// DeadKubeletHolder holds a dead node's Lease, so that KWOK stops renewing it. KWOK v0.8.0 renews
// a node's Lease while it holds it, and treats a node whose Lease another holder holds unexpired
// as "read only" (no heartbeat, no Pod stage: pkg/kwok/controllers/controller.go readOnlyFunc,
// node_lease_controller.go tryAcquireOrRenew). Taking the node out of KWOK's annotation selector
// would not do: KWOK filters its watch events by the selector, so a node that leaves it produces
// no event at all and its Lease keeps being renewed (the Deleted event alone releases it,
// node_controller.go watchResources).
const DeadKubeletHolder = "sandbox.olapgke.io/dead-kubelet"

// deadLeaseSeconds is the dead holder's lease duration: long enough that KWOK never takes an
// expired Lease back by itself. The node lifecycle controller does not read it: it judges a node
// on whether the Lease's renewTime moved within its node-monitor-grace-period (kubernetes
// v1.37.2 pkg/controller/nodelifecycle/node_lifecycle_controller.go tryUpdateNodeHealth).
const deadLeaseSeconds = 10 * 365 * 24 * 3600

// SetKubelet makes a node's kubelet dead or alive again. dead: the node's Lease is taken over
// with a renewTime that never moves again (a stopped kubelet renews nothing; kubernetes v1.37.2
// pkg/kubelet/kubelet.go runs the lease controller from the kubelet process) and the Node is
// annotated AnnotationKubelet=dead; the node lifecycle controller then does what it does on a
// cluster: Ready, MemoryPressure, DiskPressure and PIDPressure Unknown ("Kubelet stopped posting
// node status.") once node-monitor-grace-period passed, the node.kubernetes.io/unreachable
// NoSchedule and NoExecute taints, the Pods' Ready condition False (MarkPodsNotReady), and
// taint eviction after the Pods' tolerationSeconds (300 s by the DefaultTolerationSeconds
// admission plugin). alive: the annotation goes and the Lease is released; KWOK takes it back at
// its next try (every quarter of its 40 s lease), which re-manages the node: heartbeats resume,
// the lifecycle controller lifts the taints, Terminating Pods finish their deletion, TopoLVM's
// agent starts again over the same disks. Not a GKE operation. For tests (the control endpoint).
func (s *Server) SetKubelet(ctx context.Context, name string, state KubeletState) error {
	if state != KubeletDead && state != KubeletAlive {
		return status.Errorf(codes.InvalidArgument, "kubelet state %q: want %q or %q", state, KubeletDead, KubeletAlive)
	}
	s.mu.Lock()
	_, _, _, ok := s.nodeLocked(name)
	s.mu.Unlock()
	if !ok {
		return status.Errorf(codes.NotFound, "Not found: node %s is in no node pool of the emulator.", name)
	}
	nodes := s.o.Kube.CoreV1().Nodes()
	// The Lease first: a node annotated dead whose Lease KWOK still renews would look alive.
	leases := s.o.Kube.CoordinationV1().Leases(corev1.NamespaceNodeLease)
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		l, err := leases.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		l = l.DeepCopy()
		setLeaseHolder(l, state, time.Now())
		_, err = leases.Update(ctx, l, metav1.UpdateOptions{})
		return err
	})
	if apierrors.IsNotFound(err) && state == KubeletAlive {
		err = nil // KWOK creates it when it manages the node
	}
	if err != nil {
		return status.Errorf(codes.Internal, "Failed to set the kubelet of node %s %s: its Lease: %v", name, state, err)
	}
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n, err := nodes.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		n = n.DeepCopy()
		if state == KubeletDead {
			if n.Annotations == nil {
				n.Annotations = map[string]string{}
			}
			n.Annotations[AnnotationKubelet] = string(KubeletDead)
		} else {
			delete(n.Annotations, AnnotationKubelet)
		}
		_, err = nodes.Update(ctx, n, metav1.UpdateOptions{})
		return err
	})
	if apierrors.IsNotFound(err) {
		return status.Errorf(codes.NotFound, "Not found: node %s.", name)
	}
	if err != nil {
		return status.Errorf(codes.Internal, "Failed to set the kubelet of node %s %s: %v", name, state, err)
	}
	return nil
}

// setLeaseHolder makes l the Lease of a dead kubelet (held by DeadKubeletHolder, renewed now for the
// last time) or frees it for KWOK (no holder: KWOK's next sync acquires it as a transition,
// which makes it manage the node again).
func setLeaseHolder(l *coordinationv1.Lease, state KubeletState, now time.Time) {
	if state == KubeletAlive {
		if l.Spec.HolderIdentity != nil && *l.Spec.HolderIdentity == DeadKubeletHolder {
			l.Spec.HolderIdentity = nil
		}
		return
	}
	holder := DeadKubeletHolder
	secs := int32(deadLeaseSeconds)
	l.Spec.HolderIdentity = &holder
	l.Spec.LeaseDurationSeconds = &secs
	// The kubelet's last renewal: this write must move renewTime. The node lifecycle controller
	// remembers the Lease it last saw renewed and, before marking a node Unknown, checks that the
	// live Lease is still that one (same resourceVersion: kubernetes v1.37.2
	// node_lifecycle_controller.go tryUpdateNodeHealth, NodeControllerLeaseCircuitBreaker);
	// a write that left renewTime alone would read as a cache it cannot trust, for ever.
	l.Spec.RenewTime = &metav1.MicroTime{Time: now}

}

// KubeletDeadNode reports whether n's kubelet was made dead through SetKubelet.
func KubeletDeadNode(n *corev1.Node) bool {
	return n.Annotations[AnnotationKubelet] == string(KubeletDead)
}
