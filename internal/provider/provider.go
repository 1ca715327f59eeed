// Package provider is the olapgke provider: schema, configuration (provider block, then the
// environment), validation, and the *clients.Clients handed to every resource and data source.
package provider

import (
	"context"
	"errors"
	"os"
	"strings"
	"sync"

	"github.com/hashicorp/terraform-plugin-framework/action"
	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/function"
	"github.com/hashicorp/terraform-plugin-framework/list"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/provider"
	"github.com/hashicorp/terraform-plugin-framework/provider/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-log/tflog"
	"golang.org/x/oauth2"
	"k8s.io/client-go/rest"

	"github.com/olapgke/terraform-provider-olapgke/internal/clients"
	"github.com/olapgke/terraform-provider-olapgke/internal/diagnostics"
	"github.com/olapgke/terraform-provider-olapgke/internal/functions"
	"github.com/olapgke/terraform-provider-olapgke/internal/gke"
	"github.com/olapgke/terraform-provider-olapgke/internal/kube"
)

// TypeName is the provider type name (prefix of every resource type).
const TypeName = "olapgke"

var (
	_ provider.Provider                  = (*olapgkeProvider)(nil)
	_ provider.ProviderWithFunctions     = (*olapgkeProvider)(nil)
	_ provider.ProviderWithActions       = (*olapgkeProvider)(nil)
	_ provider.ProviderWithListResources = (*olapgkeProvider)(nil)
)

type olapgkeProvider struct {
	version string
	getenv  Getenv
}

// New returns the provider factory for providerserver.Serve.
func New(version string) func() provider.Provider {
	return func() provider.Provider { return &olapgkeProvider{version: version, getenv: os.LookupEnv} }
}

// UserAgent is sent to GKE and the Kubernetes API server.
func UserAgent(version string) string { return "terraform-provider-olapgke/" + version }

func (p *olapgkeProvider) Metadata(_ context.Context, _ provider.MetadataRequest, resp *provider.MetadataResponse) {
	resp.TypeName = TypeName
	resp.Version = p.version
}

func (p *olapgkeProvider) Schema(_ context.Context, _ provider.SchemaRequest, resp *provider.SchemaResponse) {
	resp.Schema = schema.Schema{
		MarkdownDescription: "Manages GKE node pools with Local SSDs, TopoLVM device classes and an OLAP StatefulSet on them, " +
			"with a per-ordinal plan of what apply will do. Every attribute can also be set from the environment; " +
			"the provider block wins over the environment.",
		Attributes: map[string]schema.Attribute{
			"project": schema.StringAttribute{
				Optional:            true,
				MarkdownDescription: "GCP project of the GKE cluster. Env: `GOOGLE_PROJECT`, then `GOOGLE_CLOUD_PROJECT`.",
			},
			"location": schema.StringAttribute{
				Optional:            true,
				MarkdownDescription: "Region or zone of the GKE cluster. Env: `OLAPGKE_LOCATION`.",
			},
			"cluster": schema.StringAttribute{
				Optional:            true,
				MarkdownDescription: "Name of the GKE cluster whose node pools are managed and whose API server the Kubernetes resources use. Env: `OLAPGKE_CLUSTER`.",
			},
			"credentials": schema.StringAttribute{
				Optional:  true,
				Sensitive: true,
				MarkdownDescription: "Google credentials JSON (service_account, external_account, authorized_user or impersonated_service_account), or the path of a file holding it. " +
					"Env: `GOOGLE_CREDENTIALS`. When neither this nor `access_token` is set, Application Default Credentials are used " +
					"(`GOOGLE_APPLICATION_CREDENTIALS`, gcloud's ADC file, the metadata server; Terraform Cloud dynamic credentials). " +
					"Conflicts with `access_token`; whichever of the two is set in the provider block hides the other one's environment variable.",
			},
			"access_token": schema.StringAttribute{
				Optional:            true,
				Sensitive:           true,
				MarkdownDescription: "A Google OAuth2 access token, used as-is (not refreshed). Env: `GOOGLE_OAUTH_ACCESS_TOKEN`. Conflicts with `credentials` (see there).",
			},
			"container_endpoint": schema.StringAttribute{
				Optional:            true,
				MarkdownDescription: "Override for the GKE API endpoint (`host:port`), e.g. the local sandbox's emulator. Env: `OLAPGKE_CONTAINER_ENDPOINT`.",
			},
			"container_insecure": schema.BoolAttribute{
				Optional:            true,
				MarkdownDescription: "Use plaintext, unauthenticated gRPC to `container_endpoint`. Only for the local sandbox: refused unless the endpoint is a loopback address. Env: `OLAPGKE_CONTAINER_INSECURE`.",
			},
			"poll_interval": schema.StringAttribute{
				Optional:            true,
				MarkdownDescription: "How often GKE operations and other long-running steps are polled, as a Go duration. Default `2s`. Env: `OLAPGKE_POLL_INTERVAL`.",
			},
		},
		Blocks: map[string]schema.Block{
			"kubernetes": schema.SingleNestedBlock{
				MarkdownDescription: "Optional explicit connection to the Kubernetes API server. When absent (the default and recommended path) " +
					"the provider calls GKE `GetCluster` for the endpoint and CA certificate and authenticates with a refreshing Google OAuth2 token: " +
					"no kubeconfig, gcloud or auth plugin is needed on the runner.",
				Attributes: map[string]schema.Attribute{
					"host": schema.StringAttribute{
						Optional:            true,
						MarkdownDescription: "API server URL (`https://HOST[:PORT]`). Env: `KUBE_HOST`. Conflicts with `config_path`.",
					},
					"token": schema.StringAttribute{
						Optional:            true,
						Sensitive:           true,
						MarkdownDescription: "Bearer token for `host`. Env: `KUBE_TOKEN`.",
					},
					"cluster_ca_certificate": schema.StringAttribute{
						Optional:            true,
						MarkdownDescription: "PEM (or base64-encoded PEM) CA certificate of `host`. Env: `KUBE_CLUSTER_CA_CERT_DATA`.",
					},
					"config_path": schema.StringAttribute{
						Optional:            true,
						MarkdownDescription: "Path to a kubeconfig file. Env: `KUBE_CONFIG_PATH`.",
					},
					"config_context": schema.StringAttribute{
						Optional:            true,
						MarkdownDescription: "Context in `config_path` to use (default: its current context). Env: `KUBE_CTX`.",
					},
				},
			},
		},
	}
}

