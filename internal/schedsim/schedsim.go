// Package schedsim predicts whether Pods can be scheduled, in-process and
// without an API server, by running kube-scheduler's own PreFilter/Filter
// plugins (default profile of k8s.io/kubernetes v1.37.2) against a snapshot
// built from plain API objects.
package schedsim

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"sync"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/informers"
	clientset "k8s.io/client-go/kubernetes"
	toolscache "k8s.io/client-go/tools/cache"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
	"k8s.io/kubernetes/pkg/scheduler/apis/config/latest"
	internalcache "k8s.io/kubernetes/pkg/scheduler/backend/cache"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/names"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/nodevolumelimits"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/volumebinding"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
	schedmetrics "k8s.io/kubernetes/pkg/scheduler/metrics"
)

// World is the complete input: plain API objects, no cluster. A Sim reads them in place, as the
// scheduler's informers hand out shared objects: it never writes them (what it changes, a
// placed Pod or a lowered CSIStorageCapacity, it copies first), and they must not change while
// the Sim is in use. Copying them all made up about a third of building a Sim at 5,000 nodes.
type World struct {
	Nodes          []corev1.Node
	Pods           []corev1.Pod // existing; bound ones (Spec.NodeName set to a known node) occupy resources
	PVs            []corev1.PersistentVolume
	PVCs           []corev1.PersistentVolumeClaim
	StorageClasses []storagev1.StorageClass
	CSINodes       []storagev1.CSINode
	CSIDrivers     []storagev1.CSIDriver
	Capacities     []storagev1.CSIStorageCapacity
	Namespaces     []corev1.Namespace // optional, only needed for affinity namespaceSelector
}

// Options tune the simulator. The zero value is what New uses.
type Options struct {
	// EvaluateAllNodes runs Filter on every node even after a feasible one was
	// found (the answer is still the first feasible node in name order).
	EvaluateAllNodes bool
	// PreemptionMessage runs the PostFilter plugins (DefaultPreemption) when a
	// pod does not fit, so the message gets the " preemption: ..." suffix that
	// the base scheduler writes into the PodScheduled condition. It is only
	// run when no placed pod has a lower priority than the incoming pod (then
	// DefaultPreemption can find no victim and never tries to evict anything);
	// otherwise the suffix is omitted and PreemptionPossible is reported.
	PreemptionMessage bool
	// TrackStorageCapacity subtracts the size of dynamically provisioned
	// claims from the CSIStorageCapacity that VolumeBinding selected, on
	// Assume (the base scheduler relies on the CSI driver to do this).
	TrackStorageCapacity bool
	// NoShortcuts disables the result-preserving speedups in fastpath.go
	// (per-node CSIStorageCapacity lister, PV-pinned node search order) and
	// classcache.go. For validation only; O(nodes x capacities) per pod.
	NoShortcuts bool
	// noClassCache (tests only) disables classcache.go alone.
	noClassCache bool
	// Pods, when set, memoizes bound pods' copies and PodInfos across Sims built one after
	// another (podcache.go); answers are the same with or without it.
	Pods *PodCache
	// Logger for the plugins; default discards everything.
	Logger *klog.Logger

	// clientFactory (tests only): take objects from this informer factory,
	// e.g. one built on a fake clientset, and Start+WaitForCacheSync it
	// after NewFramework registered its informers, instead of adding the
	// World's objects to the indexers directly.
	clientFactory informers.SharedInformerFactory
}

type placed struct {
	pod        *corev1.Pod
	node       string
	podVolumes *volumebinding.PodVolumes
	capacity   []capUse // storage taken, for revert
}

// Sim is a scheduling simulator. It is not safe for concurrent use.
type Sim struct {
	ctx       context.Context
	cancel    context.CancelFunc
	logger    klog.Logger
	opts      Options
	fw        framework.Framework
	snapshot  *internalcache.Snapshot
	informers informers.SharedInformerFactory // what the plugins see (wrapped)
	capLister *capacityLister
	allNodes  []*corev1.Node
	pods      toolscache.Indexer // podIndex
	byLabel   map[nodeLabel][]*corev1.Node
	vb        *volumebinding.VolumeBinding // the framework's own VolumeBinding instance
	nodes     []fwk.NodeInfo               // sorted by name
	placed    map[types.UID]*placed
	classes   *classCache // classcache.go; nil with NoShortcuts
	nodeIndex map[string]int
	// LastPreemptionSkipped is set by Place when PreemptionMessage was asked
	// for but skipped because lower-priority pods exist.
	LastPreemptionSkipped bool
}

