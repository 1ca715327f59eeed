package acctest

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// TF runs a real terraform (or OpenTofu) CLI in its own working directory with the provider
// built from this checkout, through dev_overrides (no init for providers, no registry). Use it
// where terraform-plugin-testing's in-process provider does not fit: modules (`terraform get`),
// saved plans, SIGKILL of terraform mid-apply. A SIGKILL of the process group ends terraform and
// the provider plugin together, as when a CI runner dies.
type TF struct {
	t   testing.TB
	Bin string
	// Dir is the working directory (main.tf, state).
	Dir string
	rc  string
	// Env is extra environment for every command (KUBE_*, OLAPGKE_CONTAINER_ENDPOINT, TF_LOG).
	Env map[string]string
	// Logs holds every command's output, for secrets checks.
	Logs []string
}

var (
	buildOnce sync.Once
	pluginDir string
	buildErr  error
)

// ProviderBinaryDir builds the provider from this checkout once per test process and returns
// the directory holding terraform-provider-olapgke.
func ProviderBinaryDir(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "olapgke-test-plugin-") //nolint:usetesting // shared by every test of the process, outlives each one
		if err != nil {
			buildErr = err
			return
		}
		pluginDir = dir
		cmd := exec.Command("go", "build", "-o", filepath.Join(dir, "terraform-provider-olapgke"), ".")
		cmd.Dir = RepoRoot()
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("building the provider: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return pluginDir
}

// removeProviderBinary deletes the provider ProviderBinaryDir built (~120 MB per test process:
// left behind, every acceptance run leaks one per package). Main calls it after the tests.
func removeProviderBinary() {
	if pluginDir != "" {
		_ = os.RemoveAll(pluginDir)
	}
}

// TerraformBinary is $TF_ACC_TERRAFORM_PATH, else terraform on PATH.
func TerraformBinary(t testing.TB) string {
	t.Helper()
	if p := os.Getenv("TF_ACC_TERRAFORM_PATH"); p != "" {
		return p
	}
	bin, err := exec.LookPath("terraform")
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

// NewTF prepares a working directory with config (after the provider block) and a CLI config
// whose dev_overrides point at the freshly built provider, for both registry host names
// (registry.terraform.io and, for OpenTofu, registry.opentofu.org).
func NewTF(t testing.TB, config string) *TF {
	t.Helper()
	plugins := ProviderBinaryDir(t)
	dir := t.TempDir()
	rc := filepath.Join(dir, "terraformrc")
	if err := os.WriteFile(rc, fmt.Appendf(nil, `provider_installation {
  dev_overrides {
    "registry.terraform.io/olapgke/olapgke" = %q
    "registry.opentofu.org/olapgke/olapgke" = %q
  }
  direct {}
}
`, plugins, plugins), 0o600); err != nil {
		t.Fatal(err)
	}
	work := filepath.Join(dir, "work")
	if err := os.MkdirAll(work, 0o755); err != nil {
		t.Fatal(err)
	}
	f := &TF{t: t, Bin: TerraformBinary(t), Dir: work, rc: rc, Env: map[string]string{}}
	f.Write(config)
	return f
}

// Write replaces main.tf: the olapgke provider requirement and block, then config.
func (f *TF) Write(config string) {
	if err := os.WriteFile(filepath.Join(f.Dir, "main.tf"), []byte(`terraform {
  required_providers {
    olapgke = { source = "olapgke/olapgke" }
  }
}
provider "olapgke" {}
`+config), 0o600); err != nil {
		f.t.Fatal(err)
	}
}

// Cmd builds a terraform command (not started) with its combined output buffer.
func (f *TF) Cmd(ctx context.Context, args ...string) (*exec.Cmd, *bytes.Buffer) {
	// Flags go right after the subcommand (two words for `state list`): positional arguments (a
	// saved plan) come last.
	n := 1
	if args[0] == "state" && len(args) > 1 {
		n = 2
	}
	full := append(append([]string{}, args[:n]...), "-no-color")
	if args[0] != "state" && args[0] != "show" && args[0] != "get" && args[0] != "output" && args[0] != "query" {
		full = append(full, "-input=false")
	}
	full = append(full, args[n:]...)
	cmd := exec.CommandContext(ctx, f.Bin, full...)
	cmd.Dir = f.Dir
	env := append(os.Environ(), "TF_CLI_CONFIG_FILE="+f.rc, "TF_IN_AUTOMATION=1", "CHECKPOINT_DISABLE=1")
	for k, v := range f.Env {
		env = append(env, k+"="+v)
	}
	cmd.Env = env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	return cmd, &out
}

// Run runs a terraform command to the end and returns its output and error.
func (f *TF) Run(args ...string) (string, error) {
	// Not the test's context: cleanups (a destroy) run after it is cancelled.
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	cmd, out := f.Cmd(ctx, args...)
	err := cmd.Run()
	f.Logs = append(f.Logs, out.String())
	return out.String(), err
}

// Apply is `terraform apply -auto-approve`.
func (f *TF) Apply(args ...string) (string, error) {
	return f.Run(append([]string{"apply", "-auto-approve"}, args...)...)
}

// PlanEmpty fails the test unless `terraform plan` has no changes.
func (f *TF) PlanEmpty() {
	f.t.Helper()
	out, err := f.Run("plan", "-detailed-exitcode")
	if err != nil {
		f.t.Fatalf("plan after a completed apply is not empty (%v):\n%s", err, out)
	}
}

// NoSecrets fails the test if any secret appears in the state file, in the output of any
// command run so far or in the trace log, if one was configured with TF_LOG_PATH.
func (f *TF) NoSecrets(secrets ...string) {
	f.t.Helper()
	sources := map[string]string{}
	for i, l := range f.Logs {
		sources[fmt.Sprintf("output of command %d", i+1)] = l
	}
	for _, name := range []string{"terraform.tfstate", "terraform.tfstate.backup"} {
		if b, err := os.ReadFile(filepath.Join(f.Dir, name)); err == nil {
			sources[name] = string(b)
		}
	}
	if p := f.Env["TF_LOG_PATH"]; p != "" {
		b, err := os.ReadFile(p)
		if err != nil || len(b) == 0 {
			f.t.Fatalf("trace log %s missing or empty (%v): the secrets check would prove nothing", p, err)
		}
		sources["trace log"] = string(b)
	}
	for where, text := range sources {
		for _, s := range secrets {
			if len(s) >= 8 && strings.Contains(text, s) {
				f.t.Errorf("a secret (%d chars) appears in the %s", len(s), where)
			}
		}
	}
}

// errorSummary matches Terraform's rendering of an error diagnostic with a Title-Case summary.
var errorSummary = regexp.MustCompile(`Error: ([A-Z][A-Za-z0-9-]*(?: [A-Z0-9][A-Za-z0-9-]*)+)`)

// ProviderBugTexts are what Terraform prints for a crash or a provider bug.
var ProviderBugTexts = []string{"panic:", "Plugin did not respond", "The plugin encountered an error",
	"Provider produced inconsistent", "rpc error: code = Unavailable desc = error reading from server"}

// ClearError checks that a failed terraform run failed with olapgke's diagnostics, not a crash
// or a provider bug, and returns the first error summary.
func ClearError(t testing.TB, out string) string {
	t.Helper()
	for _, bad := range ProviderBugTexts {
		if strings.Contains(out, bad) {
			t.Fatalf("terraform failed with %q (a crash or provider bug, not a clear error):\n%s", bad, out)
		}
	}
	m := errorSummary.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("terraform failed without a Title-Case error summary:\n%s", out)
	}
	return m[1]
}
