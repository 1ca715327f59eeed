package topolvmreal

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/topolvm/topolvm"
	tlvcontroller "github.com/topolvm/topolvm/pkg/controller"
	"github.com/topolvm/topolvm/pkg/driver"
	"github.com/topolvm/topolvm/pkg/lvmd/proto"
	"github.com/topolvm/topolvm/pkg/runners"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/retry"
	"k8s.io/client-go/util/workqueue"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/olapgke/terraform-provider-olapgke/internal/sandbox/topolvmreal/fakelvmd"
)

// The simulated node facts the sandbox's GKE emulator writes (DESIGN.md "Simulated node facts").
const (
	LabelLocalSSD  = "cloud.google.com/gke-local-nvme-ssd"
	AnnSSDCount    = "sandbox.olapgke.io/local-nvme-ssd-count"
	AnnVolumeGroup = "sandbox.olapgke.io/volume-group"
	// TaintStorageNotReady is the node pools' startup taint (the provider's
	// stsutil.TaintStorageNotReady, olapgke_local_ssd_node_pool storage_startup_taint): the
	// volume-group bootstrap removes it once the node's volume group exists.
	TaintStorageNotReady = "olapgke.io/storage-not-ready"
	// AnnLVMDConfigHash (sandbox-only) is the sha256 (hex) of the lvmd.yaml text the node's
	// running lvmd loaded, written when it starts serving: the provider's restart_lvmd puts the
	// same hash of the ConfigMap's text into the lvmd DaemonSet's pod template
	// (olapgke.io/lvmd-config-hash), so a node whose value matches runs the new configuration.
	AnnLVMDConfigHash = "sandbox.olapgke.io/lvmd-config-hash"
	// AnnKubelet = KubeletDead (sandbox-only; the sandbox's control endpoint :kubelet call, gke
	// SetKubelet) says the node's kubelet is down: its TopoLVM agent stops, its disks are kept,
	// and it starts again over them once the annotation goes.
	AnnKubelet = "sandbox.olapgke.io/kubelet"
	// AnnThinPools is the thin pools on the node's volume group, "name=bytes,..." (the
	// simulator's topolvm.AnnThinPools: the node's set-up, tests, or the bootstrap's THIN_POOLS
	// wrote it): logical volumes carved from the group before lvmd starts.
	AnnThinPools = "sandbox.olapgke.io/thin-pools"
	// AnnThinWritten is the bytes applications wrote to thin volumes on the node,
	// "lv=bytes,..." (LV names as TopoLVM's LogicalVolume status.volumeID): the data their pools
	// hold (fakelvmd LVM.SetWritten), so that an overcommitted pool fills.
	AnnThinWritten     = "sandbox.olapgke.io/thin-written"
	KubeletDead        = "dead"
	DefaultVolumeGroup = "vg-ssd"
	LocalSSDBytes      = uint64(375) << 30
)

// NodeOptions say where lvmd's configuration is and where the per-node sockets go.
type NodeOptions struct {
	// The lvmd ConfigMap (the sandbox's topolvm.Install). The lvmd DaemonSet has its name too
	// (topolvm.Install's installDaemonSet, as TopoLVM's chart names both after the lvmd config):
	// a change of its pod template rolls the node agents (rollout.go).
	Namespace, ConfigMapName, Key string
	SocketDir                     string
	// RestartBackoff is the first delay of a node agent's crash loop (doubling to 30 s), as the
	// kubelet restarts a failing lvmd / topolvm-node container. Default 1 s.
	RestartBackoff time.Duration
	// LvmdStart is the time from an agent's start (its DaemonSet Pod starting on the node) until
	// lvmd reads its configuration and serves: container creation and start (0: none).
	LvmdStart time.Duration
	// CSIRegistration is the time from the node plugin serving until the kubelet registered it
	// (node-driver-registrar's start and the kubelet plugin watcher: topology label, CSINode)
	// (0: none).
	CSIRegistration time.Duration
	// ControllerNodes is topolvm-controller's view of the Nodes (Controller.Nodes), when it runs
	// in this process: the kubelet shim registers a node's plugin only once that view shows
	// the node's topology label and capacity annotation (registerPlugin). nil: no such wait.
	ControllerNodes client.Reader
}

