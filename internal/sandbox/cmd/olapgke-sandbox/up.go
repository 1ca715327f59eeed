package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"log/slog"
	"math"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"runtime/pprof"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	"github.com/olapgke/terraform-provider-olapgke/internal/sandbox/controlplane"
	"github.com/olapgke/terraform-provider-olapgke/internal/sandbox/gke"
	"github.com/olapgke/terraform-provider-olapgke/internal/sandbox/kwoknodes"
	"github.com/olapgke/terraform-provider-olapgke/internal/sandbox/topolvm"
	"github.com/olapgke/terraform-provider-olapgke/internal/sandbox/world"
)

type upFlags struct {
	stateDir     string
	config       string
	verbosity    int
	readyTimeout time.Duration
	kubeVersion  string
	capacityPoll string
	topolvm      string // "sim" (the simulator goroutine) or "real" (olapgke-topolvm subprocess)
	topolvmBin   string
	// nodeGrace is kube-controller-manager's --node-monitor-grace-period (0: its default).
	nodeGrace time.Duration
}

func up(args []string) error {
	var f upFlags
	fs := flag.NewFlagSet("up", flag.ContinueOnError)
	fs.StringVar(&f.stateDir, "state-dir", "", "directory for kubeconfig, env, ready marker, logs and etcd data (required)")
	fs.StringVar(&f.config, "config", "", "world config YAML (default: the default world)")
	fs.IntVar(&f.verbosity, "v", 0, "log verbosity of DIR/sandbox.log (klog levels; 2 is chatty, 4 is debug)")
	fs.DurationVar(&f.readyTimeout, "ready-timeout", 5*time.Minute, "how long to wait for the seeded world to become ready")
	fs.StringVar(&f.capacityPoll, "capacity-poll", os.Getenv("OLAPGKE_SANDBOX_CAPACITY_POLL"), "--topolvm real: external-provisioner's capacity poll interval, overriding the world's topolvm.bringUp.capacityPoll (default $OLAPGKE_SANDBOX_CAPACITY_POLL; test suites use a short one: capacity freed by deleted volumes is published only at the next poll)")
	fs.StringVar(&f.kubeVersion, "kubernetes-version", "", fmt.Sprintf("Kubernetes minor the control plane emulates, one of %v (default: the world file's kubernetesVersion, else %s)", controlplane.Versions, controlplane.BinaryMinor()))
	fs.StringVar(&f.topolvm, "topolvm", envOr("OLAPGKE_SANDBOX_TOPOLVM", "real"), `TopoLVM: "real" (TopoLVM's, external-provisioner's and external-resizer's own code, the olapgke-topolvm binary) or "sim" (the sandbox's in-process simulator, kept for speed; see DESIGN.md) (default $OLAPGKE_SANDBOX_TOPOLVM, else real)`)
	fs.StringVar(&f.topolvmBin, "topolvm-bin", os.Getenv("OLAPGKE_TOPOLVM_BIN"), "path of olapgke-topolvm for --topolvm real (default $OLAPGKE_TOPOLVM_BIN, else olapgke-topolvm next to this binary, else on PATH; make sandbox-bin builds both)")
	// make bench's large-tier cell (5,000 KWOK nodes on 2 cores) sets it: KWOK's Lease renewals
	// there lag by more than the default 50 s under the load of start-up and of 1,000 Pods, the
	// node lifecycle controller then marks nodes Unknown and taints them, and the world never is
	// all Ready (kwoknodes.workersFor). The cell measures the provider's plan, not node
	// heartbeats; every other world keeps the default.
	fs.DurationVar(&f.nodeGrace, "node-monitor-grace-period", 0, "kube-controller-manager's --node-monitor-grace-period (0: its default, 50s): how long a node's Lease may go unrenewed before the node is marked Unknown; only for scale worlds whose KWOK heartbeats lag on a small machine (make bench's large cell)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if f.topolvm != "sim" && f.topolvm != "real" {
		return fmt.Errorf("up: --topolvm must be real or sim, not %q", f.topolvm)
	}
	if f.topolvm == "real" {
		bin, err := findTopoLVMBin(f.topolvmBin)
		if err != nil {
			return err
		}
		f.topolvmBin = bin
	}
	if f.stateDir == "" {
		return errors.New("up: --state-dir is required")
	}
	dir, err := filepath.Abs(f.stateDir)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	lock, err := lockStateDir(dir)
	if err != nil {
		return err
	}
	defer lock.release()
	// Left over from an earlier run: nobody may read them as this run's.
	for _, name := range []string{"ready", "env", "kubeconfig"} {
		if err := os.Remove(filepath.Join(dir, name)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}

	w := world.Default()
	if f.config != "" {
		if w, err = world.Load(f.config); err != nil {
			return err
		}
	}

	if f.capacityPoll != "" {
		d, err := time.ParseDuration(f.capacityPoll)
		if err != nil || d <= 0 {
			return fmt.Errorf("up: --capacity-poll %q: want a positive Go duration (e.g. 2s)", f.capacityPoll)
		}
		w.TopoLVM.BringUp.CapacityPoll = &metav1.Duration{Duration: d}
	}
	if f.kubeVersion != "" {
		w.KubernetesVersion = f.kubeVersion
		if err := w.Validate(); err != nil {
			return err
		}
	}

	logFile, err := os.OpenFile(filepath.Join(dir, "sandbox.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer logFile.Close()
	slogger := setupLogging(logFile, f.verbosity)

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()

	start := time.Now()
	// Start-up allocates a lot of short-lived memory (API server storage and
	// OpenAPI setup, informer lists). With 500 nodes, GOGC 200 took about 7%
	// less CPU than the default for a peak of ~750 MiB instead of ~570 MiB
	// (GOGC 400: 15% less, but ~900 MiB, too close to the 1 GiB budget); the
	// soft limit is only a safety net. Steady state goes back to the
	// defaults. GOGC/GOMEMLIMIT, if set, win.
	tuneGC := os.Getenv("GOGC") == "" && os.Getenv("GOMEMLIMIT") == ""
	if tuneGC {
		debug.SetGCPercent(200)
		debug.SetMemoryLimit(900 << 20)
	}
	stopProfile, err := startCPUProfile(os.Getenv("OLAPGKE_SANDBOX_CPUPROFILE"))
	if err != nil {
		return err
	}
	sb, err := startSandbox(ctx, dir, w, logFile, slogger, f)
	stopProfile()
	if sb != nil {
		defer sb.shutdown()
	}
	if err != nil {
		klog.ErrorS(err, "sandbox failed to start")
		return fmt.Errorf("%w (log: %s)", err, logFile.Name())
	}
	if tuneGC {
		debug.SetGCPercent(100)
		debug.SetMemoryLimit(math.MaxInt64)
	}
	if err := writeOutputs(dir, w, sb); err != nil {
		return err
	}
	klog.InfoS("sandbox ready", "elapsed", time.Since(start).String(), "cpu", cpuTime().String(), "apiserver", sb.cp.Endpoint, "gke", sb.gkeAddr)
	fmt.Printf("olapgke-sandbox ready in %s: KUBECONFIG=%s, env in %s\n",
		time.Since(start).Round(time.Millisecond), filepath.Join(dir, "kubeconfig"), filepath.Join(dir, "env"))

	var runErr error
	select {
	case <-ctx.Done():
		klog.InfoS("signal received, shutting down")
	case runErr = <-sb.cp.Err():
		klog.ErrorS(runErr, "control plane component stopped")
	case runErr = <-sb.errCh:
		klog.ErrorS(runErr, "sandbox component stopped")
	}
	// The ready marker goes first: from here on nobody should use this sandbox.
	if err := os.Remove(filepath.Join(dir, "ready")); err != nil && !errors.Is(err, os.ErrNotExist) {
		klog.ErrorS(err, "remove ready marker")
	}
	return runErr
}

// setupLogging sends klog (all Kubernetes components), the standard logger
// and slog (GKE emulator) to the log file; nothing goes to the terminal.
func setupLogging(w io.Writer, verbosity int) *slog.Logger {
	kfs := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(kfs)
	_ = kfs.Set("logtostderr", "false")
	_ = kfs.Set("alsologtostderr", "false")
	_ = kfs.Set("stderrthreshold", "FATAL")
	_ = kfs.Set("one_output", "true") // one copy per line, not one per severity
	_ = kfs.Set("v", strconv.Itoa(verbosity))
	klog.SetOutput(w)
	log.SetOutput(w)
	level := slog.LevelInfo
	if verbosity >= 4 {
		level = slog.LevelDebug
	}
	l := slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: level}))
	slog.SetDefault(l)
	return l
}

