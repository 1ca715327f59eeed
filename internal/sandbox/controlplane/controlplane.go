// Package controlplane runs etcd, kube-apiserver, kube-controller-manager and
// kube-scheduler from k8s.io/kubernetes in this process, configured through
// their options/config APIs. One control plane per process: the components
// register process-global informer names and metrics. The API server reaches the
// nodes' kubelet port through its egress selector, a proxy of this package, to one
// endpoint whose handler ServeKubelet sets (nodeserver.go).
package controlplane

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/klog/v2"
)

// Options configure Start.
type Options struct {
	// Dir holds etcd data, certificates and the admin kubeconfig. Its etcd
	// data is wiped at start: every start is a fresh cluster.
	Dir string
	// Controllers overrides the kube-controller-manager controller list
	// (default: Controllers).
	Controllers []string
	// EtcdLogFile receives etcd's own (zap) log; default Dir/etcd.log.
	EtcdLogFile string
	// StartTimeout bounds how long Start waits for the API server (default 60s).
	StartTimeout time.Duration
	// KubernetesVersion is the minor ("1.34".."1.37") the components
	// emulate (component-base compatibility versions: each component's
	// --emulated-version, with that version's feature-gate defaults and
	// API enablement). Empty: the binary's own version (BinaryMinor).
	KubernetesVersion string
	// NodeMonitorGracePeriod, when set, is kube-controller-manager's --node-monitor-grace-period:
	// how long the node lifecycle controller lets a node's Lease and status go unrenewed before
	// it marks the node Unknown and taints it (0: the component's default, 50 s, as on GKE).
	// Only scale worlds set it (up --node-monitor-grace-period): see up.go.
	NodeMonitorGracePeriod time.Duration
}

// ControlPlane is a running control plane.
type ControlPlane struct {
	// Endpoint is the API server's TLS address "127.0.0.1:PORT" (no scheme): what users reach
	// (WriteKubeconfig, the GKE emulator's cluster endpoint).
	Endpoint string
	// InternalServer is the same API server's loopback URL in plain HTTP/1.1
	// ("http://127.0.0.1:PORT"), for the sandbox's own components (see Start and
	// UseInternalServer).
	InternalServer string
	// CACertPEM is the CA that signed the API server's serving certificate.
	CACertPEM []byte
	// Token is a bearer token of a user in system:masters.
	Token string
	// Kubeconfig is the path of an admin kubeconfig using Token (the TLS port).
	Kubeconfig string
	// Config is a client config of Token on InternalServer.
	Config *rest.Config
	// Kube is a clientset built from Config.
	Kube kubernetes.Interface

	cancel context.CancelFunc
	etcd   *embed.Etcd
	nodes  *nodeServer
	wg     sync.WaitGroup
	errCh  chan error
	once   sync.Once
}