// Node facts of the sandbox's volume-group bootstrap (internal/sandbox/topolvm bootstrap.go,
// bootstrapctl.go; the provider's olapgke_volume_group_bootstrap installs the DaemonSet whose
// effect it copies).
const (
	// AnnBootstrapVolumeGroup: the bootstrap created (or adopted) the node's volume group.
	AnnBootstrapVolumeGroup = "olapgke.io/volume-group"
	// AnnBootstrapVM: the node's VM (system UUID) when the bootstrap last created its group.
	AnnBootstrapVM = "sandbox.olapgke.io/bootstrap-system-uuid"
	// AnnForeignVolumeGroup: the node's Local SSDs hold another tool's volume group.
	AnnForeignVolumeGroup = "sandbox.olapgke.io/foreign-volume-group"
)

// volumeGroupPresent reports whether the node's volume group exists on its disks now. A node
// registered without the startup taint has it from its set-up (the sandbox's default world). On
// a node registered with the taint, the group exists once the bootstrap created it (its
// annotation), and no longer after GKE recreated the VM under the same name until the bootstrap
// ran again (its record of the VM's system UUID differs from the node's; a reboot keeps both). Local SSDs holding a foreign
// volume group hold no group of ours unless the bootstrap adopted it.
func volumeGroupPresent(n *corev1.Node) bool {
	if b := n.Annotations[AnnBootstrapVM]; b != "" && b != n.Status.NodeInfo.SystemUUID {
		return false
	}
	if n.Annotations[AnnBootstrapVolumeGroup] != "" {
		return true
	}
	if n.Annotations[AnnForeignVolumeGroup] != "" {
		return false
	}
	for _, t := range n.Spec.Taints {
		if t.Key == TaintStorageNotReady {
			return false
		}
	}
	return true
}

// nodeVolumeGroup is the volume group a node's Local SSDs form once it is created (by the node's
// set-up or the bootstrap): Local SSD count x 375 GiB.
func nodeVolumeGroup(n *corev1.Node) (fakelvmd.VolumeGroup, bool) {
	if n.Labels[LabelLocalSSD] != "true" {
		return fakelvmd.VolumeGroup{}, false
	}
	count, _ := strconv.Atoi(n.Annotations[AnnSSDCount])
	if count <= 0 {
		return fakelvmd.VolumeGroup{}, false
	}
	name := n.Annotations[AnnVolumeGroup]
	if name == "" {
		name = DefaultVolumeGroup
	}
	return fakelvmd.VolumeGroup{Name: name, Size: uint64(count) * LocalSSDBytes}, true
}

// disks are a node's Local SSDs with the volume group on them. They outlive the node agent (an
// lvmd or topolvm-node restart, a rollout) and a reboot of the VM (a new boot ID: the sandbox's
// control endpoint `reboot`), and go with the VM: a Node registered again under a new UID, or
// the same Node with a new system UUID (GKE recreated the VM under the same name, as auto-repair
// does: the control endpoint `recreate same-name`), has new, empty disks. Compute Engine keeps
// Local SSD data through a guest reboot or reset and loses it with the VM.
type disks struct {
	uid types.UID
	vm  string // the node's system UUID
	lvm *fakelvmd.LVM
}

// id names the VM's disks (its devices' directory): the system UUID, else the Node's UID.
func (d *disks) id() string {
	if d.vm != "" {
		return d.vm
	}
	return string(d.uid)
}

// agent is what TopoLVM's DaemonSet pod does on one node (lvmd + topolvm-node) plus the
// kubelet's part of CSI plugin registration: one "Pod", from start to stop.
type agent struct {
	disks    *disks
	template string // hash of the lvmd DaemonSet's pod template this Pod was created from
	cancel   context.CancelFunc
	done     chan struct{}
	// ready is closed once lvmd served and the kubelet registered the node plugin: the Pod is
	// Ready (a rolling update waits for it before it moves on).
	ready     chan struct{}
	readyOnce sync.Once
}

func (a *agent) markReady() { a.readyOnce.Do(func() { close(a.ready) }) }

