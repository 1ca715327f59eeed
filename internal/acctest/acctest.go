// Package acctest is the acceptance-test harness: it starts one olapgke sandbox per test
// process (a subprocess: real API server, controllers, scheduler, KWOK nodes, GKE emulator),
// configures the environment so the provider under test finds it through its default path, and
// stops it when the package's tests end.
//
// Use it like this:
//
//	func TestMain(m *testing.M) { acctest.Main(m) }
//
//	func TestAccThing_basic(t *testing.T) {
//		env := acctest.Sandbox(t) // skips unless TF_ACC=1
//		resource.Test(t, resource.TestCase{
//			PreCheck:                 func() { acctest.PreCheck(t) },
//			ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories,
//			...
//		})
//	}
package acctest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/providerserver"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/olapgke/terraform-provider-olapgke/internal/provider"
)

// Environment variables the harness reads.
const (
	// EnvSandboxBin names a prebuilt sandbox binary; otherwise the harness builds one.
	EnvSandboxBin = "OLAPGKE_SANDBOX_BIN"
	// EnvKeepSandbox keeps the sandbox state directory after the tests (it is always kept on failure).
	EnvKeepSandbox = "OLAPGKE_KEEP_SANDBOX"
	// EnvStartTimeout overrides StartTimeout (a Go duration).
	EnvStartTimeout = "OLAPGKE_SANDBOX_START_TIMEOUT"
	// EnvKubernetesVersion is the Kubernetes minor the package's sandbox emulates
	// (`olapgke-sandbox up --kubernetes-version`; "1.34".."1.37"; default the
	// sandbox's own, 1.37). `make testacc-matrix` sets it per run.
	EnvKubernetesVersion = "OLAPGKE_SANDBOX_KUBERNETES_VERSION"
	// EnvTopoLVM selects the sandbox's TopoLVM (`up --topolvm`): unset or "real" is
	// TopoLVM's, external-provisioner's and external-resizer's own code (the sandbox finds
	// olapgke-topolvm next to its own binary, or through OLAPGKE_TOPOLVM_BIN, which it
	// inherits); "sim" is the sandbox's simulator.
	EnvTopoLVM = "OLAPGKE_SANDBOX_TOPOLVM"
	// EnvCapacityPoll is external-provisioner's capacity poll interval on the harness's
	// sandboxes (`up --capacity-poll`; default TestCapacityPoll).
	EnvCapacityPoll = "OLAPGKE_SANDBOX_CAPACITY_POLL"
)

// TestCapacityPoll is the capacity poll of the harness's sandboxes unless EnvCapacityPoll says
// otherwise. external-provisioner refreshes a node's CSIStorageCapacity after it provisions
// there and on topology changes, but capacity freed by a deleted volume only at the next poll
// (upstream's and the world's default: 1 minute, as on GKE). Suites free and reuse capacity
// within seconds, so their sandboxes poll every 2 s; the world's 1 m stays the default of `up`.
const TestCapacityPoll = "2s"

// RealTopoLVM reports whether the harness's sandboxes run TopoLVM's own code (the default)
// rather than the simulator (EnvTopoLVM=sim).
func RealTopoLVM() bool { return os.Getenv(EnvTopoLVM) != "sim" }

// Timeouts of the harness.
var (
	// StartTimeout bounds the wait for DIR/ready after the sandbox process started. The
	// control plane is up in seconds on an idle machine; the margin is for CI machines where
	// several test packages (each with its own sandbox) and builds share two cores.
	StartTimeout = 6 * time.Minute
	// StopTimeout is how long the sandbox gets to exit after SIGTERM before it is killed.
	StopTimeout = 30 * time.Second
)

// ProtoV6ProviderFactories serve the provider in-process for terraform-plugin-testing.
var ProtoV6ProviderFactories = map[string]func() (tfprotov6.ProviderServer, error){
	provider.TypeName: providerserver.NewProtocol6WithError(provider.New("acctest")()),
}

// Env is a running sandbox.
type Env struct {
	// Dir is the sandbox state directory (kubeconfig, env, ready, sandbox.log).
	Dir string
	// Vars are the KEY=value lines of DIR/env; they are also set in the process environment.
	Vars map[string]string
	// Kubeconfig is the path of the sandbox's kubeconfig (system:masters).
	Kubeconfig string
	// Kube and REST reach the API server exactly as the provider does by default:
	// GKE GetCluster (emulator) -> endpoint + CA, bearer token from GOOGLE_OAUTH_ACCESS_TOKEN.
	Kube kubernetes.Interface
	REST *rest.Config
}

