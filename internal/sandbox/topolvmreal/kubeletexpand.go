package topolvmreal

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/topolvm/topolvm"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	storagelisters "k8s.io/client-go/listers/storage/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
)

// The kubelet's node expansion, as Kubernetes v1.37.2's kubelet does it after a successful
// NodeExpandVolume with RecoverVolumeExpansionFailure (GA): pkg/volume/util/operationexecutor/
// node_expander.go (NodeExpander.runPreCheck, expandOnPlugin) and operation_generator.go
// (nodeExpandVolume: the new size is the PVC's status.allocatedResources), with the status writes
// of pkg/volume/util/resize_util.go (MarkNodeExpansionInProgress,
// MarkNodeExpansionFinishedWithRecovery, PatchPVCStatus: a strategic merge patch of the status
// subresource carrying the PVC's resourceVersion).
//
// What it does not do: call TopoLVM's NodeExpandVolume. There the kubelet hands TopoLVM the
// volume's mount path and TopoLVM grows the filesystem on the logical volume's device; KWOK Pods
// mount nothing, so there is no filesystem to grow. The logical volume itself is already grown
// by then (ControllerExpandVolume waits for the node's LogicalVolume reconciler and lvmd's
// ResizeLV), so everything the API shows is what a real node would show, without the filesystem.

const (
	// kubelet events (pkg/kubelet/events/event.go).
	eventFileSystemResizeSuccess = "FileSystemResizeSuccessful"
	// claimIndex indexes Pods by the PVCs their volumes use ("namespace/claim").
	claimIndex = "olapgke.io/claims"
)

// knownResizeConditions are the resize conditions that MarkNodeExpansionFinishedWithRecovery
// drops (resize_util.go knownResizeConditions).
var knownResizeConditions = []corev1.PersistentVolumeClaimConditionType{
	corev1.PersistentVolumeClaimFileSystemResizePending,
	corev1.PersistentVolumeClaimResizing,
	corev1.PersistentVolumeClaimControllerResizeError,
	corev1.PersistentVolumeClaimNodeResizeError,
}

type kubeletExpander struct {
	kube     kubernetes.Interface
	pvcs     corelisters.PersistentVolumeClaimLister
	pvs      corelisters.PersistentVolumeLister
	csiNodes storagelisters.CSINodeLister
	pods     cache.Indexer
	queue    workqueue.TypedRateLimitingInterface[string]

	broadcaster record.EventBroadcaster
	mu          sync.Mutex
	recorders   map[string]record.EventRecorder // by node: events come from that node's kubelet
}

// RunKubeletExpansion finishes the node side of TopoLVM volume expansions, for every node, as
// the nodes' kubelets would (see above): once external-resizer has grown the volume and marked
// the claim NodeResizePending, and a Pod on the volume's node uses the claim (the kubelet grows
// mounted volumes only: "Waiting for user to (re-)start a pod"), the claim's status capacity
// becomes its allocated size and the resize status and conditions go. It returns when ctx ends.
func RunKubeletExpansion(ctx context.Context, cfg *rest.Config) error {
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	factory := informers.NewSharedInformerFactory(kube, 0)
	pvcInf := factory.Core().V1().PersistentVolumeClaims()
	pvInf := factory.Core().V1().PersistentVolumes()
	podInf := factory.Core().V1().Pods()
	csiNodeInf := factory.Storage().V1().CSINodes()
	if err := podInf.Informer().AddIndexers(cache.Indexers{claimIndex: podClaims}); err != nil {
		return err
	}
	e := &kubeletExpander{
		kube: kube, pvcs: pvcInf.Lister(), pvs: pvInf.Lister(), csiNodes: csiNodeInf.Lister(),
		pods: podInf.Informer().GetIndexer(),
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.NewTypedItemExponentialFailureRateLimiter[string](100*time.Millisecond, 30*time.Second),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "kubelet-expand"}),
		broadcaster: record.NewBroadcaster(record.WithContext(ctx)),
		recorders:   map[string]record.EventRecorder{},
	}
	defer e.queue.ShutDown()
	e.broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: kube.CoreV1().Events("")})
	defer e.broadcaster.Shutdown()

	enqueueClaim := func(obj any) {
		if k, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
			e.queue.Add(k)
		}
	}
	enqueuePod := func(obj any) {
		if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = t.Obj
		}
		if p, ok := obj.(*corev1.Pod); ok {
			keys, _ := podClaims(p)
			for _, k := range keys {
				e.queue.Add(k)
			}
		}
	}
	if _, err := pvcInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: enqueueClaim, UpdateFunc: func(_, o any) { enqueueClaim(o) },
	}); err != nil {
		return err
	}
	if _, err := pvInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		UpdateFunc: func(_, o any) {
			if pv, ok := o.(*corev1.PersistentVolume); ok && pv.Spec.ClaimRef != nil {
				e.queue.Add(pv.Spec.ClaimRef.Namespace + "/" + pv.Spec.ClaimRef.Name)
			}
		},
	}); err != nil {
		return err
	}
	if _, err := podInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: enqueuePod, UpdateFunc: func(_, o any) { enqueuePod(o) },
	}); err != nil {
		return err
	}
	if _, err := csiNodeInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(any) { e.enqueueAll() }, UpdateFunc: func(_, _ any) { e.enqueueAll() },
	}); err != nil {
		return err
	}
	factory.Start(ctx.Done())
	for typ, ok := range factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			return fmt.Errorf("informer for %v did not sync", typ)
		}
	}
	go wait.UntilWithContext(ctx, e.work, 0)
	<-ctx.Done()
	return ctx.Err()
}