type nodeAgents struct {
	cfg    *rest.Config
	shared *agentShared // the informer cache every agent's manager reads
	kube   kubernetes.Interface
	o      NodeOptions
	nodes  corelisters.NodeLister
	queue  workqueue.TypedRateLimitingInterface[string]
	events record.EventRecorder

	mu     sync.Mutex
	agents map[string]*agent
	disks  map[string]*disks
	// template is the hash of the lvmd DaemonSet's current pod template: new agents start from
	// it; running ones with another hash are rolled (rollout.go).
	template string
	// tolerations are that pod template's: whether an agent may run on a tainted node.
	tolerations []corev1.Toleration
	kick        chan struct{} // the template changed: (re)start the rollout
}

// RunNodes runs one node agent per node that has raw-block Local SSDs (the nodes TopoLVM's
// DaemonSet selects), started when the node appears and may run a DaemonSet Pod, stopped when it
// is gone, registered again under a new UID or with a new boot ID, and rolled one node at a time
// when the lvmd DaemonSet's pod template changes. It returns when ctx ends.
func RunNodes(ctx context.Context, cfg *rest.Config, o NodeOptions) error {
	if o.RestartBackoff == 0 {
		o.RestartBackoff = time.Second
	}
	// This client is every node's kubelet (plugin registration, the crash-loop Events) and the
	// DaemonSet controller's rollout: on a cluster each kubelet has its own (--kube-api-qps 50),
	// so one client-side limit for all of them would make start-up grow with the node count.
	kcfg := rest.CopyConfig(cfg)
	kcfg.QPS, kcfg.Burst = -1, 0
	kube, err := kubernetes.NewForConfig(kcfg)
	if err != nil {
		return err
	}
	factory := informers.NewSharedInformerFactory(kube, 0)
	inf := factory.Core().V1().Nodes()
	dsFactory := informers.NewSharedInformerFactoryWithOptions(kube, 0, informers.WithNamespace(o.Namespace))
	dsInf := dsFactory.Apps().V1().DaemonSets()
	shared, err := newAgentShared(cfg)
	if err != nil {
		return err
	}
	sharedCtx, stopShared := context.WithCancel(ctx)
	sharedDone := make(chan error, 1)
	go func() { sharedDone <- shared.run(sharedCtx) }()
	defer func() {
		stopShared()
		<-sharedDone
	}()
	broadcaster := record.NewBroadcaster(record.WithContext(ctx))
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: kube.CoreV1().Events("")})
	defer broadcaster.Shutdown()
	s := &nodeAgents{
		cfg: cfg, shared: shared, kube: kube, o: o, nodes: inf.Lister(), agents: map[string]*agent{}, disks: map[string]*disks{},
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "topolvm-node-agents"}),
		// The kubelet reports container restarts (here: of the node agent) as Events.
		events: broadcaster.NewRecorder(scheme, corev1.EventSource{Component: "kubelet"}),
		kick:   make(chan struct{}, 1),
	}
	enqueue := func(obj any) {
		if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
			s.queue.Add(key)
		}
	}
	if _, err := inf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: enqueue, UpdateFunc: func(_, n any) { enqueue(n) }, DeleteFunc: enqueue,
	}); err != nil {
		return err
	}
	if _, err := dsInf.Informer().AddEventHandler(s.daemonSetHandler()); err != nil {
		return err
	}
	factory.Start(ctx.Done())
	dsFactory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())
	dsFactory.WaitForCacheSync(ctx.Done())
	go func() {
		<-ctx.Done()
		s.queue.ShutDown()
	}()
	rolled := make(chan struct{})
	go func() {
		defer close(rolled)
		s.rollout(ctx)
	}()
	for s.next(ctx) {
	}
	<-rolled
	s.mu.Lock()
	all := make([]*agent, 0, len(s.agents))
	for _, a := range s.agents {
		a.cancel()
		all = append(all, a)
	}
	s.mu.Unlock()
	for _, a := range all {
		<-a.done
	}
	return ctx.Err()
}

func (s *nodeAgents) next(ctx context.Context) bool {
	name, quit := s.queue.Get()
	if quit {
		return false
	}
	defer s.queue.Done(name)
	s.sync(ctx, name)
	return true
}

