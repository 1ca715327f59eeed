package controlplane

import (
	"context"
	"fmt"

	"github.com/spf13/pflag"
	clientset "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/kubernetes/cmd/kube-controller-manager/app"
	kcmconfig "k8s.io/kubernetes/cmd/kube-controller-manager/app/config"
	"k8s.io/kubernetes/cmd/kube-controller-manager/app/options"
)

// Controllers is the kube-controller-manager controller set the sandbox runs.
// The first eight are required (SANDBOX-NOTES): without node-lifecycle new
// nodes keep the not-ready taint, without serviceaccount Pod admission fails,
// without the protection controllers protected objects never go away.
// disruption (PDB status), pod-garbage-collector (Pods bound to deleted
// nodes) and clusterrole-aggregation (admin/edit/view roles) make the sandbox
// behave like a real cluster for later scenarios at little cost.
// taint-eviction evicts Pods that do not tolerate a node's NoExecute taints,
// as on GKE (a NoExecute taint on a Local-SSD pool evicts its historicals).
// daemonset is left out on purpose: the TopoLVM install's lvmd DaemonSet
// would get one simulated Pod per node (500 Pods in a 500-node world, which
// doubled start-up time here) and nothing in the sandbox needs their Pods.
var Controllers = []string{
	"statefulset-controller",
	"persistentvolume-binder-controller",
	"garbage-collector-controller",
	"serviceaccount-controller",
	"namespace-controller",
	"persistentvolumeclaim-protection-controller",
	"persistentvolume-protection-controller",
	"node-lifecycle-controller",
	"disruption-controller",
	"pod-garbage-collector-controller",
	"clusterrole-aggregation-controller",
	"taint-eviction-controller",
}

func newControllerManager(ctx context.Context, kubeconfig, internalServer string, controllers []string, extra []string) (func(context.Context) error, error) {
	cc, err := controllerManagerConfig(ctx, kubeconfig, internalServer, controllers, extra)
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context) error { return app.Run(ctx, cc) }, nil
}

// controllerManagerConfig is the controller manager's completed config from its flags (the
// sandbox's, then extra), its clients pointed at internalServer.
func controllerManagerConfig(ctx context.Context, kubeconfig, internalServer string, controllers []string, extra []string) (*kcmconfig.CompletedConfig, error) {
	s, err := options.NewKubeControllerManagerOptions()
	if err != nil {
		return nil, err
	}
	all, disabled, aliases := app.KnownControllers(), app.ControllersDisabledByDefault(), app.ControllerAliases()
	named := s.Flags(all, disabled, aliases)
	fs := pflag.NewFlagSet("kube-controller-manager", pflag.ContinueOnError)
	for _, f := range named.FlagSets {
		fs.AddFlagSet(f)
	}
	ctrlFlag := ""
	for i, c := range controllers {
		if i > 0 {
			ctrlFlag += ","
		}
		ctrlFlag += c
	}
	args := []string{
		"--kubeconfig=" + kubeconfig,
		"--leader-elect=false",
		"--secure-port=0",
		"--controllers=" + ctrlFlag,
		"--use-service-account-credentials=false",
		"--kube-api-qps=2000",
		"--kube-api-burst=4000",
	}
	args = append(args, extra...)
	if err := fs.Parse(args); err != nil {
		return nil, fmt.Errorf("kube-controller-manager flags: %w", err)
	}
	s.ParsedFlags = &named
	config, err := s.Config(ctx, all, disabled, aliases)
	if err != nil {
		return nil, fmt.Errorf("kube-controller-manager config: %w", err)
	}
	// To the internal port (UseInternalServer). Every controller's client is built at Run from
	// config.Kubeconfig, the loaded config itself (app.CreateControllerContext's
	// clientbuilder.SimpleControllerClientBuilder, which also checks the API server's health);
	// config.Client, built from a copy of it (options.go Config; events go through it), is built
	// again.
	UseInternalServer(config.Kubeconfig, internalServer)
	config.Client, err = clientset.NewForConfig(rest.AddUserAgent(config.Kubeconfig, options.KubeControllerManagerUserAgent))
	if err != nil {
		return nil, err
	}
	return config.Complete(), nil
}
