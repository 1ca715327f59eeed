package provider

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-framework/types/basetypes"

	"github.com/olapgke/terraform-provider-olapgke/internal/diagnostics"
	"github.com/olapgke/terraform-provider-olapgke/internal/gke"
	"github.com/olapgke/terraform-provider-olapgke/internal/kube"
)

// Environment variables read when the matching attribute is not set in the provider block.
const (
	EnvProject           = "GOOGLE_PROJECT"
	EnvCloudProject      = "GOOGLE_CLOUD_PROJECT"
	EnvLocation          = "OLAPGKE_LOCATION"
	EnvCluster           = "OLAPGKE_CLUSTER"
	EnvCredentials       = "GOOGLE_CREDENTIALS"
	EnvAccessToken       = "GOOGLE_OAUTH_ACCESS_TOKEN"
	EnvContainerEndpoint = "OLAPGKE_CONTAINER_ENDPOINT"
	EnvContainerInsecure = "OLAPGKE_CONTAINER_INSECURE"
	EnvPollInterval      = "OLAPGKE_POLL_INTERVAL"
	EnvKubeHost          = "KUBE_HOST"
	EnvKubeToken         = "KUBE_TOKEN"
	EnvKubeCACert        = "KUBE_CLUSTER_CA_CERT_DATA"
	EnvKubeConfigPath    = "KUBE_CONFIG_PATH"
	EnvKubeContext       = "KUBE_CTX"
)

// DefaultPollInterval is used when poll_interval is not set.
const DefaultPollInterval = 2 * time.Second

// providerModel is the provider block.
type providerModel struct {
	Project           types.String `tfsdk:"project"`
	Location          types.String `tfsdk:"location"`
	Cluster           types.String `tfsdk:"cluster"`
	Credentials       types.String `tfsdk:"credentials"`
	AccessToken       types.String `tfsdk:"access_token"`
	ContainerEndpoint types.String `tfsdk:"container_endpoint"`
	ContainerInsecure types.Bool   `tfsdk:"container_insecure"`
	PollInterval      types.String `tfsdk:"poll_interval"`
	Kubernetes        types.Object `tfsdk:"kubernetes"`
}

// kubernetesModel is the kubernetes {} block.
type kubernetesModel struct {
	Host                 types.String `tfsdk:"host"`
	Token                types.String `tfsdk:"token"`
	ClusterCACertificate types.String `tfsdk:"cluster_ca_certificate"`
	ConfigPath           types.String `tfsdk:"config_path"`
	ConfigContext        types.String `tfsdk:"config_context"`
}

var kubernetesAttrTypes = map[string]attr.Type{
	"host":                   types.StringType,
	"token":                  types.StringType,
	"cluster_ca_certificate": types.StringType,
	"config_path":            types.StringType,
	"config_context":         types.StringType,
}

// Config is the resolved provider configuration: provider block first, then the environment.
type Config struct {
	Project, Location, Cluster string
	Auth                       gke.Auth
	ContainerEndpoint          string
	ContainerInsecure          bool
	PollInterval               time.Duration
	Kubernetes                 kube.Explicit
	// Unknown lists the attributes whose values are not known yet (plan before the cluster
	// exists). When non-empty, clients are built deferred.
	Unknown []string
}

// Ref is the GKE cluster reference.
func (c Config) Ref() gke.ClusterRef {
	return gke.ClusterRef{Project: c.Project, Location: c.Location, Cluster: c.Cluster}
}

// Getenv looks up an environment variable (os.LookupEnv in production, a map in tests).
type Getenv func(key string) (string, bool)

