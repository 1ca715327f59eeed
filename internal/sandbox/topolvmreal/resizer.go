package topolvmreal

import (
	"context"
	"fmt"
	"time"

	"github.com/kubernetes-csi/csi-lib-utils/metrics"
	epfeatures "github.com/kubernetes-csi/external-provisioner/v6/pkg/features"
	rzcontroller "github.com/kubernetes-csi/external-resizer/pkg/controller"
	rzcsi "github.com/kubernetes-csi/external-resizer/pkg/csi"
	rzfeatures "github.com/kubernetes-csi/external-resizer/pkg/features"
	"github.com/kubernetes-csi/external-resizer/pkg/resizer"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/component-base/featuregate"
	"k8s.io/klog/v2"
)

// Both sidecars register their feature gates in k8s.io/apiserver's process-wide
// DefaultMutableFeatureGate from an init, each as one Add of all its gates, and both declare
// VolumeAttributesClass with different specs (external-provisioner v6.3.0 GA, default on;
// external-resizer v1.14.0 Beta, default off). Whichever package initialises second has its
// whole Add refused, and its code then panics on a gate that is "not registered". In their own
// containers each has its own gates; here every gate both declare (pkg/features of each) is
// added one by one when missing, and VolumeAttributesClass is on, as csi-provisioner has it. The
// resizer's reading of that gate only decides whether its main builds the modify controller,
// which RunResizer does not build.
func init() {
	gates := map[featuregate.Feature]featuregate.FeatureSpec{
		epfeatures.Topology:                       {Default: true, PreRelease: featuregate.GA},
		epfeatures.CrossNamespaceVolumeDataSource: {Default: false, PreRelease: featuregate.Alpha},
		epfeatures.VolumeAttributesClass:          {Default: true, PreRelease: featuregate.GA},
		epfeatures.ReleaseLeaderElectionOnExit:    {Default: false, PreRelease: featuregate.Alpha},
		rzfeatures.AnnotateFsResize:               {Default: false, PreRelease: featuregate.Alpha},
		rzfeatures.RecoverVolumeExpansionFailure:  {Default: true, PreRelease: featuregate.Beta},
	}
	known := utilfeature.DefaultMutableFeatureGate.GetAll()
	for name, spec := range gates {
		if _, ok := known[name]; !ok {
			utilruntime.Must(utilfeature.DefaultMutableFeatureGate.Add(map[featuregate.Feature]featuregate.FeatureSpec{name: spec}))
		}
	}
	utilruntime.Must(utilfeature.DefaultMutableFeatureGate.SetFromMap(map[string]bool{string(epfeatures.VolumeAttributesClass): true}))
}

// ResizerOptions are the csi-resizer flags TopoLVM's chart sets, and the ones the sandbox
// changes.
type ResizerOptions struct {
	CSIAddress string // unix socket of the CSI controller service (--csi-address)
	// Timeout is --timeout (upstream default 10s): the deadline of each CSI call, among them
	// ControllerExpandVolume, which TopoLVM answers once the node has grown the logical volume.
	Timeout time.Duration
	// Connected, if set, is called once the gRPC connection to the CSI controller is up.
	Connected func()
}

// RunResizer runs csi-resizer's resize controller as its main does (external-resizer v1.14.0,
// cmd/csi-resizer/main.go) with TopoLVM's chart flags (charts/topolvm/templates/controller/
// deployment.yaml: --csi-address, --http-endpoint, --leader-election only): the flag defaults
// --resync-period=10m, --workers=10, --retry-interval-start=1s, --retry-interval-max=5m,
// --kube-api-qps=5, --kube-api-burst=10, --handle-volume-inuse-error=true and the default
// feature gates (RecoverVolumeExpansionFailure on: the PVC's allocatedResources and
// allocatedResourceStatuses are written). No leader election and no HTTP endpoint; the modify
// controller is not built since its gate (VolumeAttributesClass) is off by default, as is
// the CSI-migration client swap (topolvm.io is not a migrated in-tree driver).
//
// TopoLVM's own pin is external-resizer 2.1.0 (versions.mk); the module proxy does not serve
// github.com/kubernetes-csi/external-resizer/v2@v2.1.0's source, v1.14.0 builds with this module
// (see SANDBOX-NOTES).
func RunResizer(ctx context.Context, cfg *rest.Config, o ResizerOptions) error {
	if o.Timeout == 0 {
		o.Timeout = 10 * time.Second
	}
	const (
		resyncPeriod  = 10 * time.Minute
		workers       = 10
		retryStart    = time.Second
		retryMax      = 5 * time.Minute
		handleInUse   = true
		kubeAPIQPS    = 5
		kubeAPIBurstN = 10
	)
	config := rest.CopyConfig(cfg)
	config.QPS, config.Burst = kubeAPIQPS, kubeAPIBurstN
	config.ContentType = runtime.ContentTypeProtobuf
	kubeClient, err := kubernetes.NewForConfig(config)
	if err != nil {
		return err
	}
	informerFactory := informers.NewSharedInformerFactory(kubeClient, resyncPeriod)
	metricsManager := metrics.NewCSIMetricsManager("")
	// csi.New probes the driver until it answers (ProbeForever) and, as in csi-resizer, exits
	// the process when the connection is lost (ExitOnConnectionLoss), as external-provisioner's
	// connection does.
	csiClient, err := rzcsi.New(ctx, o.CSIAddress, o.Timeout, metricsManager)
	if err != nil {
		return fmt.Errorf("create CSI client: %w", err)
	}
	defer csiClient.CloseConnection()
	if o.Connected != nil {
		o.Connected()
	}
	nameCtx, cancel := context.WithTimeout(ctx, o.Timeout)
	driverName, err := csiClient.GetDriverName(nameCtx)
	cancel()
	if err != nil {
		return fmt.Errorf("get driver name: %w", err)
	}
	klog.V(2).InfoS("CSI driver name", "driverName", driverName)
	csiResizer, err := resizer.NewResizerFromClient(csiClient, o.Timeout, kubeClient, driverName)
	if err != nil {
		return fmt.Errorf("create CSI resizer: %w", err)
	}
	rc := rzcontroller.NewResizeController(csiResizer.Name(), csiResizer, kubeClient, resyncPeriod, informerFactory,
		workqueue.NewTypedItemExponentialFailureRateLimiter[string](retryStart, retryMax),
		handleInUse, retryMax)
	informerFactory.Start(ctx.Done())
	rc.Run(workers, ctx)
	return ctx.Err()
}
