package topolvmreal

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/topolvm/topolvm"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
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

// The kubelet's volume manager for the Pods' TopoLVM volumes, on every node, as Kubernetes
// v1.37.2's kubelet runs it (pkg/kubelet/volumemanager: the desired state of the world is the
// node's Pods and their volumes, the reconciler mounts what is desired and not mounted and
// unmounts what is mounted and no longer desired) with the CSI plugin (pkg/volume/csi
// csi_mounter.go SetUpAt / TearDownAt, csi_client.go NodePublishVolume): for a Pod bound to a
// node, each PVC (or generic ephemeral) volume whose PV is a topolvm.io CSI volume is published
// by a NodePublishVolume call to that node's TopoLVM node server (TopoLVM's own code, the node
// agent's socket), and each is unpublished (NodeUnpublishVolume) once the Pod is gone.
//
// Readiness: KWOK plays a Pod with claims Running and Ready only once it carries
// AnnVolumesMounted (the sandbox's KWOK pod-ready stage, internal/sandbox/kwoknodes), which this
// writes when every volume of the Pod is set up: the kubelet starts no container before
// WaitForAttachAndMount returns (pkg/kubelet/kubelet.go SyncPod).
//
// A failed publish is what the kubelet shows (pkg/volume/util/operationexecutor
// operation_generator.go GenerateMountVolumeFunc, operation_executor.go GenerateError): a
// Warning Event FailedMount on the Pod from the node's kubelet,
//
//	MountVolume.SetUp failed for volume "<PV name>" : <error>
//
// e.g. `... : rpc error: code = NotFound desc = failed to find LV: <volume handle>` for a volume
// whose logical volume is gone (a VM recreated under the same name: new, empty disks), and the
// Pod stays Pending with its containers waiting in ContainerCreating (the status the kubelet's
// first sync writes: kubelet_pods.go generateAPIPodStatus). The call is retried with the
// kubelet's per-operation exponential backoff (pkg/util/goroutinemap/exponentialbackoff: 500 ms
// doubling to 2 min 2 s), each failure another Event (the recorder counts repeats).
//
// Not copied: attach (TopoLVM's CSIDriver has attachRequired false) and NodeStageVolume (its node
// server has no STAGE_UNSTAGE_VOLUME capability), so the kubelet does neither; vol_data.json; the
// second FailedMount ("Unable to attach or mount volumes: ... timed out waiting for the
// condition") that syncPod records after 2 min 3 s; SELinux and fsGroup handling. Divergence:
// the kubelet unmounts a deleted Pod's volumes once its containers stopped, before the Pod
// object goes; here NodeUnpublishVolume follows the object's removal (the sandbox's terminator
// removes it when its grace period ends). A node whose kubelet is down (AnnKubelet dead)
// publishes and unpublishes nothing until it is back.

const (
	// AnnVolumesMounted (sandbox-only) on a Pod: its volumes are mounted (value "true"); KWOK's
	// pod-ready stage waits for it on Pods with claims (kwoknodes.VolumesMountedAnnotation).
	AnnVolumesMounted = "sandbox.olapgke.io/volumes-mounted"
	// kubelet events (pkg/kubelet/events/event.go FailedMountVolume).
	eventFailedMount = "FailedMount"
	// csiTimeout is the kubelet's deadline for a CSI node call (pkg/volume/csi csi_plugin.go).
	csiTimeout = 2 * time.Minute
	// The kubelet's backoff between failed volume operations (exponential_backoff.go).
	mountRetryFirst = 500 * time.Millisecond
	mountRetryMax   = 2*time.Minute + 2*time.Second
	// podNodeIndex indexes Pods by spec.nodeName.
	podNodeIndex = "olapgke.io/node"
)

// KubeletVolumeOptions say where the node agents' sockets are and where calls are recorded.
type KubeletVolumeOptions struct {
	// SocketDir holds <node>/csi-topolvm.sock (NodeOptions.SocketDir); each node's kubelet
	// directory (the Pods' volume directories, the publish target paths) is <node>/kubelet.
	SocketDir string
	// Record, when set, gets one line per NodePublishVolume / NodeUnpublishVolume call, next to
	// the stand-ins' lines (WriteStandIns).
	Record string
}