// sync starts or stops the agent of one node.
func (s *nodeAgents) sync(ctx context.Context, name string) {
	n, err := s.nodes.Get(name)
	if err != nil && !apierrors.IsNotFound(err) {
		s.queue.AddRateLimited(name)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	cur := s.agents[name]
	var vg fakelvmd.VolumeGroup
	hasVG, run, keep := false, false, false
	if n != nil {
		vg, hasVG = nodeVolumeGroup(n)
		run, keep = daemonPodFits(n, s.tolerations)
		if n.Annotations[AnnKubelet] == KubeletDead {
			// The node's kubelet (or VM) is down: its lvmd and topolvm-node are not running and
			// nothing starts them until it is back; the disks stay (same UID and system UUID).
			run, keep = false, false
		}
	}
	// The VM: the same disks while the Node keeps its UID and system UUID (a reboot changes
	// only the boot ID).
	d := s.disks[name]
	if d != nil && (n == nil || !hasVG || d.uid != n.UID || d.vm != n.Status.NodeInfo.SystemUUID) {
		if n != nil && d.uid == n.UID {
			klog.InfoS("node VM recreated under the same name (new system UUID): its Local SSDs are empty",
				"node", name, "systemUUID", n.Status.NodeInfo.SystemUUID, "previousSystemUUID", d.vm)
		}
		d = nil
	}
	if cur != nil && (!hasVG || !keep || cur.disks != d) {
		s.stopLocked(name, cur)
		cur = nil
	}
	if d == nil {
		delete(s.disks, name)
		if hasVG {
			d = &disks{uid: n.UID, vm: n.Status.NodeInfo.SystemUUID, lvm: fakelvmd.NewLVM()}
			s.disks[name] = d
		}
	}
	if d != nil && volumeGroupPresent(n) {
		if d.lvm.CreateVolumeGroup(vg) {
			// The node's set-up, or the volume-group bootstrap, made the (empty) volume group. An
			// lvmd crash-looping without it finds it at its next restart.
			klog.InfoS("volume group created on the node's Local SSDs", "node", name, "volumeGroup", vg.Name, "size", vg.Size)
		}
		syncThinPools(n, d.lvm, vg.Name)
	}
	if cur != nil || !hasVG || !run {
		return
	}
	s.startLocked(ctx, name, d, vg)
}

// daemonPodFits is the DaemonSet controller's NodeShouldRunDaemonPod for TopoLVM's lvmd/node
// Pods with respect to the startup taint olapgke.io/storage-not-ready, judged with the
// tolerations of the lvmd DaemonSet's pod template as the controller judges them (kubernetes
// pkg/controller/daemon/daemon_controller.go predicates: a NoSchedule or NoExecute taint the Pod
// does not tolerate keeps a new Pod off; only an untolerated NoExecute one stops a running Pod;
// component-helpers FindMatchingUntoleratedTaint). TopoLVM's chart tolerates nothing by default
// (charts/topolvm/values.yaml lvmd.tolerations: []); olapgke's values
// (examples/topolvm-gke/topolvm-values.yaml) and so the sandbox's lvmd DaemonSet tolerate the
// startup taint, so that lvmd is up (crash-looping until the bootstrap created the volume
// group) when the taint goes. The sandbox also keeps a new agent off for PreferNoSchedule (the
// controller ignores it; the provider's storage_startup_taint is NO_SCHEDULE). Other taints are
// taken as tolerated (a chart configured for the pools).
func daemonPodFits(n *corev1.Node, tolerations []corev1.Toleration) (shouldRun, shouldContinueRunning bool) {
	if n.DeletionTimestamp != nil {
		return false, true
	}
	var startup []corev1.Taint
	for _, t := range n.Spec.Taints {
		if t.Key == TaintStorageNotReady {
			if t.Effect == corev1.TaintEffectPreferNoSchedule {
				t.Effect = corev1.TaintEffectNoSchedule
			}
			startup = append(startup, t)
		}
	}
	_, untolerated := corev1helpers.FindMatchingUntoleratedTaint(klog.Background(), startup, tolerations, func(t *corev1.Taint) bool {
		return t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute
	}, false)
	_, evicting := corev1helpers.FindMatchingUntoleratedTaint(klog.Background(), startup, tolerations, func(t *corev1.Taint) bool {
		return t.Effect == corev1.TaintEffectNoExecute
	}, false)
	return !untolerated, !evicting
}

// stopLocked stops a node's agent (its Pod is deleted) and waits until it stopped.
func (s *nodeAgents) stopLocked(name string, a *agent) {
	a.cancel()
	<-a.done
	if s.agents[name] == a {
		delete(s.agents, name)
	}
	klog.InfoS("node agent stopped", "node", name)
}

// startLocked starts a node's agent (a new Pod) from the current pod template over its disks.
func (s *nodeAgents) startLocked(ctx context.Context, name string, d *disks, vg fakelvmd.VolumeGroup) *agent {
	actx, cancel := context.WithCancel(ctx)
	a := &agent{disks: d, template: s.template, cancel: cancel, done: make(chan struct{}), ready: make(chan struct{})}
	s.agents[name] = a
	klog.InfoS("node agent started", "node", name, "volumeGroup", vg.Name, "size", vg.Size, "template", a.template)
	go func() {
		defer close(a.done)
		s.superviseAgent(actx, name, a)
	}()
	return a
}

// superviseAgent restarts a failed agent with a doubling delay, as the kubelet restarts a
// crashing container (lvmd exits when its volume group is missing), and reports each failure as
// the kubelet does (pkg/kubelet/kuberuntime: Event reason BackOff, "Back-off restarting failed
// container"). There is no Pod in the sandbox: the Event is on the Node.
func (s *nodeAgents) superviseAgent(ctx context.Context, name string, a *agent) {
	backoff := wait.Backoff{Duration: s.o.RestartBackoff, Factor: 2, Cap: 30 * time.Second, Steps: 1 << 30}
	for {
		err := s.runAgent(ctx, name, a)
		if ctx.Err() != nil {
			return
		}
		delay := backoff.Step()
		klog.ErrorS(err, "node agent failed; restarting", "node", name, "after", delay.String())
		container := "topolvm-node"
		var lerr *lvmdError
		if errors.As(err, &lerr) {
			container = "lvmd"
		}
		if n, gerr := s.nodes.Get(name); gerr == nil {
			s.events.Eventf(n, corev1.EventTypeWarning, "BackOff",
				"Back-off restarting failed container %s of TopoLVM on node %s (sandbox: no Pod; restart in %s): %v", container, name, delay, err)
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// lvmdError is a failure of lvmd itself (its configuration, a missing volume group).
type lvmdError struct{ err error }

func (e *lvmdError) Error() string { return "lvmd: " + e.err.Error() }
func (e *lvmdError) Unwrap() error { return e.err }

// pause waits d (a container start, a registration) or until ctx ends.
func pause(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// runAgent runs lvmd (reading its configuration now: lvmd reads it only at start), then
// topolvm-node (LogicalVolume reconciler, metrics exporter that writes the capacity annotations
// and the node finalizer, CSI identity and node services) and the kubelet's registration of the
// plugin. It returns when ctx ends or a component fails.
func (s *nodeAgents) runAgent(ctx context.Context, name string, a *agent) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if err := pause(ctx, s.o.LvmdStart); err != nil {
		return err
	}
	// lvmd reads the file the kubelet projected from the ConfigMap. A container restart in the
	// same Pod (the crash loop) reads the ConfigMap as it is then: the kubelet refreshes the
	// projected file within about a minute (its sync period plus the ConfigMap cache), here at
	// once.
	cm, err := s.kube.CoreV1().ConfigMaps(s.o.Namespace).Get(ctx, s.o.ConfigMapName, metav1.GetOptions{})
	if err != nil {
		return &lvmdError{fmt.Errorf("config: %w", err)}
	}
	text := cm.Data[s.o.Key]
	conf, err := fakelvmd.ParseConfig(text)
	if err != nil {
		return &lvmdError{err}
	}
	lvmd, err := fakelvmd.New(conf.DeviceClasses, conf.LvcreateOptionClasses, a.disks.lvm)
	if err != nil {
		return &lvmdError{err}
	}
	dir := filepath.Join(s.o.SocketDir, name)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	lvmdSock, csiSock := filepath.Join(dir, "lvmd.sock"), filepath.Join(dir, "csi-topolvm.sock")
	_ = os.Remove(lvmdSock)
	l, err := net.Listen("unix", lvmdSock)
	if err != nil {
		return err
	}
	lvmdSrv := grpc.NewServer()
	proto.RegisterVGServiceServer(lvmdSrv, lvmd)
	proto.RegisterLVServiceServer(lvmdSrv, lvmd)
	go func() { _ = lvmdSrv.Serve(l) }()
	defer lvmdSrv.Stop()

	conn, err := grpc.NewClient("unix:"+lvmdSock, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer conn.Close()
	vgc, lvc := proto.NewVGServiceClient(conn), proto.NewLVServiceClient(conn)

	// This agent started from the node informer above; the shared cache's own Node informer may
	// not have seen the Node yet, while a topolvm-node Pod's fresh cache would list it at start
	// (TopoLVM's metrics exporter and node server fail on a missing Node).
	if err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		var n corev1.Node
		return s.shared.cache.Get(ctx, client.ObjectKey{Name: name}, &n) == nil, nil
	}); err != nil {
		return fmt.Errorf("node %s not in the shared cache: %w", name, err)
	}
	mgr, err := newManager(s.cfg, s.shared)
	if err != nil {
		return err
	}
	if err := tlvcontroller.SetupLogicalVolumeReconcilerWithServices(mgr, mgr.GetClient(), name, vgc, lvc); err != nil {
		return fmt.Errorf("LogicalVolume reconciler: %w", err)
	}
	if err := mgr.Add(runners.NewMetricsExporter(vgc, mgr.GetClient(), name)); err != nil {
		return err
	}
	srv := grpc.NewServer()
	csi.RegisterIdentityServer(srv, driver.NewIdentityServer(csiDriverReady(mgr.GetAPIReader())))
	// The node's /dev: the devices of the VM's logical volumes (mounts.go devicePaths).
	dev := filepath.Join(dir, "dev-"+a.disks.id())
	ns, err := driver.NewNodeServer(name, devicePaths{VGServiceClient: vgc, dir: dev}, lvc, mgr)
	if err != nil {
		return err
	}
	csi.RegisterNodeServer(srv, ns)
	if err := mgr.Add(runners.NewGRPCRunner(srv, csiSock, false)); err != nil {
		return err
	}
	regErr := make(chan error, 1)
	go func() {
		regErr <- registerPlugin(ctx, s.kube, s.nodes, s.o.ControllerNodes, name, csiSock, s.o.CSIRegistration, configHash(text))
	}()
	mgrErr := make(chan error, 1)
	go func() { mgrErr <- mgr.Start(ctx) }()
	select {
	case err := <-regErr:
		if err != nil {
			cancel()
			<-mgrErr
			return fmt.Errorf("plugin registration: %w", err)
		}
		a.markReady()
		return <-mgrErr
	case err := <-mgrErr:
		return err
	}
}

// registerPlugin does the kubelet's part once the node plugin serves: it asks the plugin for its
// name and node info (GetPluginInfo, NodeGetInfo), labels the Node with the plugin's topology
// segments and adds the driver to the node's CSINode object (owned by the Node). The kubelet
// registers a plugin when its socket appears; here registration also waits until TopoLVM's
// metrics exporter wrote the node's first capacity annotation, so that external-provisioner's
// first GetCapacity for the node does not race lvmd's first Watch (it would publish 0 until the
// next capacity poll), and, before the CSINode write, until topolvm-controller's cache shows the
// label and the annotation (waitControllerSees).
//
// delay is the time the registration takes once the plugin serves (node-driver-registrar's start,
// the kubelet's plugin watcher and its GetInfo/NodeGetInfo calls). The same Node update records
// configHash (AnnLVMDConfigHash, the configuration this lvmd loaded): one write per agent start
// instead of two, as the API server absorbs every node's writes at once when a world starts.
func registerPlugin(ctx context.Context, kube kubernetes.Interface, nodes corelisters.NodeLister, controller client.Reader, node, csiSock string, delay time.Duration, configHash string) error {
	conn, err := grpc.NewClient("unix:"+csiSock, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer conn.Close()
	var info *csi.NodeGetInfoResponse
	var driverName string
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		pi, err := csi.NewIdentityClient(conn).GetPluginInfo(ctx, &csi.GetPluginInfoRequest{})
		if err != nil {
			return false, nil
		}
		driverName = pi.GetName()
		info, err = csi.NewNodeClient(conn).NodeGetInfo(ctx, &csi.NodeGetInfoRequest{})
		return err == nil, nil
	})
	if err != nil {
		return fmt.Errorf("node plugin on %s did not answer: %w", csiSock, err)
	}
	capKey := topolvm.GetCapacityKeyPrefix() + topolvm.DefaultDeviceClassAnnotationName
	// From the informer: 500 agents polling the API server would starve the shared client.
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		n, err := nodes.Get(node)
		if err != nil {
			return false, nil
		}
		_, ok := n.Annotations[capKey]
		return ok, nil
	})
	if err != nil {
		return fmt.Errorf("node %s has no %s annotation: %w", node, capKey, err)
	}
	if err := pause(ctx, delay); err != nil {
		return err
	}
	var keys []string
	for k := range info.GetAccessibleTopology().GetSegments() {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var uid types.UID
	fresh := false // the first try updates the informer's copy; a conflict reads the Node again
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n, err := nodes.Get(node)
		if fresh || err != nil {
			n, err = kube.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		}
		fresh = true
		if err != nil {
			return err
		}
		uid = n.UID
		n = n.DeepCopy()
		changed := false
		set := func(m *map[string]string, k, v string) {
			if (*m)[k] != v {
				if *m == nil {
					*m = map[string]string{}
				}
				(*m)[k] = v
				changed = true
			}
		}
		for k, v := range info.GetAccessibleTopology().GetSegments() {
			set(&n.Labels, k, v)
		}
		set(&n.Annotations, AnnLVMDConfigHash, configHash)
		if changed {
			_, err = kube.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{})
		}
		return err
	})
	if err != nil {
		return err
	}
	if err := waitControllerSees(ctx, controller, node, info.GetAccessibleTopology().GetSegments()[topolvm.GetTopologyNodeKey()], capKey); err != nil {
		return err
	}
	return registerCSINode(ctx, kube, node, uid, storagev1.CSINodeDriver{Name: driverName, NodeID: info.GetNodeId(), TopologyKeys: keys})
}

