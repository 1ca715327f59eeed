// Package topolvmreal runs TopoLVM v0.41.0's own controller and node code,
// external-provisioner v6.3.0's controllers and external-resizer v1.14.0's resize controller in
// one process against a cluster (the olapgke sandbox), with an in-memory lvmd per node (package
// fakelvmd) and small stand-ins for what the kubelet does for a CSI node plugin (registration:
// CSINode and the node's topology label; the status writes after NodeExpandVolume).
package topolvmreal

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/topolvm/topolvm"
	topolvmlegacyv1 "github.com/topolvm/topolvm/api/legacy/v1"
	topolvmv1 "github.com/topolvm/topolvm/api/v1"
	tlvcontroller "github.com/topolvm/topolvm/pkg/controller"
	"github.com/topolvm/topolvm/pkg/driver"
	"github.com/topolvm/topolvm/pkg/runners"
	"google.golang.org/grpc"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

var scheme = runtime.NewScheme()

func init() {
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(topolvmv1.AddToScheme(scheme))
	utilruntime.Must(topolvmlegacyv1.AddToScheme(scheme))
}

// newManager is a controller-runtime manager as TopoLVM's commands build one, without leader
// election, metrics or health endpoints. Controller names repeat across the per-node managers of
// one process (each runs TopoLVM's "logicalvolume" controller): name validation is off. A node
// agent's manager uses the process's shared cache (sharedcache.go); topolvm-controller's
// (shared nil) has its own.
func newManager(cfg *rest.Config, shared *agentShared) (ctrl.Manager, error) {
	o := ctrl.Options{
		Scheme:                 scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		LeaderElection:         false,
		Controller:             config.Controller{SkipNameValidation: ptr.To(true)},
	}
	if shared == nil {
		o.Cache = controllerCacheOptions()
	} else {
		o.MapperProvider = func(*rest.Config, *http.Client) (meta.RESTMapper, error) { return shared.mapper, nil }
		o.NewCache = func(*rest.Config, cache.Options) (cache.Cache, error) { return shared.view(), nil }
	}
	return ctrl.NewManager(cfg, o)
}

// controllerCacheOptions tune topolvm-controller's cache for one process serving a whole world,
// without changing what TopoLVM's code reads (its cmd/topolvm-controller sets none of them):
//   - managed fields are dropped from cached objects: nothing in TopoLVM reads them, and they are
//     most of a Node's metadata;
//   - Node reads are not deep-copied. external-provisioner asks GetCapacity once per node and
//     StorageClass, and TopoLVM's answer (internal/driver/internal/k8s node_service.go
//     GetCapacityByTopologyLabel) lists every Node's metadata, so each round copied N^2 objects
//     (the largest CPU cost of a 500-node start-up). TopoLVM's readers of Node metadata (that
//     lookup, GetTotalCapacity, GetMaxCapacity, the node finalizer's reconciler) read the listed
//     objects or patch a DeepCopy of them, never write them: sharing the cache's copy is safe.
func controllerCacheOptions() cache.Options {
	return cache.Options{
		DefaultTransform: cache.TransformStripManagedFields(),
		ByObject:         map[client.Object]cache.ByObject{&corev1.Node{}: {UnsafeDisableDeepCopy: ptr.To(true)}},
	}
}

// csiDriverReady is the identity service's readiness, as topolvm-controller's checker: the
// CSIDriver object exists.
func csiDriverReady(r client.Reader) func() (bool, error) {
	return func() (bool, error) {
		var drv storagev1.CSIDriver
		if err := r.Get(context.Background(), types.NamespacedName{Name: topolvm.GetPluginName()}, &drv); err != nil {
			return false, err
		}
		return true, nil
	}
}

// Controller is what topolvm-controller runs (cmd/topolvm-controller/app/run.go), minus the Pod
// mutating webhook (TopoLVM's scheduler-extender mode; capacity tracking replaces it): the node
// finalizer and PVC reconcilers and the CSI identity and controller services on a unix socket.
type Controller struct {
	mgr ctrl.Manager
}

// NewController sets topolvm-controller up to serve CSI on the unix socket csiSocket.
func NewController(cfg *rest.Config, csiSocket string) (*Controller, error) {
	mgr, err := newManager(cfg, nil)
	if err != nil {
		return nil, err
	}
	cl := mgr.GetClient()
	if err := tlvcontroller.SetupNodeReconciler(mgr, cl, false); err != nil {
		return nil, fmt.Errorf("node reconciler: %w", err)
	}
	if err := tlvcontroller.SetupPersistentVolumeClaimReconciler(mgr, cl, mgr.GetAPIReader()); err != nil {
		return nil, fmt.Errorf("PVC reconciler: %w", err)
	}
	srv := grpc.NewServer()
	csi.RegisterIdentityServer(srv, driver.NewIdentityServer(csiDriverReady(mgr.GetAPIReader())))
	cs, err := driver.NewControllerServer(mgr, defaultControllerSettings())
	if err != nil {
		return nil, err
	}
	csi.RegisterControllerServer(srv, cs)
	if err := mgr.Add(runners.NewGRPCRunner(srv, csiSocket, false)); err != nil {
		return nil, err
	}
	return &Controller{mgr: mgr}, nil
}

// Run runs the controller until ctx ends or a component fails.
func (c *Controller) Run(ctx context.Context) error { return c.mgr.Start(ctx) }

// Nodes reads Nodes from the controller's cache: the objects TopoLVM's GetCapacity answers from
// (NodeService.GetCapacityByTopologyLabel lists them). Before Run starts the cache, reads fail
// (ErrCacheNotStarted); after, a read waits for the first sync.
func (c *Controller) Nodes() client.Reader { return c.mgr.GetCache() }

// defaultControllerSettings are topolvm-controller's flag defaults (cmd/topolvm-controller/app
// root.go): the minimum allocation per volume mode and filesystem.
func defaultControllerSettings() driver.ControllerServerSettings {
	q := func(s string) driver.Quantity { return driver.Quantity(resource.MustParse(s)) }
	var st driver.ControllerServerSettings
	st.Block = q("8Mi")
	st.Filesystem = map[string]driver.Quantity{"ext4": q("32Mi"), "xfs": q("300Mi"), "btrfs": q("200Mi")}
	return st
}

// WaitSocket waits (poll with timeout) until the unix socket at path accepts connections: the
// CSI controller's gRPC server is listening.
func WaitSocket(ctx context.Context, path string, timeout time.Duration) error {
	err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		c, err := net.Dial("unix", path)
		if err != nil {
			return false, nil
		}
		return true, c.Close()
	})
	if err != nil {
		return fmt.Errorf("CSI socket %s not listening within %s: %w", path, timeout, err)
	}
	return nil
}
