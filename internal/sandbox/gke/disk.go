package gke

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"cloud.google.com/go/container/apiv1/containerpb"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/retry"
	"k8s.io/klog/v2"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
	"k8s.io/kubernetes/pkg/kubelet/eviction"
	evictionapi "k8s.io/kubernetes/pkg/kubelet/eviction/api"
	"k8s.io/kubernetes/pkg/kubelet/nodestatus"
	"k8s.io/utils/clock"
)

// The kubelet's disk-pressure eviction, for the sandbox's KWOK nodes. KWOK simulates no
// filesystem, so a node's disk never fills by itself; the control endpoint's :disk call
// (SetDisk) says how full it is, and from then on the node runs kubelet's own eviction manager
// (kubernetes v1.37.2 pkg/kubelet/eviction: NewManager, its 10 s synchronize loop, thresholds
// parsed by ParseThresholdConfig, Pods ranked by its rankDiskPressureFunc: usage above request,
// then priority, then usage; one Pod per loop, critical Pods never) over a stats summary built
// from those numbers, and kubelet's own DiskPressure condition setter (pkg/kubelet/nodestatus
// DiskPressureCondition) on the node's status. The node lifecycle controller the sandbox runs
// then taints the node node.kubernetes.io/disk-pressure:NoSchedule from the condition
// (pkg/controller/nodelifecycle doNoScheduleTaintingPass), as on a cluster; the StatefulSet
// controller deletes an evicted (Failed) Pod and creates it again.
//
// What differs from a kubelet, on purpose:
//   - Usage comes from SetDisk and from each Pod's AnnotationEphemeralUsed, not from cadvisor;
//     an evicted Pod's usage is freed at once (its containers and emptyDirs are gone).
//   - Image and container garbage collection free nothing: the images in imagefsUsedBytes are
//     all in use. A kubelet deletes unused images before it evicts (reclaimNodeLevelResources).
//   - Inodes are never short (an ext4 count of one per 16 KiB, all free) and memory is all
//     available: only the disk's bytes can put the node under pressure.

// AnnotationEphemeralUsed (sandbox-only) on a Pod is the bytes of ephemeral storage it uses
// (writable layers, logs, emptyDir), which a kubelet reads from cadvisor. Absent means 0. It
// counts toward the node filesystem once the node's disk is set (SetDisk) and ranks the Pod
// for eviction.
const AnnotationEphemeralUsed = "sandbox.olapgke.io/ephemeral-storage-used-bytes"

// GKEEvictionHard is the hard eviction configuration of GKE's kubelet: memory.available<100Mi
// (GKE's node sizing page, "Memory and CPU reservations": "an eviction threshold of 100 MiB")
// and nodefs.available<10% ("Local ephemeral storage reservation": 10% of the filesystem),
// nodefs.inodesFree<5% as kube-up's GCE nodes (kubernetes cluster/gce/config-default.sh
// EVICTION_HARD, which names no imagefs signal). A kubelet given evictionHard does not merge in
// its compiled defaults (eviction.DefaultEvictionHard's imagefs.available<15%): kubernetes
// v1.37.2 pkg/kubelet/apis/config/v1beta1/defaults.go defaults MergeDefaultEvictionSettings to
// false. Should GKE's kubelet carry imagefs.available<15% too, eviction would start at 15% free
// on its single node filesystem (imagefs shares it: the CRI stats provider reports the
// filesystem's capacity and free space for both, pkg/kubelet/stats/cri_stats_provider.go
// ImageFsStats). Unverified on GKE: read /configz on the real-GKE tier.
var GKEEvictionHard = map[string]string{
	"memory.available":  "100Mi",
	"nodefs.available":  "10%",
	"nodefs.inodesFree": "5%",
}