type sandbox struct {
	cp         *controlplane.ControlPlane
	gke        *gke.Server
	gkeAddr    string
	controlURL string // the control endpoint for tests (control.go)
	cancel     context.CancelFunc
	errCh      chan error
}

func (sb *sandbox) shutdown() {
	if sb.cancel != nil {
		sb.cancel()
	}
	if sb.gke != nil {
		sb.gke.Stop()
	}
	if sb.cp != nil {
		sb.cp.Stop()
	}
	klog.Flush()
}

func startSandbox(sigCtx context.Context, dir string, w *world.World, logFile *os.File, slogger *slog.Logger, f upFlags) (*sandbox, error) {
	// Components run on their own context: a signal during start-up stops
	// waiting (sigCtx) and then shuts them down through shutdown().
	runCtx, cancel := context.WithCancel(context.Background())
	sb := &sandbox{cancel: cancel, errCh: make(chan error, 2)}

	phase := time.Now()
	cp, err := controlplane.Start(sigCtx, controlplane.Options{Dir: dir, KubernetesVersion: w.KubernetesVersion, NodeMonitorGracePeriod: f.nodeGrace})
	if err != nil {
		return sb, fmt.Errorf("start control plane: %w", err)
	}
	sb.cp = cp
	klog.InfoS("control plane up", "elapsed", time.Since(phase).String(), "cpu", cpuTime().String(), "apiserver", cp.Endpoint)
	phase = time.Now()

	if err := kwoknodes.Start(runCtx, kwoknodes.Options{Kubeconfig: cp.Kubeconfig, Server: cp.InternalServer, Log: logFile, Verbosity: f.verbosity,
		ReadyAfter: w.Pods.ReadyAfter.Duration, Nodes: w.NodeCount(),
		// Real TopoLVM's kubelet volume manager mounts the Pods' volumes (NodePublishVolume).
		WaitForVolumes: f.topolvm == "real"}); err != nil {
		return sb, fmt.Errorf("start KWOK: %w", err)
	}
	// The nodes' kubelet endpoint (pods/log): the played container logs.
	cp.ServeKubelet(kwoknodes.KubeletHandler(cp.Kube, time.Now))

	if err := topolvm.Install(sigCtx, cp.Kube, topolvm.InstallOptions{
		Namespace:        w.TopoLVM.Namespace,
		ConfigMapName:    w.TopoLVM.ConfigMapName,
		Key:              w.TopoLVM.Key,
		DeviceClasses:    w.TopoLVM.DeviceClasses,
		StorageClassName: firstDefaultStorageClass(w),
	}); err != nil {
		return sb, err
	}
	if err := createStorageClasses(sigCtx, cp.Kube, w); err != nil {
		return sb, err
	}
	registrar := topolvm.NewRegistrar(w.TopoLVM.DeviceClasses)
	registerNode := registrar.RegisterNode
	// The volume-group bootstrap's effect (examples/topolvm-gke), whichever TopoLVM runs.
	go func() {
		err := topolvm.RunBootstrap(runCtx, topolvm.BootstrapOptions{Kube: cp.Kube})
		if runCtx.Err() == nil {
			sb.errCh <- fmt.Errorf("volume-group bootstrap stopped: %v", err)
		}
	}()
	if f.topolvm == "real" {
		// TopoLVM's own node code labels and annotates the nodes: the emulator leaves them bare.
		registerNode = nil
		if err := startRealTopoLVM(runCtx, dir, cp, w, logFile, f, sb.errCh); err != nil {
			return sb, err
		}
	} else {
		go func() {
			err := topolvm.Run(runCtx, topolvm.Options{Kube: cp.Kube, Namespace: w.TopoLVM.Namespace, ConfigMapName: w.TopoLVM.ConfigMapName, Key: w.TopoLVM.Key, Registrar: registrar})
			if runCtx.Err() == nil {
				sb.errCh <- fmt.Errorf("topolvm simulator stopped: %v", err)
			}
		}()
	}

	var seeds []gke.ClusterSeed
	for _, c := range w.Clusters {
		seed := gke.ClusterSeed{Project: w.Project, Location: c.Location, Name: c.Name, ReleaseChannel: c.ReleaseChannel}
		for _, p := range c.Pools {
			np, err := p.NodePoolProto()
			if err != nil {
				return sb, fmt.Errorf("cluster %s pool %s: %w", c.Name, p.Name, err)
			}
			seed.Pools = append(seed.Pools, np)
		}
		seeds = append(seeds, seed)
	}
	vg := topolvm.DefaultVolumeGroup
	for _, d := range w.TopoLVM.DeviceClasses {
		if d.Name == w.DefaultDeviceClass() {
			vg = d.VolumeGroup
		}
	}
	srv, err := gke.New(gke.Options{
		Kube: cp.Kube, Endpoint: cp.Endpoint, CACertPEM: cp.CACertPEM, KubernetesVersion: w.KubernetesVersion,
		Clusters: seeds, VolumeGroup: vg, ThinPools: os.Getenv("OLAPGKE_SANDBOX_THIN_POOLS"), Logger: slogger,
		RegisterNode: registerNode,
	})
	if err != nil {
		return sb, err
	}
	sb.gke = srv
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return sb, fmt.Errorf("listen for the GKE API: %w", err)
	}
	sb.gkeAddr = l.Addr().String()
	go func() {
		err := srv.Serve(l)
		if runCtx.Err() == nil {
			sb.errCh <- fmt.Errorf("GKE API emulator stopped: %v", err)
		}
	}()
	poolReady := func(ctx context.Context, pool string) (poolReadiness, error) {
		return readPoolReadiness(ctx, cp.Kube, w.TopoLVM.Namespace, pool)
	}
	if sb.controlURL, err = startControl(runCtx, srv, poolReady); err != nil {
		return sb, err
	}
	klog.InfoS("KWOK, TopoLVM and GKE emulator started", "elapsed", time.Since(phase).String(), "cpu", cpuTime().String())
	// A component that stops while the world comes up (olapgke-topolvm exiting, the
	// simulator or the emulator failing, a control-plane component exiting) ends the waits
	// below at once, with its error, instead of after the ready timeout.
	waitCtx, failed := watchStartup(sigCtx, sb.errCh, cp.Err())
	phase = time.Now()
	err = srv.Seed(waitCtx)
	if err == nil {
		klog.InfoS("node pools seeded", "elapsed", time.Since(phase).String(), "cpu", cpuTime().String())
		phase = time.Now()
		err = waitWorldReady(waitCtx, cp.Kube, w.TopoLVM.Namespace, f.readyTimeout)
		if err == nil {
			// The components started before the API server's last post-start hook finished
			// (controlplane.Start); the sandbox is ready only once all of /readyz passes.
			err = cp.WaitReady(waitCtx, f.readyTimeout)
		}
	} else {
		err = fmt.Errorf("seed node pools: %w", err)
	}
	if cerr := failed(); cerr != nil {
		return sb, fmt.Errorf("a sandbox component stopped during start-up: %w", cerr)
	}
	if err != nil {
		return sb, err
	}
	klog.InfoS("world ready", "elapsed", time.Since(phase).String(), "cpu", cpuTime().String())
	return sb, nil
}