// publishedVolume is one volume of a Pod that NodePublishVolume set up.
type publishedVolume struct {
	pv, handle, target string
	csi                bool // false: not a TopoLVM volume, nothing was published
}

// podMounts is the actual state of one Pod's volumes (by Pod volume name).
type podMounts struct {
	node string
	vols map[string]publishedVolume
}

type kubeletVolumes struct {
	kube     kubernetes.Interface
	o        KubeletVolumeOptions
	pods     corelisters.PodLister
	podIndex cache.Indexer
	pvcs     corelisters.PersistentVolumeClaimLister
	pvs      corelisters.PersistentVolumeLister
	nodes    corelisters.NodeLister
	csiNodes storagelisters.CSINodeLister
	queue    workqueue.TypedRateLimitingInterface[string]

	broadcaster record.EventBroadcaster
	recordMu    sync.Mutex // the record file

	mu        sync.Mutex
	recorders map[string]record.EventRecorder // by node: events come from that node's kubelet
	// mounted is the actual state of the world, by Pod key and UID (a StatefulSet Pod recreated
	// under the same name has a new UID and new target paths).
	mounted map[string]map[types.UID]*podMounts
	// statusWritten: the Pods given the kubelet's ContainerCreating status.
	statusWritten map[types.UID]bool
}

// RunKubeletVolumes mounts and unmounts the Pods' TopoLVM volumes for every node, as the nodes'
// kubelets would (see above). It returns when ctx ends.
func RunKubeletVolumes(ctx context.Context, cfg *rest.Config, o KubeletVolumeOptions) error {
	kcfg := rest.CopyConfig(cfg)
	kcfg.QPS, kcfg.Burst = -1, 0 // every node's kubelet: on a cluster each has its own client
	// Its informers see every Node write (heartbeats): protobuf, as the kubelet's own client,
	// costs about half of JSON to decode.
	kcfg.ContentType = "application/vnd.kubernetes.protobuf"
	kcfg.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	kube, err := kubernetes.NewForConfig(kcfg)
	if err != nil {
		return err
	}
	factory := informers.NewSharedInformerFactory(kube, 0)
	podInf := factory.Core().V1().Pods()
	pvcInf := factory.Core().V1().PersistentVolumeClaims()
	pvInf := factory.Core().V1().PersistentVolumes()
	nodeInf := factory.Core().V1().Nodes()
	csiNodeInf := factory.Storage().V1().CSINodes()
	if err := podInf.Informer().AddIndexers(cache.Indexers{claimIndex: podClaims, podNodeIndex: func(obj any) ([]string, error) {
		if p, ok := obj.(*corev1.Pod); ok && p.Spec.NodeName != "" {
			return []string{p.Spec.NodeName}, nil
		}
		return nil, nil
	}}); err != nil {
		return err
	}
	k := &kubeletVolumes{
		kube: kube, o: o, pods: podInf.Lister(), podIndex: podInf.Informer().GetIndexer(),
		pvcs: pvcInf.Lister(), pvs: pvInf.Lister(), nodes: nodeInf.Lister(), csiNodes: csiNodeInf.Lister(),
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.NewTypedItemExponentialFailureRateLimiter[string](mountRetryFirst, mountRetryMax),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "kubelet-volumes"}),
		broadcaster:   record.NewBroadcaster(record.WithContext(ctx)),
		recorders:     map[string]record.EventRecorder{},
		mounted:       map[string]map[types.UID]*podMounts{},
		statusWritten: map[types.UID]bool{},
	}
	defer k.queue.ShutDown()
	k.broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: kube.CoreV1().Events("")})
	defer k.broadcaster.Shutdown()

	enqueue := func(obj any) {
		if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
			k.queue.Add(key)
		}
	}
	byIndex := func(index, value string) {
		objs, _ := k.podIndex.ByIndex(index, value)
		for _, o := range objs {
			enqueue(o)
		}
	}
	handlers := []struct {
		inf cache.SharedIndexInformer
		h   cache.ResourceEventHandler
	}{
		{podInf.Informer(), cache.ResourceEventHandlerFuncs{AddFunc: enqueue, UpdateFunc: func(_, n any) { enqueue(n) }, DeleteFunc: enqueue}},
		{pvcInf.Informer(), cache.ResourceEventHandlerFuncs{
			AddFunc:    func(o any) { byIndex(claimIndex, metaKey(o)) },
			UpdateFunc: func(_, o any) { byIndex(claimIndex, metaKey(o)) },
		}},
		{pvInf.Informer(), cache.ResourceEventHandlerFuncs{UpdateFunc: func(_, o any) {
			if pv, ok := o.(*corev1.PersistentVolume); ok && pv.Spec.ClaimRef != nil {
				byIndex(claimIndex, pv.Spec.ClaimRef.Namespace+"/"+pv.Spec.ClaimRef.Name)
			}
		}}},
		// The driver registered (or again) on a node: its Pods' volumes can be published.
		{csiNodeInf.Informer(), cache.ResourceEventHandlerFuncs{
			AddFunc:    func(o any) { byIndex(podNodeIndex, metaKey(o)) },
			UpdateFunc: func(_, o any) { byIndex(podNodeIndex, metaKey(o)) },
		}},
		// A kubelet back from the dead resumes its Pods.
		{nodeInf.Informer(), cache.ResourceEventHandlerFuncs{UpdateFunc: func(old, n any) {
			o, ok1 := old.(*corev1.Node)
			nn, ok2 := n.(*corev1.Node)
			if ok1 && ok2 && o.Annotations[AnnKubelet] != nn.Annotations[AnnKubelet] {
				byIndex(podNodeIndex, nn.Name)
			}
		}}},
	}
	for _, h := range handlers {
		if _, err := h.inf.AddEventHandler(h.h); err != nil {
			return err
		}
	}
	factory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())
	const workers = 4
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k.next(ctx) {
			}
		}()
	}
	<-ctx.Done()
	k.queue.ShutDown()
	wg.Wait()
	return ctx.Err()
}

