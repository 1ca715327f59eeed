package provider_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/olapgke/terraform-provider-olapgke/internal/acctest"
)

// TestAccProvider_noSecretsInCLIOutput runs the real terraform CLI against the built provider
// (dev_overrides, no init, no registry) with the access token written literally in the provider
// block, and checks the human plan/apply/show output and the state file never print it.
func TestAccProvider_noSecretsInCLIOutput(t *testing.T) {
	env := acctest.Sandbox(t)
	token := sandboxToken(t, env)
	tfBin := os.Getenv("TF_ACC_TERRAFORM_PATH")

	dir := t.TempDir()
	binDir := filepath.Join(dir, "bin")
	build := exec.Command("go", "build", "-o", filepath.Join(binDir, "terraform-provider-olapgke"), ".")
	build.Dir = acctest.RepoRoot()
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the provider: %v\n%s", err, out)
	}
	rc := filepath.Join(dir, "dev.tfrc")
	writeFile(t, rc, fmt.Sprintf("provider_installation {\n  dev_overrides {\n    \"registry.terraform.io/olapgke/olapgke\" = %q\n  }\n  direct {}\n}\n", binDir))
	work := filepath.Join(dir, "work")
	writeFile(t, filepath.Join(work, "main.tf"), fmt.Sprintf(`
terraform {
  required_providers {
    olapgke = { source = "olapgke/olapgke" }
  }
}
provider "olapgke" {
  access_token = %q
}
data "olapgke_cluster" "this" {}
output "version" { value = data.olapgke_cluster.this.kubernetes_version }
`, token))

	tf := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(tfBin, append([]string{"-chdir=" + work}, args...)...)
		cmd.Env = append(os.Environ(), "TF_CLI_CONFIG_FILE="+rc, "GOOGLE_OAUTH_ACCESS_TOKEN=", "TF_IN_AUTOMATION=1", "TF_LOG=")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("terraform %s: %v\n%s", strings.Join(args, " "), err, strings.ReplaceAll(string(out), token, "<TOKEN>"))
		}
		return string(out)
	}
	outputs := map[string]string{
		"plan":  tf("plan", "-no-color", "-out=tfplan"),
		"apply": tf("apply", "-no-color", "tfplan"),
		"show":  tf("show", "-no-color"),
	}
	state, err := os.ReadFile(filepath.Join(work, "terraform.tfstate"))
	if err != nil {
		t.Fatal(err)
	}
	outputs["state file"] = string(state)
	if !strings.Contains(outputs["apply"], "version = ") {
		t.Fatalf("apply output lacks the data source's output; the check would prove nothing:\n%s", strings.ReplaceAll(outputs["apply"], token, "<TOKEN>"))
	}
	for what, out := range outputs {
		if strings.Contains(out, token) {
			t.Errorf("%s contains the access token", what)
		}
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}
