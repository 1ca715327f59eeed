package topolvm

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	appslisters "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
)

// Sandbox-only node facts the simulated bootstrap reads and writes (tests set the first; the
// bootstrap writes the second so that a VM recreated under the same name is noticed, and a
// reboot is not).
const (
	// AnnForeignVolumeGroup says the node's Local SSDs already hold an LVM volume group of that
	// name that the bootstrap did not create (another tool's, or a previous installation's). Set it
	// before the bootstrap runs on the node. The script classifies such devices "foreign-pv" and
	// never writes to them.
	AnnForeignVolumeGroup = "sandbox.olapgke.io/foreign-volume-group"
	// AnnBootstrapVM is the node's VM (its system UUID) when the bootstrap last created its
	// volume group: a VM recreated under the same name has a new one and empty Local SSDs; a
	// reboot keeps both. The script needs no such record: it lists the volume groups on each
	// pass.
	AnnBootstrapVM = "sandbox.olapgke.io/bootstrap-system-uuid"
	// bootstrapDeviceGlob is the script's DEVICE_GLOB default, quoted in its messages.
	bootstrapDeviceGlob = "/dev/disk/by-id/google-local-nvme-ssd-*"
)

// BootstrapOptions configure RunBootstrap.
type BootstrapOptions struct {
	Kube   kubernetes.Interface
	Resync time.Duration // informer resync (default 5 min)
}

// RunBootstrap simulates the volume-group bootstrap DaemonSet (bootstrap.go) until ctx ends: the
// effect of one pass of examples/topolvm-gke/vg-bootstrap.sh on every Local-SSD node while a
// DaemonSet labelled BootstrapLabel=BootstrapName exists. It runs whichever TopoLVM the sandbox
// runs (the simulator or TopoLVM's own code, `up --topolvm real`): both read the node's volume
// group from what it writes. What a pass does, as the script does it (pass, decide,
// untaint_and_annotate):
//   - the node's volume group is VG_NAME of the DaemonSet's container (default vg-ssd); it is
//     recorded in AnnVolumeGroup, which the sandbox's TopoLVM (either mode) reads;
//   - Local SSDs holding a foreign volume group (AnnForeignVolumeGroup, not VG_NAME): a Warning
//     LocalSSDSkipped per device and a Warning VolumeGroupNotCreated; nothing written, the startup
//     taint stays. A foreign group named VG_NAME is adopted (the script's "adopted" state);
//   - no volume group yet (never created, or the VM was recreated with empty disks: the system
//     UUID differs from AnnBootstrapVM): VolumeGroupCreated, the annotation the script writes
//     ("<vg> created <time> on <devices>"), the startup taint removed (StartupTaintRemoved);
//   - a volume group that exists and a taint still there (GKE put it back): the taint removed.
//
// Events repeat as the script's do: once per message while the node's "Pod" lives (the script's
// REPORTED map); a new boot ID is a new Pod.
func RunBootstrap(ctx context.Context, o BootstrapOptions) error {
	if o.Resync == 0 {
		o.Resync = 5 * time.Minute
	}
	ctx = klog.NewContext(ctx, klog.FromContext(ctx).WithName("vg-bootstrap"))
	broadcaster := record.NewBroadcaster(record.WithContext(ctx))
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: o.Kube.CoreV1().Events("")})
	defer broadcaster.Shutdown()

	factory := informers.NewSharedInformerFactory(o.Kube, o.Resync)
	dsFactory := informers.NewSharedInformerFactoryWithOptions(o.Kube, o.Resync, informers.WithTweakListOptions(func(lo *metav1.ListOptions) {
		lo.LabelSelector = labels.SelectorFromSet(labels.Set{BootstrapLabel: BootstrapName}).String()
	}))
	nodeInf := factory.Core().V1().Nodes()
	dsInf := dsFactory.Apps().V1().DaemonSets()
	b := &bootstrapper{
		kube: o.Kube, nodes: nodeInf.Lister(), daemonSets: dsInf.Lister(),
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "vg-bootstrap"}),
		events:   broadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: BootstrapName}),
		reported: map[string]map[string]bool{},
	}
	defer b.queue.ShutDown()
	r1, err1 := nodeInf.Informer().AddEventHandler(b.nodeHandler())
	r2, err2 := dsInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { b.enqueueAll() },
		UpdateFunc: func(_, _ any) { b.enqueueAll() },
		DeleteFunc: func(any) { b.enqueueAll() },
	})
	if err1 != nil || err2 != nil {
		return fmt.Errorf("vg-bootstrap: add event handlers: %v %v", err1, err2)
	}
	factory.Start(ctx.Done())
	dsFactory.Start(ctx.Done())
	defer factory.Shutdown()
	defer dsFactory.Shutdown()
	if !cache.WaitForCacheSync(ctx.Done(), r1.HasSynced, r2.HasSynced) {
		return nil
	}
	go wait.UntilWithContext(ctx, func(ctx context.Context) {
		for b.next(ctx) {
		}
	}, time.Second)
	<-ctx.Done()
	return nil
}