func metaKey(obj any) string {
	key, _ := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	return key
}

func (k *kubeletVolumes) next(ctx context.Context) bool {
	key, quit := k.queue.Get()
	if quit {
		return false
	}
	defer k.queue.Done(key)
	if err := k.sync(ctx, key); err != nil {
		klog.V(2).InfoS("kubelet volumes: retrying with backoff", "pod", key, "err", err)
		k.queue.AddRateLimited(key)
		return true
	}
	k.queue.Forget(key)
	return true
}

// sync reconciles one Pod key: it unpublishes the volumes of Pods of that name that are gone
// (or replaced by a new UID), then publishes the current Pod's volumes and marks it mounted.
func (k *kubeletVolumes) sync(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	pod, err := k.pods.Pods(ns).Get(name)
	if err != nil {
		if !apierrors.IsNotFound(err) {
			return err
		}
		pod = nil
	}
	if err := k.unmountGone(ctx, key, pod); err != nil {
		return err
	}
	if pod == nil || pod.Spec.NodeName == "" || pod.DeletionTimestamp != nil ||
		pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		return nil
	}
	if claims, _ := podClaims(pod); len(claims) == 0 {
		return nil
	}
	node, err := k.nodes.Get(pod.Spec.NodeName)
	if err != nil || node.Annotations[AnnKubelet] == KubeletDead {
		return nil // no kubelet: a node event brings the Pod back
	}
	pm := k.podMounts(key, pod)
	for _, v := range pod.Spec.Volumes {
		if _, done := k.isMounted(pm, v.Name); done {
			continue
		}
		claim := ""
		switch {
		case v.PersistentVolumeClaim != nil:
			claim = v.PersistentVolumeClaim.ClaimName
		case v.Ephemeral != nil:
			claim = pod.Name + "-" + v.Name
		default:
			continue
		}
		pvc, err := k.pvcs.PersistentVolumeClaims(ns).Get(claim)
		if err != nil || pvc.Spec.VolumeName == "" || pvc.Status.Phase != corev1.ClaimBound {
			return nil // the desired state waits for a bound claim; a claim event brings the Pod back
		}
		pv, err := k.pvs.Get(pvc.Spec.VolumeName)
		if err != nil {
			return nil
		}
		if pv.Spec.CSI == nil || pv.Spec.CSI.Driver != topolvm.GetPluginName() {
			// No other volume plugin is played: taken as mounted.
			k.setMounted(pm, v.Name, publishedVolume{pv: pv.Name})
			continue
		}
		readOnly := pv.Spec.CSI.ReadOnly || v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.ReadOnly
		pubVol, err := k.publish(ctx, pod, pv, readOnly)
		if err != nil {
			k.failedMount(ctx, pod, pv.Name, err)
			return err
		}
		k.setMounted(pm, v.Name, pubVol)
	}
	if pod.Annotations[AnnVolumesMounted] == "true" {
		return nil
	}
	patch := fmt.Sprintf(`{"metadata":{"uid":%q,"annotations":{%q:"true"}}}`, pod.UID, AnnVolumesMounted)
	_, err = k.kube.CoreV1().Pods(ns).Patch(ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil // gone or replaced: its own events follow
	}
	return err
}

