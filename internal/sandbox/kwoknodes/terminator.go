package kwoknodes

import (
	"context"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
)

// podKey identifies one Pod incarnation: a recreated Pod with the same name
// has a new UID and is a different key.
type podKey struct {
	Namespace, Name string
	UID             types.UID
}

// terminator plays the kubelet's part in Pod deletion for simulated nodes:
// once a Pod on a KWOK node is marked for deletion, its containers "stop"
// when the grace period ends (or earlier, see ExitAfterSigtermAnnotation)
// and the Pod object is removed with a UID precondition.
type terminator struct {
	kube  kubernetes.Interface
	nodes corelisters.NodeLister
	pods  corelisters.PodLister
	queue workqueue.TypedDelayingInterface[podKey]
	// starts are Pods bound to a node and Pending, checked once more after
	// startAfter (starter.go).
	starts workqueue.TypedDelayingInterface[podKey]
	now    func() time.Time

	mu sync.Mutex
	// seen is when the deletion of each Pod (by UID) was first observed: like a
	// kubelet, the grace period counts from there. deletionTimestamp alone
	// would do, but it has one-second resolution, so a 1 s grace period would
	// last anywhere between 0 and 1 s depending on when the delete came.
	seen map[types.UID]time.Time
	// resynced are the Pods the starter wrote once (starter.go).
	resynced map[types.UID]bool
}

func startTerminator(ctx context.Context, kube kubernetes.Interface) error {
	factory := informers.NewSharedInformerFactory(kube, 0)
	nodeInformer := factory.Core().V1().Nodes()
	podInformer := informers.NewSharedInformerFactoryWithOptions(kube, 0, informers.WithTweakListOptions(func(o *metav1.ListOptions) {
		o.FieldSelector = "spec.nodeName!="
	})).Core().V1().Pods()

	t := &terminator{
		kube:   kube,
		nodes:  nodeInformer.Lister(),
		pods:   podInformer.Lister(),
		queue:  workqueue.NewTypedDelayingQueue[podKey](),
		starts: workqueue.NewTypedDelayingQueue[podKey](),
		now:    time.Now,
		seen:   map[types.UID]time.Time{},

		resynced: map[types.UID]bool{},
	}
	handler := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { t.observe(obj) },
		UpdateFunc: func(_, obj any) { t.observe(obj) },
	}
	if _, err := podInformer.Informer().AddEventHandler(handler); err != nil {
		return err
	}
	// A kubelet that comes back syncs every Pod bound to its node (kubernetes v1.37.2
	// pkg/kubelet/kubelet.go syncLoop: the config source lists them again at start) and so
	// finishes the deletions it could not confirm while it was down.
	if _, err := nodeInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		UpdateFunc: func(old, cur any) {
			o, ok1 := old.(*corev1.Node)
			c, ok2 := cur.(*corev1.Node)
			if ok1 && ok2 && kubeletDown(o) && !kubeletDown(c) {
				t.resync(c.Name)
			}
		},
	}); err != nil {
		return err
	}
	go nodeInformer.Informer().Run(ctx.Done())
	go podInformer.Informer().Run(ctx.Done())
	go func() {
		<-ctx.Done()
		t.queue.ShutDown()
		t.starts.ShutDown()
	}()
	go func() {
		if !cache.WaitForCacheSync(ctx.Done(), nodeInformer.Informer().HasSynced, podInformer.Informer().HasSynced) {
			return
		}
		for t.processNext(ctx) {
		}
	}()
	go func() {
		if !cache.WaitForCacheSync(ctx.Done(), nodeInformer.Informer().HasSynced, podInformer.Informer().HasSynced) {
			return
		}
		for t.processNextStart(ctx) {
		}
	}()
	return nil
}

func (t *terminator) observe(obj any) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	t.observeStart(pod)
	if pod.DeletionTimestamp == nil || pod.Spec.NodeName == "" {
		return
	}
	now := t.now()
	t.queue.AddAfter(podKey{pod.Namespace, pod.Name, pod.UID}, terminateAfter(pod, t.seenAt(pod.UID, now), now))
}

// seenAt returns when the deletion of Pod uid was first observed (now, the
// first time).
func (t *terminator) seenAt(uid types.UID, now time.Time) time.Time {
	t.mu.Lock()
	defer t.mu.Unlock()
	if s, ok := t.seen[uid]; ok {
		return s
	}
	t.seen[uid] = now
	return now
}