var (
	world        string // --config for this package (YAML text or a file path)
	fixedVersion string // --kubernetes-version fixed by the package (MainAtVersion)

	startOnce sync.Once
	started   *sandboxProcess
	startEnv  *Env
	startErr  error
)

// Main runs the package's tests and stops the sandbox if one was started. Use in TestMain.
func Main(m *testing.M) { os.Exit(run(m)) }

// MainWithWorld is Main with a sandbox world for this package: worldYAML is passed to
// `olapgke-sandbox up --config`. It is either YAML text or the path of a YAML file.
func MainWithWorld(m *testing.M, worldYAML string) {
	world = worldYAML
	os.Exit(run(m))
}

// MainAtVersion is MainWithWorld for a package whose tests are about one
// Kubernetes minor (e.g. "1.35"): its sandbox emulates that version whatever
// OLAPGKE_SANDBOX_KUBERNETES_VERSION says.
func MainAtVersion(m *testing.M, version, worldYAML string) {
	world, fixedVersion = worldYAML, version
	os.Exit(run(m))
}

// KubernetesVersion is the minor the package's sandbox emulates ("" = the
// sandbox's default).
func KubernetesVersion() string {
	if fixedVersion != "" {
		return fixedVersion
	}
	return os.Getenv(EnvKubernetesVersion)
}

func run(m *testing.M) int {
	if err := prepareTerraform(); err != nil {
		if os.Getenv("TF_ACC") != "" {
			fmt.Fprintln(os.Stderr, "acctest:", err)
			return 1
		}
	}
	code := m.Run()
	removeProviderBinary()
	if started != nil {
		keep := code != 0 || os.Getenv(EnvKeepSandbox) != ""
		if err := started.stop(keep); err != nil {
			fmt.Fprintln(os.Stderr, "acctest: stopping sandbox:", err)
		}
		if keep {
			fmt.Fprintf(os.Stderr, "acctest: sandbox state kept in %s (log: %s)\n", started.dir, started.logPath())
		}
	}
	return code
}

var (
	prepareOnce sync.Once
	prepareErr  error
)

// prepareTerraform makes terraform-plugin-testing use the local terraform binary, never download
// one, and not trip over a CLI config file that does not exist. It runs once per test binary.
func prepareTerraform() error {
	prepareOnce.Do(func() { prepareErr = prepareCLI() })
	return prepareErr
}

func prepareCLI() error {
	if f := os.Getenv("TF_CLI_CONFIG_FILE"); f != "" {
		if _, err := os.Stat(f); err != nil {
			_ = os.Unsetenv("TF_CLI_CONFIG_FILE")
		}
	}
	_ = os.Setenv("CHECKPOINT_DISABLE", "1")
	if os.Getenv("TF_ACC_TERRAFORM_PATH") == "" {
		p, err := exec.LookPath("terraform")
		if err != nil {
			return errors.New("terraform is not on PATH and TF_ACC_TERRAFORM_PATH is not set; acceptance tests need a local terraform binary (>= 1.8) and will not download one")
		}
		_ = os.Setenv("TF_ACC_TERRAFORM_PATH", p)
	}
	if os.Getenv("TF_ACC") == "" {
		return nil
	}
	// Say which CLI runs the tests, and refuse a mix that would test neither: OpenTofu resolves
	// provider sources on registry.opentofu.org, Terraform on registry.terraform.io.
	bin := os.Getenv("TF_ACC_TERRAFORM_PATH")
	cmd := exec.Command(bin, "version")
	cmd.Env = append(os.Environ(), "TF_CLI_CONFIG_FILE=/dev/null")
	out, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("%s version: %w", bin, err)
	}
	version := strings.TrimSpace(strings.SplitN(string(out), "\n", 2)[0])
	cliVersion = version
	fmt.Fprintf(os.Stderr, "acctest: CLI %s (%s)\n", version, bin)
	tofu := strings.HasPrefix(version, "OpenTofu")
	if host := os.Getenv("TF_ACC_PROVIDER_HOST"); tofu != (host == "registry.opentofu.org") {
		return fmt.Errorf("%s is %q but TF_ACC_PROVIDER_HOST is %q: set TF_ACC_PROVIDER_HOST=registry.opentofu.org for OpenTofu and leave it unset for Terraform", bin, version, host)
	}
	return nil
}

// cliVersion is the first line of `<cli> version` ("Terraform v1.11.4", "OpenTofu v1.10.10").
var cliVersion string