func (k *kubeletVolumes) podMounts(key string, pod *corev1.Pod) *podMounts {
	k.mu.Lock()
	defer k.mu.Unlock()
	byUID := k.mounted[key]
	if byUID == nil {
		byUID = map[types.UID]*podMounts{}
		k.mounted[key] = byUID
	}
	pm := byUID[pod.UID]
	if pm == nil {
		pm = &podMounts{node: pod.Spec.NodeName, vols: map[string]publishedVolume{}}
		byUID[pod.UID] = pm
	}
	return pm
}

func (k *kubeletVolumes) isMounted(pm *podMounts, vol string) (publishedVolume, bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	v, ok := pm.vols[vol]
	return v, ok
}

func (k *kubeletVolumes) setMounted(pm *podMounts, vol string, v publishedVolume) {
	k.mu.Lock()
	defer k.mu.Unlock()
	pm.vols[vol] = v
}

// unmountGone unpublishes the volumes of the Pods under key that are no longer pod (deleted, or
// replaced by a Pod with a new UID): the reconciler's UnmountVolume for volumes no longer in the
// desired state (csi_mounter.go TearDownAt: NodeUnpublishVolume, then the kubelet removes the
// mount directory).
func (k *kubeletVolumes) unmountGone(ctx context.Context, key string, pod *corev1.Pod) error {
	k.mu.Lock()
	var gone []types.UID
	for uid := range k.mounted[key] {
		if pod == nil || pod.UID != uid {
			gone = append(gone, uid)
		}
	}
	k.mu.Unlock()
	for _, uid := range gone {
		k.mu.Lock()
		pm := k.mounted[key][uid]
		vols := make(map[string]publishedVolume, len(pm.vols))
		for n, v := range pm.vols {
			vols[n] = v
		}
		k.mu.Unlock()
		if n, err := k.nodes.Get(pm.node); err == nil && n.Annotations[AnnKubelet] == KubeletDead {
			continue // unmounted when the kubelet is back (its orphaned Pod directories)
		}
		for name, v := range vols {
			if v.csi {
				if err := k.unpublish(ctx, pm.node, v); err != nil {
					return err
				}
			}
			k.mu.Lock()
			delete(pm.vols, name)
			k.mu.Unlock()
		}
		k.mu.Lock()
		delete(k.mounted[key], uid)
		if len(k.mounted[key]) == 0 {
			delete(k.mounted, key)
		}
		delete(k.statusWritten, uid)
		k.mu.Unlock()
	}
	return nil
}

