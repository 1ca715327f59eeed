// Package sandboxtest proves, against a running olapgke-sandbox (started once
// per test binary as a subprocess, as the provider's acceptance tests start
// it), that the real controllers and scheduler behave as DESIGN.md and the
// REFERENCE notes rely on.
package sandboxtest

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/olapgke/terraform-provider-olapgke/internal/sandbox/gke"
)

// testWorld is the default world plus pool-b, the migration target.
const testWorld = `
clusters:
- name: olap
  location: us-central1-a
  nodePools:
  - name: pool-a
  - name: pool-b
`

var (
	kube     kubernetes.Interface
	stateDir string
	envVars  map[string]string
	// sandboxBin is the olapgke-sandbox binary every sandbox of the package runs.
	sandboxBin string
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	flag.Parse()
	if testing.Short() {
		fmt.Println("sandboxtest: skipped in -short mode (starts a sandbox)")
		return 0
	}
	bin, cleanupBin, err := sandboxBinary()
	if err != nil {
		fmt.Fprintln(os.Stderr, "sandboxtest:", err)
		return 1
	}
	defer cleanupBin()
	sandboxBin = bin
	stateDir, err = os.MkdirTemp("", "sandboxtest-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "sandboxtest:", err)
		return 1
	}
	cfg := filepath.Join(stateDir, "world.yaml")
	if err := os.WriteFile(cfg, []byte(testWorld), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "sandboxtest:", err)
		return 1
	}
	// The package's sandbox is the simulator whatever $OLAPGKE_SANDBOX_TOPOLVM says (make
	// testacc-topolvm-real sets it to real): the differential test and the real-TopoLVM tests
	// compare their own `up --topolvm real` sandboxes with it.
	cmd := exec.Command(bin, "up", "--state-dir", stateDir, "--config", cfg, "--topolvm", "sim")
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "sandboxtest:", err)
		return 1
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
		}
		if os.Getenv("SANDBOXTEST_KEEP") == "" {
			os.RemoveAll(stateDir)
		} else {
			fmt.Println("sandboxtest: kept", stateDir)
		}
	}()

	err = wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 3*time.Minute, true, func(context.Context) (bool, error) {
		select {
		case err := <-exited:
			return false, fmt.Errorf("sandbox exited before ready: %v", err)
		default:
		}
		_, err := os.Stat(filepath.Join(stateDir, "ready"))
		return err == nil, nil
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "sandboxtest:", err, "; log:", filepath.Join(stateDir, "sandbox.log"))
		return 1
	}
	if envVars, err = readEnv(filepath.Join(stateDir, "env")); err != nil {
		fmt.Fprintln(os.Stderr, "sandboxtest:", err)
		return 1
	}
	rc, err := clientcmd.BuildConfigFromFlags("", filepath.Join(stateDir, "kubeconfig"))
	if err != nil {
		fmt.Fprintln(os.Stderr, "sandboxtest:", err)
		return 1
	}
	rc.QPS, rc.Burst = 100, 200
	if kube, err = kubernetes.NewForConfig(rc); err != nil {
		fmt.Fprintln(os.Stderr, "sandboxtest:", err)
		return 1
	}
	return m.Run()
}

// sandboxBinary is $OLAPGKE_SANDBOX_BIN, or the module's command built into
// a temporary directory (warm build cache: well under a minute) that cleanup removes (the
// binary is ~250 MB: a leak per test run fills a runner's disk).
func sandboxBinary() (bin string, cleanup func(), err error) {
	if b := os.Getenv("OLAPGKE_SANDBOX_BIN"); b != "" {
		return b, func() {}, nil
	}
	dir, err := os.MkdirTemp("", "sandboxtest-bin-")
	if err != nil {
		return "", nil, err
	}
	cleanup = func() { _ = os.RemoveAll(dir) }
	out := filepath.Join(dir, "olapgke-sandbox")
	// The version stamp `make sandbox-bin` gives it (scripts/sandbox-ldflags.sh).
	ldflags, err := exec.Command("../../../scripts/sandbox-ldflags.sh").Output()
	if err != nil {
		cleanup()
		return "", nil, fmt.Errorf("scripts/sandbox-ldflags.sh: %w", err)
	}
	cmd := exec.Command("go", "build", "-ldflags", strings.TrimSpace(string(ldflags)), "-o", out, "../cmd/olapgke-sandbox")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		cleanup()
		return "", nil, fmt.Errorf("build olapgke-sandbox: %w", err)
	}
	return out, cleanup, nil
}

func readEnv(path string) (map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), "=")
		if !ok {
			return nil, fmt.Errorf("%s: line %q is not KEY=value", path, sc.Text())
		}
		out[k] = v
	}
	return out, sc.Err()
}

