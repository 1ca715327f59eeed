package topolvm

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	storagelisters "k8s.io/client-go/listers/storage/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
)

// Options configures Run. Zero values: namespace topolvm-system, ConfigMap topolvm-lvmd-0, key
// lvmd.yaml, resync 5 minutes.
type Options struct {
	Kube                          kubernetes.Interface
	Namespace, ConfigMapName, Key string
	Resync                        time.Duration
	// Registrar, when set, is kept up to date with the lvmd ConfigMap's device classes.
	Registrar *Registrar
}

// workers is the number of queue workers. Provisioning is safe with several: the space check and
// the reservation happen under one lock.
const workers = 4

type kind int

const (
	kindNode kind = iota
	kindPVC
	kindPV
	kindConfig
	kindSweep
)

type key struct {
	kind      kind
	namespace string
	name      string
}

type simulator struct {
	kube            kubernetes.Interface
	ns, cmName, key string
	registrar       *Registrar

	nodes corelisters.NodeLister
	pvcs  corelisters.PersistentVolumeClaimLister
	pvs   corelisters.PersistentVolumeLister
	scs   storagelisters.StorageClassLister
	cms   corelisters.ConfigMapLister
	caps  storagelisters.CSIStorageCapacityLister
	// capIndex is the CSIStorageCapacity informer's store, indexed by node (capacityNodeIndex).
	capIndex cache.Indexer

	queue    workqueue.TypedRateLimitingInterface[key]
	recorder record.EventRecorder

	mu      sync.Mutex
	classes []DeviceClass // last valid lvmd config
	rawConf string        // the lvmd.yaml text classes came from
	// ledger holds every logical volume that exists, by PV name: filled from the PV informer
	// (so a restart rebuilds it) and by our own creations before the informer sees them.
	ledger map[string]volume
	// lvGone holds PVs whose logical volume we removed while the PV object still exists.
	lvGone map[string]bool
	// createdCaps remembers CSIStorageCapacity objects created but maybe not yet in the
	// informer cache, by node and StorageClass, so a quick re-sync does not create a duplicate.
	createdCaps map[string]map[string]*storagev1.CSIStorageCapacity
	// vms is each node's VM (system UUID) as last seen; lvLost maps PVs whose logical volume went
	// with their node's volume group to that node (see noticeBoot).
	vms    map[string]string
	lvLost map[string]string
}

