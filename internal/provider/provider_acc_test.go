package provider_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/olapgke/terraform-provider-olapgke/internal/acctest"
	"github.com/olapgke/terraform-provider-olapgke/internal/gke"
	"github.com/olapgke/terraform-provider-olapgke/internal/provider"
)

func TestMain(m *testing.M) { acctest.Main(m) }

// TestAccProvider_defaultKubernetesPath builds clients from the sandbox environment exactly as
// the provider does (no kubernetes block): GKE GetCluster on the emulator gives endpoint and
// CA, the access token goes to the real API server as a bearer token.
func TestAccProvider_defaultKubernetesPath(t *testing.T) {
	env := acctest.Sandbox(t)
	ctx := context.Background()

	c, err := provider.ClientsFromEnvironment(ctx, "test")
	if err != nil {
		t.Fatal(err)
	}
	if c.Deferred() {
		t.Fatal("clients deferred with a complete environment")
	}
	g, err := c.GKE(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cluster, err := g.GetCluster(ctx, gke.ClusterRef{Project: c.Project, Location: c.Location, Cluster: c.Cluster})
	if err != nil {
		t.Fatalf("GetCluster on the GKE emulator: %v", err)
	}
	cfg, err := c.REST(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if want := "https://" + cluster.GetEndpoint(); cfg.Host != want {
		t.Fatalf("REST host %q, want %q from GetCluster", cfg.Host, want)
	}
	ca, _ := base64.StdEncoding.DecodeString(cluster.GetMasterAuth().GetClusterCaCertificate())
	if len(ca) == 0 || string(cfg.CAData) != string(ca) {
		t.Fatal("REST CA is not the cluster CA from GetCluster")
	}
	if cfg.BearerToken != "" || cfg.BearerTokenFile != "" || cfg.ExecProvider != nil || cfg.AuthProvider != nil {
		t.Fatalf("the default path must authenticate only through the OAuth2 token source: %s", cfg)
	}
	if !strings.HasPrefix(cfg.UserAgent, "terraform-provider-olapgke/") || cfg.QPS < 50 {
		t.Fatalf("user agent %q, QPS %v", cfg.UserAgent, cfg.QPS)
	}

	kc, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	v, err := kc.Discovery().ServerVersion()
	if err != nil {
		t.Fatalf("server version through the default path: %v", err)
	}
	if v.GitVersion == "" {
		t.Fatalf("unexpected server version %q", v.GitVersion)
	}
	ns, err := kc.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("listing namespaces through the default path: %v", err)
	}
	found := false
	for _, n := range ns.Items {
		found = found || n.Name == "kube-system"
	}
	if !found {
		t.Fatalf("kube-system not among %d namespaces", len(ns.Items))
	}

	// Without the token the API server must refuse: the token really is what authenticates.
	anon := *cfg
	anon.WrapTransport = nil
	if _, err := kubernetes.NewForConfigOrDie(&anon).CoreV1().Namespaces().List(ctx, metav1.ListOptions{}); err == nil {
		t.Fatal("listing namespaces without the token succeeded; the test proves nothing")
	}
	_ = env
}

// TestAccClusterDataSource_basic reads olapgke_cluster through Terraform with the provider
// configured from the environment only (the sandbox's env file).
func TestAccClusterDataSource_basic(t *testing.T) {
	acctest.Sandbox(t)
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories,
		Steps: []resource.TestStep{{
			Config: `data "olapgke_cluster" "this" {}`,
			ConfigStateChecks: []statecheck.StateCheck{
				statecheck.ExpectKnownValue("data.olapgke_cluster.this", tfjsonpath.New("name"), knownvalue.StringExact(os.Getenv("OLAPGKE_CLUSTER"))),
				statecheck.ExpectKnownValue("data.olapgke_cluster.this", tfjsonpath.New("status"), knownvalue.StringExact("RUNNING")),
				statecheck.ExpectKnownValue("data.olapgke_cluster.this", tfjsonpath.New("endpoint"), knownvalue.StringRegexp(regexp.MustCompile(`^127\.0\.0\.1:\d+$`))),
				statecheck.ExpectKnownValue("data.olapgke_cluster.this", tfjsonpath.New("kubernetes_version"), knownvalue.StringRegexp(regexp.MustCompile(`^v\d+\.\d+\.\d+`))),
			},
		}},
	})
}