// resolveConfig applies environment fallbacks and validates combinations. It is pure: the
// environment comes in as getenv.
func resolveConfig(ctx context.Context, m providerModel, getenv Getenv) (Config, diag.Diagnostics) {
	var diags diag.Diagnostics
	var cfg Config

	str := func(v types.String, name string, envs ...string) (string, bool) {
		if v.IsUnknown() {
			cfg.Unknown = append(cfg.Unknown, name)
			return "", false
		}
		if !v.IsNull() {
			return v.ValueString(), true
		}
		for _, k := range envs {
			if e, ok := getenv(k); ok && e != "" {
				return e, false
			}
		}
		return "", false
	}

	var inConfig = map[string]bool{}
	set := func(dst *string, v types.String, name string, envs ...string) {
		var fromCfg bool
		*dst, fromCfg = str(v, name, envs...)
		inConfig[name] = fromCfg
	}
	set(&cfg.Project, m.Project, "project", EnvProject, EnvCloudProject)
	set(&cfg.Location, m.Location, "location", EnvLocation)
	set(&cfg.Cluster, m.Cluster, "cluster", EnvCluster)
	set(&cfg.Auth.Credentials, m.Credentials, "credentials", EnvCredentials)
	set(&cfg.Auth.AccessToken, m.AccessToken, "access_token", EnvAccessToken)
	set(&cfg.ContainerEndpoint, m.ContainerEndpoint, "container_endpoint", EnvContainerEndpoint)

	// container_insecure
	switch {
	case m.ContainerInsecure.IsUnknown():
		cfg.Unknown = append(cfg.Unknown, "container_insecure")
	case !m.ContainerInsecure.IsNull():
		cfg.ContainerInsecure = m.ContainerInsecure.ValueBool()
	default:
		if e, ok := getenv(EnvContainerInsecure); ok && e != "" {
			b, err := strconv.ParseBool(e)
			if err != nil {
				diags.Append(diagnostics.AttributeError(path.Root("container_insecure"), "Invalid Boolean In Environment", diagnostics.Detail{
					Checked: "container_insecure is not set in the provider block, so " + EnvContainerInsecure + " was read.",
					Found:   fmt.Sprintf("%s=%q is not a boolean.", EnvContainerInsecure, e),
					Do:      "Set it to true or false, or unset it.",
				}))
			}
			cfg.ContainerInsecure = b
		}
	}

	// poll_interval
	var interval string
	var intervalInConfig bool
	if interval, intervalInConfig = str(m.PollInterval, "poll_interval", EnvPollInterval); interval == "" {
		cfg.PollInterval = DefaultPollInterval
	} else if d, err := time.ParseDuration(interval); err != nil || d <= 0 {
		source := "the provider block"
		if !intervalInConfig {
			source = EnvPollInterval
		}
		diags.Append(diagnostics.AttributeError(path.Root("poll_interval"), "Invalid Poll Interval", diagnostics.Detail{
			Checked: "poll_interval from " + source + ".",
			Found:   fmt.Sprintf("%q is not a positive Go duration.", interval),
			Do:      `Use a duration such as "2s" or "500ms".`,
		}))
	} else {
		cfg.PollInterval = d
	}

	// kubernetes {}
	kubeInConfig := map[string]bool{}
	var km kubernetesModel
	switch {
	case m.Kubernetes.IsUnknown():
		cfg.Unknown = append(cfg.Unknown, "kubernetes")
	case !m.Kubernetes.IsNull():
		diags.Append(m.Kubernetes.As(ctx, &km, basetypes.ObjectAsOptions{})...)
	default:
		km = kubernetesModel{Host: types.StringNull(), Token: types.StringNull(), ClusterCACertificate: types.StringNull(), ConfigPath: types.StringNull(), ConfigContext: types.StringNull()}
	}
	kset := func(dst *string, v types.String, name, env string) {
		var fromCfg bool
		*dst, fromCfg = str(v, "kubernetes."+name, env)
		kubeInConfig[name] = fromCfg
	}
	if !m.Kubernetes.IsUnknown() {
		k := &cfg.Kubernetes
		kset(&k.Host, km.Host, "host", EnvKubeHost)
		kset(&k.Token, km.Token, "token", EnvKubeToken)
		kset(&k.ClusterCACertificate, km.ClusterCACertificate, "cluster_ca_certificate", EnvKubeCACert)
		kset(&k.ConfigPath, km.ConfigPath, "config_path", EnvKubeConfigPath)
		kset(&k.ConfigContext, km.ConfigContext, "config_context", EnvKubeContext)
	}

	// Config wins over env for the identity as a whole: a credential set in the provider block
	// hides the other kind of credential coming from the environment (e.g. access_token in the
	// block while GOOGLE_CREDENTIALS is exported). Both from the same source is an error below.
	switch {
	case inConfig["access_token"] && !inConfig["credentials"]:
		cfg.Auth.Credentials = ""
	case inConfig["credentials"] && !inConfig["access_token"]:
		cfg.Auth.AccessToken = ""
	}

	// The same for the Kubernetes connection: host/token/CA set in the kubernetes block hide
	// KUBE_CONFIG_PATH/KUBE_CTX from the environment, and config_path in the block hides
	// KUBE_HOST/KUBE_TOKEN/KUBE_CLUSTER_CA_CERT_DATA.
	k := &cfg.Kubernetes
	direct := kubeInConfig["host"] || kubeInConfig["token"] || kubeInConfig["cluster_ca_certificate"]
	file := kubeInConfig["config_path"] || kubeInConfig["config_context"]
	switch {
	case direct && !file:
		k.ConfigPath, k.ConfigContext = "", ""
	case file && !direct:
		k.Host, k.Token, k.ClusterCACertificate = "", "", ""
	}

	diags.Append(validate(cfg, inConfig, kubeInConfig)...)
	return cfg, diags
}