// Start brings up etcd and the API server, waits until the API server is
// ready but for its two bootstrap hooks (startReadyz), then starts the
// scheduler, and the controller manager once the API server is ready in full.
// Callers that hand the control plane to users wait for WaitReady.
func Start(ctx context.Context, o Options) (_ *ControlPlane, err error) {
	if o.Dir == "" {
		return nil, errors.New("controlplane: Dir is required")
	}
	if o.Controllers == nil {
		o.Controllers = Controllers
	}
	if o.EtcdLogFile == "" {
		o.EtcdLogFile = filepath.Join(o.Dir, "etcd.log")
	}
	if o.StartTimeout == 0 {
		o.StartTimeout = 60 * time.Second
	}
	etcdDir := filepath.Join(o.Dir, "etcd")
	if err := os.RemoveAll(etcdDir); err != nil {
		return nil, fmt.Errorf("remove old etcd data: %w", err)
	}
	p, err := generatePKI(filepath.Join(o.Dir, "pki"))
	if err != nil {
		return nil, fmt.Errorf("generate certificates: %w", err)
	}

	runCtx, cancel := context.WithCancel(context.Background())
	cp := &ControlPlane{CACertPEM: p.CACertPEM, Token: p.Token, cancel: cancel, errCh: make(chan error, 4)}
	defer func() {
		if err != nil {
			cp.Stop()
		}
	}()

	e, etcdURL, err := startEtcd(etcdDir, o.EtcdLogFile)
	if err != nil {
		return nil, err
	}
	cp.etcd = e

	versionArgs, err := emulationArgs(o.KubernetesVersion)
	if err != nil {
		return nil, err
	}
	nodes, egressConfig, err := newNodeServer(p, filepath.Join(o.Dir, "pki"))
	if err != nil {
		return nil, err
	}
	cp.nodes = nodes
	cp.run("egress proxy and node server", runCtx, nodes.run)
	api, err := newAPIServer(runCtx, etcdURL, p, egressConfig, versionArgs)
	if err != nil {
		return nil, err
	}
	cp.Endpoint = fmt.Sprintf("127.0.0.1:%d", api.port)
	cp.run("kube-apiserver", runCtx, api.run)

	// The sandbox's busiest clients (the controller manager, KWOK, TopoLVM, the GKE emulator,
	// the readiness checks) reach the API server on a second listener, on loopback only, that
	// serves the same handler chain in plain HTTP/1.1: the same bearer-token authentication,
	// RBAC, admission, priority and fairness, storage and watch cache, without TLS and HTTP/2.
	// Those cost about a sixth of a 500-node start's CPU: TLS records, HTTP/2 frames and their
	// write syscalls, and a handler goroutine per HTTP/2 stream whose stack grows anew on each
	// request (an HTTP/1.1 connection's goroutine serves request after request). Users (the
	// kubeconfig WriteKubeconfig writes, the GKE emulator's cluster endpoint) and the scheduler
	// (whose options API builds its clients from a kubeconfig file, see UseInternalServer) use
	// the TLS port, as on a cluster.
	internal, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("listen for the API server's internal port: %w", err)
	}
	cp.InternalServer = "http://" + internal.Addr().String()
	cp.run("kube-apiserver (internal port)", runCtx, func(ctx context.Context) error {
		return serveInternal(ctx, internal, api.handler)
	})

	cp.Config = &rest.Config{
		BearerToken: p.Token,
		// Protobuf, as the controller manager and scheduler use: with
		// hundreds of nodes JSON encoding is a visible share of start-up CPU.
		ContentConfig: rest.ContentConfig{
			ContentType:        "application/vnd.kubernetes.protobuf",
			AcceptContentTypes: "application/vnd.kubernetes.protobuf,application/json",
		},
		// Loopback: gzip buys nothing. The API server gzips each watch flush for a client
		// that accepts it (perFlushGzipWriter), ~2% of the sandbox's 500-node start-up CPU.
		DisableCompression: true,
		QPS:                2000,
		Burst:              4000,
		// Names the sandbox's own requests in the API server's log (-v 3): without it they
		// carry the same user agent as the API server's loopback client.
		UserAgent: rest.DefaultKubernetesUserAgent() + "/sandbox",
	}
	UseInternalServer(cp.Config, cp.InternalServer)
	cp.Kube, err = kubernetes.NewForConfig(cp.Config)
	if err != nil {
		return nil, err
	}
	if err := cp.pollReadyz(ctx, o.StartTimeout, startReadyz, cp.errCh); err != nil {
		return nil, err
	}

	cp.Kubeconfig = filepath.Join(o.Dir, "pki", "admin.kubeconfig")
	if err := cp.WriteKubeconfig(cp.Kubeconfig); err != nil {
		return nil, err
	}

	kcmArgs := versionArgs
	if o.NodeMonitorGracePeriod > 0 {
		kcmArgs = append(append([]string(nil), versionArgs...), "--node-monitor-grace-period="+o.NodeMonitorGracePeriod.String())
	}
	kcm, err := newControllerManager(runCtx, cp.Kubeconfig, cp.InternalServer, o.Controllers, kcmArgs)
	if err != nil {
		return nil, err
	}
	// The controller manager starts once all of /readyz passes. It checks /healthz itself, every
	// second for at most 10 s, and exits when that fails ("Error building controller context":
	// k8s.io/kubernetes cmd/kube-controller-manager/app controllermanager.go
	// CreateControllerContext, WaitForAPIServer); on a cluster the kubelet restarts it. Here it
	// would start before the RBAC bootstrap hook finished (startReadyz), and while a 500-node
	// world comes up that hook took longer than those 10 s on a busy machine (once in 25
	// starts): the controller manager exited and no node ever lost its not-ready taint. The
	// wait is bounded by StartTimeout, as the API server's start is; past it, the controller
	// manager reports the API server's last answer on Err().
	cp.run("kube-controller-manager", runCtx, func(ctx context.Context) error {
		if err := cp.pollReadyz(ctx, o.StartTimeout, "/readyz", nil); err != nil {
			return err
		}
		return kcm(ctx)
	})
	sched, err := newScheduler(runCtx, cp.Kubeconfig, versionArgs)
	if err != nil {
		return nil, err
	}
	cp.run("kube-scheduler", runCtx, sched)
	return cp, nil
}

// ServeKubelet makes h serve every node's kubelet endpoint (https://<node address>:10250, as
// the API server reaches it through its egress proxy: nodeserver.go), for example
// GET /containerLogs/{namespace}/{pod}/{container} of pods/log. Until it is called, the
// endpoint answers 503.
func (cp *ControlPlane) ServeKubelet(h http.Handler) { cp.nodes.setHandler(h) }

func (cp *ControlPlane) run(name string, ctx context.Context, f func(context.Context) error) {
	cp.wg.Add(1)
	go func() {
		defer cp.wg.Done()
		err := f(ctx)
		if ctx.Err() != nil {
			return // shutting down
		}
		if err == nil {
			err = errors.New("exited")
		}
		select {
		case cp.errCh <- fmt.Errorf("%s: %w", name, err):
		default:
		}
	}()
}

// Err reports a component that stopped while the control plane was meant to
// be running.
func (cp *ControlPlane) Err() <-chan error { return cp.errCh }

