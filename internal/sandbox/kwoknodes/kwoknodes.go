// Package kwoknodes makes Node objects annotated kwok.x-k8s.io/node=fake
// behave like nodes with a kubelet: KWOK's controllers (sigs.k8s.io/kwok)
// initialise them, keep their leases and heartbeats, and move their Pods to
// Running/Ready; this package's terminator removes deleted Pods once their
// grace period is over, like a kubelet does. KubeletHandler is the nodes' kubelet
// endpoint (pods/log), with container logs played from Pod annotations (LogAnnotation,
// CopyBytesAnnotation: podlogs.go).
package kwoknodes

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
	"sigs.k8s.io/kwok/pkg/apis/internalversion"
	"sigs.k8s.io/kwok/pkg/client/clientset/versioned"
	"sigs.k8s.io/kwok/pkg/config"
	"sigs.k8s.io/kwok/pkg/kwok/controllers"
	"sigs.k8s.io/kwok/pkg/log"
	"sigs.k8s.io/kwok/pkg/utils/client"

	nodefast "sigs.k8s.io/kwok/kustomize/stage/node/fast"
	nodeheartbeat "sigs.k8s.io/kwok/kustomize/stage/node/heartbeat-with-lease"
	podfast "sigs.k8s.io/kwok/kustomize/stage/pod/fast"

	"github.com/olapgke/terraform-provider-olapgke/internal/sandbox/controlplane"
)

const (
	// Annotation selects the nodes KWOK manages (set by the GKE emulator).
	Annotation = "kwok.x-k8s.io/node"
	// AnnotationValue is the value of Annotation on simulated nodes.
	AnnotationValue = "fake"
	// ExitAfterSigtermAnnotation on a Pod makes its simulated containers exit
	// this long (a Go duration) after deletion instead of using the whole
	// grace period, like an application that handles SIGTERM.
	ExitAfterSigtermAnnotation = "sandbox.olapgke.io/exit-after-sigterm"
)

// Options configure Start.
type Options struct {
	// Kubeconfig is the path of an admin kubeconfig (KWOK builds its clients
	// from a file).
	Kubeconfig string
	// Server, when set, is the API server URL KWOK's clients use instead of the kubeconfig's,
	// with the kubeconfig's credentials: the control plane's internal port
	// (controlplane.UseInternalServer).
	Server string
	// Log receives KWOK's log (nil: discarded).
	Log io.Writer
	// Verbosity follows klog levels: 0-1 warnings only, 2-3 info, 4+ debug.
	Verbosity int
	// PodCIDR is the range Pod IPs come from (default 10.244.0.0/16).
	PodCIDR string
	// ReadyAfter is how long every Pod's containers run before it is Ready (world pods.readyAfter;
	// 0: at once). A Pod's ReadyAfterAnnotation overrides it (podstages.go).
	ReadyAfter time.Duration
	// WaitForVolumes: a Pod with claims becomes Running and Ready only once it carries
	// VolumesMountedAnnotation (gatePodReadyOnVolumes). Set when real TopoLVM's kubelet volume
	// manager runs (up --topolvm real); the simulator mounts nothing.
	WaitForVolumes bool
	// Nodes is how many nodes the world seeds: KWOK's lease and node-stage workers and the
	// Lease duration follow it (workersFor, leaseSecondsFor).
	Nodes int
}

// workersFor is how many KWOK workers renew leases and play node stages for a world of nodes,
// and leaseSecondsFor how long its node Leases last (KWOK renews them at a quarter of that, as
// the kubelet does): 4 workers and 40 s (the kubelet's default: a renewal every 10 s) up to
// 1,000 nodes, every suite's worlds. Above, one more worker per 250 nodes and 120 s Leases (a
// renewal every 30 s, still well inside the node lifecycle controller's 50 s grace): at 5,000
// nodes, 500 renewals a second, each waiting for the API server's answer, did not keep up on a
// loaded 2-core machine, and the leases aged past that grace, so nodes went Unknown while
// others started and the world never was all Ready (make bench's large-tier world). Only the
// scale worlds diverge from the kubelet's interval; no test judges lease timing there.
func workersFor(nodes int) uint {
	return uint(max(4, nodes/250))
}

func leaseSecondsFor(nodes int) uint {
	if nodes > 1000 {
		return 120
	}
	return 40
}