// nodeClient connects to the node's TopoLVM node server once the kubelet has it registered (the
// CSI plugin's csiDriverClient: "driver name ... not found in the list of registered CSI
// drivers" before that).
func (k *kubeletVolumes) nodeClient(node string) (csi.NodeClient, func(), error) {
	// The kubelet's plugin watcher deregisters a driver whose socket went away (the node agent
	// stopped: a VM recreated, a rollout, a crash loop) and registers it again once the socket
	// is back and answers; here: the driver in the node's CSINode and the socket present.
	sock := filepath.Join(k.o.SocketDir, node, "csi-topolvm.sock")
	registered := false
	if cn, err := k.csiNodes.Get(node); err == nil {
		registered = slices.ContainsFunc(cn.Spec.Drivers, func(d storagev1.CSINodeDriver) bool { return d.Name == topolvm.GetPluginName() })
	}
	if _, err := os.Stat(sock); err != nil {
		registered = false
	}
	if !registered {
		return nil, nil, fmt.Errorf("kubernetes.io/csi: mounter.SetUpAt failed to get CSI client: driver name %s not found in the list of registered CSI drivers", topolvm.GetPluginName())
	}
	conn, err := grpc.NewClient("unix:"+sock, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, nil, err
	}
	return csi.NewNodeClient(conn), func() { _ = conn.Close() }, nil
}

// publish is csi_mounter.go SetUpAt for a Pod's volume on its node: the target path is the
// kubelet's (pods/<uid>/volumes/kubernetes.io~csi/<PV>/mount), its parent is created by the
// kubelet, the request is csi_client.go NodePublishVolume's: the PV's volume handle, fsType and
// mount options, access mode from the PV's first access mode (ReadWriteOnce:
// SINGLE_NODE_WRITER; TopoLVM announces no SINGLE_NODE_MULTI_WRITER), volume attributes plus the
// Pod information TopoLVM's CSIDriver asks for (podInfoOnMount), no publish context (no attach)
// and no staging path (no STAGE_UNSTAGE_VOLUME). A block PV is published to the kubelet's block
// path (plugins/kubernetes.io/csi/volumeDevices/publish/<PV>/<uid>), a file TopoLVM creates.
func (k *kubeletVolumes) publish(ctx context.Context, pod *corev1.Pod, pv *corev1.PersistentVolume, readOnly bool) (publishedVolume, error) {
	client, closeConn, err := k.nodeClient(pod.Spec.NodeName)
	if err != nil {
		return publishedVolume{}, err
	}
	defer closeConn()
	kubeletDir := filepath.Join(k.o.SocketDir, pod.Spec.NodeName, "kubelet")
	block := pv.Spec.VolumeMode != nil && *pv.Spec.VolumeMode == corev1.PersistentVolumeBlock
	var target string
	capability := &csi.VolumeCapability{AccessMode: &csi.VolumeCapability_AccessMode{Mode: csiAccessMode(pv)}}
	if block {
		target = filepath.Join(kubeletDir, "plugins", "kubernetes.io", "csi", "volumeDevices", "publish", pv.Name, string(pod.UID))
		capability.AccessType = &csi.VolumeCapability_Block{Block: &csi.VolumeCapability_BlockVolume{}}
	} else {
		target = filepath.Join(kubeletDir, "pods", string(pod.UID), "volumes", "kubernetes.io~csi", pv.Name, "mount")
		capability.AccessType = &csi.VolumeCapability_Mount{Mount: &csi.VolumeCapability_MountVolume{
			FsType: pv.Spec.CSI.FSType, MountFlags: pv.Spec.MountOptions,
		}}
	}
	if err := os.MkdirAll(filepath.Dir(target), 0o750); err != nil {
		return publishedVolume{}, fmt.Errorf("kubernetes.io/csi: mounter.SetUpAt failed to create dir %q:  %v", filepath.Dir(target), err)
	}
	attrs := map[string]string{}
	for a, v := range pv.Spec.CSI.VolumeAttributes {
		attrs[a] = v
	}
	// csi_mounter.go podInfo (CSIDriver topolvm.io: podInfoOnMount true).
	attrs["csi.storage.k8s.io/pod.name"] = pod.Name
	attrs["csi.storage.k8s.io/pod.namespace"] = pod.Namespace
	attrs["csi.storage.k8s.io/pod.uid"] = string(pod.UID)
	attrs["csi.storage.k8s.io/serviceAccount.name"] = pod.Spec.ServiceAccountName
	attrs["csi.storage.k8s.io/ephemeral"] = "false"
	v := publishedVolume{pv: pv.Name, handle: pv.Spec.CSI.VolumeHandle, target: target, csi: true}
	k.record(fmt.Sprintf("NodePublishVolume node=%s pod=%s/%s volume=%s target=%s", pod.Spec.NodeName, pod.Namespace, pod.Name, v.handle, target))
	cctx, cancel := context.WithTimeout(ctx, csiTimeout)
	defer cancel()
	_, err = client.NodePublishVolume(cctx, &csi.NodePublishVolumeRequest{
		VolumeId: v.handle, TargetPath: target, Readonly: readOnly,
		VolumeCapability: capability, VolumeContext: attrs,
	})
	if err != nil {
		// SetUpAt removes the mount directory after a finished operation's error.
		_ = os.Remove(target)
		return publishedVolume{}, err
	}
	return v, nil
}