// watchStartup returns a context cancelled when a component reports on errCh or cpErr (the
// control plane's), and a function that stops watching and returns that report (nil when none
// came). A report that arrives after the watch stopped stays on its channel for the running
// sandbox.
func watchStartup(ctx context.Context, errCh, cpErr <-chan error) (context.Context, func() error) {
	ctx, cancel := context.WithCancelCause(ctx)
	stop := make(chan struct{})
	got := make(chan error, 1)
	go func() {
		select {
		case err := <-errCh:
			cancel(err)
			got <- err
		case err := <-cpErr:
			cancel(err)
			got <- err
		case <-stop:
			got <- nil
		}
	}()
	return ctx, func() error {
		close(stop)
		err := <-got
		cancel(nil)
		return err
	}
}

// firstDefaultStorageClass is the StorageClass topolvm.Install creates: the
// first one on the default device class.
func firstDefaultStorageClass(w *world.World) string {
	for _, sc := range w.StorageClasses {
		if sc.DeviceClass == "" || sc.DeviceClass == w.DefaultDeviceClass() {
			return sc.Name
		}
	}
	return topolvm.DefaultStorageClassName
}

// createStorageClasses creates the world's StorageClasses that topolvm.Install
// does not (those on non-default device classes), with the chart's settings.
func createStorageClasses(ctx context.Context, kube kubernetes.Interface, w *world.World) error {
	installed := firstDefaultStorageClass(w)
	for _, sc := range w.StorageClasses {
		if sc.Name == installed {
			continue
		}
		dc := sc.DeviceClass
		if dc == "" {
			dc = w.DefaultDeviceClass()
		}
		reclaim := corev1.PersistentVolumeReclaimDelete
		binding := storagev1.VolumeBindingWaitForFirstConsumer
		allow := true
		obj := &storagev1.StorageClass{
			ObjectMeta:           metav1.ObjectMeta{Name: sc.Name},
			Provisioner:          topolvm.DriverName,
			Parameters:           map[string]string{topolvm.DeviceClassParam: dc, topolvm.FSTypeParam: "xfs"},
			ReclaimPolicy:        &reclaim,
			VolumeBindingMode:    &binding,
			AllowVolumeExpansion: &allow,
		}
		if _, err := kube.StorageV1().StorageClasses().Create(ctx, obj, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create StorageClass %s: %w", sc.Name, err)
		}
	}
	return nil
}

