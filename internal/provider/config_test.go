package provider

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/olapgke/terraform-provider-olapgke/internal/gke"
	"github.com/olapgke/terraform-provider-olapgke/internal/kube"
)

// model returns a provider block with every attribute null, modified by fns.
func model(fns ...func(*providerModel)) providerModel {
	m := providerModel{
		Project: types.StringNull(), Location: types.StringNull(), Cluster: types.StringNull(),
		Credentials: types.StringNull(), AccessToken: types.StringNull(),
		ContainerEndpoint: types.StringNull(), ContainerInsecure: types.BoolNull(),
		PollInterval: types.StringNull(), Kubernetes: types.ObjectNull(kubernetesAttrTypes),
	}
	for _, f := range fns {
		f(&m)
	}
	return m
}

func kubeBlock(t *testing.T, k kubernetesModel) types.Object {
	t.Helper()
	for _, s := range []*types.String{&k.Host, &k.Token, &k.ClusterCACertificate, &k.ConfigPath, &k.ConfigContext} {
		if s.IsNull() && !s.IsUnknown() && s.ValueString() == "" {
			*s = types.StringNull()
		}
	}
	o, d := types.ObjectValueFrom(context.Background(), kubernetesAttrTypes, k)
	if d.HasError() {
		t.Fatalf("building kubernetes block: %v", d)
	}
	return o
}

