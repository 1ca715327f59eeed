// Command olapgke-topolvm runs TopoLVM v0.41.0 (controller and, per sandbox node, node service
// over an in-memory lvmd) and external-provisioner v6.3.0 in one process against the olapgke
// sandbox's API server. `olapgke-sandbox up --topolvm real` starts it; see
// internal/sandbox/README.md "Real TopoLVM (experimental)".
package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/pprof"
	"syscall"
	"time"

	"golang.org/x/sync/errgroup"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/olapgke/terraform-provider-olapgke/internal/sandbox/topolvmreal"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "olapgke-topolvm:", err)
		os.Exit(1)
	}
}

func run() error {
	kfs := flag.NewFlagSet("klog", flag.ExitOnError)
	klog.InitFlags(kfs)
	// Own flag set: controller-runtime registers --kubeconfig on flag.CommandLine.
	fs := flag.NewFlagSet("olapgke-topolvm", flag.ExitOnError)
	var (
		kubeconfig    = fs.String("kubeconfig", os.Getenv("KUBECONFIG"), "kubeconfig of the cluster (the sandbox's admin kubeconfig; no exec credential plugins: the process runs with an empty PATH, see noMounterProbe)")
		server        = fs.String("server", "", "API server URL to use instead of the kubeconfig's, with the kubeconfig's credentials (the sandbox passes its API server's plain-HTTP loopback port, which a kubeconfig cannot name with credentials: client-go reads none for a server without TLS)")
		namespace     = fs.String("namespace", "topolvm-system", "TopoLVM's namespace: the lvmd ConfigMap and the CSIStorageCapacity objects")
		configMap     = fs.String("configmap", "topolvm-lvmd-0", "the lvmd ConfigMap")
		key           = fs.String("key", "lvmd.yaml", "the lvmd ConfigMap's key")
		socketDir     = fs.String("socket-dir", "", "directory for the CSI and lvmd unix sockets (default: a new directory in /dev/shm, else in $TMPDIR)")
		capacityPoll  = fs.Duration("capacity-poll-interval", time.Minute, "external-provisioner's --capacity-poll-interval")
		capacityQPS   = fs.Float64("kube-api-capacity-qps", 1, "external-provisioner's --kube-api-capacity-qps (rate of CSIStorageCapacity writes)")
		capacityBurst = fs.Int("kube-api-capacity-burst", 5, "external-provisioner's --kube-api-capacity-burst")
		timeout       = fs.Duration("timeout", 10*time.Second, "external-provisioner's --timeout (CreateVolume deadline)")
		lvmdStart     = fs.Duration("lvmd-start-delay", 0, "per node: time from the node agent's start (its DaemonSet Pod) until lvmd serves")
		csiReg        = fs.Duration("csi-registration-delay", 0, "per node: time from the node plugin serving until the kubelet registered it (topology label, CSINode)")
		verbosity     = fs.String("v", "0", "klog verbosity")
		mountRecord   = fs.String("mount-record", "", "file recording the kubelets' NodePublishVolume/NodeUnpublishVolume calls and the mkfs/mount/blkid stand-ins' command lines (default: mounts.log in the socket directory)")
		cpuProfile    = fs.String("cpuprofile", os.Getenv("OLAPGKE_TOPOLVM_CPUPROFILE"), "write a CPU profile (go tool pprof) to this file until exit (default $OLAPGKE_TOPOLVM_CPUPROFILE)")
	)
	_ = fs.Parse(os.Args[1:])
	_ = kfs.Set("v", *verbosity)
	ctrl.SetLogger(klog.NewKlogr())
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	if *kubeconfig == "" {
		return fmt.Errorf("--kubeconfig is required")
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		return err
	}
	if *server != "" {
		useServer(cfg, *server)
	}
	cfg.QPS, cfg.Burst = 50, 100
	if *socketDir == "" {
		// unix socket paths are limited to 108 bytes: keep the directory short. A tmpfs
		// (/dev/shm) when there is one: 500 node agents create a directory and two sockets
		// each at start, ~35x slower on this machine's ext4 /tmp (~0.8 s of a 500-node start-up).
		d, err := os.MkdirTemp("/dev/shm", "otl-")
		if err != nil {
			d, err = os.MkdirTemp("", "otl-")
		}
		if err != nil {
			return err
		}
		defer os.RemoveAll(d)
		*socketDir = d
	}
	if *mountRecord == "" {
		*mountRecord = filepath.Join(*socketDir, "mounts.log")
	}
	if err := noMounterProbe(*socketDir, *mountRecord); err != nil {
		return err
	}
	sigCtx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx := sigCtx

	start := time.Now()
	if err := topolvmreal.InstallCRD(ctx, cfg); err != nil {
		return err
	}
	klog.InfoS("LogicalVolume CRD established", "elapsed", time.Since(start).String())
	controllerSock := filepath.Join(*socketDir, "csi-topolvm.sock")
	g, ctx := errgroup.WithContext(ctx)
	controller, err := topolvmreal.NewController(cfg, controllerSock)
	if err != nil {
		return fmt.Errorf("topolvm-controller: %w", err)
	}
	g.Go(func() error { return wrap("topolvm-controller", controller.Run(ctx)) })
	// The sidecars connect to the controller before the node agents start. Their connection
	// (csi-lib-utils Connect) gives the HTTP/2 handshake 1 s (grpc-go takes the backoff's base
	// delay as the dial deadline when MinConnectTimeout is 0) and takes a second dial for a lost
	// connection, on which both sidecars exit (ExitOnConnectionLoss). With 500 node agents
	// starting in this one process, the controller's gRPC server can wait longer than that for
	// a CPU; on a cluster the sidecars and the driver run in containers of their own.
	if err := topolvmreal.WaitSocket(ctx, controllerSock, time.Minute); err != nil {
		g.Go(func() error { return err })
	} else if startSidecars(ctx, g, cfg, controllerSock, sidecarOptions{
		namespace: *namespace, capacityPoll: *capacityPoll, timeout: *timeout,
		capacityQPS: float32(*capacityQPS), capacityBurst: *capacityBurst,
	}) {
		klog.InfoS("CSI sidecars connected", "elapsed", time.Since(start).String())
		g.Go(func() error { return wrap("kubelet expansion shim", topolvmreal.RunKubeletExpansion(ctx, cfg)) })
		g.Go(func() error {
			return wrap("kubelet volume manager", topolvmreal.RunKubeletVolumes(ctx, cfg, topolvmreal.KubeletVolumeOptions{
				SocketDir: *socketDir, Record: *mountRecord,
			}))
		})
		g.Go(func() error {
			return wrap("topolvm-node agents", topolvmreal.RunNodes(ctx, cfg, topolvmreal.NodeOptions{
				Namespace: *namespace, ConfigMapName: *configMap, Key: *key, SocketDir: *socketDir,
				LvmdStart: *lvmdStart, CSIRegistration: *csiReg, ControllerNodes: controller.Nodes(),
			}))
		})
	}
	err = g.Wait()
	if sigCtx.Err() != nil {
		return nil // stopped by a signal: components end with context errors or "stopped"
	}
	return err
}

