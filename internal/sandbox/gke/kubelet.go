package gke

import (
	"context"
	"errors"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/kubelet/cm"
	"k8s.io/kubernetes/pkg/kubelet/nodestatus"
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
	// KubeletNotReady: the kubelet runs but its container runtime does not answer (containerd
	// down, PLEG unhealthy). The kubelet renews its Lease and posts Ready=False, "container
	// runtime is down" (kubelet's own ReadyCondition setter with the runtime's errors, kubernetes
	// v1.37.2 pkg/kubelet/nodestatus/setters.go and pkg/kubelet/runtime.go runtimeErrors), so the
	// node lifecycle controller taints it node.kubernetes.io/not-ready (NoSchedule and
	// NoExecute) at once, not after a grace period; no Pod starts there and no deletion is
	// confirmed (the kubelet cannot stop containers it cannot see); the containers already
	// running (TopoLVM's agent among them) keep running under their shims.
	KubeletNotReady KubeletState = "not-ready"
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

// NotReadyKubeletHolder holds a not-ready node's Lease and renews it, as the node's kubelet
// does (every nodeLeaseRenewInterval, a quarter of its 40 s lease: kubernetes v1.37.2
// pkg/kubelet/kubelet.go, component-helpers apimachinery/lease controller), while the sandbox
// plays that kubelet: KWOK leaves a node whose Lease another holder renews alone (read only,
// see DeadKubeletHolder), so its own stages neither flip Ready back to True (node-initialize
// selects every node whose Ready is not True) nor start Pods there.
const NotReadyKubeletHolder = "sandbox.olapgke.io/not-ready-kubelet"

// kubeletLeaseSeconds is the kubelet's nodeLeaseDurationSeconds default (40 s).
const kubeletLeaseSeconds = 40

// deadLeaseSeconds is the dead holder's lease duration: long enough that KWOK never takes an
// expired Lease back by itself. The node lifecycle controller does not read it: it judges a node
// on whether the Lease's renewTime moved within its node-monitor-grace-period (kubernetes
// v1.37.2 pkg/controller/nodelifecycle/node_lifecycle_controller.go tryUpdateNodeHealth).
const deadLeaseSeconds = 10 * 365 * 24 * 3600

// SetKubelet sets what a node's kubelet does. dead: the node's Lease is taken over with a
// renewTime that never moves again (a stopped kubelet renews nothing; kubernetes v1.37.2
// pkg/kubelet/kubelet.go runs the lease controller from the kubelet process) and the Node is
// annotated AnnotationKubelet=dead; the node lifecycle controller then does what it does on a
// cluster: Ready, MemoryPressure, DiskPressure and PIDPressure Unknown ("Kubelet stopped posting
// node status.") once node-monitor-grace-period passed, the node.kubernetes.io/unreachable
// NoSchedule and NoExecute taints, the Pods' Ready condition False (MarkPodsNotReady), and
// taint eviction after the Pods' tolerationSeconds (300 s by the DefaultTolerationSeconds
// admission plugin). not-ready: the sandbox plays the node's kubelet with a runtime that does
// not answer (KubeletNotReady): it renews the Lease and posts Ready=False every
// nodeStatusUpdateFrequency until the state changes; the node lifecycle controller taints the
// node node.kubernetes.io/not-ready at its next monitor pass. alive: the annotation goes and
// the Lease is released; KWOK takes it back at its next try (every quarter of its 40 s lease),
// which re-manages the node: heartbeats resume (KWOK's node-initialize stage posts Ready=True),
// the lifecycle controller lifts the taints, Terminating Pods finish their deletion, TopoLVM's
// agent starts again over the same disks. Not a GKE operation. For tests (the control endpoint).
func (s *Server) SetKubelet(ctx context.Context, name string, state KubeletState) error {
	if state != KubeletDead && state != KubeletNotReady && state != KubeletAlive {
		return status.Errorf(codes.InvalidArgument, "kubelet state %q: want %q, %q or %q", state, KubeletDead, KubeletNotReady, KubeletAlive)
	}
	s.mu.Lock()
	_, _, _, ok := s.nodeLocked(name)
	s.mu.Unlock()
	if !ok {
		return status.Errorf(codes.NotFound, "Not found: node %s is in no node pool of the emulator.", name)
	}
	s.kubelets.stop(name) // the not-ready kubelet of an earlier call, if any
	nodes := s.o.Kube.CoreV1().Nodes()
	// The Lease first: a node annotated dead whose Lease KWOK still renews would look alive.
	err := s.writeLease(ctx, name, state)
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
		if state == KubeletAlive {
			delete(n.Annotations, AnnotationKubelet)
		} else {
			if n.Annotations == nil {
				n.Annotations = map[string]string{}
			}
			n.Annotations[AnnotationKubelet] = string(state)
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
	if state == KubeletNotReady {
		// The kubelet posts a changed Ready condition at its next status update; the first one
		// here, so that the call returns with Ready=False posted.
		if _, err := s.notReadyKubeletSync(ctx, name); err != nil {
			return status.Errorf(codes.Internal, "Failed to post node %s's status: %v", name, err)
		}
		s.kubelets.start(s, name)
	}
	return nil
}

// writeLease sets node name's Lease for a kubelet in state (setLeaseHolder, renewed now).
func (s *Server) writeLease(ctx context.Context, name string, state KubeletState) error {
	leases := s.o.Kube.CoordinationV1().Leases(corev1.NamespaceNodeLease)
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		l, err := leases.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		l = l.DeepCopy()
		setLeaseHolder(l, state, time.Now())
		_, err = leases.Update(ctx, l, metav1.UpdateOptions{})
		return err
	})
}