// Run simulates TopoLVM and external-provisioner for topolvm.io until ctx is done. It returns nil
// when ctx ends and an error only when it cannot start.
func Run(ctx context.Context, o Options) error {
	if o.Kube == nil {
		return errors.New("topolvm: Options.Kube is nil")
	}
	if o.Namespace == "" {
		o.Namespace = DefaultNamespace
	}
	if o.ConfigMapName == "" {
		o.ConfigMapName = DefaultConfigMapName
	}
	if o.Key == "" {
		o.Key = DefaultConfigKey
	}
	if o.Resync == 0 {
		o.Resync = 5 * time.Minute
	}
	logger := klog.FromContext(ctx).WithName("topolvm")
	ctx = klog.NewContext(ctx, logger)

	broadcaster := record.NewBroadcaster(record.WithContext(ctx))
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: o.Kube.CoreV1().Events("")})
	defer broadcaster.Shutdown()

	factory := informers.NewSharedInformerFactory(o.Kube, o.Resync)
	nsFactory := informers.NewSharedInformerFactoryWithOptions(o.Kube, o.Resync, informers.WithNamespace(o.Namespace))
	nodeInf := factory.Core().V1().Nodes()
	pvcInf := factory.Core().V1().PersistentVolumeClaims()
	pvInf := factory.Core().V1().PersistentVolumes()
	scInf := factory.Storage().V1().StorageClasses()
	cmInf := nsFactory.Core().V1().ConfigMaps()
	capInf := nsFactory.Storage().V1().CSIStorageCapacities()
	if err := capInf.Informer().AddIndexers(cache.Indexers{capacityNodeIndex: capacityByNode}); err != nil {
		return fmt.Errorf("topolvm: index CSIStorageCapacities by node: %w", err)
	}

	s := &simulator{
		kube: o.Kube, ns: o.Namespace, cmName: o.ConfigMapName, key: o.Key, registrar: o.Registrar,
		nodes: nodeInf.Lister(), pvcs: pvcInf.Lister(), pvs: pvInf.Lister(), scs: scInf.Lister(),
		cms: cmInf.Lister(), caps: capInf.Lister(), capIndex: capInf.Informer().GetIndexer(),
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.DefaultTypedControllerRateLimiter[key](),
			workqueue.TypedRateLimitingQueueConfig[key]{Name: "topolvm-simulator"}),
		recorder:    broadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: DriverName + "_olapgke-sandbox-topolvm-controller"}),
		ledger:      map[string]volume{},
		lvGone:      map[string]bool{},
		createdCaps: map[string]map[string]*storagev1.CSIStorageCapacity{},
		vms:         map[string]string{},
		lvLost:      map[string]string{},
	}
	defer s.queue.ShutDown()

	var regs []cache.ResourceEventHandlerRegistration
	add := func(inf cache.SharedIndexInformer, h cache.ResourceEventHandler) error {
		r, err := inf.AddEventHandler(h)
		regs = append(regs, r)
		return err
	}
	if err := errors.Join(
		add(nodeInf.Informer(), s.nodeHandler()),
		add(pvcInf.Informer(), s.pvcHandler()),
		add(pvInf.Informer(), s.pvHandler()),
		add(scInf.Informer(), s.scHandler()),
		add(cmInf.Informer(), s.cmHandler()),
		add(capInf.Informer(), s.capHandler()),
	); err != nil {
		return fmt.Errorf("topolvm: add event handlers: %w", err)
	}
	factory.Start(ctx.Done())
	nsFactory.Start(ctx.Done())
	defer factory.Shutdown()
	defer nsFactory.Shutdown()
	synced := make([]cache.InformerSynced, 0, len(regs))
	for _, r := range regs {
		synced = append(synced, r.HasSynced)
	}
	// Wait for the handlers (not only the stores): the ledger must hold every existing PV before
	// anything is provisioned, or a restart would double-book space.
	if !cache.WaitForCacheSync(ctx.Done(), synced...) {
		return nil // ctx ended
	}
	if err := s.syncConfig(ctx); err != nil {
		logger.Error(err, "lvmd config not read")
	}
	s.queue.Add(key{kind: kindSweep})

	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() { wait.UntilWithContext(ctx, s.worker, time.Second) })
	}
	<-ctx.Done()
	s.queue.ShutDown()
	wg.Wait()
	return nil
}

func (s *simulator) worker(ctx context.Context) {
	for s.processNext(ctx) {
	}
}

func (s *simulator) processNext(ctx context.Context) bool {
	k, quit := s.queue.Get()
	if quit {
		return false
	}
	defer s.queue.Done(k)
	var err error
	switch k.kind {
	case kindNode:
		err = s.syncNode(ctx, k.name)
	case kindPVC:
		err = s.syncPVC(ctx, k.namespace, k.name)
	case kindPV:
		err = s.syncPV(ctx, k.name)
	case kindConfig:
		err = s.syncConfig(ctx)
	case kindSweep:
		err = s.sweepCapacities(ctx)
	}
	if err != nil {
		if ctx.Err() == nil {
			klog.FromContext(ctx).Error(err, "sync failed, will retry", "kind", k.kind, "namespace", k.namespace, "name", k.name)
		}
		s.queue.AddRateLimited(k)
		return true
	}
	s.queue.Forget(k)
	return true
}

// enqueueAll re-syncs every node and every PVC waiting for provisioning (after a config or
// StorageClass change).
func (s *simulator) enqueueAll() {
	nodes, _ := s.nodes.List(labels.Everything())
	for _, n := range nodes {
		s.queue.Add(key{kind: kindNode, name: n.Name})
	}
	pvcs, _ := s.pvcs.List(labels.Everything())
	for _, c := range pvcs {
		if c.Spec.VolumeName == "" && c.Annotations[AnnSelectedNode] != "" {
			s.queue.Add(key{kind: kindPVC, namespace: c.Namespace, name: c.Name})
		}
	}
	s.queue.Add(key{kind: kindSweep})
}