const (
	// evictionMonitoringPeriod is kubelet's eviction loop period (pkg/kubelet/kubelet.go
	// evictionMonitoringPeriod).
	evictionMonitoringPeriod = 10 * time.Second
	// nodeStatusUpdateFrequency is kubelet's default status update period
	// (KubeletConfiguration nodeStatusUpdateFrequency).
	nodeStatusUpdateFrequency = 10 * time.Second
	// pressureTransitionPeriod is kubelet's default evictionPressureTransitionPeriod: a node
	// stays under pressure that long after its last observation over a threshold.
	pressureTransitionPeriod = 5 * time.Minute
)

// DiskUsage is how full a node's filesystem is (the :disk control call). On GKE one filesystem
// holds both kubelet's directory and the container runtime's images (the boot disk, or the
// ephemeral-storage Local SSDs): its free space is capacity - nodefs - imagefs - the Pods' usage.
type DiskUsage struct {
	// NodefsUsedBytes is what is written outside the images and the Pods' own usage (the OS's
	// stateful partition, system logs, kubelet's state).
	NodefsUsedBytes int64 `json:"nodefsUsedBytes"`
	// ImagefsUsedBytes is the container images' layers.
	ImagefsUsedBytes int64 `json:"imagefsUsedBytes"`
}

// DiskReport is the node's filesystem and its disk eviction thresholds as the shim's kubelet
// sees them right after SetDisk.
type DiskReport struct {
	Node           string          `json:"node"`
	CapacityBytes  int64           `json:"capacityBytes"`
	AvailableBytes int64           `json:"availableBytes"`
	Thresholds     []DiskThreshold `json:"thresholds"`
}

// DiskThreshold is one disk eviction threshold of the node's kubelet.
type DiskThreshold struct {
	// Signal is kubelet's signal name (nodefs.available, imagefs.available).
	Signal string `json:"signal"`
	// Soft is true for a soft threshold (kubelet_config eviction_soft).
	Soft bool `json:"soft"`
	// Bytes is the free space below which the threshold is met, on this node's filesystem.
	Bytes int64 `json:"bytes"`
	// Met is whether the free space is below it now.
	Met bool `json:"met"`
}

// diskShims holds the nodes whose disk was set.
type diskShims struct {
	mu          sync.Mutex
	nodes       map[string]*nodeDisk
	pods        cache.SharedIndexInformer
	nodeIndexer cache.Indexer
	broadcaster record.EventBroadcaster
}

// nodeDisk is one node's kubelet eviction manager and its inputs.
type nodeDisk struct {
	s       *Server
	name    string
	mu      sync.Mutex
	usage   DiskUsage
	manager eviction.Manager
	rec     record.EventRecorder
}

const podsByNode = "spec.nodeName"

// SetDisk sets how full a node's filesystem is. The first call starts the node's kubelet
// eviction manager, with the pool's kubelet_config eviction settings over GKEEvictionHard;
// later calls change the usage it reads. It answers with the filesystem and thresholds the
// manager will judge. Not a GKE operation. For tests (the control endpoint).
func (s *Server) SetDisk(ctx context.Context, name string, u DiskUsage) (DiskReport, error) {
	if u.NodefsUsedBytes < 0 || u.ImagefsUsedBytes < 0 {
		return DiskReport{}, status.Errorf(codes.InvalidArgument, "disk usage of node %s: bytes cannot be negative (nodefs %d, imagefs %d)", name, u.NodefsUsedBytes, u.ImagefsUsedBytes)
	}
	s.mu.Lock()
	_, p, _, ok := s.nodeLocked(name)
	var kc *containerpb.NodeKubeletConfig
	if ok {
		kc = p.np.GetConfig().GetKubeletConfig()
	}
	s.mu.Unlock()
	if !ok {
		return DiskReport{}, status.Errorf(codes.NotFound, "Not found: node %s is in no node pool of the emulator.", name)
	}
	thresholds, maxGrace, err := kubeletThresholds(kc)
	if err != nil {
		return DiskReport{}, status.Errorf(codes.FailedPrecondition, "Node %s: its pool's kubelet eviction settings: %v", name, err)
	}
	if err := s.startDiskShims(ctx); err != nil {
		return DiskReport{}, status.Errorf(codes.Internal, "Failed to start the kubelet eviction shim: %v", err)
	}
	d := s.disk.node(s, name, thresholds, maxGrace)
	d.mu.Lock()
	d.usage = u
	d.mu.Unlock()
	sum, err := d.Get(ctx, true)
	if err != nil {
		return DiskReport{}, status.Errorf(codes.Internal, "Node %s: %v", name, err)
	}
	return diskReport(name, sum, thresholds), nil
}