// where says whether a value came from the provider block or the environment.
func where(inConfig bool, env string) string {
	if inConfig {
		return "the provider block"
	}
	return "the environment (" + env + ")"
}

func validate(cfg Config, inConfig, kubeInConfig map[string]bool) diag.Diagnostics {
	var diags diag.Diagnostics
	if cfg.Auth.Credentials != "" && cfg.Auth.AccessToken != "" {
		diags.Append(diagnostics.AttributeError(path.Root("access_token"), "Conflicting Google Credentials", diagnostics.Detail{
			Checked: "credentials (from " + where(inConfig["credentials"], EnvCredentials) + ") and access_token (from " + where(inConfig["access_token"], EnvAccessToken) + ").",
			Found:   "Both are set; the provider would not know which identity to use.",
			Do:      "Set only one of them. To use Application Default Credentials (for example Terraform Cloud dynamic credentials), set neither.",
		}))
	}

	if cfg.ContainerInsecure {
		switch {
		case cfg.ContainerEndpoint == "":
			diags.Append(diagnostics.AttributeError(path.Root("container_insecure"), "Insecure GKE Connection Without Endpoint", diagnostics.Detail{
				Checked: "container_insecure and container_endpoint.",
				Found:   "container_insecure is true but container_endpoint is empty, so plaintext gRPC would go to the real GKE API.",
				Do:      "Set container_endpoint to the local sandbox's loopback address, or drop container_insecure.",
			}))
		case !isLoopback(cfg.ContainerEndpoint):
			diags.Append(diagnostics.AttributeError(path.Root("container_insecure"), "Insecure GKE Connection To Non-Loopback Endpoint", diagnostics.Detail{
				Checked: "container_insecure and container_endpoint (from " + where(inConfig["container_endpoint"], EnvContainerEndpoint) + ").",
				Found:   fmt.Sprintf("container_insecure is true and container_endpoint %q is not a loopback address; credentials and cluster data would cross the network in plaintext.", cfg.ContainerEndpoint),
				Do:      "Use container_insecure only with the local sandbox (127.0.0.1, ::1 or localhost), or remove it.",
			}))
		}
	}

	k := cfg.Kubernetes
	kpath := func(n string) path.Path { return path.Root("kubernetes").AtName(n) }
	if k.Host != "" && k.ConfigPath != "" {
		diags.Append(diagnostics.AttributeError(kpath("host"), "Conflicting Kubernetes Connection Settings", diagnostics.Detail{
			Checked: "kubernetes.host (from " + where(kubeInConfig["host"], EnvKubeHost) + ") and kubernetes.config_path (from " + where(kubeInConfig["config_path"], EnvKubeConfigPath) + ").",
			Found:   "Both are set: the API server would come from two places.",
			Do:      "Use host with token and cluster_ca_certificate, or config_path with config_context, not both.",
		}))
	}
	if k.ConfigPath == "" && k.ConfigContext != "" {
		diags.Append(diagnostics.AttributeError(kpath("config_context"), "Kubernetes Context Without Kubeconfig", diagnostics.Detail{
			Checked: "kubernetes.config_context and kubernetes.config_path.",
			Found:   fmt.Sprintf("config_context %q is set but config_path is not.", k.ConfigContext),
			Do:      "Set config_path (or " + EnvKubeConfigPath + ") to the kubeconfig that holds the context, or remove config_context.",
		}))
	}
	if k.Host == "" && (k.Token != "" || k.ClusterCACertificate != "") && k.ConfigPath == "" {
		attr := "token"
		if k.Token == "" {
			attr = "cluster_ca_certificate"
		}
		diags.Append(diagnostics.AttributeError(kpath(attr), "Kubernetes Credentials Without Host", diagnostics.Detail{
			Checked: "the kubernetes block and the KUBE_* environment variables.",
			Found:   "kubernetes." + attr + " is set but kubernetes.host is not.",
			Do:      "Set kubernetes.host (or " + EnvKubeHost + "), or remove the kubernetes block to use the GKE cluster's endpoint.",
		}))
	}
	if k.ConfigPath != "" && (k.Token != "" || k.ClusterCACertificate != "") {
		attr := "token"
		if k.Token == "" {
			attr = "cluster_ca_certificate"
		}
		diags.Append(diagnostics.AttributeError(kpath(attr), "Conflicting Kubernetes Connection Settings", diagnostics.Detail{
			Checked: "kubernetes.config_path and kubernetes." + attr + ".",
			Found:   "Both are set: credentials would come from two places.",
			Do:      "Put the credentials in the kubeconfig, or use host with token and cluster_ca_certificate instead of config_path.",
		}))
	}
	if k.Host != "" && !strings.HasPrefix(k.Host, "https://") && !strings.HasPrefix(k.Host, "http://") && strings.Contains(k.Host, "/") {
		diags.Append(diagnostics.AttributeError(kpath("host"), "Invalid Kubernetes Host", diagnostics.Detail{
			Checked: "kubernetes.host.",
			Found:   fmt.Sprintf("%q has a path but no scheme.", k.Host),
			Do:      `Use "https://HOST[:PORT]".`,
		}))
	}

	// Without a kubernetes block the API server is found through GKE, which needs the cluster.
	if !k.IsSet() && len(cfg.Unknown) == 0 {
		var missing []string
		for _, p := range []struct{ name, value, env string }{
			{"project", cfg.Project, EnvProject + " or " + EnvCloudProject},
			{"location", cfg.Location, EnvLocation},
			{"cluster", cfg.Cluster, EnvCluster},
		} {
			if p.value == "" {
				missing = append(missing, p.name+" ("+p.env+")")
			}
		}
		if len(missing) > 0 {
			diags.Append(diagnostics.Error("Missing GKE Cluster", diagnostics.Detail{
				Checked: "project, location and cluster in the provider block and the environment; no kubernetes block is set, so the Kubernetes API server is found through the GKE cluster.",
				Found:   "Not set: " + strings.Join(missing, ", ") + ".",
				Do:      "Set them in the provider block or the environment, or configure the kubernetes block.",
			}))
		}
	}
	return diags
}

// isLoopback reports whether endpoint (host, host:port or [v6]:port) is a loopback address.
func isLoopback(endpoint string) bool {
	host := endpoint
	if h, _, err := net.SplitHostPort(endpoint); err == nil {
		host = h
	}
	host = strings.Trim(host, "[]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