func envOf(m map[string]string) Getenv {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

// cluster is the env of a complete GKE cluster reference.
var cluster = map[string]string{EnvProject: "env-p", EnvLocation: "env-l", EnvCluster: "env-c"}

func with(base map[string]string, kv ...string) map[string]string {
	out := map[string]string{}
	for k, v := range base {
		out[k] = v
	}
	for i := 0; i+1 < len(kv); i += 2 {
		out[kv[i]] = kv[i+1]
	}
	return out
}

type wantDiag struct {
	path    path.Path // empty for diagnostics without a path
	summary string
	detail  string // substring
}

func TestResolveConfig(t *testing.T) {
	t.Parallel()
	str := types.StringValue
	tests := map[string]struct {
		model providerModel
		env   map[string]string
		want  Config
		diags []wantDiag
	}{
		"all from env": {
			model: model(),
			env: with(cluster, EnvAccessToken, "tok", EnvContainerEndpoint, "127.0.0.1:9000", EnvContainerInsecure, "true",
				EnvPollInterval, "250ms"),
			want: Config{Project: "env-p", Location: "env-l", Cluster: "env-c", Auth: gke.Auth{AccessToken: "tok"},
				ContainerEndpoint: "127.0.0.1:9000", ContainerInsecure: true, PollInterval: 250 * time.Millisecond},
		},
		"GOOGLE_CLOUD_PROJECT is the second fallback": {
			model: model(),
			env:   map[string]string{EnvCloudProject: "cloud-p", EnvLocation: "l", EnvCluster: "c"},
			want:  Config{Project: "cloud-p", Location: "l", Cluster: "c", PollInterval: DefaultPollInterval},
		},
		"GOOGLE_PROJECT wins over GOOGLE_CLOUD_PROJECT": {
			model: model(),
			env:   with(cluster, EnvCloudProject, "cloud-p"),
			want:  Config{Project: "env-p", Location: "env-l", Cluster: "env-c", PollInterval: DefaultPollInterval},
		},
		"config wins over env": {
			model: model(func(m *providerModel) {
				m.Project, m.Location, m.Cluster = str("cfg-p"), str("cfg-l"), str("cfg-c")
				m.Credentials = str(`{"type":"service_account"}`)
				m.ContainerEndpoint = str("container.googleapis.com:443")
				m.ContainerInsecure = types.BoolValue(false)
				m.PollInterval = str("5s")
			}),
			env: with(cluster, EnvCredentials, "{}", EnvContainerEndpoint, "127.0.0.1:1", EnvContainerInsecure, "true", EnvPollInterval, "1s"),
			want: Config{Project: "cfg-p", Location: "cfg-l", Cluster: "cfg-c", Auth: gke.Auth{Credentials: `{"type":"service_account"}`},
				ContainerEndpoint: "container.googleapis.com:443", PollInterval: 5 * time.Second},
		},
		"empty env values are ignored": {
			model: model(),
			env:   with(cluster, EnvAccessToken, "", EnvContainerInsecure, ""),
			want:  Config{Project: "env-p", Location: "env-l", Cluster: "env-c", PollInterval: DefaultPollInterval},
		},
		"kubernetes block from env": {
			model: model(),
			env:   map[string]string{EnvKubeConfigPath: "/k/config", EnvKubeContext: "ctx"},
			want:  Config{Kubernetes: kube.Explicit{ConfigPath: "/k/config", ConfigContext: "ctx"}, PollInterval: DefaultPollInterval},
		},
		"kubernetes block wins over KUBE_ env": {
			model: model(func(m *providerModel) {
				m.Kubernetes = kubeBlock(t, kubernetesModel{Host: str("https://10.0.0.1"), Token: str("cfg-tok")})
			}),
			env:  map[string]string{EnvKubeHost: "https://env", EnvKubeToken: "env-tok", EnvKubeCACert: "PEM"},
			want: Config{Kubernetes: kube.Explicit{Host: "https://10.0.0.1", Token: "cfg-tok", ClusterCACertificate: "PEM"}, PollInterval: DefaultPollInterval},
		},
		"unknown values defer": {
			model: model(func(m *providerModel) { m.Cluster = types.StringUnknown(); m.Location = types.StringUnknown() }),
			env:   map[string]string{EnvProject: "p"},
			want:  Config{Project: "p", PollInterval: DefaultPollInterval, Unknown: []string{"location", "cluster"}},
		},
		"unknown kubernetes block defers": {
			model: model(func(m *providerModel) { m.Kubernetes = types.ObjectUnknown(kubernetesAttrTypes) }),
			want:  Config{PollInterval: DefaultPollInterval, Unknown: []string{"kubernetes"}},
		},
		"credentials and access_token in config": {
			model: model(func(m *providerModel) { m.Credentials, m.AccessToken = str("{}"), str("tok") }),
			env:   cluster,
			diags: []wantDiag{{path.Root("access_token"), "Conflicting Google Credentials", "Set only one of them"}},
		},
		"credentials and access_token both from env": {
			model: model(),
			env:   with(cluster, EnvCredentials, "{}", EnvAccessToken, "tok"),
			diags: []wantDiag{{path.Root("access_token"), "Conflicting Google Credentials", "access_token (from the environment (GOOGLE_OAUTH_ACCESS_TOKEN))"}},
		},
		"access_token in config hides GOOGLE_CREDENTIALS": {
			model: model(func(m *providerModel) { m.AccessToken = str("cfg-tok") }),
			env:   with(cluster, EnvCredentials, "{}"),
			want:  Config{Project: "env-p", Location: "env-l", Cluster: "env-c", Auth: gke.Auth{AccessToken: "cfg-tok"}, PollInterval: DefaultPollInterval},
		},
		"credentials in config hide GOOGLE_OAUTH_ACCESS_TOKEN": {
			model: model(func(m *providerModel) { m.Credentials = str("{}") }),
			env:   with(cluster, EnvAccessToken, "env-tok"),
			want:  Config{Project: "env-p", Location: "env-l", Cluster: "env-c", Auth: gke.Auth{Credentials: "{}"}, PollInterval: DefaultPollInterval},
		},
		"insecure with non-loopback endpoint": {
			model: model(func(m *providerModel) {
				m.ContainerInsecure = types.BoolValue(true)
				m.ContainerEndpoint = str("10.1.2.3:443")
			}),
			env:   cluster,
			diags: []wantDiag{{path.Root("container_insecure"), "Insecure GKE Connection To Non-Loopback Endpoint", `"10.1.2.3:443" is not a loopback address`}},
		},
		"insecure with hostname endpoint from env": {
			model: model(),
			env:   with(cluster, EnvContainerInsecure, "1", EnvContainerEndpoint, "container.googleapis.com:443"),
			diags: []wantDiag{{path.Root("container_insecure"), "Insecure GKE Connection To Non-Loopback Endpoint", "the environment (OLAPGKE_CONTAINER_ENDPOINT)"}},
		},
		"insecure without endpoint": {
			model: model(func(m *providerModel) { m.ContainerInsecure = types.BoolValue(true) }),
			env:   cluster,
			diags: []wantDiag{{path.Root("container_insecure"), "Insecure GKE Connection Without Endpoint", "plaintext gRPC would go to the real GKE API"}},
		},
		"insecure loopback variants are fine": {
			model: model(func(m *providerModel) {
				m.ContainerInsecure = types.BoolValue(true)
				m.ContainerEndpoint = str("[::1]:8080")
			}),
			env:  cluster,
			want: Config{Project: "env-p", Location: "env-l", Cluster: "env-c", ContainerEndpoint: "[::1]:8080", ContainerInsecure: true, PollInterval: DefaultPollInterval},
		},
		"bad insecure env": {
			model: model(),
			env:   with(cluster, EnvContainerInsecure, "yes please"),
			diags: []wantDiag{{path.Root("container_insecure"), "Invalid Boolean In Environment", `OLAPGKE_CONTAINER_INSECURE="yes please" is not a boolean`}},
		},
		"bad poll interval": {
			model: model(func(m *providerModel) { m.PollInterval = str("-1s") }),
			env:   cluster,
			diags: []wantDiag{{path.Root("poll_interval"), "Invalid Poll Interval", `"-1s" is not a positive Go duration`}},
		},
		"host with config_path": {
			model: model(func(m *providerModel) {
				m.Kubernetes = kubeBlock(t, kubernetesModel{Host: str("https://h"), ConfigPath: str("/k")})
			}),
			diags: []wantDiag{{path.Root("kubernetes").AtName("host"), "Conflicting Kubernetes Connection Settings", "kubernetes.config_path (from the provider block)"}},
		},
		"KUBE_HOST with KUBE_CONFIG_PATH": {
			model: model(),
			env:   map[string]string{EnvKubeHost: "https://h", EnvKubeConfigPath: "/k"},
			diags: []wantDiag{{path.Root("kubernetes").AtName("host"), "Conflicting Kubernetes Connection Settings", "kubernetes.config_path (from the environment (KUBE_CONFIG_PATH))"}},
		},
		"host in block hides KUBE_CONFIG_PATH": {
			model: model(func(m *providerModel) {
				m.Kubernetes = kubeBlock(t, kubernetesModel{Host: str("https://h"), Token: str("t")})
			}),
			env:  map[string]string{EnvKubeConfigPath: "/k", EnvKubeContext: "c"},
			want: Config{Kubernetes: kube.Explicit{Host: "https://h", Token: "t"}, PollInterval: DefaultPollInterval},
		},
		"config_path in block hides KUBE_HOST and KUBE_TOKEN": {
			model: model(func(m *providerModel) {
				m.Kubernetes = kubeBlock(t, kubernetesModel{ConfigPath: str("/k")})
			}),
			env:  map[string]string{EnvKubeHost: "https://h", EnvKubeToken: "t", EnvKubeContext: "c"},
			want: Config{Kubernetes: kube.Explicit{ConfigPath: "/k", ConfigContext: "c"}, PollInterval: DefaultPollInterval},
		},
		"config_context without config_path": {
			model: model(func(m *providerModel) {
				m.Kubernetes = kubeBlock(t, kubernetesModel{Host: str("https://h"), ConfigContext: str("prod")})
			}),
			diags: []wantDiag{{path.Root("kubernetes").AtName("config_context"), "Kubernetes Context Without Kubeconfig", `config_context "prod" is set but config_path is not`}},
		},
		"token without host": {
			model: model(func(m *providerModel) { m.Kubernetes = kubeBlock(t, kubernetesModel{Token: str("t")}) }),
			env:   cluster,
			diags: []wantDiag{{path.Root("kubernetes").AtName("token"), "Kubernetes Credentials Without Host", "kubernetes.token is set but kubernetes.host is not"}},
		},
		"token with config_path": {
			model: model(func(m *providerModel) {
				m.Kubernetes = kubeBlock(t, kubernetesModel{ConfigPath: str("/k"), Token: str("t")})
			}),
			diags: []wantDiag{{path.Root("kubernetes").AtName("token"), "Conflicting Kubernetes Connection Settings", "credentials would come from two places"}},
		},
		"missing cluster without kubernetes block": {
			model: model(func(m *providerModel) { m.Project = str("p") }),
			diags: []wantDiag{{path.Empty(), "Missing GKE Cluster", "Not set: location (OLAPGKE_LOCATION), cluster (OLAPGKE_CLUSTER)."}},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got, diags := resolveConfig(context.Background(), tc.model, envOf(tc.env))
			checkDiags(t, diags, tc.diags)
			if len(tc.diags) == 0 {
				if diff := cmp.Diff(tc.want, got); diff != "" {
					t.Fatalf("config (-want +got):\n%s", diff)
				}
			}
		})
	}
}