// ---- event handlers ----

func (s *simulator) nodeHandler() cache.ResourceEventHandler {
	return cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if n, ok := obj.(*corev1.Node); ok {
				s.queue.Add(key{kind: kindNode, name: n.Name})
			}
		},
		UpdateFunc: func(oldObj, newObj any) {
			o, ok1 := oldObj.(*corev1.Node)
			n, ok2 := newObj.(*corev1.Node)
			if !ok1 || !ok2 {
				return
			}
			// Status-only updates (heartbeats) change nothing the simulator reads; resyncs
			// (same resourceVersion) and metadata changes are worth a sync.
			// A new system UUID (a VM recreated under the same name) is the one status
			// change that matters: its volume group is empty (a new boot ID alone is a
			// reboot, which keeps the disks). The startup taint coming or going is
			// the one spec change that matters (bootstrap.go).
			if o.ResourceVersion != n.ResourceVersion && maps.Equal(o.Labels, n.Labels) && maps.Equal(o.Annotations, n.Annotations) &&
				slices.Equal(o.Finalizers, n.Finalizers) && o.DeletionTimestamp.Equal(n.DeletionTimestamp) &&
				o.Status.NodeInfo.SystemUUID == n.Status.NodeInfo.SystemUUID && hasStartupTaint(o) == hasStartupTaint(n) {
				return
			}
			s.queue.Add(key{kind: kindNode, name: n.Name})
		},
		DeleteFunc: func(obj any) {
			if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = t.Obj
			}
			if n, ok := obj.(*corev1.Node); ok {
				s.queue.Add(key{kind: kindNode, name: n.Name})
				s.queue.Add(key{kind: kindSweep})
			}
		},
	}
}

func (s *simulator) pvcHandler() cache.ResourceEventHandler {
	enqueue := func(obj any) {
		if c, ok := obj.(*corev1.PersistentVolumeClaim); ok && (c.Spec.VolumeName == "" && c.Annotations[AnnSelectedNode] != "" || wantsExpansion(c)) {
			s.queue.Add(key{kind: kindPVC, namespace: c.Namespace, name: c.Name})
		}
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueue,
		UpdateFunc: func(_, newObj any) { enqueue(newObj) },
	}
}

func (s *simulator) pvHandler() cache.ResourceEventHandler {
	upsert := func(obj any) {
		pv, ok := obj.(*corev1.PersistentVolume)
		if !ok || !isTopoLVMPV(pv) {
			return
		}
		if v, ok := volumeOf(pv); ok {
			s.mu.Lock()
			old, had := s.ledger[pv.Name]
			changed := false
			if !s.lvGone[pv.Name] && !s.lostLocked(pv) && (!had || old != v) {
				s.ledger[pv.Name] = v
				changed = true
			}
			s.mu.Unlock()
			if changed {
				s.queue.Add(key{kind: kindNode, name: v.node})
			}
		}
		s.queue.Add(key{kind: kindPV, name: pv.Name})
		// A claim that asked to grow before this PV reached the cache found no PV, and expand
		// returned, as external-resizer's syncPVC does ("PV bound to PVC not found", no retry;
		// v1.14.0 pkg/controller/controller.go); the resizer finds it again at its PVC
		// informer's next resync. The simulator looks again as soon as the PV is cached, so a
		// claim grown right after it was bound does not wait for a resync (CI saw that race).
		if ref := pv.Spec.ClaimRef; ref != nil {
			if c, err := s.pvcs.PersistentVolumeClaims(ref.Namespace).Get(ref.Name); err == nil && c.Spec.VolumeName == pv.Name && wantsExpansion(c) {
				s.queue.Add(key{kind: kindPVC, namespace: c.Namespace, name: c.Name})
			}
		}
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    upsert,
		UpdateFunc: func(_, newObj any) { upsert(newObj) },
		DeleteFunc: func(obj any) {
			if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = t.Obj
			}
			pv, ok := obj.(*corev1.PersistentVolume)
			if !ok {
				return
			}
			s.mu.Lock()
			v, had := s.ledger[pv.Name]
			delete(s.ledger, pv.Name)
			delete(s.lvGone, pv.Name)
			delete(s.lvLost, pv.Name)
			s.mu.Unlock()
			if had {
				s.queue.Add(key{kind: kindNode, name: v.node})
			}
		},
	}
}