// podClaims is the claims a Pod's volumes use: PVC volumes and generic ephemeral volumes
// (claim "<pod>-<volume>").
func podClaims(obj any) ([]string, error) {
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return nil, nil
	}
	var out []string
	for _, v := range p.Spec.Volumes {
		switch {
		case v.PersistentVolumeClaim != nil:
			out = append(out, p.Namespace+"/"+v.PersistentVolumeClaim.ClaimName)
		case v.Ephemeral != nil:
			out = append(out, p.Namespace+"/"+p.Name+"-"+v.Name)
		}
	}
	return out, nil
}

func (e *kubeletExpander) enqueueAll() {
	claims, err := e.pvcs.List(labels.Everything())
	if err != nil {
		return
	}
	for _, c := range claims {
		if s := c.Status.AllocatedResourceStatuses[corev1.ResourceStorage]; nodeResizeAllowed(s) {
			e.queue.Add(c.Namespace + "/" + c.Name)
		}
	}
}

func (e *kubeletExpander) work(ctx context.Context) {
	for {
		key, quit := e.queue.Get()
		if quit {
			return
		}
		err := e.sync(ctx, key)
		switch {
		case err == nil:
			e.queue.Forget(key)
		case ctx.Err() != nil:
		default:
			klog.ErrorS(err, "kubelet expansion shim: will retry", "pvc", key)
			e.queue.AddRateLimited(key)
		}
		e.queue.Done(key)
	}
}

// nodeResizeAllowed is NodeExpander.runPreCheck's test on the claim's resize status: the
// kubelet expands only claims whose controller expansion is done and whose node expansion is
// pending (or was cut short while in progress).
func nodeResizeAllowed(s corev1.ClaimResourceStatus) bool {
	return s == corev1.PersistentVolumeClaimNodeResizePending || s == corev1.PersistentVolumeClaimNodeResizeInProgress
}

// expansionTarget is what a kubelet would act on for the claim: the TopoLVM PV bound to it, the
// node it is on and a Pod there that mounts it; ok false when no kubelet would expand it now.
func (e *kubeletExpander) expansionTarget(pvc *corev1.PersistentVolumeClaim) (pv *corev1.PersistentVolume, node string, pod *corev1.Pod, ok bool) {
	if pvc.Status.Phase != corev1.ClaimBound || pvc.Spec.VolumeName == "" ||
		!nodeResizeAllowed(pvc.Status.AllocatedResourceStatuses[corev1.ResourceStorage]) {
		return nil, "", nil, false
	}
	pv, err := e.pvs.Get(pvc.Spec.VolumeName)
	if err != nil || pv.Spec.CSI == nil || pv.Spec.CSI.Driver != topolvm.GetPluginName() ||
		pv.Spec.ClaimRef == nil || pv.Spec.ClaimRef.UID != pvc.UID {
		return nil, "", nil, false
	}
	if node = pvNodeName(pv); node == "" {
		return nil, "", nil, false
	}
	// The node's kubelet has TopoLVM's node plugin registered (FindPluginBySpec).
	cn, err := e.csiNodes.Get(node)
	if err != nil || !slices.ContainsFunc(cn.Spec.Drivers, func(d storagev1.CSINodeDriver) bool { return d.Name == topolvm.GetPluginName() }) {
		return nil, "", nil, false
	}
	objs, _ := e.pods.ByIndex(claimIndex, pvc.Namespace+"/"+pvc.Name)
	for _, o := range objs {
		p := o.(*corev1.Pod)
		if p.Spec.NodeName == node && p.DeletionTimestamp == nil &&
			p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
			return pv, node, p, true
		}
	}
	return nil, "", nil, false
}