type bootstrapper struct {
	kube       kubernetes.Interface
	nodes      corelisters.NodeLister
	daemonSets appslisters.DaemonSetLister
	queue      workqueue.TypedRateLimitingInterface[string]
	events     record.EventRecorder

	mu sync.Mutex
	// reported holds, per node and boot ID ("node/bootID"), the Events already recorded.
	reported map[string]map[string]bool
}

func (b *bootstrapper) nodeHandler() cache.ResourceEventHandler {
	return cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if n, ok := obj.(*corev1.Node); ok {
				b.queue.Add(n.Name)
			}
		},
		UpdateFunc: func(oldObj, newObj any) {
			o, ok1 := oldObj.(*corev1.Node)
			n, ok2 := newObj.(*corev1.Node)
			if !ok1 || !ok2 {
				return
			}
			// Heartbeats change nothing a pass reads.
			if o.ResourceVersion != n.ResourceVersion && maps.Equal(o.Labels, n.Labels) && maps.Equal(o.Annotations, n.Annotations) &&
				o.Status.NodeInfo.BootID == n.Status.NodeInfo.BootID && o.Status.NodeInfo.SystemUUID == n.Status.NodeInfo.SystemUUID && slices.EqualFunc(o.Spec.Taints, n.Spec.Taints, func(a, b corev1.Taint) bool { return a.MatchTaint(&b) }) {
				return
			}
			b.queue.Add(n.Name)
		},
		DeleteFunc: func(obj any) {
			if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = t.Obj
			}
			if n, ok := obj.(*corev1.Node); ok {
				b.queue.Add(n.Name)
			}
		},
	}
}

func (b *bootstrapper) enqueueAll() {
	nodes, err := b.nodes.List(labels.Everything())
	if err != nil {
		return
	}
	for _, n := range nodes {
		b.queue.Add(n.Name)
	}
}

func (b *bootstrapper) next(ctx context.Context) bool {
	name, quit := b.queue.Get()
	if quit {
		return false
	}
	defer b.queue.Done(name)
	if err := b.sync(ctx, name); err != nil {
		klog.FromContext(ctx).Error(err, "volume-group bootstrap pass failed; retrying", "node", name)
		b.queue.AddRateLimited(name)
		return true
	}
	b.queue.Forget(name)
	return true
}

// installed returns the bootstrap DaemonSet in effect (the first by namespace/name), if any.
func (b *bootstrapper) installed() *appsv1.DaemonSet {
	ds, err := b.daemonSets.List(labels.Everything())
	if err != nil {
		return nil
	}
	ds = slices.DeleteFunc(slices.Clone(ds), func(d *appsv1.DaemonSet) bool {
		return d.DeletionTimestamp != nil || d.Labels[BootstrapLabel] != BootstrapName
	})
	if len(ds) == 0 {
		return nil
	}
	slices.SortFunc(ds, func(a, b *appsv1.DaemonSet) int {
		return strings.Compare(a.Namespace+"/"+a.Name, b.Namespace+"/"+b.Name)
	})
	return ds[0]
}

// bootstrapVolumeGroup is the VG_NAME the DaemonSet's container runs the script with.
func bootstrapVolumeGroup(ds *appsv1.DaemonSet) string {
	for _, c := range ds.Spec.Template.Spec.Containers {
		for _, e := range c.Env {
			if e.Name == "VG_NAME" && e.Value != "" {
				return e.Value
			}
		}
	}
	return DefaultVolumeGroup
}

// bootstrapThinPools is the THIN_POOLS the DaemonSet's container runs the script with: pool name
// -> percent of the volume group.
func bootstrapThinPools(ds *appsv1.DaemonSet) map[string]int64 {
	out := map[string]int64{}
	for _, c := range ds.Spec.Template.Spec.Containers {
		for _, e := range c.Env {
			if e.Name != "THIN_POOLS" {
				continue
			}
			for _, entry := range strings.Split(e.Value, ",") {
				name, pct, ok := strings.Cut(strings.TrimSpace(entry), ":")
				if n, err := strconv.ParseInt(pct, 10, 64); ok && name != "" && err == nil {
					out[name] = n
				}
			}
		}
	}
	return out
}