func checkDiags(t *testing.T, got diag.Diagnostics, want []wantDiag) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d diagnostics, want %d: %v", len(got), len(want), got)
	}
	for i, w := range want {
		d := got[i]
		if d.Summary() != w.summary || !strings.Contains(d.Detail(), w.detail) {
			t.Errorf("diagnostic %d = %q / %q; want %q containing %q", i, d.Summary(), d.Detail(), w.summary, w.detail)
		}
		var p path.Path
		if dp, ok := d.(diag.DiagnosticWithPath); ok {
			p = dp.Path()
		}
		if p.String() != w.path.String() {
			t.Errorf("diagnostic %d on %q, want %q", i, p, w.path)
		}
		if strings.Contains(d.Detail(), d.Summary()) {
			t.Errorf("diagnostic %d repeats its summary in the detail", i)
		}
	}
}

func TestIsLoopback(t *testing.T) {
	t.Parallel()
	for ep, want := range map[string]bool{
		"127.0.0.1:1": true, "127.9.9.9": true, "localhost:80": true, "LOCALHOST": true, "[::1]:443": true, "::1": true,
		"10.0.0.1:1": false, "container.googleapis.com:443": false, "": false, "localhost.evil.com:1": false,
	} {
		if got := isLoopback(ep); got != want {
			t.Errorf("isLoopback(%q) = %v, want %v", ep, got, want)
		}
	}
}

func TestBuildClientsDeferredAndBadCredentials(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c, diags := buildClients(ctx, Config{Unknown: []string{"cluster"}}, "test")
	if diags.HasError() || !c.Deferred() {
		t.Fatalf("deferred config: clients %v, diags %v", c, diags)
	}
	if _, err := c.REST(ctx); err == nil || !strings.Contains(err.Error(), "not known until apply") {
		t.Fatalf("deferred REST error = %v", err)
	}

	secret := `{"type":"service_account","private_key":"SECRET-KEY-MATERIAL"`
	_, diags = buildClients(ctx, Config{Auth: gke.Auth{Credentials: secret}, Project: "p", Location: "l", Cluster: "c"}, "test")
	checkDiags(t, diags, []wantDiag{{path.Root("credentials"), "Invalid Google Credentials", "Cause: credentials are not valid JSON"}})
	if strings.Contains(diags[0].Detail(), "SECRET-KEY-MATERIAL") {
		t.Fatalf("diagnostic leaks the credentials: %s", diags[0].Detail())
	}
}