type sidecarOptions struct {
	namespace             string
	capacityPoll, timeout time.Duration
	capacityQPS           float32
	capacityBurst         int
}

// startSidecars starts csi-provisioner, then csi-resizer, in g and reports whether both
// connected to the CSI controller (false: ctx ended first, g.Wait has the cause). The resizer
// starts once the provisioner is built: building it writes client-go's global scheme, which the
// resizer's informers read (topolvmreal.ProvisionerOptions.Connected).
func startSidecars(ctx context.Context, g *errgroup.Group, cfg *rest.Config, controllerSock string, o sidecarOptions) bool {
	wait := func(ready chan struct{}) bool {
		select {
		case <-ready:
			return true
		case <-ctx.Done():
			return false
		}
	}
	provisioned := make(chan struct{})
	g.Go(func() error {
		return wrap("csi-provisioner", topolvmreal.RunProvisioner(ctx, cfg, topolvmreal.ProvisionerOptions{
			CSIAddress: "unix://" + controllerSock, Namespace: o.namespace,
			CapacityPollInterval: o.capacityPoll, OperationTimeout: o.timeout,
			CapacityQPS: o.capacityQPS, CapacityBurst: o.capacityBurst,
			Connected: func() { close(provisioned) },
		}))
	})
	if !wait(provisioned) {
		return false
	}
	resized := make(chan struct{})
	g.Go(func() error {
		return wrap("csi-resizer", topolvmreal.RunResizer(ctx, cfg, topolvmreal.ResizerOptions{
			CSIAddress: "unix://" + controllerSock, Connected: func() { close(resized) },
		}))
	})
	return wait(resized)
}

func wrap(what string, err error) error {
	if err == nil {
		return fmt.Errorf("%s stopped", what)
	}
	return fmt.Errorf("%s: %w", what, err)
}

// noMounterProbe keeps TopoLVM's node server from running umount once per node agent, and puts
// the recording stand-ins for mkfs, mount, blkid and the rest on PATH (topolvmreal.WriteStandIns,
// recording into record). driver.NewNodeServer builds a mount-utils mounter (mountutil.New),
// which probes umount's behaviour on construction: it makes a temporary directory and runs
// `umount DIR` (k8s.io/mount-utils mount_linux.go, detectSafeNotMountedBehavior). A topolvm-node
// Pod does that once; this process does it for every node agent it starts, and at 500 nodes
// those umount processes took about 3 s of CPU (their own, which this process's CPU figures do
// not include) out of a start-up that keeps both cores busy. So PATH is only the stand-ins'
// directory, which has no umount: the probe fails at the lookup, without a fork, and records
// "unsafe not-mounted behaviour", which only unmounting reads, and nothing is ever mounted (the
// mount stand-in records and changes nothing). The process runs no other program than the
// stand-ins (and the real /sbin/blkid, by absolute path). Its temporary directories go to dir
// (the socket directory, a tmpfs where there is one).
func noMounterProbe(dir, record string) error {
	bin := filepath.Join(dir, "bin")
	if err := topolvmreal.WriteStandIns(bin, record); err != nil {
		return err
	}
	if err := os.Setenv("PATH", bin); err != nil {
		return err
	}
	return os.Setenv("TMPDIR", dir)
}

// useServer points cfg at server (the sandbox's plain-HTTP loopback port) with cfg's
// credentials, as the sandbox's controlplane.UseInternalServer does (a module this one does
// not import): client-go's defaults for a config without TLS would be http.DefaultTransport,
// which keeps 2 idle connections per host and asks for gzip. 500 node agents have a few hundred
// requests open at once, each needing a connection over HTTP/1.1.
func useServer(cfg *rest.Config, server string) {
	cfg.Host = server
	cfg.TLSClientConfig = rest.TLSClientConfig{}
	cfg.Transport = utilnet.SetTransportDefaults(&http.Transport{
		DialContext:         (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConnsPerHost: 1024,
		DisableCompression:  true,
	})
}