// pvNodeName is the node of a TopoLVM PV's node affinity (topology.topolvm.io/node In [node]).
func pvNodeName(pv *corev1.PersistentVolume) string {
	if pv.Spec.NodeAffinity == nil || pv.Spec.NodeAffinity.Required == nil {
		return ""
	}
	for _, t := range pv.Spec.NodeAffinity.Required.NodeSelectorTerms {
		for _, x := range t.MatchExpressions {
			if x.Key == topolvm.GetTopologyNodeKey() && x.Operator == corev1.NodeSelectorOpIn && len(x.Values) == 1 {
				return x.Values[0]
			}
		}
	}
	return ""
}

func (e *kubeletExpander) sync(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	cached, err := e.pvcs.PersistentVolumeClaims(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if _, _, _, ok := e.expansionTarget(cached); !ok {
		return nil
	}
	// The kubelet reads the claim from the API server, not a cache (nodeExpandVolume).
	pvc, err := e.kube.CoreV1().PersistentVolumeClaims(ns).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	pv, node, pod, ok := e.expansionTarget(pvc)
	if !ok {
		return nil
	}
	// operation_generator.go nodeExpandVolume: expansion runs when the PV (the desired size) is
	// larger than what the node has; the new size is the claim's allocated size.
	pvSize, statusSize := pv.Spec.Capacity[corev1.ResourceStorage], pvc.Status.Capacity[corev1.ResourceStorage]
	newSize, ok := pvc.Status.AllocatedResources[corev1.ResourceStorage]
	if !ok || pvSize.Cmp(statusSize) <= 0 {
		return nil
	}
	if pvc.Status.AllocatedResourceStatuses[corev1.ResourceStorage] == corev1.PersistentVolumeClaimNodeResizePending {
		// MarkNodeExpansionInProgress.
		next := pvc.DeepCopy()
		next.Status.AllocatedResourceStatuses[corev1.ResourceStorage] = corev1.PersistentVolumeClaimNodeResizeInProgress
		if pvc, err = e.patchStatus(ctx, pvc, next); err != nil {
			return fmt.Errorf("mark node expansion in progress: %w", err)
		}
	}
	// NodeExpandVolume (filesystem grow) would run here: not possible, see above.
	msg := fmt.Sprintf("MountVolume.NodeExpandVolume succeeded for volume %q %v", pv.Name, node)
	rec := e.recorder(node)
	rec.Event(pod, corev1.EventTypeNormal, eventFileSystemResizeSuccess, msg)
	rec.Event(pvc, corev1.EventTypeNormal, eventFileSystemResizeSuccess, msg)
	// MarkNodeExpansionFinishedWithRecovery.
	next := pvc.DeepCopy()
	if next.Status.Capacity == nil {
		next.Status.Capacity = corev1.ResourceList{}
	}
	next.Status.Capacity[corev1.ResourceStorage] = newSize
	delete(next.Status.AllocatedResourceStatuses, corev1.ResourceStorage)
	if len(next.Status.AllocatedResourceStatuses) == 0 {
		next.Status.AllocatedResourceStatuses = nil
	}
	next.Status.Conditions = slices.DeleteFunc(next.Status.Conditions, func(c corev1.PersistentVolumeClaimCondition) bool {
		return slices.Contains(knownResizeConditions, c.Type)
	})
	if _, err := e.patchStatus(ctx, pvc, next); err != nil {
		return fmt.Errorf("mark node expansion finished: %w", err)
	}
	klog.InfoS("kubelet expansion shim: node expansion finished (no filesystem grow)", "pvc", key, "pv", pv.Name, "node", node, "size", newSize.String())
	return nil
}

// patchStatus is resize_util.go PatchPVCStatus: a two-way strategic merge patch of the status
// subresource with the old object's resourceVersion, so a stale claim is refused (Conflict).
func (e *kubeletExpander) patchStatus(ctx context.Context, old, next *corev1.PersistentVolumeClaim) (*corev1.PersistentVolumeClaim, error) {
	oldData, err := json.Marshal(old)
	if err != nil {
		return nil, err
	}
	newData, err := json.Marshal(next)
	if err != nil {
		return nil, err
	}
	patch, err := strategicpatch.CreateTwoWayMergePatch(oldData, newData, old)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(patch, &m); err != nil {
		return nil, err
	}
	meta, _ := m["metadata"].(map[string]any)
	if meta == nil {
		meta = map[string]any{}
	}
	meta["resourceVersion"] = old.ResourceVersion
	m["metadata"] = meta
	if patch, err = json.Marshal(m); err != nil {
		return nil, err
	}
	return e.kube.CoreV1().PersistentVolumeClaims(old.Namespace).Patch(ctx, old.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status")
}

func (e *kubeletExpander) recorder(node string) record.EventRecorder {
	e.mu.Lock()
	defer e.mu.Unlock()
	r, ok := e.recorders[node]
	if !ok {
		r = e.broadcaster.NewRecorder(clientgoscheme.Scheme, corev1.EventSource{Component: "kubelet", Host: node})
		e.recorders[node] = r
	}
	return r
}