// kubeletThresholds parses the eviction thresholds a node of a pool with kubelet_config kc runs
// with, with kubelet's own parser, and the pool's eviction_max_pod_grace_period_seconds.
func kubeletThresholds(kc *containerpb.NodeKubeletConfig) ([]evictionapi.Threshold, int64, error) {
	soft := signalMap(kc.GetEvictionSoft().GetMemoryAvailable(), kc.GetEvictionSoft().GetNodefsAvailable(), kc.GetEvictionSoft().GetNodefsInodesFree(),
		kc.GetEvictionSoft().GetImagefsAvailable(), kc.GetEvictionSoft().GetImagefsInodesFree(), kc.GetEvictionSoft().GetPidAvailable())
	grace := signalMap(kc.GetEvictionSoftGracePeriod().GetMemoryAvailable(), kc.GetEvictionSoftGracePeriod().GetNodefsAvailable(), kc.GetEvictionSoftGracePeriod().GetNodefsInodesFree(),
		kc.GetEvictionSoftGracePeriod().GetImagefsAvailable(), kc.GetEvictionSoftGracePeriod().GetImagefsInodesFree(), kc.GetEvictionSoftGracePeriod().GetPidAvailable())
	reclaim := signalMap(kc.GetEvictionMinimumReclaim().GetMemoryAvailable(), kc.GetEvictionMinimumReclaim().GetNodefsAvailable(), kc.GetEvictionMinimumReclaim().GetNodefsInodesFree(),
		kc.GetEvictionMinimumReclaim().GetImagefsAvailable(), kc.GetEvictionMinimumReclaim().GetImagefsInodesFree(), kc.GetEvictionMinimumReclaim().GetPidAvailable())
	// No allocatable config: a kubelet enforcing node allocatable on Pods (enforceNodeAllocatable
	// ["pods"]) adds allocatableMemory.available, and the shim reports no memory.
	t, err := eviction.ParseThresholdConfig(nil, GKEEvictionHard, soft, grace, reclaim)
	return t, int64(kc.GetEvictionMaxPodGracePeriodSeconds()), err
}

// signalMap is kubelet's map form of GKE's EvictionSignals fields, in their order.
func signalMap(memory, nodefs, nodefsInodes, imagefs, imagefsInodes, pid string) map[string]string {
	m := map[string]string{}
	for i, v := range []string{memory, nodefs, nodefsInodes, imagefs, imagefsInodes, pid} {
		if v != "" {
			m[[]string{"memory.available", "nodefs.available", "nodefs.inodesFree", "imagefs.available", "imagefs.inodesFree", "pid.available"}[i]] = v
		}
	}
	return m
}

// diskReport resolves the disk thresholds against the summary's filesystem.
func diskReport(name string, sum *statsapi.Summary, thresholds []evictionapi.Threshold) DiskReport {
	fs := sum.Node.Fs
	r := DiskReport{Node: name, CapacityBytes: int64(*fs.CapacityBytes), AvailableBytes: int64(*fs.AvailableBytes)}
	capacity := resource.NewQuantity(r.CapacityBytes, resource.BinarySI)
	for _, t := range thresholds {
		if t.Signal != evictionapi.SignalNodeFsAvailable && t.Signal != evictionapi.SignalImageFsAvailable {
			continue
		}
		q := evictionapi.GetThresholdQuantity(t.Value, capacity)
		r.Thresholds = append(r.Thresholds, DiskThreshold{Signal: string(t.Signal), Soft: t.GracePeriod > 0, Bytes: q.Value(), Met: r.AvailableBytes < q.Value()})
	}
	return r
}