// thinPools is the script's ensure_thin_pools on the node: the group's thin pools after the pass
// (name -> bytes) and those it created, or ok false when one is missing and cannot be created
// (the group is adopted, never changed, or lacks the room: a Warning ThinPoolNotCreated). A
// group created by this pass starts without pools; a pool takes its percent of the group's size.
// Unlike lvcreate, the room counted is the group less its other pools: thick volumes are not
// seen here (a pool they leave no room for is then refused by the fake lvmd's LVM under real
// TopoLVM, and lvmd exits "Thin pool not found").
func (b *bootstrapper) thinPools(n *corev1.Node, ds *appsv1.DaemonSet, vg, state string) (map[string]int64, []string, bool) {
	pools := map[string]int64{}
	if state != "absent" {
		pools, _ = ParseThinPools(n.Annotations[AnnThinPools])
	}
	_, size := localSSDVolumeGroup(n)
	var used int64
	for _, b := range pools {
		used += b
	}
	want := bootstrapThinPools(ds)
	var created []string
	ok := true
	for _, name := range slices.Sorted(maps.Keys(want)) {
		if _, has := pools[name]; has {
			continue
		}
		bytes := size * want[name] / 100
		switch {
		case state == "adopted":
			b.report(n, corev1.EventTypeWarning, "ThinPoolNotCreated", fmt.Sprintf("volume group %s was not created by %s (adopted, never changed) and has no thin pool %s; taint %s kept", vg, BootstrapName, name, StartupTaintKey))
			ok = false
		case want[name] < 1 || want[name] > 100 || used+bytes > size:
			b.report(n, corev1.EventTypeWarning, "ThinPoolNotCreated", fmt.Sprintf("lvcreate --type thin-pool -l %d%%VG -n %s %s failed (see the Pod log; the group may lack free space); taint %s kept", want[name], name, vg, StartupTaintKey))
			ok = false
		default:
			pools[name] = bytes
			used += bytes
			created = append(created, name)
		}
	}
	return pools, created, ok
}

// bootstrapState is the script's vg_state: the node's volume group is absent, created by the
// bootstrap, or adopted (it existed under VG_NAME without the bootstrap's tag).
func bootstrapState(n *corev1.Node, vg string) string {
	switch {
	case n.Annotations[AnnForeignVolumeGroup] == vg:
		return "adopted"
	case !strings.HasPrefix(n.Annotations[AnnBootstrapVolumeGroup], vg+" "):
		return "absent"
	case n.Annotations[AnnBootstrapVM] != n.Status.NodeInfo.SystemUUID:
		return "absent" // the VM was recreated: its Local SSDs came back empty
	default:
		return "created"
	}
}

func localSSDDevices(n *corev1.Node) []string {
	count, _ := strconv.Atoi(n.Annotations[AnnSSDCount])
	devs := make([]string, max(count, 0))
	for i := range devs {
		devs[i] = "/dev/nvme0n" + strconv.Itoa(i+1)
	}
	return devs
}

// report records an Event once per message for the node's current boot (the script's report).
func (b *bootstrapper) report(n *corev1.Node, typ, reason, msg string) {
	k := n.Name + "/" + n.Status.NodeInfo.BootID
	b.mu.Lock()
	seen := b.reported[k]
	if seen == nil {
		seen = map[string]bool{}
		b.reported[k] = seen
	}
	dup := seen[typ+"/"+reason+"/"+msg]
	seen[typ+"/"+reason+"/"+msg] = true
	b.mu.Unlock()
	if !dup {
		b.events.Event(n, typ, reason, msg)
	}
}

func (b *bootstrapper) forget(node string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for k := range b.reported {
		if strings.HasPrefix(k, node+"/") {
			delete(b.reported, k)
		}
	}
}

