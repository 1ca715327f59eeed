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
	work, tfWith := cliWorkdir(t, token, "")
	tf := func(args ...string) string { t.Helper(); return tfWith(nil, args...) }
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

// TestAccProvider_frameworkLogsAtTheAskedLevel is the near miss of QuietFrameworkLogs, which
// turns the framework's log lines down to what Terraform shows: a user who asks for DEBUG still
// gets the framework's DEBUG lines, and one who asks for TRACE its TRACE lines, through the real
// terraform CLI and the built binary (main applies the level before serving).
func TestAccProvider_frameworkLogsAtTheAskedLevel(t *testing.T) {
	env := acctest.Sandbox(t)
	// A planned create: the framework marks its unset computed attributes unknown, one DEBUG line
	// each (the data source alone logs only TRACE lines). Only planned, never applied.
	work, tf := cliWorkdir(t, sandboxToken(t, env), `
resource "olapgke_statefulset_expectation" "logs" {
  namespace = "default"
  name      = "logs"
  expect    = { spec = { replicas = 1 } }
}
`)
	frameworkLines := func(level string) (debug, trace int) {
		t.Helper()
		logPath := filepath.Join(work, "tf-"+level+".log")
		tf([]string{"TF_LOG=" + level, "TF_LOG_PATH=" + logPath}, "plan", "-no-color")
		raw, err := os.ReadFile(logPath)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(raw), "\n") {
			if !strings.Contains(line, "provider.terraform-provider-olapgke") || !strings.Contains(line, "@module=sdk.framework") {
				continue
			}
			switch {
			case strings.Contains(line, "[DEBUG]"):
				debug++
			case strings.Contains(line, "[TRACE]"):
				trace++
			}
		}
		return debug, trace
	}
	if debug, trace := frameworkLines("DEBUG"); debug == 0 || trace != 0 {
		t.Errorf("TF_LOG=DEBUG: %d framework DEBUG lines and %d TRACE lines in the log; want some DEBUG lines and no TRACE line", debug, trace)
	}
	if debug, trace := frameworkLines("TRACE"); debug == 0 || trace == 0 {
		t.Errorf("TF_LOG=TRACE: %d framework DEBUG lines and %d TRACE lines in the log; want both", debug, trace)
	}
}

// cliWorkdir builds the provider, writes a dev_overrides CLI config for it and a configuration
// that reads the sandbox's cluster with token (and holds extraHCL), and returns the configuration's directory and a
// function that runs the real terraform CLI there with extra environment variables (the
// environment is the test's, with TF_LOG unset unless extra sets it).
func cliWorkdir(t *testing.T, token, extraHCL string) (string, func(extra []string, args ...string) string) {
	t.Helper()
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
`, token)+extraHCL)
	return work, func(extra []string, args ...string) string {
		t.Helper()
		cmd := exec.Command(tfBin, append([]string{"-chdir=" + work}, args...)...)
		cmd.Env = append(os.Environ(), "TF_CLI_CONFIG_FILE="+rc, "GOOGLE_OAUTH_ACCESS_TOKEN=", "TF_IN_AUTOMATION=1",
			"TF_LOG=", "TF_LOG_PROVIDER=", "TF_LOG_SDK=", "TF_LOG_SDK_FRAMEWORK=", "TF_LOG_PATH=")
		cmd.Env = append(cmd.Env, extra...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("terraform %s: %v\n%s", strings.Join(args, " "), err, strings.ReplaceAll(string(out), token, "<TOKEN>"))
		}
		return string(out)
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