// Start starts KWOK and the Pod terminator; both run until ctx is done.
func Start(ctx context.Context, o Options) error {
	if o.PodCIDR == "" {
		o.PodCIDR = "10.244.0.0/16"
	}
	level := log.LevelWarn
	switch {
	case o.Verbosity >= 4:
		level = log.LevelDebug
	case o.Verbosity >= 2:
		level = log.LevelInfo
	}
	ctx = log.NewContext(ctx, log.NewLogger(o.Log, level))

	stages, err := localStages()
	if err != nil {
		return err
	}
	if err := addPodStages(stages, o.ReadyAfter); err != nil {
		return err
	}
	if o.WaitForVolumes {
		if err := gatePodReadyOnVolumes(stages); err != nil {
			return err
		}
	}

	clientset, err := client.NewClientset("", o.Kubeconfig)
	if err != nil {
		return err
	}
	restConfig, err := clientset.ToRESTConfig()
	if err != nil {
		return err
	}
	// KWOK's requests in the API server's log (-v 3), as the controller manager's name theirs.
	// The clientset builds its dynamic client and REST mapper later, from this same config.
	rest.AddUserAgent(restConfig, "kwok")
	if o.Server != "" {
		controlplane.UseInternalServer(restConfig, o.Server)
	}
	dynamicClient, err := clientset.ToDynamicClient()
	if err != nil {
		return err
	}
	restMapper, err := clientset.ToRESTMapper()
	if err != nil {
		return err
	}
	restClient, err := rest.RESTClientFor(restConfig)
	if err != nil {
		return err
	}
	// KWOK's typed client watches every managed Node, Pod and Lease: protobuf
	// (as the control plane's components use) instead of the kubeconfig's
	// JSON roughly halves what decoding those events costs with hundreds of
	// nodes. The dynamic and REST clients stay JSON (unstructured, OpenAPI).
	typedConfig := rest.CopyConfig(restConfig)
	typedConfig.ContentType = "application/vnd.kubernetes.protobuf"
	typedConfig.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	typedClient, err := kubernetes.NewForConfig(typedConfig)
	if err != nil {
		return err
	}
	kwokClient, err := versioned.NewForConfig(restConfig)
	if err != nil {
		return err
	}

	ctr, err := controllers.NewController(controllers.Config{
		Clock:                             clock.RealClock{},
		DynamicClient:                     dynamicClient,
		RESTClient:                        restClient,
		RESTMapper:                        restMapper,
		ImpersonatingDynamicClient:        clientset.ToImpersonatingDynamicClient(),
		ImpersonatingTypedClient:          clientset.ToImpersonatingTypedClient(),
		TypedClient:                       typedClient,
		TypedKwokClient:                   kwokClient,
		ManageNodesWithAnnotationSelector: Annotation + "=" + AnnotationValue,
		CIDR:                              o.PodCIDR,
		NodeIP:                            "10.128.0.1",
		PodPlayStageParallelism:           4,
		NodePlayStageParallelism:          workersFor(o.Nodes),
		NodeLeaseDurationSeconds:          leaseSecondsFor(o.Nodes),
		NodeLeaseParallelism:              workersFor(o.Nodes),
		PodsOnNodeSyncParallelism:         2,
		EnablePodsOnNodeSyncListPager:     true,
		LocalStages:                       stages,
		ID:                                "olapgke-sandbox",
	})
	if err != nil {
		return fmt.Errorf("create KWOK controller: %w", err)
	}
	if err := ctr.Start(ctx); err != nil {
		return fmt.Errorf("start KWOK controller: %w", err)
	}
	return startTerminator(ctx, typedClient)
}

// nodeHeartbeatKeepingDiskPressure is KWOK's heartbeat-with-lease stage
// (kwok v0.8.0 kustomize/stage/node/heartbeat-with-lease, nodeheartbeat.
// DefaultNodeHeartbeatWithLease) with one change: a DiskPressure condition
// that is True stays as it is (only its heartbeat time moves). KWOK's stage
// rewrites every condition from its fixed healthy set (NodeConditions), which
// would undo the DiskPressure that the sandbox's kubelet eviction shim
// (internal/sandbox/gke disk.go) posts; a kubelet's own heartbeat reports
// its eviction manager's state instead. TestHeartbeatStage holds the rest of
// the template to KWOK's.
var nodeHeartbeatKeepingDiskPressure = strings.Replace(nodeheartbeat.DefaultNodeHeartbeatWithLease,
	heartbeatConditions, heartbeatConditionsKeepingDiskPressure, 1)

const heartbeatConditions = `      conditions:
      {{ range NodeConditions }}
      - lastHeartbeatTime: {{ $now | Quote }}
        lastTransitionTime: {{ $lastTransitionTime | Quote }}
        message: {{ .message | Quote }}
        reason: {{ .reason | Quote }}
        status: {{ .status | Quote }}
        type: {{ .type | Quote }}
      {{ end }}
`

const heartbeatConditionsKeepingDiskPressure = `      {{ $disk := dict }}
      {{ range .status.conditions }}
      {{ if and (eq .type "DiskPressure") (eq .status "True") }}{{ $disk = . }}{{ end }}
      {{ end }}
      conditions:
      {{ range NodeConditions }}
      {{ if and $disk (eq .type "DiskPressure") }}
      - lastHeartbeatTime: {{ $now | Quote }}
        lastTransitionTime: {{ $disk.lastTransitionTime | Quote }}
        message: {{ $disk.message | Quote }}
        reason: {{ $disk.reason | Quote }}
        status: {{ $disk.status | Quote }}
        type: {{ .type | Quote }}
      {{ else }}
      - lastHeartbeatTime: {{ $now | Quote }}
        lastTransitionTime: {{ $lastTransitionTime | Quote }}
        message: {{ .message | Quote }}
        reason: {{ .reason | Quote }}
        status: {{ .status | Quote }}
        type: {{ .type | Quote }}
      {{ end }}
      {{ end }}
`

// localStages returns the KWOK stages the sandbox plays: KWOK's own "fast"
// node initialisation, heartbeat with lease (keeping a DiskPressure condition
// the eviction shim set), Pod ready and Job Pod complete.
// KWOK's pod-delete stage is left out on purpose: it deletes by name, so a
// delayed delete can remove a recreated StatefulSet Pod of the same name;
// the terminator in this package keys deletions on UID instead.
func localStages() (map[internalversion.StageResourceRef][]*internalversion.Stage, error) {
	out := map[internalversion.StageResourceRef][]*internalversion.Stage{}
	for _, raw := range []string{
		nodefast.DefaultNodeInit,
		nodeHeartbeatKeepingDiskPressure,
		podfast.DefaultPodReady,
		podfast.DefaultPodComplete,
	} {
		s, err := config.UnmarshalWithType[*internalversion.Stage](raw)
		if err != nil {
			return nil, fmt.Errorf("parse KWOK stage: %w", err)
		}
		out[s.Spec.ResourceRef] = append(out[s.Spec.ResourceRef], s)
	}
	return out, nil
}