func (s *simulator) scHandler() cache.ResourceEventHandler {
	changed := func(obj any) {
		if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = t.Obj
		}
		if sc, ok := obj.(*storagev1.StorageClass); ok && sc.Provisioner == DriverName {
			s.enqueueAll()
		}
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    changed,
		UpdateFunc: func(_, newObj any) { changed(newObj) },
		DeleteFunc: changed,
	}
}

func (s *simulator) cmHandler() cache.ResourceEventHandler {
	changed := func(obj any) {
		if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = t.Obj
		}
		if cm, ok := obj.(*corev1.ConfigMap); ok && cm.Name == s.cmName {
			s.queue.Add(key{kind: kindConfig})
		}
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    changed,
		UpdateFunc: func(_, newObj any) { changed(newObj) },
		DeleteFunc: changed,
	}
}

func (s *simulator) capHandler() cache.ResourceEventHandler {
	changed := func(obj any) {
		if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = t.Obj
		}
		if c, ok := obj.(*storagev1.CSIStorageCapacity); ok && isOurCapacity(c) {
			if n := capacityNode(c); n != "" {
				s.queue.Add(key{kind: kindNode, name: n})
			}
		}
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    changed,
		UpdateFunc: func(_, newObj any) { changed(newObj) },
		DeleteFunc: changed,
	}
}

// ---- lvmd config ----

// syncConfig re-reads the lvmd ConfigMap. Real lvmd reads it only when it starts; the simulator
// applies a change at once. An invalid config is reported with a Warning event on the ConfigMap
// and the last valid one stays in force (as a running lvmd would keep its config).
func (s *simulator) syncConfig(ctx context.Context) error {
	cm, err := s.cms.ConfigMaps(s.ns).Get(s.cmName)
	if apierrors.IsNotFound(err) {
		// Nothing to retry: the ConfigMap handler queues a sync when it appears.
		klog.FromContext(ctx).Info("lvmd ConfigMap not found; keeping the last device classes", "configmap", s.ns+"/"+s.cmName)
		return nil
	}
	if err != nil {
		return err
	}
	raw := cm.Data[s.key]
	s.mu.Lock()
	same := raw == s.rawConf
	s.mu.Unlock()
	if same {
		return nil
	}
	classes, err := ParseLVMDConfig(raw)
	if err != nil {
		s.recorder.Eventf(cm, corev1.EventTypeWarning, "InvalidLVMDConfig",
			"lvmd config key %q is not valid and was not applied (the previous device classes stay in force): %v", s.key, err)
		s.mu.Lock()
		s.rawConf = raw // do not repeat the event until the text changes
		s.mu.Unlock()
		return nil
	}
	s.mu.Lock()
	s.classes = classes
	s.rawConf = raw
	s.mu.Unlock()
	if s.registrar != nil {
		s.registrar.setClasses(classes)
	}
	klog.FromContext(ctx).Info("lvmd device classes loaded", "count", len(classes))
	s.enqueueAll()
	return nil
}

// snapshot returns the current device classes and the volumes on one node.
func (s *simulator) snapshot(node string) ([]DeviceClass, []volume) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.classes, s.volumesOnLocked(node)
}

func (s *simulator) volumesOnLocked(node string) []volume {
	var out []volume
	for _, v := range s.ledger {
		if v.node == node {
			out = append(out, v)
		}
	}
	return out
}

// topolvmStorageClasses lists StorageClasses whose provisioner is topolvm.io.
func (s *simulator) topolvmStorageClasses() ([]*storagev1.StorageClass, error) {
	all, err := s.scs.List(labels.Everything())
	if err != nil {
		return nil, err
	}
	var out []*storagev1.StorageClass
	for _, sc := range all {
		if sc.Provisioner == DriverName {
			out = append(out, sc)
		}
	}
	slices.SortFunc(out, func(a, b *storagev1.StorageClass) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}