// startDiskShims starts the Pod informer the shims share, once.
func (s *Server) startDiskShims(ctx context.Context) error {
	s.disk.mu.Lock()
	defer s.disk.mu.Unlock()
	if s.disk.pods != nil {
		return nil
	}
	f := informers.NewSharedInformerFactory(s.o.Kube, 0)
	inf := f.Core().V1().Pods().Informer()
	if err := inf.AddIndexers(cache.Indexers{podsByNode: func(obj any) ([]string, error) {
		p, ok := obj.(*corev1.Pod)
		if !ok || p.Spec.NodeName == "" {
			return nil, nil
		}
		return []string{p.Spec.NodeName}, nil
	}}); err != nil {
		return err
	}
	f.Start(s.ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		return errors.New("the Pod informer did not sync")
	}
	b := record.NewBroadcaster(record.WithContext(s.ctx))
	b.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: s.o.Kube.CoreV1().Events("")})
	s.disk.pods, s.disk.nodeIndexer, s.disk.broadcaster = inf, inf.GetIndexer(), b
	s.disk.nodes = map[string]*nodeDisk{}
	return nil
}

// node returns the node's shim, starting its eviction manager and status loop the first time.
func (ds *diskShims) node(s *Server, name string, thresholds []evictionapi.Threshold, maxGrace int64) *nodeDisk {
	ds.mu.Lock()
	defer ds.mu.Unlock()
	if d, ok := ds.nodes[name]; ok {
		return d
	}
	d := &nodeDisk{s: s, name: name, rec: ds.broadcaster.NewRecorder(clientgoscheme.Scheme, corev1.EventSource{Component: "kubelet", Host: name})}
	// The kubelet's node reference names the node as its UID too (kubelet.go nodeRef).
	ref := &corev1.ObjectReference{Kind: "Node", Name: name, UID: types.UID(name)}
	cfg := eviction.Config{PressureTransitionPeriod: pressureTransitionPeriod, MaxPodGracePeriodSeconds: maxGrace, Thresholds: thresholds}
	d.manager, _ = eviction.NewManager(d, cfg, d.killPod, noGC{}, noGC{}, d.rec, ref, clock.RealClock{}, true)
	ctx, cancel := context.WithCancel(klog.NewContext(s.ctx, klog.Background().WithValues("component", "kubelet-eviction", "node", name)))
	d.manager.Start(ctx, sharedFs{}, d.activePods, d.podCleanedUp, evictionMonitoringPeriod)
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer cancel()
		d.statusLoop(ctx)
	}()
	ds.nodes[name] = d
	return d
}

// statusLoop posts the node's DiskPressure condition as kubelet's status update does, every
// nodeStatusUpdateFrequency, with kubelet's own setter; it ends when the node is gone.
func (d *nodeDisk) statusLoop(ctx context.Context) {
	nodes := d.s.o.Kube.CoreV1().Nodes()
	setter := nodestatus.DiskPressureCondition(time.Now, d.manager.IsUnderDiskPressure, func(_ klog.Logger, eventType, event string) {
		// kubelet_node_status.go recordNodeStatusEvent.
		d.rec.Eventf(&corev1.ObjectReference{Kind: "Node", Name: d.name, UID: types.UID(d.name)}, eventType, event, "Node %s status is now: %s", d.name, event)
	})
	t := time.NewTicker(nodeStatusUpdateFrequency)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			n, err := nodes.Get(ctx, d.name, metav1.GetOptions{})
			if err != nil || KubeletDeadNode(n) {
				return err // a dead kubelet posts nothing
			}
			n = n.DeepCopy()
			before := diskCondition(n)
			if err := setter(ctx, n); err != nil {
				return err
			}
			if diskCondition(n) == before {
				return nil
			}
			_, err = nodes.UpdateStatus(ctx, n, metav1.UpdateOptions{})
			return err
		})
		if apierrors.IsNotFound(err) {
			return
		}
		if err != nil && ctx.Err() == nil {
			klog.FromContext(ctx).Error(err, "kubelet shim: node status update failed")
		}
	}
}