// startReadyz is the readiness the other components start on: every check but the two
// post-start hooks that bootstrap the system PriorityClasses and the RBAC policy. Both poll
// without an immediate first try (wait.Poll(1*time.Second, ...) in k8s.io/kubernetes v1.37
// pkg/registry/scheduling/rest/storage_scheduling.go and pkg/registry/rbac/rest/
// storage_rbac.go), so they hold /readyz back about a second with both cores idle; a real
// cluster's components do not wait for them either. Nothing the sandbox creates names a
// PriorityClass, every sandbox client is in system:masters (no RBAC role needed), and WaitReady
// checks the full /readyz before the sandbox says ready.
const startReadyz = "/readyz?exclude=poststarthook/scheduling/bootstrap-system-priority-classes" +
	"&exclude=poststarthook/rbac/bootstrap-roles"

// WaitReady waits (poll with timeout) until the API server's /readyz passes every check. It
// does not read Err(): the caller watches that itself (a second reader would take a component's
// report from it and return it as a readiness failure).
func (cp *ControlPlane) WaitReady(ctx context.Context, timeout time.Duration) error {
	return cp.pollReadyz(ctx, timeout, "/readyz", nil)
}

// pollReadyz waits (poll with timeout) until the API server answers path (a /readyz query)
// with 200. A report on stopped (a component that stopped; nil: none watched) ends it with that
// error.
func (cp *ControlPlane) pollReadyz(ctx context.Context, timeout time.Duration, path string, stopped <-chan error) error {
	var last string
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		select {
		case err := <-stopped:
			return false, err
		default:
		}
		status := 0
		res := cp.Kube.CoreV1().RESTClient().Get().RequestURI(path).Do(ctx).StatusCode(&status)
		if status == http.StatusOK {
			return true, nil
		}
		if res.Error() != nil {
			last = res.Error().Error()
		}
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("kube-apiserver at %s not ready (%s) within %s (last answer: %s): %w", cp.Endpoint, path, timeout, last, err)
	}
	return nil
}

// UseInternalServer points cfg, a client config of the TLS port with its bearer token (loaded
// from Kubeconfig), at InternalServer. A kubeconfig cannot say this: client-go's kubeconfig
// loader reads no credentials for a server without TLS (k8s.io/client-go tools/clientcmd
// client_config.go ClientConfig, "only try to read the auth information if we are secure"),
// and the internal port, like the TLS one, answers an anonymous client with 403. So a
// component reads Kubeconfig and is then moved; one whose options API builds its clients from
// the file (the scheduler) stays on the TLS port.
func UseInternalServer(cfg *rest.Config, server string) {
	cfg.Host = server
	cfg.TLSClientConfig = rest.TLSClientConfig{}
	cfg.Transport = internalTransport()
}

// internalTransport is the one HTTP transport of this process's clients on InternalServer.
// Without it client-go would pick http.DefaultTransport for a config without TLS
// (k8s.io/client-go transport/cache.go get): it keeps 2 idle connections per host where
// client-go's own keeps 25, and it asks for gzip whatever DisableCompression says. Over
// HTTP/1.1 each concurrent request needs a connection of its own: with 2 kept, a 500-node
// start dialled about 2000 connections, each a dial, an accept and a fresh server goroutine.
// The rest are client-go's settings (cache.go, utilnet.SetTransportDefaults).
var internalTransport = sync.OnceValue(func() http.RoundTripper {
	return utilnet.SetTransportDefaults(&http.Transport{
		DialContext:         (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConnsPerHost: internalIdleConnsPerHost,
		DisableCompression:  true, // loopback (see Start's Config)
	})
})

// internalIdleConnsPerHost bounds the idle connections kept: a 500-node world's agents and
// watches have a few hundred requests open at once; an idle connection costs a goroutine on each
// side until IdleConnTimeout (90 s).
const internalIdleConnsPerHost = 1024

// WriteKubeconfig writes an admin kubeconfig for this control plane's TLS port.
func (cp *ControlPlane) WriteKubeconfig(path string) error {
	const name = "olapgke-sandbox"
	cfg := clientcmdapi.NewConfig()
	// disable-compression as Config has it: every component reads this file (loopback, no gzip).
	cfg.Clusters[name] = &clientcmdapi.Cluster{Server: "https://" + cp.Endpoint, CertificateAuthorityData: cp.CACertPEM, DisableCompression: cp.Config.DisableCompression}
	cfg.AuthInfos[name] = &clientcmdapi.AuthInfo{Token: cp.Token}
	cfg.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: name, Namespace: "default"}
	cfg.CurrentContext = name
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		return fmt.Errorf("write kubeconfig %s: %w", path, err)
	}
	return nil
}

// Stop shuts the components down and waits (bounded) for them to return.
func (cp *ControlPlane) Stop() {
	cp.once.Do(func() {
		cp.cancel()
		done := make(chan struct{})
		go func() { cp.wg.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			klog.Warning("control plane components did not stop within 30s")
		}
		if cp.etcd != nil {
			cp.etcd.Close()
		}
	})
}
