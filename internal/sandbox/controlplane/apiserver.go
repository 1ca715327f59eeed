package controlplane

import (
	"context"
	"fmt"
	"net"

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
}

// newAPIServer configures kube-apiserver through its options API, the way
// cmd/kube-apiserver/app/testing/testserver.go does, not its cobra command
// (which installs a process-wide signal handler).
func newAPIServer(ctx context.Context, etcdURL string, p *pki, extra []string) (*apiServer, error) {
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
	return &apiServer{run: prepared.Run, port: port}, nil
}