// csiAccessMode is csi_client.go asCSIAccessModeV1 for the PV's first access mode, as
// csi_mounter.go SetUpAt picks it (ReadWriteOnce when none), for a driver without the
// SINGLE_NODE_MULTI_WRITER capability.
func csiAccessMode(pv *corev1.PersistentVolume) csi.VolumeCapability_AccessMode_Mode {
	mode := corev1.ReadWriteOnce
	if len(pv.Spec.AccessModes) > 0 {
		mode = pv.Spec.AccessModes[0]
	}
	switch mode {
	case corev1.ReadWriteOnce:
		return csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER
	case corev1.ReadOnlyMany:
		return csi.VolumeCapability_AccessMode_MULTI_NODE_READER_ONLY
	case corev1.ReadWriteMany:
		return csi.VolumeCapability_AccessMode_MULTI_NODE_MULTI_WRITER
	case corev1.ReadWriteOncePod:
		return csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER
	}
	return csi.VolumeCapability_AccessMode_UNKNOWN
}

// unpublish is csi_mounter.go TearDownAt: NodeUnpublishVolume, then the kubelet removes the
// mount directory if the plugin left it.
func (k *kubeletVolumes) unpublish(ctx context.Context, node string, v publishedVolume) error {
	client, closeConn, err := k.nodeClient(node)
	if err != nil {
		return fmt.Errorf("kubernetes.io/csi: Unmounter.TearDownAt failed to get CSI client: %w", err)
	}
	defer closeConn()
	k.record(fmt.Sprintf("NodeUnpublishVolume node=%s volume=%s target=%s", node, v.handle, v.target))
	cctx, cancel := context.WithTimeout(ctx, csiTimeout)
	defer cancel()
	if _, err := client.NodeUnpublishVolume(cctx, &csi.NodeUnpublishVolumeRequest{VolumeId: v.handle, TargetPath: v.target}); err != nil {
		return fmt.Errorf("kubernetes.io/csi: Unmounter.TearDownAt failed: %w", err)
	}
	if err := os.Remove(v.target); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("kubernetes.io/csi: Unmounter.TearDownAt failed to clean mount dir [%s]: %w", v.target, err)
	}
	klog.V(2).InfoS("kubelet volumes: unpublished", "node", node, "volume", v.handle, "pv", v.pv)
	return nil
}