// waitControllerSees waits (poll with timeout) until topolvm-controller's Node cache holds the
// node with TopoLVM's topology label set to topology and the capacity annotation capKey: what
// TopoLVM's GetCapacity for the node's segment looks for (internal/driver controller.go
// GetCapacity, internal/driver/internal/k8s node_service.go GetCapacityByTopologyLabel). Until
// then it answers 0 ("target is not found", or "target device class is not found"), and
// external-provisioner publishes that 0 until its next capacity poll (1 min by default).
//
// On a cluster the kubelet registers the plugin seconds after topolvm-node starts (the
// node-driver-registrar container's start, the plugin watcher), long after the controller's
// informer saw the node's label and annotation. In this process, with hundreds of agents
// starting at once and no registration delay, the controller's Node watch (one of about ten
// watchers of every Node write) lagged the CSINode watch external-provisioner reacts to by a
// second or more, and 1 start in 3 to 6 of a 500-node world waited a minute for one node's
// capacity.
// The wait restores the order a cluster's timing gives; the sandbox thus does not show that
// race, which a cluster can in principle show too (README, Real TopoLVM). controller nil: no wait.
func waitControllerSees(ctx context.Context, controller client.Reader, node, topology, capKey string) error {
	if controller == nil {
		return nil
	}
	var last error // of the last read (ErrCacheNotStarted, not found), for the timeout's message
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		// Node metadata, as GetCapacity lists it: the controller's metadata-only Node informer
		// (a typed Get would start a second Node informer).
		n := &metav1.PartialObjectMetadata{}
		n.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Node"))
		if last = controller.Get(ctx, client.ObjectKey{Name: node}, n); last != nil {
			return false, nil
		}
		_, ok := n.Annotations[capKey]
		return ok && n.Labels[topolvm.GetTopologyNodeKey()] == topology, nil
	})
	if err != nil {
		if last != nil {
			err = fmt.Errorf("%w (last read: %v)", err, last)
		}
		return fmt.Errorf("topolvm-controller's cache has no node %s with its topology label and %s annotation: %w", node, capKey, err)
	}
	return nil
}