// waitWorldReady waits until the seeded world can take workloads: every
// simulated node is Ready without the not-ready taint, nodes with raw-block
// Local SSDs carry TopoLVM's topology label, and the default namespace has
// its ServiceAccount (Pod admission needs it). Nodes are watched through an
// informer; the poll below only reads its in-memory cache.
func waitWorldReady(ctx context.Context, kube kubernetes.Interface, topolvmNamespace string, timeout time.Duration) error {
	ctx, cancel := context.WithCancel(ctx)
	factory := informers.NewSharedInformerFactory(kube, 0)
	nodes := factory.Core().V1().Nodes()
	sas := factory.Core().V1().ServiceAccounts()
	scs := factory.Storage().V1().StorageClasses()
	caps := factory.Storage().V1().CSIStorageCapacities()
	nodes.Informer()
	sas.Informer()
	scs.Informer()
	caps.Informer()
	factory.Start(ctx.Done())
	defer func() {
		cancel() // stops the informers; Shutdown waits for them
		factory.Shutdown()
	}()

	var last string
	logged := time.Now()
	stalled := stalledNodes{}
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		if time.Since(logged) > 2*time.Second {
			klog.InfoS("waiting for the world", "state", last)
			logged = time.Now()
		}
		if !nodes.Informer().HasSynced() || !sas.Informer().HasSynced() || !scs.Informer().HasSynced() || !caps.Informer().HasSynced() {
			last = "informers not synced"
			return false, nil
		}
		all, err := nodes.Lister().List(labels.Everything())
		if err != nil {
			return false, err
		}
		notReady := 0
		for _, n := range all {
			if reason := nodeNotReady(n); reason != "" {
				notReady++
				last = reason
			}
		}
		stalled.nudge(ctx, kube, all, time.Now())
		if notReady > 0 {
			last = fmt.Sprintf("%d of %d nodes not ready (e.g. %s)", notReady, len(all), last)
			return false, nil
		}
		// Every TopoLVM node has its CSIStorageCapacity per TopoLVM StorageClass: the scheduler
		// places no WaitForFirstConsumer claim on a node without one (external-provisioner
		// publishes them after the node plugin registered, in real mode just after the label).
		classes, err := scs.Lister().List(labels.Everything())
		if err != nil {
			return false, err
		}
		published, err := caps.Lister().CSIStorageCapacities(topolvmNamespace).List(labels.Everything())
		if err != nil {
			return false, err
		}
		if missing := missingCapacities(all, classes, published); missing != "" {
			last = missing
			return false, nil
		}
		if _, err := sas.Lister().ServiceAccounts(metav1.NamespaceDefault).Get("default"); err != nil {
			last = "default ServiceAccount: " + err.Error()
			return false, nil
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("world not ready within %s: %s", timeout, last)
	}
	return nil
}