// diskCondition is the node's DiskPressure status and reason, to skip writes that change only
// the heartbeat time (KWOK's heartbeat stage renews it).
func diskCondition(n *corev1.Node) string {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeDiskPressure {
			return string(c.Status) + "/" + c.Reason
		}
	}
	return ""
}

// Get is the kubelet's stats summary (pkg/kubelet/server/stats SummaryProvider) as far as the
// eviction manager reads it: the node filesystem, the image filesystem (the same one, as the
// CRI stats provider reports it on GKE) and each active Pod's ephemeral usage.
func (d *nodeDisk) Get(ctx context.Context, _ bool) (*statsapi.Summary, error) {
	n, err := d.s.o.Kube.CoreV1().Nodes().Get(ctx, d.name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	if KubeletDeadNode(n) {
		return nil, fmt.Errorf("node %s: the kubelet is dead", d.name)
	}
	q := n.Status.Capacity[corev1.ResourceEphemeralStorage]
	capacity := uint64(q.Value())
	d.mu.Lock()
	u := d.usage
	d.mu.Unlock()
	now := metav1.Now()
	var pods []statsapi.PodStats
	used := uint64(u.NodefsUsedBytes)
	for _, p := range d.activePods() {
		b := podEphemeralUsed(p)
		used += b
		ps := statsapi.PodStats{PodRef: statsapi.PodReference{Name: p.Name, Namespace: p.Namespace, UID: string(p.UID)},
			EphemeralStorage: &statsapi.FsStats{Time: now, UsedBytes: ptrTo(b)}}
		for i, c := range p.Spec.Containers {
			cb := uint64(0)
			if i == 0 {
				cb = b // the Pod's usage is its first container's writable layer
			}
			ps.Containers = append(ps.Containers, statsapi.ContainerStats{Name: c.Name,
				Rootfs: &statsapi.FsStats{Time: now, UsedBytes: ptrTo(cb)}, Logs: &statsapi.FsStats{Time: now, UsedBytes: ptrTo(uint64(0))}})
		}
		pods = append(pods, ps)
	}
	images := uint64(u.ImagefsUsedBytes)
	avail := uint64(0)
	if used+images < capacity {
		avail = capacity - used - images
	}
	inodes := capacity / (16 << 10)
	fs := &statsapi.FsStats{Time: now, CapacityBytes: ptrTo(capacity), AvailableBytes: ptrTo(avail), UsedBytes: ptrTo(used), Inodes: &inodes, InodesFree: &inodes}
	imageFs := &statsapi.FsStats{Time: now, CapacityBytes: ptrTo(capacity), AvailableBytes: ptrTo(avail), UsedBytes: ptrTo(images), Inodes: &inodes, InodesFree: &inodes}
	mq := n.Status.Capacity[corev1.ResourceMemory]
	mem := uint64(mq.Value())
	return &statsapi.Summary{
		Node: statsapi.NodeStats{NodeName: d.name, StartTime: n.CreationTimestamp, Fs: fs,
			Memory:           &statsapi.MemoryStats{Time: now, AvailableBytes: &mem, WorkingSetBytes: ptrTo(uint64(0))},
			SystemContainers: []statsapi.ContainerStats{{Name: statsapi.SystemContainerPods, Memory: &statsapi.MemoryStats{Time: now, AvailableBytes: &mem, WorkingSetBytes: ptrTo(uint64(0))}}},
			Runtime:          &statsapi.RuntimeStats{ImageFs: imageFs, ContainerFs: imageFs}},
		Pods: pods,
	}, nil
}

// GetCPUAndMemoryStats: the shim reports no memory (memory.available is never observed).
func (d *nodeDisk) GetCPUAndMemoryStats(context.Context) (*statsapi.Summary, error) {
	return &statsapi.Summary{Node: statsapi.NodeStats{NodeName: d.name}}, nil
}

func podEphemeralUsed(p *corev1.Pod) uint64 {
	v, err := strconv.ParseUint(strings.TrimSpace(p.Annotations[AnnotationEphemeralUsed]), 10, 64)
	if err != nil {
		return 0
	}
	return v
}

func ptrTo[T any](v T) *T { return &v }

// activePods are the node's Pods the kubelet still runs (kubelet GetActivePods: not in a
// terminal phase), oldest first for a stable ranking.
func (d *nodeDisk) activePods() []*corev1.Pod {
	objs, err := d.s.disk.nodeIndexer.ByIndex(podsByNode, d.name)
	if err != nil {
		return nil
	}
	var out []*corev1.Pod
	for _, o := range objs {
		p := o.(*corev1.Pod)
		if p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
			out = append(out, p)
		}
	}
	slices.SortFunc(out, func(a, b *corev1.Pod) int {
		if c := a.CreationTimestamp.Compare(b.CreationTimestamp.Time); c != 0 {
			return c
		}
		return strings.Compare(a.Namespace+"/"+a.Name, b.Namespace+"/"+b.Name)
	})
	return out
}