// CLIWriteOnly reports whether the CLI under test supports write-only attributes and ephemeral
// variables (Terraform 1.11+, OpenTofu 1.11+). Call it after Sandbox or PreCheck.
func CLIWriteOnly() bool {
	f := strings.Fields(cliVersion)
	if len(f) < 2 {
		return false
	}
	var major, minor int
	if _, err := fmt.Sscanf(strings.TrimPrefix(f[1], "v"), "%d.%d", &major, &minor); err != nil {
		return false
	}
	return major > 1 || major == 1 && minor >= 11
}

// PreCheck fails the test unless the sandbox is up and terraform is available. It starts the
// sandbox if needed (and skips without TF_ACC, like Sandbox).
func PreCheck(t *testing.T) {
	t.Helper()
	Sandbox(t)
	if p := os.Getenv("TF_ACC_TERRAFORM_PATH"); p == "" {
		t.Fatal("TF_ACC_TERRAFORM_PATH is empty: terraform was not found on PATH")
	}
	for _, k := range []string{"GOOGLE_PROJECT", "OLAPGKE_LOCATION", "OLAPGKE_CLUSTER", "OLAPGKE_CONTAINER_ENDPOINT"} {
		if os.Getenv(k) == "" {
			t.Fatalf("%s is not set after the sandbox started; its env file lacks it", k)
		}
	}
}

// Sandbox skips the test unless TF_ACC is set; otherwise it returns the process's sandbox,
// starting it on first use.
func Sandbox(t testing.TB) *Env {
	t.Helper()
	if os.Getenv("TF_ACC") == "" {
		t.Skip("acceptance test: set TF_ACC=1 to run it against the local sandbox")
	}
	startOnce.Do(func() {
		if err := prepareTerraform(); err != nil {
			startErr = err
			return
		}
		startEnv, startErr = start(context.Background())
	})
	if startErr != nil {
		t.Fatalf("sandbox: %v", startErr)
	}
	return startEnv
}

// RepoRoot is the provider module's root directory.
func RepoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

func start(ctx context.Context) (*Env, error) {
	bin, err := sandboxBinary(ctx)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "olapgke-sandbox-")
	if err != nil {
		return nil, err
	}
	args := []string{"up", "--state-dir", dir}
	if world != "" {
		cfg, err := worldFile(dir, world)
		if err != nil {
			return nil, err
		}
		args = append(args, "--config", cfg)
	}
	if v := KubernetesVersion(); v != "" {
		args = append(args, "--kubernetes-version", v)
	}
	if v := os.Getenv(EnvTopoLVM); v != "" {
		args = append(args, "--topolvm", v)
	}
	if os.Getenv(EnvCapacityPoll) == "" {
		args = append(args, "--capacity-poll", TestCapacityPoll)
	}
	p, err := startProcess(bin, dir, args)
	if err != nil {
		return nil, err
	}
	started = p

	timeout := StartTimeout
	if v := os.Getenv(EnvStartTimeout); v != "" {
		if timeout, err = time.ParseDuration(v); err != nil {
			return nil, fmt.Errorf("%s=%q: %w", EnvStartTimeout, v, err)
		}
	}
	if err := p.waitReady(ctx, timeout); err != nil {
		return nil, err
	}
	vars, err := readEnvFile(filepath.Join(dir, "env"))
	if err != nil {
		return nil, err
	}
	for k, v := range vars {
		if err := os.Setenv(k, v); err != nil {
			return nil, err
		}
	}
	env := &Env{Dir: dir, Vars: vars, Kubeconfig: filepath.Join(dir, "kubeconfig")}
	if kc := vars["KUBECONFIG"]; kc != "" {
		env.Kubeconfig = kc
	}

	// Reach the API server the way the provider does (GKE GetCluster -> endpoint, CA, token).
	c, err := provider.ClientsFromEnvironment(ctx, "acctest")
	if err != nil {
		return nil, fmt.Errorf("building clients from the sandbox env as the provider would: %w", err)
	}
	if env.REST, err = c.REST(ctx); err != nil {
		return nil, fmt.Errorf("REST config through the GKE emulator: %w", err)
	}
	if env.Kube, err = kubernetes.NewForConfig(env.REST); err != nil {
		return nil, err
	}
	return env, nil
}

// worldFile returns the --config path: world itself if it names a file, else a file holding it.
func worldFile(dir, world string) (string, error) {
	if !strings.Contains(world, "\n") {
		if _, err := os.Stat(world); err == nil {
			return filepath.Abs(world)
		}
	}
	p := filepath.Join(dir, "world.yaml")
	return p, os.WriteFile(p, []byte(world), 0o600)
}