// stalledNodes are KWOK nodes seen without Ready=True, since when, and when they were last
// nudged. KWOK v0.8.0 plays a node's stages when the Node changes; a play whose status update
// the API server times out (under load: 5,000 nodes starting on 2 cores, make bench's large
// tier) is not retried, and the node waits for its next heartbeat stage (10 minutes) with no
// Ready condition. An annotation patch is a Node change: KWOK plays the stages again.
type stalledNodes map[string]*[2]time.Time

// stallGrace is how long a node may start before it is nudged: a node of a small world is
// Ready within seconds, so only a dropped stage play waits this long.
const stallGrace = time.Minute

// nudge patches AnnotationStageReplay on each KWOK node without Ready=True for stallGrace since
// it was first seen so, or since it was last nudged.
func (s stalledNodes) nudge(ctx context.Context, kube kubernetes.Interface, nodes []*corev1.Node, now time.Time) {
	for _, n := range nodes {
		if n.Annotations[kwoknodes.Annotation] != kwoknodes.AnnotationValue || nodeReadyTrue(n) {
			delete(s, n.Name)
			continue
		}
		at := s[n.Name]
		if at == nil {
			s[n.Name] = &[2]time.Time{now, now}
			continue
		}
		if now.Sub(at[1]) < stallGrace {
			continue
		}
		at[1] = now
		patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, AnnotationStageReplay, now.UTC().Format(time.RFC3339))
		if _, err := kube.CoreV1().Nodes().Patch(ctx, n.Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			klog.InfoS("nudging a stalled node", "node", n.Name, "err", err)
			continue
		}
		klog.InfoS("nudged a node KWOK left without a Ready condition", "node", n.Name, "since", now.Sub(at[0]).Round(time.Second).String())
	}
}