// podCleanedUp: an evicted Pod's containers and volumes are gone once its status is terminal
// (there are no real containers to wait for).
func (d *nodeDisk) podCleanedUp(p *corev1.Pod) bool {
	obj, ok, err := d.s.disk.nodeIndexer.GetByKey(p.Namespace + "/" + p.Name)
	if err != nil || !ok {
		return true
	}
	cur := obj.(*corev1.Pod)
	return cur.UID != p.UID || cur.Status.Phase == corev1.PodFailed || cur.Status.Phase == corev1.PodSucceeded
}

// killPod is the kubelet's killPodNow for an eviction: the eviction manager's status function
// (phase Failed, reason Evicted, its message, the DisruptionTarget condition) applied to the
// Pod's status, its containers terminated and the Pod not ready, as the kubelet's status
// manager then writes it (pkg/kubelet/pod_workers.go killPodNow, kubelet_pods.go
// generateAPIPodStatus). The containers get the grace period and are killed: exit code 137.
func (d *nodeDisk) killPod(pod *corev1.Pod, _ bool, _ *int64, fn func(*corev1.PodStatus)) error {
	pods := d.s.o.Kube.CoreV1().Pods(pod.Namespace)
	ctx := d.s.ctx
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		p, err := pods.Get(ctx, pod.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) || err == nil && p.UID != pod.UID {
			return nil
		}
		if err != nil {
			return err
		}
		p = p.DeepCopy()
		fn(&p.Status)
		now := metav1.Now()
		for i := range p.Status.Conditions {
			c := &p.Status.Conditions[i]
			if (c.Type == corev1.PodReady || c.Type == corev1.ContainersReady) && c.Status != corev1.ConditionFalse {
				c.Status, c.Reason, c.LastTransitionTime = corev1.ConditionFalse, "PodFailed", now
			}
		}
		for i := range p.Status.ContainerStatuses {
			cs := &p.Status.ContainerStatuses[i]
			started := now
			if cs.State.Running != nil {
				started = cs.State.Running.StartedAt
			}
			cs.Ready, cs.Started = false, ptrTo(false)
			cs.State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 137, Reason: "Error", StartedAt: started, FinishedAt: now}}
		}
		_, err = pods.UpdateStatus(ctx, p, metav1.UpdateOptions{})
		return err
	})
}

// sharedFs: GKE nodes keep images and writable layers on the node filesystem (no dedicated
// imagefs or containerfs).
type sharedFs struct{}

func (sharedFs) HasDedicatedImageFs(context.Context) (bool, error)     { return false, nil }
func (sharedFs) HasDedicatedContainerFs(context.Context) (bool, error) { return false, nil }

// noGC frees nothing: every image counted in imagefsUsedBytes is in use.
type noGC struct{}

func (noGC) DeleteUnusedImages(context.Context) error        { return nil }
func (noGC) DeleteAllUnusedContainers(context.Context) error { return nil }