// readEnvFile parses KEY=value lines (blank lines and # comments ignored).
func readEnvFile(path string) (map[string]string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading sandbox env file: %w", err)
	}
	vars := map[string]string{}
	for i, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("%s line %d is not KEY=value", path, i+1)
		}
		vars[strings.TrimPrefix(k, "export ")] = v
	}
	return vars, nil
}

// sandboxBinary returns $OLAPGKE_SANDBOX_BIN or builds <repo>/.bin/olapgke-sandbox. Test
// packages run in parallel, so builds are serialised with a file lock; Go's build cache makes
// the later builds quick.
func sandboxBinary(ctx context.Context) (string, error) {
	if b := os.Getenv(EnvSandboxBin); b != "" {
		if _, err := os.Stat(b); err != nil {
			return "", fmt.Errorf("%s=%s: %w", EnvSandboxBin, b, err)
		}
		return b, nil
	}
	root := RepoRoot()
	binDir := filepath.Join(root, ".bin")
	if err := os.MkdirAll(binDir, 0o755); err != nil {
		return "", err
	}
	unlock, err := lockFile(filepath.Join(binDir, ".build.lock"))
	if err != nil {
		return "", err
	}
	defer unlock()
	out := filepath.Join(binDir, "olapgke-sandbox")
	// The version stamp `make sandbox-bin` gives it (scripts/sandbox-ldflags.sh).
	ldflags, err := exec.CommandContext(ctx, filepath.Join(root, "scripts", "sandbox-ldflags.sh")).Output()
	if err != nil {
		return "", fmt.Errorf("scripts/sandbox-ldflags.sh: %w", err)
	}
	cmd := exec.CommandContext(ctx, "go", "build", "-ldflags", strings.TrimSpace(string(ldflags)), "-o", out, "./cmd/olapgke-sandbox")
	cmd.Dir = filepath.Join(root, "internal", "sandbox")
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building the sandbox (go build in %s; set %s to use a prebuilt one): %w\n%s", cmd.Dir, EnvSandboxBin, err, b)
	}
	return out, nil
}

func lockFile(path string) (func(), error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("locking %s: %w", path, err)
	}
	return func() { _ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN); _ = f.Close() }, nil
}

// sandboxProcess is the running `olapgke-sandbox up`.
type sandboxProcess struct {
	dir  string
	cmd  *exec.Cmd
	log  *os.File
	done chan struct{}
	err  error // Wait's result, valid after done is closed
}

func (p *sandboxProcess) logPath() string { return filepath.Join(p.dir, "sandbox.log") }

func startProcess(bin, dir string, args []string) (*sandboxProcess, error) {
	p := &sandboxProcess{dir: dir, done: make(chan struct{})}
	log, err := os.Create(p.logPath())
	if err != nil {
		return nil, err
	}
	p.log = log
	p.cmd = exec.Command(bin, args...)
	p.cmd.Stdout, p.cmd.Stderr = log, log
	p.cmd.SysProcAttr = sysProcAttr()
	if err := p.cmd.Start(); err != nil {
		_ = log.Close()
		return nil, fmt.Errorf("starting %s: %w", bin, err)
	}
	go func() {
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

// waitReady polls for DIR/ready until timeout, failing early if the process exits.
func (p *sandboxProcess) waitReady(ctx context.Context, timeout time.Duration) error {
	ready := filepath.Join(p.dir, "ready")
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		select {
		case <-p.done:
			return false, fmt.Errorf("sandbox exited before it was ready: %v", p.err)
		default:
		}
		_, err := os.Stat(ready)
		return err == nil, nil
	})
	if err != nil {
		if wait.Interrupted(err) {
			err = fmt.Errorf("sandbox not ready after %s (no %s)", timeout, ready)
		}
		return fmt.Errorf("%w\n--- last lines of %s ---\n%s", err, p.logPath(), tail(p.logPath(), 40))
	}
	return nil
}

// stop sends SIGTERM, waits StopTimeout, then kills. It removes the state dir unless keep.
func (p *sandboxProcess) stop(keep bool) error {
	var err error
	select {
	case <-p.done:
	default:
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(StopTimeout):
			_ = p.cmd.Process.Kill()
			<-p.done
			err = fmt.Errorf("sandbox did not exit within %s of SIGTERM; killed", StopTimeout)
		}
	}
	_ = p.log.Close()
	if !keep {
		_ = os.RemoveAll(p.dir)
	}
	return err
}

// tail returns the last n lines of a file.
func tail(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return "(no log: " + err.Error() + ")"
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