// AnnotationStageReplay is what waitWorldReady writes on a node KWOK left without a Ready
// condition (stalledNodes).
const AnnotationStageReplay = "sandbox.olapgke.io/stage-replay"

func nodeReadyTrue(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// missingCapacities names a (node, StorageClass) pair of a TopoLVM node (topology label) and a
// topolvm.io StorageClass without a usable CSIStorageCapacity, or is "". A capacity of 0 while
// the node's capacity.topolvm.io annotation of the class's device class says there is space is
// not usable: external-provisioner asked TopoLVM's controller before its cache had the node
// (GetCapacity then answers 0, topolvm v0.41.0 internal/driver/controller.go) and publishes the
// real figure only at its next capacity poll. Until then the scheduler places no claim of that
// class on the node, so the world is not ready.
func missingCapacities(nodes []*corev1.Node, classes []*storagev1.StorageClass, all []*storagev1.CSIStorageCapacity) string {
	// node/StorageClass -> published, with a capacity above 0 in one of them (true) or not.
	positive := map[string]bool{}
	for _, c := range all {
		if c.NodeTopology != nil {
			k := c.NodeTopology.MatchLabels[topolvm.TopologyKey] + "/" + c.StorageClassName
			positive[k] = positive[k] || (c.Capacity != nil && c.Capacity.Sign() > 0)
		}
	}
	for _, n := range nodes {
		if n.Labels[topolvm.TopologyKey] != n.Name {
			continue
		}
		for _, sc := range classes {
			if sc.Provisioner != topolvm.DriverName {
				continue
			}
			pos, ok := positive[n.Name+"/"+sc.Name]
			if !ok {
				return "node " + n.Name + " has no CSIStorageCapacity for StorageClass " + sc.Name + " yet"
			}
			key := topolvm.DefaultCapacityKey
			if dc := sc.Parameters[topolvm.DeviceClassParam]; dc != "" {
				key = topolvm.CapacityAnnPrefix + dc
			}
			ann := n.Annotations[key]
			if free, err := resource.ParseQuantity(ann); err == nil && free.Sign() > 0 && !pos {
				return "node " + n.Name + "'s CSIStorageCapacity for StorageClass " + sc.Name + " says 0 while " +
					key + " says " + ann + " (corrected at external-provisioner's next capacity poll)"
			}
		}
	}
	return ""
}

// poolReadiness is the sandbox's one answer to "can this node pool take TopoLVM volumes now"
// (the control endpoint's GET /v1/nodepools/{pool}:ready): per node of the pool, the rules the
// ready marker waits for (nodeNotReady, missingCapacities), plus what keeps a node of an existing
// world from taking a volume: the volume-group bootstrap's start-up taint (no TopoLVM there yet)
// and a cordon. Tests wait on it instead of judging readiness themselves (or with the planner
// they test).
type poolReadiness struct {
	Pool  string          `json:"pool"`
	Ready bool            `json:"ready"` // at least one node, and every node ready
	Nodes []nodeReadiness `json:"nodes"`
}

type nodeReadiness struct {
	Name   string `json:"name"`
	Ready  bool   `json:"ready"`
	Reason string `json:"reason,omitempty"`
}

// readPoolReadiness answers poolReadiness for pool (the cloud.google.com/gke-nodepool label)
// from the API server.
func readPoolReadiness(ctx context.Context, kube kubernetes.Interface, topolvmNamespace, pool string) (poolReadiness, error) {
	out := poolReadiness{Pool: pool, Nodes: []nodeReadiness{}}
	nodes, err := kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: gke.LabelNodePool + "=" + pool})
	if err != nil {
		return out, err
	}
	scl, err := kube.StorageV1().StorageClasses().List(ctx, metav1.ListOptions{})
	if err != nil {
		return out, err
	}
	capl, err := kube.StorageV1().CSIStorageCapacities(topolvmNamespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return out, err
	}
	classes := make([]*storagev1.StorageClass, len(scl.Items))
	for i := range scl.Items {
		classes[i] = &scl.Items[i]
	}
	published := make([]*storagev1.CSIStorageCapacity, len(capl.Items))
	for i := range capl.Items {
		published[i] = &capl.Items[i]
	}
	sort.Slice(nodes.Items, func(i, j int) bool { return nodes.Items[i].Name < nodes.Items[j].Name })
	out.Ready = len(nodes.Items) > 0
	for i := range nodes.Items {
		n := &nodes.Items[i]
		why := nodeNotReady(n)
		switch {
		case why != "":
		case hasTaint(n, topolvm.StartupTaintKey):
			why = "node " + n.Name + " has taint " + topolvm.StartupTaintKey + " (the volume-group bootstrap has not prepared it)"
		case n.Spec.Unschedulable:
			why = "node " + n.Name + " is cordoned"
		default:
			why = missingCapacities([]*corev1.Node{n}, classes, published)
		}
		out.Nodes = append(out.Nodes, nodeReadiness{Name: n.Name, Ready: why == "", Reason: why})
		out.Ready = out.Ready && why == ""
	}
	return out, nil
}