// DefaultProfile returns the scheduler's default profile (scheme defaulting
// of KubeSchedulerConfiguration v1, feature gates applied) with the plugins
// removed that cannot work without an API server.
func DefaultProfile() (*config.KubeSchedulerProfile, error) {
	cfg, err := latest.Default()
	if err != nil {
		return nil, err
	}
	prof := cfg.Profiles[0]
	// DynamicResources (DRA is GA and locked on in 1.37) needs a
	// SharedDRAManager (ResourceClaim assume cache + ResourceSlice tracker);
	// with a nil manager its PreFilter dereferences nil. The World has no DRA
	// objects, so drop it.
	prof.Plugins.MultiPoint.Enabled = slices.DeleteFunc(prof.Plugins.MultiPoint.Enabled,
		func(p config.Plugin) bool { return p.Name == names.DynamicResources })
	return &prof, nil
}

var initMetrics sync.Once

// New builds the framework once and loads the world.
func New(ctx context.Context, w World) (*Sim, error) { return NewWithOptions(ctx, w, Options{}) }

// NewWithOptions is New with options.
func NewWithOptions(ctx context.Context, w World, opts Options) (*Sim, error) {
	logger := logr.Discard()
	if opts.Logger != nil {
		logger = *opts.Logger
	}
	// Pitfall: the scheduler's metric vectors are nil until InitMetrics
	// (normally via metrics.Register()); NewFramework dereferences
	// PluginEvaluationTotal. InitMetrics creates them without registering
	// them in the global legacy registry, so every observation is a no-op.
	initMetrics.Do(schedmetrics.InitMetrics)
	ctx, cancel := context.WithCancel(klog.NewContext(ctx, logger))
	s := &Sim{ctx: ctx, cancel: cancel, logger: logger, opts: opts, placed: map[types.UID]*placed{}}
	if !opts.NoShortcuts && !opts.noClassCache {
		s.classes = newClassCache()
	}

	prof, err := DefaultProfile()
	if err != nil {
		cancel()
		return nil, err
	}

	// Informer factory that is never started: plugins only use its listers
	// (i.e. the informers' indexers), and VolumeBinding's assume caches read
	// the PV/PVC indexers directly. A nil clientset is fine as long as
	// nothing is started or bound.
	base := informers.NewSharedInformerFactory(clientset.Interface(nil), 0)
	if opts.clientFactory != nil {
		base = opts.clientFactory
	}
	s.informers = base
	if !opts.NoShortcuts {
		capInf := base.Storage().V1().CSIStorageCapacities()
		s.capLister = &capacityLister{CSIStorageCapacityLister: capInf.Lister(), indexer: capInf.Informer().GetIndexer()}
		s.informers = &factory{SharedInformerFactory: base, capLister: s.capLister}
	}

	// Build the node snapshot before the framework: plugins keep the lister.
	nodes := make([]*corev1.Node, 0, len(w.Nodes))
	for i := range w.Nodes {
		nodes = append(nodes, &w.Nodes[i])
	}
	s.allNodes = nodes
	s.byLabel = labelIndex(nodes)
	s.snapshot = internalcache.NewSnapshot(nil, nodes)
	// A mutation session lets us AddPod/RemovePod with the snapshot-wide
	// affinity/anti-affinity/PVC indexes kept consistent; we never end it.
	if err := s.snapshot.StartMutations(); err != nil {
		cancel()
		return nil, err
	}

	registry := plugins.NewInTreeRegistry()
	origVB := registry[volumebinding.Name]
	registry[volumebinding.Name] = func(ctx context.Context, args runtime.Object, h fwk.Handle) (fwk.Plugin, error) {
		p, err := origVB(ctx, args, h)
		if vb, ok := p.(*volumebinding.VolumeBinding); ok {
			s.vb = vb
		}
		return p, err
	}

	// The framework starts a metrics recorder goroutine that lives as long as the context
	// given to NewFramework; its observations are non-blocking sends, dropped once it stopped.
	// Stopping it right away keeps a Sim free of goroutines, so callers need not Close it.
	buildCtx, stopBuild := context.WithCancel(ctx)
	defer stopBuild()
	f, err := frameworkruntime.NewFramework(buildCtx, registry, prof,
		frameworkruntime.WithInformerFactory(s.informers),
		frameworkruntime.WithSnapshotSharedLister(s.snapshot),
		frameworkruntime.WithMutableSnapshotLister(s.snapshot), // DefaultPreemption
		frameworkruntime.WithSharedCSIManager(nodevolumelimits.NewCSIManager(s.informers.Storage().V1().CSINodes().Lister())),
		frameworkruntime.WithParallelism(1),
		frameworkruntime.WithLogger(logger),
	)
	if err != nil {
		cancel()
		return nil, fmt.Errorf("NewFramework: %w", err)
	}
	s.fw = f

	if opts.clientFactory != nil {
		base.Start(ctx.Done())
		for typ, ok := range base.WaitForCacheSync(ctx.Done()) {
			if !ok {
				cancel()
				return nil, fmt.Errorf("informer for %v did not sync", typ)
			}
		}
	} else if err := s.load(w); err != nil {
		// Fed directly into the informers' indexers (after the plugins
		// added their own indexers); nothing is ever started.
		cancel()
		return nil, err
	}
	if s.capLister != nil {
		s.capLister.buildIndex(nodes, s.byLabel)
	}
	list, _ := s.snapshot.NodeInfos().List()
	s.nodes = slices.Clone(list)
	sort.Slice(s.nodes, func(i, j int) bool { return s.nodes[i].Node().Name < s.nodes[j].Node().Name })
	s.nodeIndex = make(map[string]int, len(s.nodes))
	for i, ni := range s.nodes {
		s.nodeIndex[ni.Node().Name] = i
	}

	if c := opts.Pods; c != nil {
		c.begin()
		defer c.end()
	}
	for i := range w.Pods {
		if w.Pods[i].Spec.NodeName == "" {
			continue // pending pods occupy nothing
		}
		if _, err := s.snapshot.Get(w.Pods[i].Spec.NodeName); err != nil {
			continue // bound to an unknown node
		}
		var p *corev1.Pod
		var pi *framework.PodInfo
		if opts.Pods != nil {
			p, pi, err = opts.Pods.get(&w.Pods[i])
		} else {
			p = boundPod(&w.Pods[i])
			pi, err = framework.NewPodInfo(p)
		}
		if err == nil {
			err = s.addPodInfo(p, pi, p.Spec.NodeName, nil, nil)
		}
		if err != nil {
			cancel()
			return nil, err
		}
	}
	return s, nil
}