// failedMount records the kubelet's FailedMount Event for pv on pod (GenerateError's simple
// message, "MountVolume.SetUp failed for volume %q : <err>") and, once per Pod, the status the
// kubelet's first sync writes while volumes are not mounted: containers waiting in
// ContainerCreating, not Ready (KWOK's pod-ready stage replaces it once they are mounted).
func (k *kubeletVolumes) failedMount(ctx context.Context, pod *corev1.Pod, pv string, err error) {
	msg := fmt.Sprintf("MountVolume.SetUp failed for volume %q : %v", pv, err)
	k.recorder(pod.Spec.NodeName).Event(pod, corev1.EventTypeWarning, eventFailedMount, msg)
	k.mu.Lock()
	done := k.statusWritten[pod.UID]
	k.statusWritten[pod.UID] = true
	k.mu.Unlock()
	if done {
		return
	}
	if perr := k.writeContainerCreating(ctx, pod); perr != nil {
		klog.V(2).InfoS("kubelet volumes: pod status", "pod", pod.Namespace+"/"+pod.Name, "err", perr)
		k.mu.Lock()
		delete(k.statusWritten, pod.UID)
		k.mu.Unlock()
	}
}

// writeContainerCreating patches the Pod's status as the kubelet's generateAPIPodStatus has it
// before its containers start (pkg/kubelet/status/generate.go GeneratePodReadyCondition and
// GenerateContainersReadyCondition: ContainersNotReady, "containers with unready status: [..]";
// kuberuntime: waiting reason ContainerCreating).
func (k *kubeletVolumes) writeContainerCreating(ctx context.Context, pod *corev1.Pod) error {
	now := metav1.Now()
	var names []string
	statuses := make([]corev1.ContainerStatus, 0, len(pod.Spec.Containers))
	for _, c := range pod.Spec.Containers {
		names = append(names, c.Name)
		started := false
		statuses = append(statuses, corev1.ContainerStatus{
			Name: c.Name, Image: c.Image, Started: &started,
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}},
		})
	}
	unready := "containers with unready status: [" + strings.Join(names, " ") + "]"
	status := corev1.PodStatus{
		Phase: corev1.PodPending,
		Conditions: []corev1.PodCondition{
			{Type: corev1.PodInitialized, Status: corev1.ConditionTrue, LastTransitionTime: now},
			{Type: corev1.PodReady, Status: corev1.ConditionFalse, Reason: "ContainersNotReady", Message: unready, LastTransitionTime: now},
			{Type: corev1.ContainersReady, Status: corev1.ConditionFalse, Reason: "ContainersNotReady", Message: unready, LastTransitionTime: now},
		},
		ContainerStatuses: statuses,
		StartTime:         pod.Status.StartTime,
	}
	if status.StartTime == nil {
		status.StartTime = &now
	}
	next := pod.DeepCopy()
	next.Status.Phase = status.Phase
	next.Status.StartTime = status.StartTime
	next.Status.ContainerStatuses = status.ContainerStatuses
	for _, c := range status.Conditions {
		i := slices.IndexFunc(next.Status.Conditions, func(x corev1.PodCondition) bool { return x.Type == c.Type })
		if i >= 0 {
			next.Status.Conditions[i] = c
		} else {
			next.Status.Conditions = append(next.Status.Conditions, c)
		}
	}
	_, err := k.kube.CoreV1().Pods(pod.Namespace).UpdateStatus(ctx, next, metav1.UpdateOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err // a conflict: written at the next failure
}

func (k *kubeletVolumes) recorder(node string) record.EventRecorder {
	k.mu.Lock()
	defer k.mu.Unlock()
	r := k.recorders[node]
	if r == nil {
		r = k.broadcaster.NewRecorder(clientgoscheme.Scheme, corev1.EventSource{Component: "kubelet", Host: node})
		k.recorders[node] = r
	}
	return r
}

// record appends a line to the record file (shared with the stand-ins, which append with
// O_APPEND too).
func (k *kubeletVolumes) record(line string) {
	klog.V(2).InfoS("kubelet volumes: " + line)
	if k.o.Record == "" {
		return
	}
	k.recordMu.Lock()
	defer k.recordMu.Unlock()
	f, err := os.OpenFile(k.o.Record, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		klog.ErrorS(err, "kubelet volumes: record")
		return
	}
	_, _ = f.WriteString(line + "\n")
	_ = f.Close()
}