func nodeNotReady(n *corev1.Node) string {
	if n.Annotations[kwoknodes.Annotation] != kwoknodes.AnnotationValue {
		return ""
	}
	ready := false
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
			ready = true
		}
	}
	if !ready {
		return "node " + n.Name + " has no Ready condition yet"
	}
	for _, t := range n.Spec.Taints {
		if t.Key == corev1.TaintNodeNotReady || t.Key == corev1.TaintNodeUnreachable {
			return "node " + n.Name + " still has taint " + t.Key
		}
	}
	// A node with the startup taint gets TopoLVM only once the volume-group bootstrap removed
	// it (topolvm.StartupTaintKey): nothing to wait for before then.
	if c, _ := strconv.Atoi(n.Annotations[gke.AnnotationSSDCount]); c > 0 && n.Labels[topolvm.TopologyKey] != n.Name && !hasTaint(n, topolvm.StartupTaintKey) {
		return "node " + n.Name + " has no " + topolvm.TopologyKey + " label yet"
	}
	return ""
}

func hasTaint(n *corev1.Node, key string) bool {
	for _, t := range n.Spec.Taints {
		if t.Key == key {
			return true
		}
	}
	return false
}

// writeOutputs writes DIR/kubeconfig and DIR/env, then DIR/ready (last,
// atomically) so that a reader seeing ready finds the other two complete.
func writeOutputs(dir string, w *world.World, sb *sandbox) error {
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := sb.cp.WriteKubeconfig(kubeconfig); err != nil {
		return err
	}
	c := w.Clusters[0]
	env := fmt.Sprintf(`OLAPGKE_CONTAINER_ENDPOINT=%s
OLAPGKE_CONTAINER_INSECURE=true
GOOGLE_PROJECT=%s
OLAPGKE_LOCATION=%s
OLAPGKE_CLUSTER=%s
GOOGLE_OAUTH_ACCESS_TOKEN=%s
KUBECONFIG=%s
OLAPGKE_SANDBOX_CONTROL=%s
`, sb.gkeAddr, w.Project, c.Location, c.Name, sb.cp.Token, kubeconfig, sb.controlURL)
	if err := writeFileAtomic(filepath.Join(dir, "env"), []byte(env), 0o600); err != nil {
		return err
	}
	ready := fmt.Sprintf("pid=%d\napiserver=%s\napiserver-internal=%s\ngke=%s\n", os.Getpid(), sb.cp.Endpoint, sb.cp.InternalServer, sb.gkeAddr)
	return writeFileAtomic(filepath.Join(dir, "ready"), []byte(ready), 0o644)
}

func writeFileAtomic(path string, data []byte, perm os.FileMode) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(perm); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// startCPUProfile profiles start-up (until ready) into path when path is set:
// OLAPGKE_SANDBOX_CPUPROFILE=FILE, read with `go tool pprof`.
func startCPUProfile(path string) (stop func(), err error) {
	if path == "" {
		return func() {}, nil
	}
	out, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("OLAPGKE_SANDBOX_CPUPROFILE: %w", err)
	}
	if err := pprof.StartCPUProfile(out); err != nil {
		out.Close()
		return nil, fmt.Errorf("OLAPGKE_SANDBOX_CPUPROFILE: %w", err)
	}
	return func() {
		pprof.StopCPUProfile()
		out.Close()
	}, nil
}