func (p *olapgkeProvider) Configure(ctx context.Context, req provider.ConfigureRequest, resp *provider.ConfigureResponse) {
	var m providerModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	cfg, diags := resolveConfig(ctx, m, p.getenv)
	resp.Diagnostics.Append(diags...)
	if resp.Diagnostics.HasError() {
		return
	}
	c, diags := buildClients(ctx, cfg, p.version)
	resp.Diagnostics.Append(diags...)
	if resp.Diagnostics.HasError() {
		return
	}
	// At INFO, so a user's TF_LOG=INFO shows which build talks to the cluster; the release build
	// stamps the version (-X main.version), a plain `go build` says "dev".
	tflog.Info(ctx, "olapgke provider configured", map[string]any{
		"version": p.version, "user_agent": UserAgent(p.version),
		"project": cfg.Project, "location": cfg.Location, "cluster": cfg.Cluster,
		"container_endpoint": cfg.ContainerEndpoint, "kubernetes_block": cfg.Kubernetes.IsSet(),
		"deferred": c.Deferred(), "unknown": strings.Join(cfg.Unknown, ","),
	})
	resp.DataSourceData = c
	resp.ResourceData = c
	resp.ActionData = c
	resp.ListResourceData = c
}

func (p *olapgkeProvider) Resources(context.Context) []func() resource.Resource { return resources() }

// Actions are the day-2 verbs (olapgke_move_ordinals, olapgke_restart_ordinals,
// olapgke_evacuate_node_pool): the migration's planner and engine, invoked on demand.
func (p *olapgkeProvider) Actions(context.Context) []func() action.Action { return actions() }

// ListResources are the `terraform query` lists (olapgke_statefulset, olapgke_local_ssd_node_pool).
func (p *olapgkeProvider) ListResources(context.Context) []func() list.ListResource {
	return listResources()
}

func (p *olapgkeProvider) DataSources(context.Context) []func() datasource.DataSource {
	return dataSources()
}

// Functions are the provider-defined functions (provider::olapgke::...): GKE facts from the
// tables the node pool resource judges with.
func (p *olapgkeProvider) Functions(context.Context) []func() function.Function {
	return functions.All()
}