// registerCSINode adds (or updates) the driver in the node's CSINode object, as the kubelet's
// CSI plugin registration does; it creates the object (owned by the Node) first, as a node's
// first registration finds none.
func registerCSINode(ctx context.Context, kube kubernetes.Interface, node string, uid types.UID, want storagev1.CSINodeDriver) error {
	_, err := kube.StorageV1().CSINodes().Create(ctx, &storagev1.CSINode{
		ObjectMeta: metav1.ObjectMeta{Name: node, OwnerReferences: []metav1.OwnerReference{{
			APIVersion: "v1", Kind: "Node", Name: node, UID: uid,
		}}},
		Spec: storagev1.CSINodeSpec{Drivers: []storagev1.CSINodeDriver{want}},
	}, metav1.CreateOptions{})
	if !apierrors.IsAlreadyExists(err) {
		return err
	}
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cn, err := kube.StorageV1().CSINodes().Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			return err
		}
		i := slices.IndexFunc(cn.Spec.Drivers, func(d storagev1.CSINodeDriver) bool { return d.Name == want.Name })
		if i >= 0 && cn.Spec.Drivers[i].NodeID == want.NodeID && slices.Equal(cn.Spec.Drivers[i].TopologyKeys, want.TopologyKeys) {
			return nil
		}
		if i >= 0 {
			cn.Spec.Drivers[i] = want
		} else {
			cn.Spec.Drivers = append(cn.Spec.Drivers, want)
		}
		_, err = kube.StorageV1().CSINodes().Update(ctx, cn, metav1.UpdateOptions{})
		return err
	})
}

