package topolvmreal

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/kubernetes-csi/csi-lib-utils/metrics"
	"github.com/kubernetes-csi/external-provisioner/v6/pkg/capacity"
	"github.com/kubernetes-csi/external-provisioner/v6/pkg/capacity/topology"
	epctrl "github.com/kubernetes-csi/external-provisioner/v6/pkg/controller"
	snapclientset "github.com/kubernetes-csi/external-snapshotter/client/v8/clientset/versioned"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/workqueue"
	csitrans "k8s.io/csi-translation-lib"
	"sigs.k8s.io/sig-storage-lib-external-provisioner/v13/controller"
)

// ProvisionerOptions are the csi-provisioner flags TopoLVM's chart sets, and the ones the
// sandbox changes.
type ProvisionerOptions struct {
	CSIAddress string // unix socket of the CSI controller service
	// Namespace holds the CSIStorageCapacity objects (csi-provisioner's NAMESPACE env).
	Namespace string
	// CapacityPollInterval is --capacity-poll-interval (upstream default 1m).
	CapacityPollInterval time.Duration
	// CapacityQPS and CapacityBurst are --kube-api-capacity-qps/-burst (upstream defaults 1, 5):
	// the CSIStorageCapacity client's rate limit.
	CapacityQPS   float32
	CapacityBurst int
	// OperationTimeout is --timeout (upstream default 10s): the CreateVolume deadline.
	OperationTimeout time.Duration
	// Connected, if set, is called once the gRPC connection to the CSI controller is up and the
	// provision controller is built. Building it registers core/v1 in client-go's global scheme
	// again (sig-storage-lib-external-provisioner v13 controller/controller.go,
	// NewProvisionController: v1.AddToScheme(scheme.Scheme)), a map write: nothing else in the
	// process may decode with that scheme until then (csi-provisioner's own process has no other
	// component; here the resizer's and the kubelet stand-ins' informers do, so they start after).
	Connected func()
}