// podIndex is the Pod informer's store the plugins list from (asked once: the factory's
// accessors allocate on every call).
func (s *Sim) podIndex() toolscache.Indexer {
	if s.pods == nil {
		s.pods = s.informers.Core().V1().Pods().Informer().GetIndexer()
	}
	return s.pods
}

// Close stops the framework's background goroutine (metrics recorder).
func (s *Sim) Close() { s.cancel() }

func (s *Sim) load(w World) error {
	f := s.informers
	var errs []error
	// One indexer per kind, asked once: the factory's accessors allocate on every call.
	add := func(inf toolscache.SharedIndexInformer, n int, obj func(int) any) {
		idx := inf.GetIndexer()
		for i := range n {
			errs = append(errs, idx.Add(obj(i)))
		}
	}
	add(f.Core().V1().Nodes().Informer(), len(w.Nodes), func(i int) any { return &w.Nodes[i] })
	add(f.Core().V1().PersistentVolumes().Informer(), len(w.PVs), func(i int) any { return &w.PVs[i] })
	add(f.Core().V1().PersistentVolumeClaims().Informer(), len(w.PVCs), func(i int) any {
		pvc := &w.PVCs[i]
		if pvc.Namespace == "" {
			pvc = pvc.DeepCopy()
			pvc.Namespace = corev1.NamespaceDefault
		}
		return pvc
	})
	add(f.Storage().V1().StorageClasses().Informer(), len(w.StorageClasses), func(i int) any { return &w.StorageClasses[i] })
	add(f.Storage().V1().CSINodes().Informer(), len(w.CSINodes), func(i int) any { return &w.CSINodes[i] })
	add(f.Storage().V1().CSIDrivers().Informer(), len(w.CSIDrivers), func(i int) any { return &w.CSIDrivers[i] })
	add(f.Storage().V1().CSIStorageCapacities().Informer(), len(w.Capacities), func(i int) any { return &w.Capacities[i] })
	add(f.Core().V1().Namespaces().Informer(), len(w.Namespaces), func(i int) any { return &w.Namespaces[i] })
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

// boundPod is a bound pod as the Sim keeps it: the World's own object when it has a namespace
// and UID (the Sim never changes a bound pod), else normalizePod's copy.
func boundPod(pod *corev1.Pod) *corev1.Pod {
	if pod.Namespace != "" && pod.UID != "" {
		return pod
	}
	return normalizePod(pod)
}

// normalizePod returns a copy with namespace and UID filled in (the
// scheduler's NodeInfo keys pods by UID).
func normalizePod(pod *corev1.Pod) *corev1.Pod {
	p := pod.DeepCopy()
	p.Namespace, p.UID = podKey(pod)
	return p
}

// podKey is the namespace and UID normalizePod gives pod, without copying it.
func podKey(pod *corev1.Pod) (string, types.UID) {
	ns, uid := pod.Namespace, pod.UID
	if ns == "" {
		ns = corev1.NamespaceDefault
	}
	if uid == "" {
		uid = types.UID("schedsim/" + ns + "/" + pod.Name)
	}
	return ns, uid
}

// Place runs PreFilter and Filter over all nodes and returns the first
// feasible node in name order; if none, the scheduler's FitError message.
func (s *Sim) Place(pod *corev1.Pod) (node string, fitErrorMessage string, err error) {
	pod = normalizePod(pod)
	s.LastPreemptionSkipped = false
	ctx := s.ctx
	state := framework.NewCycleState()
	numAll := len(s.nodes)
	if numAll == 0 {
		return "", "no nodes available to schedule pods", nil // scheduler's ErrNoNodesAvailable
	}
	diagnosis := framework.Diagnosis{NodeToStatus: framework.NewDefaultNodeToStatus()}

	preRes, st, pluginsWithNodes := s.fw.RunPreFilterPlugins(ctx, state, pod)
	diagnosis.UnschedulablePlugins = pluginsWithNodes
	if !st.IsSuccess() {
		if !st.IsRejected() {
			return "", "", st.AsError()
		}
		diagnosis.NodeToStatus.SetAbsentNodesStatus(st)
		diagnosis.PreFilterMsg = st.Message()
		diagnosis.AddPluginStatus(st)
		return "", s.fitError(state, pod, numAll, diagnosis), nil
	}

	nodes := s.nodes
	if !preRes.AllNodes() {
		nodes = make([]fwk.NodeInfo, 0, len(preRes.NodeNames))
		for _, ni := range s.nodes {
			if preRes.NodeNames.Has(ni.Node().Name) {
				nodes = append(nodes, ni)
			}
		}
		diagnosis.NodeToStatus.SetAbsentNodesStatus(fwk.NewStatus(fwk.UnschedulableAndUnresolvable,
			fmt.Sprintf("node(s) didn't satisfy plugin(s) %v", sets.List(pluginsWithNodes))))
	}

	// Phase 1 (shortcut): nodes allowed by pinned PVs, in name order. The
	// first feasible one is also the first feasible one overall.
	evaluated := map[string]bool{}
	var pinned sets.Set[string]
	if !s.opts.NoShortcuts {
		pinned = s.pinnedNodes(pod)
	}
	class := ""
	if preRes.AllNodes() && !s.opts.PreemptionMessage && !s.opts.EvaluateAllNodes {
		class = s.classKey(pod)
	}
	if class != "" {
		return s.placeByClass(class, pinned, state, pod, numAll)
	}
	if !s.opts.NoShortcuts && !s.opts.EvaluateAllNodes {
		if pinned != nil {
			for _, ni := range nodes {
				name := ni.Node().Name
				if !pinned.Has(name) {
					continue
				}
				st := s.filter(state, pod, ni)
				if st.Code() == fwk.Error {
					return "", "", st.AsError()
				}
				if st.IsSuccess() {
					return name, "", nil
				}
				evaluated[name] = true
				diagnosis.NodeToStatus.Set(name, st)
				diagnosis.AddPluginStatus(st)
			}
		}
	}
	// Phase 2: all (remaining) nodes in name order.
	found := ""
	for _, ni := range nodes {
		if evaluated[ni.Node().Name] {
			continue
		}
		st := s.filter(state, pod, ni)
		if st.Code() == fwk.Error {
			return "", "", st.AsError()
		}
		if st.IsSuccess() {
			if found == "" {
				found = ni.Node().Name
			}
			if !s.opts.EvaluateAllNodes {
				break
			}
			continue
		}
		diagnosis.NodeToStatus.Set(ni.Node().Name, st)
		diagnosis.AddPluginStatus(st)
	}
	if found != "" {
		return found, "", nil
	}
	return "", s.fitError(state, pod, numAll, diagnosis), nil
}

// filter runs the framework's Filter plugins for one node.
func (s *Sim) filter(state fwk.CycleState, pod *corev1.Pod, ni fwk.NodeInfo) *fwk.Status {
	if s.capLister != nil {
		s.capLister.currentNode = ni.Node().Name
		defer func() { s.capLister.currentNode = "" }()
	}
	return s.fw.RunFilterPlugins(s.ctx, state, pod, ni)
}

// fitError formats exactly like the scheduler: framework.FitError.Error(),
// optionally with the PostFilter (preemption) message appended.
func (s *Sim) fitError(state fwk.CycleState, pod *corev1.Pod, numAll int, d framework.Diagnosis) string {
	fitErr := &framework.FitError{Pod: pod, NumAllNodes: numAll, Diagnosis: d}
	if s.opts.PreemptionMessage && s.fw.HasPostFilterPlugins() {
		if s.hasLowerPriorityPods(corev1helpers.PodPriority(pod)) {
			s.LastPreemptionSkipped = true
		} else {
			// DefaultPreemption re-reads the preemptor from the pod lister.
			idx := s.podIndex()
			_ = idx.Add(pod)
			_, status := s.fw.RunPostFilterPlugins(s.ctx, state, pod, d.NodeToStatus)
			_ = idx.Delete(pod)
			fitErr.Diagnosis.PostFilterMsg = status.Message()
		}
	}
	return fitErr.Error()
}

func (s *Sim) hasLowerPriorityPods(prio int32) bool {
	for _, p := range s.placed {
		if corev1helpers.PodPriority(p.pod) < prio {
			return true
		}
	}
	return false
}

// Assume places pod on node for all later Place calls: resources, ports,
// (anti-)affinity and spread via the NodeInfo snapshot; volumes via the
// VolumeBinding plugin's own assume caches (PVC gets selected-node, static
// PVs get claimRef), exactly what the scheduler's Reserve step does.
func (s *Sim) Assume(pod *corev1.Pod, node string) error {
	p := normalizePod(pod)
	if _, ok := s.placed[p.UID]; ok {
		return fmt.Errorf("pod %s/%s already placed", p.Namespace, p.Name)
	}
	ni, err := s.snapshot.Get(node)
	if err != nil {
		return err
	}
	var podVolumes *volumebinding.PodVolumes
	var oldCaps []capUse
	if s.vb != nil && podHasPVCs(p) {
		claims, err := s.vb.Binder.GetPodVolumeClaims(s.logger, p)
		if err != nil {
			return err
		}
		if s.capLister != nil {
			s.capLister.currentNode = node
		}
		pv, reasons, err := s.vb.Binder.FindPodVolumes(s.logger, p, claims, ni.Node())
		if s.capLister != nil {
			s.capLister.currentNode = ""
		}
		if err != nil {
			return err
		}
		if len(reasons) == 0 {
			// Before AssumePodVolumes: it rewrites pv.DynamicProvisions and
			// drops NodeCapacity.
			if s.opts.TrackStorageCapacity {
				oldCaps = s.consumeCapacity(pv)
			}
			if _, err := s.vb.Binder.AssumePodVolumes(s.logger, p, node, pv); err != nil {
				s.restoreCapacity(oldCaps)
				return err
			}
			if s.classes != nil {
				for _, v := range p.Spec.Volumes {
					if v.PersistentVolumeClaim != nil {
						s.classes.assumedPVCs.Insert(p.Namespace + "/" + v.PersistentVolumeClaim.ClaimName)
					}
				}
			}
			podVolumes = pv
		}
	}
	p.Spec.NodeName = node
	s.touch(node)
	return s.addPod(p, node, podVolumes, oldCaps)
}

func (s *Sim) addPod(p *corev1.Pod, node string, pv *volumebinding.PodVolumes, caps []capUse) error {
	pi, err := framework.NewPodInfo(p)
	if err != nil {
		return err
	}
	return s.addPodInfo(p, pi, node, pv, caps)
}

func (s *Sim) addPodInfo(p *corev1.Pod, pi *framework.PodInfo, node string, pv *volumebinding.PodVolumes, caps []capUse) error {
	if err := s.snapshot.AddPod(pi, node); err != nil {
		return err
	}
	_ = s.podIndex().Add(p)
	s.placed[p.UID] = &placed{pod: p, node: node, podVolumes: pv, capacity: caps}
	return nil
}

// Remove deletes a placed (or initially bound) pod and releases what it used.
func (s *Sim) Remove(pod *corev1.Pod) error {
	ns, uid := podKey(pod)
	rec, ok := s.placed[uid]
	if !ok {
		return fmt.Errorf("pod %s/%s is not placed", ns, pod.Name)
	}
	if err := s.snapshot.RemovePod(s.logger, rec.pod, rec.node); err != nil {
		return err
	}
	if rec.podVolumes != nil {
		s.vb.Binder.RevertAssumedPodVolumes(rec.podVolumes)
	}
	s.restoreCapacity(rec.capacity)
	s.touch(rec.node)
	_ = s.podIndex().Delete(rec.pod)
	delete(s.placed, uid)
	return nil
}

// capUse records storage taken from a CSIStorageCapacity by one claim.
type capUse struct {
	ref     *storagev1.CSIStorageCapacity // only namespace/name are used
	size    resource.Quantity
	prevMax *resource.Quantity
}

// consumeCapacity lowers the CSIStorageCapacity objects that VolumeBinding
// selected for dynamically provisioned claims (PodVolumes from FindPodVolumes).
func (s *Sim) consumeCapacity(pv *volumebinding.PodVolumes) []capUse {
	idx := s.informers.Storage().V1().CSIStorageCapacities().Informer().GetIndexer()
	var uses []capUse
	for _, dp := range pv.DynamicProvisions {
		size, ok := dp.PVC.Spec.Resources.Requests[corev1.ResourceStorage]
		if dp.NodeCapacity == nil || !ok {
			continue
		}
		obj, exists, _ := idx.Get(dp.NodeCapacity)
		if !exists {
			continue
		}
		held, ok := obj.(*storagev1.CSIStorageCapacity)
		if !ok {
			continue
		}
		upd := held.DeepCopy()
		use := capUse{ref: upd, size: size, prevMax: upd.MaximumVolumeSize}
		if upd.Capacity != nil {
			c := upd.Capacity.DeepCopy()
			c.Sub(size)
			upd.Capacity = &c
		}
		if upd.MaximumVolumeSize != nil && upd.Capacity != nil && upd.MaximumVolumeSize.Cmp(*upd.Capacity) > 0 {
			m := upd.Capacity.DeepCopy()
			upd.MaximumVolumeSize = &m
		}
		_ = idx.Update(upd)
		uses = append(uses, use)
	}
	return uses
}

// restoreCapacity gives back what consumeCapacity took.
func (s *Sim) restoreCapacity(uses []capUse) {
	idx := s.informers.Storage().V1().CSIStorageCapacities().Informer().GetIndexer()
	for _, u := range uses {
		obj, exists, _ := idx.Get(u.ref)
		if !exists {
			continue
		}
		held, ok := obj.(*storagev1.CSIStorageCapacity)
		if !ok {
			continue
		}
		cur := held.DeepCopy()
		if cur.Capacity != nil {
			c := cur.Capacity.DeepCopy()
			c.Add(u.size)
			cur.Capacity = &c
		}
		if u.prevMax != nil {
			m := u.prevMax.DeepCopy()
			if cur.Capacity != nil && m.Cmp(*cur.Capacity) > 0 {
				m = cur.Capacity.DeepCopy()
			}
			cur.MaximumVolumeSize = &m
		}
		_ = idx.Update(cur)
	}
}

func podHasPVCs(p *corev1.Pod) bool {
	for _, v := range p.Spec.Volumes {
		if v.PersistentVolumeClaim != nil || v.Ephemeral != nil {
			return true
		}
	}
	return false
}

// SetPVC adds or replaces a claim (a PVC deleted and created again by a move: same name, no
// volume yet), so later Place calls see it as the scheduler will.
func (s *Sim) SetPVC(pvc *corev1.PersistentVolumeClaim) error {
	c := pvc.DeepCopy()
	if c.Namespace == "" {
		c.Namespace = corev1.NamespaceDefault
	}
	idx := s.informers.Core().V1().PersistentVolumeClaims().Informer().GetIndexer()
	if _, exists, _ := idx.Get(c); exists {
		return idx.Update(c)
	}
	return idx.Add(c)
}

// Placed reports whether the Pod (by namespace/name UID as normalised) occupies a node.
func (s *Sim) Placed(pod *corev1.Pod) bool {
	_, uid := podKey(pod)
	_, ok := s.placed[uid]
	return ok
}