// setLeaseHolder makes l the Lease of a dead kubelet (held by DeadKubeletHolder, renewed now for
// the last time), of a not-ready one (NotReadyKubeletHolder, renewed now and then every
// nodeStatusUpdateFrequency), or frees it for KWOK (no holder: KWOK's next sync acquires it as a
// transition, which makes it manage the node again).
func setLeaseHolder(l *coordinationv1.Lease, state KubeletState, now time.Time) {
	if state == KubeletAlive {
		if h := l.Spec.HolderIdentity; h != nil && (*h == DeadKubeletHolder || *h == NotReadyKubeletHolder) {
			l.Spec.HolderIdentity = nil
		}
		return
	}
	holder, secs := DeadKubeletHolder, int32(deadLeaseSeconds)
	if state == KubeletNotReady {
		holder, secs = NotReadyKubeletHolder, kubeletLeaseSeconds
	}
	l.Spec.HolderIdentity = &holder
	l.Spec.LeaseDurationSeconds = &secs
	// The kubelet's last renewal: this write must move renewTime. The node lifecycle controller
	// remembers the Lease it last saw renewed and, before marking a node Unknown, checks that the
	// live Lease is still that one (same resourceVersion: kubernetes v1.37.2
	// node_lifecycle_controller.go tryUpdateNodeHealth, NodeControllerLeaseCircuitBreaker);
	// a write that left renewTime alone would read as a cache it cannot trust, for ever.
	l.Spec.RenewTime = &metav1.MicroTime{Time: now}
}

// errRuntimeDown is the kubelet's runtime error once its runtime stopped answering (kubernetes
// v1.37.2 pkg/kubelet/runtime.go runtimeErrors: "container runtime is down").
var errRuntimeDown = errors.New("container runtime is down")

// notReadyKubelets are the running not-ready kubelets (SetKubelet not-ready), by node.
type notReadyKubelets struct {
	mu     sync.Mutex
	cancel map[string]context.CancelFunc
}

func (k *notReadyKubelets) stop(name string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if c, ok := k.cancel[name]; ok {
		c()
		delete(k.cancel, name)
	}
}

// start runs node name's not-ready kubelet until stop, the node leaves the not-ready state or
// the server stops: every nodeStatusUpdateFrequency (10 s, also the kubelet's Lease renewal
// interval) it renews the Lease and posts the Ready condition.
func (k *notReadyKubelets) start(s *Server, name string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.cancel == nil {
		k.cancel = map[string]context.CancelFunc{}
	}
	ctx, cancel := context.WithCancel(s.ctx)
	k.cancel[name] = cancel
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer cancel()
		t := time.NewTicker(nodeStatusUpdateFrequency)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			keep, err := s.notReadyKubeletSync(ctx, name)
			if err != nil && ctx.Err() == nil {
				s.log.Warn("not-ready kubelet: sync", "node", name, "err", err)
			}
			if !keep && err == nil {
				return
			}
		}
	}()
}

// notReadyKubeletSync is one turn of a not-ready kubelet: renew the node's Lease and post its
// Ready condition with kubelet's own setter and the runtime's error. false when the node is
// gone or no longer not-ready (nothing written then).
func (s *Server) notReadyKubeletSync(ctx context.Context, name string) (bool, error) {
	nodes := s.o.Kube.CoreV1().Nodes()
	n, err := nodes.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return true, err
	}
	if n.Annotations[AnnotationKubelet] != string(KubeletNotReady) {
		return false, nil
	}
	if err := s.writeLease(ctx, name, KubeletNotReady); err != nil {
		return true, err
	}
	none := func() error { return nil }
	setter := nodestatus.ReadyCondition(time.Now, func() error { return errRuntimeDown }, none, none,
		func() cm.Status { return cm.Status{} }, none, func(klog.Logger, string, string) {}, true)
	return true, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n, err := nodes.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		n = n.DeepCopy()
		if err := setter(ctx, n); err != nil {
			return err
		}
		_, err = nodes.UpdateStatus(ctx, n, metav1.UpdateOptions{})
		return err
	})
}

// KubeletDeadNode reports whether n's kubelet was made dead through SetKubelet.
func KubeletDeadNode(n *corev1.Node) bool {
	return n.Annotations[AnnotationKubelet] == string(KubeletDead)
}