// RunProvisioner runs csi-provisioner's controllers as its main does
// (cmd/csi-provisioner/csi-provisioner.go) with TopoLVM's chart flags: --feature-gates=Topology=true
// (always on in v6), --enable-capacity; no leader election, no metrics endpoint, and no owner for
// the CSIStorageCapacity objects (--capacity-ownerref-level=-1: there is no Deployment to own
// them). The snapshot finalizer controller is not run (no snapshot CRDs in the sandbox).
func RunProvisioner(ctx context.Context, cfg *rest.Config, o ProvisionerOptions) error {
	if o.CapacityPollInterval == 0 {
		o.CapacityPollInterval = time.Minute
	}
	if o.CapacityQPS == 0 {
		o.CapacityQPS = 1
	}
	if o.CapacityBurst == 0 {
		o.CapacityBurst = 5
	}
	if o.OperationTimeout == 0 {
		o.OperationTimeout = 10 * time.Second
	}
	coreConfig := rest.CopyConfig(cfg)
	coreConfig.ContentType = runtime.ContentTypeProtobuf
	clientset, err := kubernetes.NewForConfig(coreConfig)
	if err != nil {
		return err
	}
	snapClient, err := snapclientset.NewForConfig(cfg)
	if err != nil {
		return err
	}
	mm := metrics.NewCSIMetricsManagerWithOptions("", metrics.WithProcessStartTime(false), metrics.WithSubsystem(metrics.SubsystemSidecar))
	grpcClient, err := epctrl.Connect(ctx, o.CSIAddress, mm)
	if err != nil {
		return fmt.Errorf("connect to the CSI controller: %w", err)
	}
	defer grpcClient.Close()
	if err := epctrl.Probe(ctx, grpcClient, o.OperationTimeout); err != nil {
		return err
	}
	provisionerName, err := epctrl.GetDriverName(grpcClient, o.OperationTimeout)
	if err != nil {
		return err
	}
	mm.SetDriverName(provisionerName)
	pluginCaps, controllerCaps, err := epctrl.GetDriverCapabilities(grpcClient, o.OperationTimeout)
	if err != nil {
		return err
	}
	if !epctrl.SupportsTopology(pluginCaps) {
		return fmt.Errorf("CSI driver %s does not report VOLUME_ACCESSIBILITY_CONSTRAINTS", provisionerName)
	}
	identity := strconv.FormatInt(time.Now().UnixMilli(), 10) + "-olapgke-" + provisionerName

	factory := informers.NewSharedInformerFactory(clientset, epctrl.ResyncPeriodOfCsiNodeInformer)
	scLister := factory.Storage().V1().StorageClasses().Lister()
	claimLister := factory.Core().V1().PersistentVolumeClaims().Lister()
	csiNodeLister := factory.Storage().V1().CSINodes().Lister()
	nodeLister := factory.Core().V1().Nodes().Lister()
	claimInformer := factory.Core().V1().PersistentVolumeClaims().Informer()

	retryStart, retryMax := time.Second, 5*time.Minute
	provisionerOptions := []func(*controller.ProvisionController) error{
		controller.LeaderElection(false),
		controller.FailedProvisionThreshold(0),
		controller.FailedDeleteThreshold(0),
		controller.RateLimiter(workqueue.NewTypedItemExponentialFailureRateLimiter[string](retryStart, retryMax)),
		controller.Threadiness(100),
		controller.CreateProvisionedPVLimiter(workqueue.DefaultTypedControllerRateLimiter[string]()),
		controller.ClaimsInformer(claimInformer),
		controller.RetryIntervalMax(retryMax),
		controller.AddFinalizer(true),
	}
	translator := csitrans.New()
	csiProvisioner := epctrl.NewCSIProvisioner(
		clientset, o.OperationTimeout, identity, "pvc", -1, grpcClient, snapClient,
		provisionerName, pluginCaps, controllerCaps, "",
		false, // --strict-topology
		true,  // --immediate-topology
		translator, scLister, csiNodeLister, nodeLister, claimLister,
		nil, // VolumeAttachment lister: TopoLVM has no PUBLISH_UNPUBLISH_VOLUME
		nil, // ReferenceGrant lister: CrossNamespaceVolumeDataSource is off
		false, "", nil, false, true,
		epctrl.NewInMemoryStore(),
	)

	// Storage capacity tracking (--enable-capacity), central (not per-node) deployment.
	capConfig := rest.CopyConfig(cfg)
	capConfig.QPS, capConfig.Burst = o.CapacityQPS, o.CapacityBurst
	capClientset, err := kubernetes.NewForConfig(capConfig)
	if err != nil {
		return err
	}
	topologyInformer := topology.NewNodeTopology(provisionerName, capClientset,
		factory.Core().V1().Nodes(), factory.Storage().V1().CSINodes(),
		workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.NewTypedItemExponentialFailureRateLimiter[string](retryStart, retryMax),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "csitopology"}))
	const managedByID = "external-provisioner"
	factoryForNamespace := informers.NewSharedInformerFactoryWithOptions(capClientset, epctrl.ResyncPeriodOfCsiNodeInformer,
		informers.WithNamespace(o.Namespace),
		informers.WithTweakListOptions(func(lo *metav1.ListOptions) {
			lo.LabelSelector = labels.Set{capacity.DriverNameLabel: provisionerName, capacity.ManagedByLabel: managedByID}.AsSelector().String()
		}))
	capacityController := capacity.NewCentralCapacityController(
		csi.NewControllerClient(grpcClient), provisionerName, capacity.NewV1ClientFactory(capClientset),
		workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.NewTypedItemExponentialFailureRateLimiter[capacity.QueueKey](retryStart, retryMax),
			workqueue.TypedRateLimitingQueueConfig[capacity.QueueKey]{Name: "csistoragecapacity"}),
		nil, managedByID, o.Namespace, topologyInformer,
		factory.Storage().V1().StorageClasses(), factoryForNamespace.Storage().V1().CSIStorageCapacities(),
		o.CapacityPollInterval, false, o.OperationTimeout,
	)
	csiProvisioner = capacity.NewProvisionWrapper(csiProvisioner, capacityController)

	provisionController := controller.NewProvisionController(ctx, clientset, provisionerName, csiProvisioner, provisionerOptions...)
	if o.Connected != nil {
		o.Connected()
	}
	claimQueue := workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.NewTypedItemExponentialFailureRateLimiter[string](retryStart, retryMax),
		workqueue.TypedRateLimitingQueueConfig[string]{Name: "claims"})
	cloning := epctrl.NewCloningProtectionController(clientset, claimLister, claimInformer, claimQueue, controllerCaps)

	factory.Start(ctx.Done())
	factoryForNamespace.Start(ctx.Done())
	go topologyInformer.RunWorker(ctx)
	for typ, ok := range factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			return fmt.Errorf("informer for %v did not sync", typ)
		}
	}
	go capacityController.Run(ctx, 1, nil)
	go cloning.Run(ctx, 1, nil)
	provisionController.Run(ctx)
	return ctx.Err()
}