// sync runs one pass on a node.
func (b *bootstrapper) sync(ctx context.Context, name string) error {
	n, err := b.nodes.Get(name)
	if apierrors.IsNotFound(err) {
		b.forget(name)
		return nil
	}
	if err != nil {
		return err
	}
	if n.Labels[LabelLocalNVMeSSD] != "true" || n.DeletionTimestamp != nil {
		return nil // the DaemonSet's nodeSelector
	}
	ds := b.installed()
	if ds == nil {
		return nil
	}
	vg := bootstrapVolumeGroup(ds)
	devs := localSSDDevices(n)
	state := bootstrapState(n, vg)
	if state == "absent" {
		f := n.Annotations[AnnForeignVolumeGroup]
		if old, _, _ := strings.Cut(n.Annotations[AnnBootstrapVolumeGroup], " "); old != "" && old != vg && n.Annotations[AnnBootstrapVM] == n.Status.NodeInfo.SystemUUID {
			// VG_NAME changed after the devices went into the group of the old name: to the
			// script they are another volume group's PVs.
			f = old
		}
		if f != "" {
			for _, d := range devs {
				b.report(n, corev1.EventTypeWarning, "LocalSSDSkipped", fmt.Sprintf("%s holds %s (foreign-pv), not created by %s: left untouched", d, f, BootstrapName))
			}
			devs = nil
		}
		if len(devs) == 0 {
			b.report(n, corev1.EventTypeWarning, "VolumeGroupNotCreated", fmt.Sprintf("no empty Local SSD matches %s; taint %s kept", bootstrapDeviceGlob, StartupTaintKey))
			return nil
		}
	}
	pools, created, ok := b.thinPools(n, ds, vg, state)
	if !ok {
		return nil // a pool is missing: the taint stays, nothing is written (the script's ensure_thin_pools)
	}
	body, err := bootstrapPatch(n, vg, state, devs, pools, time.Now())
	if err != nil || body == nil {
		return err
	}
	if _, err := b.kube.CoreV1().Nodes().Patch(ctx, n.Name, types.JSONPatchType, body, metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("volume-group bootstrap on node %s: %w", n.Name, err)
	}
	if state == "absent" {
		b.report(n, corev1.EventTypeNormal, "VolumeGroupCreated", fmt.Sprintf("created volume group %s on %s", vg, strings.Join(devs, " ")))
	}
	for _, p := range created {
		b.report(n, corev1.EventTypeNormal, "ThinPoolCreated", fmt.Sprintf("created thin pool %s/%s (%d%% of the volume group)", vg, p, bootstrapThinPools(ds)[p]))
	}
	if hasStartupTaint(n) {
		b.report(n, corev1.EventTypeNormal, "StartupTaintRemoved", fmt.Sprintf("volume group %s is ready: removed taint %s", vg, StartupTaintKey))
	}
	klog.FromContext(ctx).Info("volume-group bootstrap ran", "node", n.Name, "volumeGroup", vg, "state", state, "taintRemoved", hasStartupTaint(n))
	return nil
}

// bootstrapPatch is one JSON patch doing what a pass of the script does once the volume group
// exists (or was just created): remove the startup taint only if it is still at the index read
// (the script's test + remove), and write the annotation "<vg> <state> <time> on <devices>" when
// the group was just created or the annotation does not describe it. It is nil when there is
// nothing to write.
func bootstrapPatch(n *corev1.Node, vg, state string, devs []string, pools map[string]int64, now time.Time) ([]byte, error) {
	var ops []map[string]any
	if i := startupTaintIndex(n); i >= 0 {
		p := "/spec/taints/" + strconv.Itoa(i)
		ops = append(ops, map[string]any{"op": "test", "path": p + "/key", "value": StartupTaintKey},
			map[string]any{"op": "remove", "path": p})
	}
	recorded := state
	if state == "absent" {
		recorded = "created"
	}
	ann := map[string]string{}
	if state == "absent" || !strings.HasPrefix(n.Annotations[AnnBootstrapVolumeGroup], vg+" "+recorded+" ") {
		ann[AnnBootstrapVolumeGroup] = fmt.Sprintf("%s %s %s on %s", vg, recorded, now.UTC().Format("2006-01-02T15:04:05Z"), strings.Join(devs, ","))
	}
	if n.Annotations[AnnVolumeGroup] != vg {
		ann[AnnVolumeGroup] = vg
	}
	if n.Annotations[AnnBootstrapVM] != n.Status.NodeInfo.SystemUUID {
		ann[AnnBootstrapVM] = n.Status.NodeInfo.SystemUUID
	}
	// The group's thin pools: on the disks (AnnThinPools, which the sandbox's TopoLVM reads) and
	// as the script reports them (AnnBootstrapThinPools, names).
	if v := FormatThinPools(pools); n.Annotations[AnnThinPools] != v {
		ann[AnnThinPools] = v
	}
	if v := strings.Join(slices.Sorted(maps.Keys(pools)), ","); n.Annotations[AnnBootstrapThinPools] != v {
		ann[AnnBootstrapThinPools] = v
	}
	if n.Annotations == nil && len(ann) > 0 {
		ops = append(ops, map[string]any{"op": "add", "path": "/metadata/annotations", "value": ann})
	} else {
		for _, k := range slices.Sorted(maps.Keys(ann)) {
			ops = append(ops, map[string]any{"op": "add", "path": "/metadata/annotations/" + strings.ReplaceAll(k, "/", "~1"), "value": ann[k]})
		}
	}
	if len(ops) == 0 {
		return nil, nil
	}
	return json.Marshal(ops)
}