// cpuTime is the process's user+system CPU time so far: on a shared machine
// it says more about start-up cost than wall time does.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Round(time.Millisecond)
}

// startRealTopoLVM starts olapgke-topolvm (module internal/sandbox/topolvmreal: TopoLVM's and
// external-provisioner's own code) as a subprocess against the control plane, with its own
// copy of the admin kubeconfig (DIR/kubeconfig is written only once the world is ready) and
// the API server's internal port (--server: controlplane.UseInternalServer). It
// stops with runCtx (SIGTERM, then SIGKILL after 10 s); an exit before that is reported on
// errCh. Its log goes to DIR/sandbox.log.
func startRealTopoLVM(runCtx context.Context, dir string, cp *controlplane.ControlPlane, w *world.World, logFile *os.File, f upFlags, errCh chan<- error) error {
	kubeconfig := filepath.Join(dir, "topolvm.kubeconfig")
	if err := cp.WriteKubeconfig(kubeconfig); err != nil {
		return err
	}
	cmd := exec.CommandContext(runCtx, f.topolvmBin, "--kubeconfig", kubeconfig, "--server", cp.InternalServer,
		"--namespace", w.TopoLVM.Namespace, "--configmap", w.TopoLVM.ConfigMapName, "--key", w.TopoLVM.Key,
		// The world's topolvm.bringUp stages (world.BringUp; defaults applied by world.Load).
		"--lvmd-start-delay", w.TopoLVM.BringUp.LvmdStart.Duration.String(),
		"--csi-registration-delay", w.TopoLVM.BringUp.CSIRegistration.Duration.String(),
		"--capacity-poll-interval", w.TopoLVM.BringUp.CapacityPoll.Duration.String(),
		"--kube-api-capacity-qps", strconv.FormatFloat(*w.TopoLVM.BringUp.CapacityQPS, 'g', -1, 64),
		"--kube-api-capacity-burst", strconv.Itoa(*w.TopoLVM.BringUp.CapacityBurst),
		// The kubelets' NodePublishVolume calls and the mkfs/mount/blkid stand-ins' command lines.
		"--mount-record", filepath.Join(dir, "mounts.log"),
		"--v", strconv.Itoa(f.verbosity))
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 10 * time.Second
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", f.topolvmBin, err)
	}
	klog.InfoS("real TopoLVM started", "bin", f.topolvmBin, "pid", cmd.Process.Pid)
	go func() {
		err := cmd.Wait()
		if runCtx.Err() == nil {
			errCh <- fmt.Errorf("olapgke-topolvm exited: %v", err)
		}
	}()
	return nil
}

// findTopoLVMBin resolves the olapgke-topolvm binary of --topolvm real: the flag (or
// $OLAPGKE_TOPOLVM_BIN) if given, else the one next to this executable (make sandbox-bin puts
// both into .bin/), else the one on PATH.
func findTopoLVMBin(flagValue string) (string, error) {
	if flagValue != "" {
		if _, err := os.Stat(flagValue); err != nil {
			return "", fmt.Errorf("up: --topolvm-bin (or OLAPGKE_TOPOLVM_BIN) %s: %w", flagValue, err)
		}
		return flagValue, nil
	}
	var tried []string
	if self, err := os.Executable(); err == nil {
		sibling := filepath.Join(filepath.Dir(self), "olapgke-topolvm")
		if st, err := os.Stat(sibling); err == nil && !st.IsDir() {
			return sibling, nil
		}
		tried = append(tried, sibling)
	}
	if p, err := exec.LookPath("olapgke-topolvm"); err == nil {
		return p, nil
	}
	tried = append(tried, "olapgke-topolvm on PATH")
	return "", fmt.Errorf("up: TopoLVM runs its own code by default (--topolvm real), in the olapgke-topolvm binary, "+
		"and none was found (tried %s). Build it next to this binary with make sandbox-bin (or make topolvm-bin), "+
		"point --topolvm-bin or OLAPGKE_TOPOLVM_BIN at it, or pass --topolvm sim for the simulator", strings.Join(tried, ", "))
}

// envOr is the environment variable k, or def when it is unset or empty.
func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}