func (t *terminator) forget(uid types.UID) {
	t.mu.Lock()
	delete(t.seen, uid)
	t.mu.Unlock()
}

// terminateAfter is how long from now the simulated containers of a Pod
// marked for deletion take to stop: the grace period from when the deletion
// was seen, but no later than the (second-resolution) deletionTimestamp
// allows, or earlier with ExitAfterSigtermAnnotation.
func terminateAfter(pod *corev1.Pod, seen, now time.Time) time.Duration {
	end := pod.DeletionTimestamp.Time
	if g := pod.DeletionGracePeriodSeconds; g != nil {
		grace := time.Duration(*g) * time.Second
		if byGrace := seen.Add(grace); byGrace.Before(end.Add(time.Second)) {
			end = byGrace
		} else {
			end = end.Add(time.Second) // seen late (a restart): the deletionTimestamp bounds it
		}
		if v, ok := pod.Annotations[ExitAfterSigtermAnnotation]; ok {
			if d, err := time.ParseDuration(v); err == nil && d >= 0 && d < grace {
				end = end.Add(d - grace)
			}
		}
	}
	if d := end.Sub(now); d > 0 {
		return d
	}
	return 0
}

func (t *terminator) processNext(ctx context.Context) bool {
	key, shutdown := t.queue.Get()
	if shutdown {
		return false
	}
	defer t.queue.Done(key)

	pod, err := t.kube.CoreV1().Pods(key.Namespace).Get(ctx, key.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) || (err == nil && pod.UID != key.UID) {
		t.forget(key.UID)
		return true // gone, or replaced by a new Pod of the same name
	}
	if err != nil {
		klog.V(2).InfoS("terminator: get pod", "pod", key.Namespace+"/"+key.Name, "err", err)
		t.queue.AddAfter(key, time.Second)
		return true
	}
	if !t.simulated(pod.Spec.NodeName) {
		t.forget(key.UID)
		return true
	}
	now := t.now()
	if d := terminateAfter(pod, t.seenAt(pod.UID, now), now); d > 0 {
		t.queue.AddAfter(key, d) // grace period shortened/extended since queued
		return true
	}
	uid := key.UID
	err = t.kube.CoreV1().Pods(key.Namespace).Delete(ctx, key.Name, metav1.DeleteOptions{
		GracePeriodSeconds: new(int64),
		Preconditions:      &metav1.Preconditions{UID: &uid},
	})
	switch {
	case err == nil, apierrors.IsNotFound(err), apierrors.IsConflict(err):
		t.forget(key.UID)
		klog.V(4).InfoS("terminator: pod terminated", "pod", key.Namespace+"/"+key.Name, "uid", key.UID)
	default:
		klog.V(2).InfoS("terminator: delete pod", "pod", key.Namespace+"/"+key.Name, "err", err)
		t.queue.AddAfter(key, time.Second)
	}
	return true
}

// simulated reports whether a node is managed by KWOK and its kubelet runs. A
// Pod bound to a node that no longer exists is left to the Pod garbage
// collector, as on a real cluster; one on a node whose kubelet is dead
// (KubeletAnnotation) stays Terminating until the kubelet comes back (resync),
// the Node goes, or someone force-deletes it, as on a real cluster.
func (t *terminator) simulated(nodeName string) bool {
	n, err := t.nodes.Get(nodeName)
	if err != nil {
		return false
	}
	return n.Annotations[Annotation] == AnnotationValue && !kubeletDown(n)
}

// KubeletAnnotation (sandbox-only) on a Node set to "dead" or "not-ready" says its
// kubelet is down or cannot reach its container runtime (the GKE emulator's
// SetKubelet, the control endpoint's :kubelet call): either way it confirms no
// Pod deletion (kubernetes v1.37.2 pkg/kubelet/status/status_manager.go
// canBeDeleted needs the runtime to report the Pod's containers stopped).
const KubeletAnnotation = "sandbox.olapgke.io/kubelet"

func kubeletDown(n *corev1.Node) bool {
	v := n.Annotations[KubeletAnnotation]
	return v == "dead" || v == "not-ready"
}

// resync looks again at every Pod bound to node: the terminator forgot the
// deletions it met while the node's kubelet was dead, and the starter the Pods
// waiting to start there.
func (t *terminator) resync(node string) {
	pods, err := t.pods.List(labels.Everything())
	if err != nil {
		return
	}
	for _, p := range pods {
		if p.Spec.NodeName == node {
			t.observe(p)
		}
	}
}