// enqueueAll re-syncs every node.
func (s *nodeAgents) enqueueAll() {
	all, err := s.nodes.List(labels.Everything())
	if err != nil {
		return
	}
	for _, n := range all {
		s.queue.Add(n.Name)
	}
}

// syncThinPools makes the thin pools AnnThinPools lists (lvcreate --type thin-pool, once: an
// existing pool is kept as it is), removes empty ones it no longer lists, and records AnnThinWritten's bytes on the node's disks. A pool
// the group has no room for is not made (lvcreate fails): a thin class naming it keeps lvmd
// exiting "Thin pool not found".
func syncThinPools(n *corev1.Node, lvm *fakelvmd.LVM, vg string) {
	pools, err := parseSizes(n.Annotations[AnnThinPools])
	if err != nil {
		klog.ErrorS(err, "thin pools of the node unreadable", "node", n.Name)
	}
	have := lvm.ThinPools(vg)
	for _, name := range slices.Sorted(maps.Keys(pools)) {
		if _, ok := have[name]; ok {
			continue
		}
		if err := lvm.CreateThinPool(vg, name, pools[name]); err != nil {
			klog.ErrorS(err, "thin pool not created", "node", n.Name, "volumeGroup", vg, "thinPool", name)
			continue
		}
		klog.InfoS("thin pool created in the node's volume group", "node", n.Name, "volumeGroup", vg, "thinPool", name, "size", pools[name])
	}
	// A pool no longer listed was removed by whoever made it (tests undo their set-up): an
	// empty one goes, one holding thin volumes stays.
	for name := range have {
		if _, ok := pools[name]; ok || err != nil {
			continue
		}
		if rerr := lvm.RemoveThinPool(vg, name); rerr != nil {
			klog.ErrorS(rerr, "thin pool not removed", "node", n.Name, "volumeGroup", vg, "thinPool", name)
		}
	}
	written, err := parseSizes(n.Annotations[AnnThinWritten])
	if err != nil {
		klog.ErrorS(err, "thin volume writes of the node unreadable", "node", n.Name)
	}
	for _, lv := range slices.Sorted(maps.Keys(written)) {
		if err := lvm.SetWritten(vg, lv, written[lv]); err != nil {
			klog.ErrorS(err, "write to thin volume failed", "node", n.Name, "volume", lv)
		}
	}
}

// parseSizes reads "name=bytes,..." (AnnThinPools, AnnThinWritten).
func parseSizes(v string) (map[string]uint64, error) {
	out := map[string]uint64{}
	for _, e := range strings.Split(v, ",") {
		if e = strings.TrimSpace(e); e == "" {
			continue
		}
		name, size, ok := strings.Cut(e, "=")
		b, err := strconv.ParseUint(size, 10, 64)
		if !ok || name == "" || err != nil {
			return out, fmt.Errorf("entry %q of %q is not name=bytes", e, v)
		}
		out[name] = b
	}
	return out, nil
}
