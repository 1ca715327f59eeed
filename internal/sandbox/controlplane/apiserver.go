package controlplane

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/spf13/pflag"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/client-go/tools/cache"
	"k8s.io/kubernetes/cmd/kube-apiserver/app"
	"k8s.io/kubernetes/cmd/kube-apiserver/app/options"
)

// apiServer holds a configured kube-apiserver, ready to run.
type apiServer struct {
	run  func(ctx context.Context) error
	port int
	// handler is the server's whole handler chain (authentication, authorization, admission,
	// priority and fairness, the aggregator), what its TLS port serves.
	handler http.Handler
}

// newAPIServer configures kube-apiserver through its options API, the way
// cmd/kube-apiserver/app/testing/testserver.go does, not its cobra command
// (which installs a process-wide signal handler).
func newAPIServer(ctx context.Context, etcdURL string, p *pki, egressConfig string, extra []string) (*apiServer, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("listen for the API server: %w", err)
	}
	port := l.Addr().(*net.TCPAddr).Port

	s := options.NewServerRunOptions()
	fs := pflag.NewFlagSet("kube-apiserver", pflag.ContinueOnError)
	for _, f := range s.Flags().FlagSets {
		fs.AddFlagSet(f)
	}
	args := []string{
		"--etcd-servers=" + etcdURL,
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		fmt.Sprintf("--secure-port=%d", port),
		"--tls-cert-file=" + p.ServingCert,
		"--tls-private-key-file=" + p.ServingKey,
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file=" + p.SAKey,
		"--service-account-signing-key-file=" + p.SAKey,
		"--service-cluster-ip-range=10.96.0.0/16",
		"--authorization-mode=RBAC",
		"--token-auth-file=" + p.TokenAuthFile,
		"--endpoint-reconciler-type=none",
		"--allow-privileged=true",
		"--profiling=false",
		// Kubelets (pods/log): through the egress proxy, verified and authenticated with the
		// sandbox's CA (nodeserver.go).
		"--egress-selector-config-file=" + egressConfig,
		"--kubelet-certificate-authority=" + p.CAFile,
		"--kubelet-client-certificate=" + p.KubeletClientCert,
		"--kubelet-client-key=" + p.KubeletClientKey,
	}
	args = append(args, extra...)
	if err := fs.Parse(args); err != nil {
		l.Close()
		return nil, fmt.Errorf("kube-apiserver flags: %w", err)
	}
	s.SecureServing.Listener = l
	s.SecureServing.BindPort = port
	s.SecureServing.ExternalAddress = net.ParseIP("127.0.0.1")

	if err := s.GenericServerRunOptions.ComponentGlobalsRegistry.Set(); err != nil {
		l.Close()
		return nil, err
	}
	informerName, err := cache.NewInformerName("kube-apiserver")
	if err != nil {
		l.Close()
		return nil, err
	}
	s.InformerName = informerName

	completed, err := s.Complete(ctx)
	if err != nil {
		l.Close()
		return nil, fmt.Errorf("complete kube-apiserver options: %w", err)
	}
	if errs := completed.Validate(); len(errs) != 0 {
		l.Close()
		return nil, fmt.Errorf("validate kube-apiserver options: %w", utilerrors.NewAggregate(errs))
	}
	config, err := app.NewConfig(completed)
	if err != nil {
		return nil, fmt.Errorf("kube-apiserver config: %w", err)
	}
	cc, err := config.Complete()
	if err != nil {
		return nil, fmt.Errorf("complete kube-apiserver config: %w", err)
	}
	server, err := app.CreateServerChain(cc)
	if err != nil {
		return nil, fmt.Errorf("create kube-apiserver: %w", err)
	}
	prepared, err := server.PrepareRun()
	if err != nil {
		return nil, fmt.Errorf("prepare kube-apiserver: %w", err)
	}
	return &apiServer{run: prepared.Run, port: port, handler: server.GenericAPIServer.Handler}, nil
}

// serveInternal serves the API server's handler chain on l in plain HTTP/1.1 until ctx ends.
// The http.Server is set up as the secure port's (k8s.io/apiserver pkg/server
// secure_serving.go Serve) but for TLS and HTTP/2; see Start for why it exists.
func serveInternal(ctx context.Context, l net.Listener, h http.Handler) error {
	srv := &http.Server{
		Handler:           h,
		MaxHeaderBytes:    1 << 20,
		IdleTimeout:       90 * time.Second,
		ReadHeaderTimeout: 32 * time.Second,
	}
	stop := context.AfterFunc(ctx, func() { srv.Close() })
	defer stop()
	err := srv.Serve(l)
	if ctx.Err() != nil {
		return nil
	}
	return err
}