var pathCredentials = path.Root("credentials")

// ClientsFromEnvironment builds clients the way Configure does for an empty provider block, so
// everything comes from the environment. Tests use it to talk to the sandbox exactly as the
// provider would.
func ClientsFromEnvironment(ctx context.Context, version string) (*clients.Clients, error) {
	empty := providerModel{
		Project: types.StringNull(), Location: types.StringNull(), Cluster: types.StringNull(),
		Credentials: types.StringNull(), AccessToken: types.StringNull(),
		ContainerEndpoint: types.StringNull(), ContainerInsecure: types.BoolNull(),
		PollInterval: types.StringNull(), Kubernetes: types.ObjectNull(kubernetesAttrTypes),
	}
	cfg, diags := resolveConfig(ctx, empty, os.LookupEnv)
	if !diags.HasError() {
		var c *clients.Clients
		c, diags = buildClients(ctx, cfg, version)
		if !diags.HasError() {
			return c, nil
		}
	}
	var msgs []string
	for _, d := range diags.Errors() {
		msgs = append(msgs, d.Summary()+": "+d.Detail())
	}
	return nil, errors.New(strings.Join(msgs, "; "))
}

// errDeferred is what deferred clients return if a resource uses them anyway.
var errDeferred = errors.New("the provider configuration is not known until apply (for example the cluster is created in the same run), so the cluster cannot be reached during this plan")

// buildClients turns a resolved Config into lazily connecting clients. Explicit credentials are
// checked here (no network); Application Default Credentials are looked up on first use.
func buildClients(ctx context.Context, cfg Config, version string) (*clients.Clients, diag.Diagnostics) {
	var diags diag.Diagnostics
	opts := clients.Options{
		Project: cfg.Project, Location: cfg.Location, Cluster: cfg.Cluster,
		PollInterval: cfg.PollInterval,
	}
	if len(cfg.Unknown) > 0 {
		opts.Deferred = true
		opts.REST = func(context.Context) (*rest.Config, error) { return nil, errDeferred }
		opts.GKE = func(context.Context) (gke.API, error) { return nil, errDeferred }
		return clients.New(opts), diags
	}

	// Token sources and clients outlive the RPC that creates them: detach from its cancellation.
	base := context.WithoutCancel(ctx)
	var (
		tsOnce sync.Once
		ts     oauth2.TokenSource
		tsErr  error
	)
	tokenSource := func() (oauth2.TokenSource, error) {
		tsOnce.Do(func() { ts, tsErr = gke.TokenSource(base, cfg.Auth) })
		return ts, tsErr
	}
	if cfg.Auth.Credentials != "" {
		if _, err := tokenSource(); err != nil {
			diags.Append(diagnostics.AttributeError(pathCredentials, "Invalid Google Credentials", diagnostics.Detail{
				Checked: "the credentials JSON (from the provider block or " + EnvCredentials + ").",
				Found:   "It could not be used to build a token source.",
				Do:      "Pass a service-account or external_account JSON document (or its file path), or unset credentials to use Application Default Credentials.",
				Err:     err,
			}))
			return nil, diags
		}
	}
	ua := UserAgent(version)

	var c *clients.Clients
	opts.GKE = func(context.Context) (gke.API, error) {
		var ts oauth2.TokenSource
		if !cfg.ContainerInsecure {
			var err error
			if ts, err = tokenSource(); err != nil {
				return nil, err
			}
		}
		return gke.New(base, gke.Options{
			Endpoint: cfg.ContainerEndpoint, Insecure: cfg.ContainerInsecure,
			TokenSource: ts, PollInterval: cfg.PollInterval, UserAgent: ua,
		})
	}
	opts.REST = func(ctx context.Context) (*rest.Config, error) {
		if cfg.Kubernetes.IsSet() {
			return kube.FromExplicit(cfg.Kubernetes, ua)
		}
		g, err := c.GKE(ctx)
		if err != nil {
			return nil, err
		}
		cluster, err := g.GetCluster(ctx, cfg.Ref())
		if err != nil {
			return nil, err
		}
		ts, err := tokenSource()
		if err != nil {
			return nil, err
		}
		return kube.FromGKE(cluster, ts, ua)
	}
	c = clients.New(opts)
	return c, diags
}
