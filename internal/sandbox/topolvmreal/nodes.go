package topolvmreal

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
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
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/retry"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	"github.com/olapgke/terraform-provider-olapgke/internal/sandbox/topolvmreal/fakelvmd"
)

// The simulated node facts the sandbox's GKE emulator writes (DESIGN.md "Simulated node facts").
const (
	LabelLocalSSD      = "cloud.google.com/gke-local-nvme-ssd"
	AnnSSDCount        = "sandbox.olapgke.io/local-nvme-ssd-count"
	AnnVolumeGroup     = "sandbox.olapgke.io/volume-group"
	DefaultVolumeGroup = "vg-ssd"
	LocalSSDBytes      = uint64(375) << 30
)

// NodeOptions say where lvmd's configuration is and where the per-node sockets go.
type NodeOptions struct {
	Namespace, ConfigMapName, Key string // the lvmd ConfigMap (the sandbox's topolvm.Install)
	SocketDir                     string
	// RestartBackoff is the first delay of a node agent's crash loop (doubling to 30 s), as the
	// kubelet restarts a failing lvmd / topolvm-node container. Default 1 s.
	RestartBackoff time.Duration
}

// nodeVolumeGroup is the volume group a node's set-up created: Local SSD count x 375 GiB.
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

// agent is what TopoLVM's DaemonSet pod does on one node (lvmd + topolvm-node) plus the
// kubelet's part of CSI plugin registration.
type agent struct {
	uid    types.UID
	lvm    *fakelvmd.LVM // the node's disks: survive lvmd restarts
	cancel context.CancelFunc
	done   chan struct{}
}

type nodeAgents struct {
	cfg   *rest.Config
	kube  kubernetes.Interface
	o     NodeOptions
	nodes corelisters.NodeLister
	queue workqueue.TypedRateLimitingInterface[string]

	mu     sync.Mutex
	agents map[string]*agent
}

// RunNodes runs one node agent per node that has raw-block Local SSDs (the nodes TopoLVM's
// DaemonSet selects), started when the node appears and stopped when it is gone or registered
// again under a new UID. It returns when ctx ends.
func RunNodes(ctx context.Context, cfg *rest.Config, o NodeOptions) error {
	if o.RestartBackoff == 0 {
		o.RestartBackoff = time.Second
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	factory := informers.NewSharedInformerFactory(kube, 0)
	inf := factory.Core().V1().Nodes()
	s := &nodeAgents{
		cfg: cfg, kube: kube, o: o, nodes: inf.Lister(), agents: map[string]*agent{},
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "topolvm-node-agents"}),
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
	factory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())
	go func() {
		<-ctx.Done()
		s.queue.ShutDown()
	}()
	for s.next(ctx) {
	}
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
	eligible := false
	if n != nil {
		vg, eligible = nodeVolumeGroup(n)
	}
	if cur != nil && (!eligible || cur.uid != n.UID) {
		cur.cancel()
		<-cur.done
		delete(s.agents, name)
		klog.InfoS("node agent stopped", "node", name)
		cur = nil
	}
	if cur != nil || !eligible {
		return
	}
	actx, cancel := context.WithCancel(ctx)
	a := &agent{uid: n.UID, lvm: fakelvmd.NewLVM(vg), cancel: cancel, done: make(chan struct{})}
	s.agents[name] = a
	klog.InfoS("node agent started", "node", name, "volumeGroup", vg.Name, "size", vg.Size)
	go func() {
		defer close(a.done)
		s.superviseAgent(actx, name, a)
	}()
}

// superviseAgent restarts a failed agent with a doubling delay, as the kubelet restarts a
// crashing container (lvmd exits when its volume group is missing).
func (s *nodeAgents) superviseAgent(ctx context.Context, name string, a *agent) {
	backoff := wait.Backoff{Duration: s.o.RestartBackoff, Factor: 2, Cap: 30 * time.Second, Steps: 1 << 30}
	for {
		err := s.runAgent(ctx, name, a)
		if ctx.Err() != nil {
			return
		}
		delay := backoff.Step()
		klog.ErrorS(err, "node agent failed; restarting", "node", name, "after", delay.String())
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// runAgent runs lvmd (reading its configuration now: lvmd reads it only at start), then
// topolvm-node (LogicalVolume reconciler, metrics exporter that writes the capacity annotations
// and the node finalizer, CSI identity and node services) and the kubelet's registration of the
// plugin. It returns when ctx ends or a component fails.
func (s *nodeAgents) runAgent(ctx context.Context, name string, a *agent) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	cm, err := s.kube.CoreV1().ConfigMaps(s.o.Namespace).Get(ctx, s.o.ConfigMapName, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("lvmd config: %w", err)
	}
	conf, err := fakelvmd.ParseConfig(cm.Data[s.o.Key])
	if err != nil {
		return err
	}
	lvmd, err := fakelvmd.New(conf.DeviceClasses, conf.LvcreateOptionClasses, a.lvm)
	if err != nil {
		return fmt.Errorf("lvmd: %w", err)
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

	mgr, err := newManager(s.cfg)
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
	ns, err := driver.NewNodeServer(name, vgc, lvc, mgr)
	if err != nil {
		return err
	}
	csi.RegisterNodeServer(srv, ns)
	if err := mgr.Add(runners.NewGRPCRunner(srv, csiSock, false)); err != nil {
		return err
	}
	regErr := make(chan error, 1)
	go func() { regErr <- registerPlugin(ctx, s.kube, name, csiSock) }()
	mgrErr := make(chan error, 1)
	go func() { mgrErr <- mgr.Start(ctx) }()
	select {
	case err := <-regErr:
		if err != nil {
			cancel()
			<-mgrErr
			return fmt.Errorf("plugin registration: %w", err)
		}
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
// next capacity poll).
func registerPlugin(ctx context.Context, kube kubernetes.Interface, node, csiSock string) error {
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
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		n, err := kube.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		_, ok := n.Annotations[capKey]
		return ok, nil
	})
	if err != nil {
		return fmt.Errorf("node %s has no %s annotation: %w", node, capKey, err)
	}
	var keys []string
	for k := range info.GetAccessibleTopology().GetSegments() {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n, err := kube.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			return err
		}
		changed := false
		for k, v := range info.GetAccessibleTopology().GetSegments() {
			if n.Labels[k] != v {
				if n.Labels == nil {
					n.Labels = map[string]string{}
				}
				n.Labels[k] = v
				changed = true
			}
		}
		if changed {
			if n, err = kube.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{}); err != nil {
				return err
			}
		}
		want := storagev1.CSINodeDriver{Name: driverName, NodeID: info.GetNodeId(), TopologyKeys: keys}
		cn, err := kube.StorageV1().CSINodes().Get(ctx, node, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			_, err = kube.StorageV1().CSINodes().Create(ctx, &storagev1.CSINode{
				ObjectMeta: metav1.ObjectMeta{Name: node, OwnerReferences: []metav1.OwnerReference{{
					APIVersion: "v1", Kind: "Node", Name: n.Name, UID: n.UID,
				}}},
				Spec: storagev1.CSINodeSpec{Drivers: []storagev1.CSINodeDriver{want}},
			}, metav1.CreateOptions{})
			return err
		}
		if err != nil {
			return err
		}
		i := slices.IndexFunc(cn.Spec.Drivers, func(d storagev1.CSINodeDriver) bool { return d.Name == driverName })
		if i >= 0 && cn.Spec.Drivers[i].NodeID == want.NodeID && slices.Equal(cn.Spec.Drivers[i].TopologyKeys, keys) {
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