// TestAccProvider_invalidConfig shows the validation diagnostics through Terraform.
func TestAccProvider_invalidConfig(t *testing.T) {
	acctest.Sandbox(t)
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config: `
provider "olapgke" {
  container_insecure = true
  container_endpoint = "container.googleapis.com:443"
}
data "olapgke_cluster" "this" {}`,
				ExpectError: regexp.MustCompile(`Insecure GKE Connection To Non-Loopback Endpoint`),
			},
			{
				Config: `
provider "olapgke" {
  credentials  = "{}"
  access_token = "x"
}
data "olapgke_cluster" "this" {}`,
				ExpectError: regexp.MustCompile(`Conflicting Google Credentials`),
			},
		},
	})
}

// secretCheck fails when the JSON form of a plan or state contains a secret.
type secretCheck struct{ secrets []string }

func (s secretCheck) scan(what string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	for _, sec := range s.secrets {
		if strings.Contains(string(b), sec) {
			return fmt.Errorf("%s contains a secret (%d chars starting %q)", what, len(sec), sec[:4])
		}
	}
	return nil
}

func (s secretCheck) CheckPlan(_ context.Context, req plancheck.CheckPlanRequest, resp *plancheck.CheckPlanResponse) {
	// The JSON plan's "configuration" section is Terraform echoing the literal provider block
	// (and "variables" the variable values); plan files are secret by Terraform's own rules.
	// What the provider contributes is the planned values, changes and state, checked here.
	p := *req.Plan
	for what, v := range map[string]any{"plan.planned_values": p.PlannedValues, "plan.resource_changes": p.ResourceChanges, "plan.prior_state": p.PriorState, "plan.output_changes": p.OutputChanges, "plan.resource_drift": p.ResourceDrift} {
		if err := s.scan(what, v); err != nil {
			resp.Error = err
			return
		}
	}
}

func (s secretCheck) CheckState(_ context.Context, req statecheck.CheckStateRequest, resp *statecheck.CheckStateResponse) {
	resp.Error = s.scan("state", req.State)
}

// TestAccProvider_noSecretsInStateOrPlan configures the provider with the sandbox's access
// token in the provider block, then also as the kubernetes block's bearer token, and checks
// that neither the plan nor the state holds it.
func TestAccProvider_noSecretsInStateOrPlan(t *testing.T) {
	env := acctest.Sandbox(t)
	token := sandboxToken(t, env)
	t.Setenv("GOOGLE_OAUTH_ACCESS_TOKEN", "") // from the configuration only

	checks := secretCheck{secrets: []string{token}}
	ca := strings.ReplaceAll(string(env.REST.CAData), "\n", `\n`)
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config: fmt.Sprintf(`
provider "olapgke" {
  access_token = %q
}
data "olapgke_cluster" "this" {}`, token),
				ConfigPlanChecks:  resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{checks}, PostApplyPostRefresh: []plancheck.PlanCheck{checks}},
				ConfigStateChecks: []statecheck.StateCheck{checks, statecheck.ExpectKnownValue("data.olapgke_cluster.this", tfjsonpath.New("kubernetes_version"), knownvalue.NotNull())},
			},
			{
				Config: fmt.Sprintf(`
provider "olapgke" {
  access_token = %q
  kubernetes {
    host                   = %q
    token                  = %q
    cluster_ca_certificate = "%s"
  }
}
data "olapgke_cluster" "this" {}`, token, env.REST.Host, token, ca),
				ConfigPlanChecks:  resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{checks}},
				ConfigStateChecks: []statecheck.StateCheck{checks, statecheck.ExpectKnownValue("data.olapgke_cluster.this", tfjsonpath.New("kubernetes_version"), knownvalue.NotNull())},
			},
		},
	})
}