// poll re-evaluates cond every 100ms until it holds, fails, or timeout passes.
func poll(t *testing.T, timeout time.Duration, what string, cond func(ctx context.Context) (bool, error)) {
	t.Helper()
	var lastErr error
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		ok, err := cond(ctx)
		if err != nil {
			// Keep the last error that says something: in the last second the client fails
			// on the deadline itself (its rate limiter refuses a wait that would pass it).
			if dl, ok := ctx.Deadline(); !ok || time.Until(dl) > time.Second {
				lastErr = err
			}
			return false, nil
		}
		return ok, nil
	})
	if err != nil {
		t.Fatalf("%s: not reached within %s (last error: %v)", what, timeout, lastErr)
	}
}

// holds checks that inv stays true at every 100ms sample for the window:
// used to show that something does NOT happen (a stalled rollout).
func holds(t *testing.T, window time.Duration, what string, inv func(ctx context.Context) error) {
	t.Helper()
	deadline := time.Now().Add(window)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		// Each check gets the test's context, not the window's: a check
		// cut short by the window's end would be a false failure.
		if err := inv(t.Context()); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if !time.Now().Before(deadline) {
			return
		}
		select {
		case <-t.Context().Done():
			t.Fatalf("%s: %v", what, t.Context().Err())
		case <-tick.C:
		}
	}
}

// The sandbox's components start before the API server's RBAC and PriorityClass bootstrap hooks
// finish (controlplane.Start); the ready marker still means the whole of /readyz passes. The
// test runs first, right after the marker, and reads once: no poll.
func TestReady_APIServerBootstrapDone(t *testing.T) {
	status := 0
	res := kube.CoreV1().RESTClient().Get().AbsPath("/readyz").Do(t.Context()).StatusCode(&status)
	if status != http.StatusOK {
		t.Errorf("/readyz at the ready marker: status %d (%v), want 200", status, res.Error())
	}
	for _, name := range []string{"system-node-critical", "system-cluster-critical"} {
		if _, err := kube.SchedulingV1().PriorityClasses().Get(t.Context(), name, metav1.GetOptions{}); err != nil {
			t.Errorf("PriorityClass %s at the ready marker: %v", name, err)
		}
	}
	if _, err := kube.RbacV1().ClusterRoles().Get(t.Context(), "cluster-admin", metav1.GetOptions{}); err != nil {
		t.Errorf("ClusterRole cluster-admin at the ready marker: %v", err)
	}
}

// The sandbox's own components reach the API server on a plain-HTTP loopback port
// (controlplane.Start): the same handler chain as the TLS port, so a client without the token
// is refused there too, and one with it is served. Users' kubeconfig names the TLS port.
func TestInternalPort_AuthenticatesAsTheTLSPort(t *testing.T) {
	ready := readReady(t, stateDir)
	internal := ready["apiserver-internal"]
	if !strings.HasPrefix(internal, "http://127.0.0.1:") {
		t.Fatalf("ready file: apiserver-internal=%q, want http://127.0.0.1:PORT\n%v", internal, ready)
	}
	get := func(token string) int {
		req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, internal+"/api/v1/nodes?limit=1", nil)
		if err != nil {
			t.Fatal(err)
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.StatusCode
	}
	if got := get(""); got != http.StatusForbidden {
		t.Errorf("internal port, no token: status %d, want %d (system:anonymous refused by RBAC)", got, http.StatusForbidden)
	}
	if got := get("not-the-token"); got != http.StatusUnauthorized {
		t.Errorf("internal port, wrong token: status %d, want %d", got, http.StatusUnauthorized)
	}
	if got := get(envVars["GOOGLE_OAUTH_ACCESS_TOKEN"]); got != http.StatusOK {
		t.Errorf("internal port, the sandbox's token: status %d, want %d", got, http.StatusOK)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", envVars["KUBECONFIG"])
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(cfg.Host, "https://") || strings.Contains(internal, strings.TrimPrefix(cfg.Host, "https://")) {
		t.Errorf("users' kubeconfig server %q: want the TLS port, not %s", cfg.Host, internal)
	}
}

// TestVersion: the API server answers /version as a GKE cluster of the emulator's master
// version does (`kubectl version` reads the same): gitVersion "v" + gke.Version, stamped by
// scripts/sandbox-ldflags.sh as kubernetes' release builds stamp theirs, and major/minor of the
// binary (a sandbox emulating an older minor says so in emulationMajor/emulationMinor). Unstamped
// it would read "v0.0.0-master+$Format:%H$".
func TestVersion(t *testing.T) {
	info, err := kube.Discovery().ServerVersion()
	if err != nil {
		t.Fatal(err)
	}
	if want := "v" + gke.Version; info.GitVersion != want {
		t.Errorf("gitVersion %q, want %q (is the sandbox built with scripts/sandbox-ldflags.sh?)", info.GitVersion, want)
	}
	if want := info.Major + "." + info.Minor; !strings.HasPrefix(gke.Version, want+".") {
		t.Errorf("major.minor %s, want that of %s", want, gke.Version)
	}
	if info.GitTreeState != "clean" {
		t.Errorf("gitTreeState %q, want clean", info.GitTreeState)
	}
}