// TestAccProvider_noSecretsInTraceLogs runs plan/apply/refresh with TF_LOG=trace (Terraform's
// and the provider's logs in one file) with secrets coming from the environment, as in CI
// pipelines: the access token (default GKE path), the same token as KUBE_TOKEN (kubernetes
// block path), and credentials JSON carrying a marker (a failing path: errors must not echo it).
// Secrets written literally into a configuration are echoed by terraform-plugin-testing's own
// trace logging of the configuration, so they are covered by the state/plan test above.
func TestAccProvider_noSecretsInTraceLogs(t *testing.T) {
	env := acctest.Sandbox(t)
	token := sandboxToken(t, env)
	logPath := filepath.Join(t.TempDir(), "trace.log")
	t.Setenv("TF_LOG", "trace")
	t.Setenv("TF_LOG_PATH", logPath)
	t.Setenv("TF_ACC_LOG_PATH", logPath)

	config := `data "olapgke_cluster" "this" {}`
	ok := resource.TestStep{
		Config:            config,
		ConfigStateChecks: []statecheck.StateCheck{statecheck.ExpectKnownValue("data.olapgke_cluster.this", tfjsonpath.New("kubernetes_version"), knownvalue.NotNull())},
	}
	run := func(steps ...resource.TestStep) {
		resource.Test(t, resource.TestCase{
			PreCheck:                 func() { acctest.PreCheck(t) },
			ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories,
			Steps:                    steps,
		})
	}

	run(ok) // default path: GOOGLE_OAUTH_ACCESS_TOKEN from the sandbox env

	t.Setenv("KUBE_HOST", env.REST.Host)
	t.Setenv("KUBE_TOKEN", token)
	t.Setenv("KUBE_CLUSTER_CA_CERT_DATA", string(env.REST.CAData))
	run(ok) // kubernetes block path from KUBE_* variables
	for _, k := range []string{"KUBE_HOST", "KUBE_TOKEN", "KUBE_CLUSTER_CA_CERT_DATA"} {
		t.Setenv(k, "")
	}

	const credMarker = "PRIVATE-KEY-MARKER-7f3a"
	t.Setenv("GOOGLE_OAUTH_ACCESS_TOKEN", "")
	t.Setenv("GOOGLE_CREDENTIALS", fmt.Sprintf(`{"type":"service_account","client_email":"x@p.iam.gserviceaccount.com","private_key":%q,"token_uri":"http://127.0.0.1:1/token"}`, credMarker))
	run(resource.TestStep{Config: config, ExpectError: regexp.MustCompile(`Kubernetes API Server Not Reachable`)})

	data, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatalf("reading the trace log: %v", err)
	}
	if !strings.Contains(string(data), "olapgke provider configured") || !strings.Contains(string(data), "ConfigureProvider") {
		t.Fatalf("trace log %s lacks the provider's and Terraform's trace lines (%d bytes); the check would prove nothing", logPath, len(data))
	}
	for _, sec := range []string{token, credMarker} {
		if i := strings.Index(string(data), sec); i >= 0 {
			start := max(0, i-300)
			t.Fatalf("trace log contains a secret after: %q", strings.ReplaceAll(string(data[start:i]), token, "<TOKEN>"))
		}
	}
}

func sandboxToken(t *testing.T, env *acctest.Env) string {
	t.Helper()
	token := env.Vars["GOOGLE_OAUTH_ACCESS_TOKEN"]
	if len(token) < 8 {
		t.Fatalf("sandbox env has no usable GOOGLE_OAUTH_ACCESS_TOKEN (%d chars)", len(token))
	}
	return token
}
