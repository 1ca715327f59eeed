package bench

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/olapgke/terraform-provider-olapgke/internal/stsutil"
)

// Sandbox is a running `olapgke-sandbox up` subprocess.
type Sandbox struct {
	Dir        string            // state dir (kubeconfig, env, ready)
	Env        map[string]string // DIR/env
	Kubeconfig string
	Rest       *rest.Config
	Kube       kubernetes.Interface

	// StartToReady is the time from exec to DIR/ready; CPUToReady the process's user+sys time then.
	StartToReady, CPUToReady time.Duration
	// RSSAtReadyMiB is the process's peak RSS (VmHWM) when DIR/ready appeared. With real TopoLVM
	// (`--topolvm real`), CPUToReady and RSSAtReadyMiB add those of the olapgke-topolvm child.
	RSSAtReadyMiB int
	ReadyNodes    int

	cmd     *exec.Cmd
	exited  chan struct{} // closed when the process has exited; waitErr is then set
	waitErr error
}

// World returns a sandbox world YAML: cluster olap with pool-a of a nodes and pool-b of b nodes
// (the default machine type, 2 raw-block Local SSDs each).
func World(a, b int) string {
	return fmt.Sprintf(`clusters:
- name: olap
  location: us-central1-a
  nodePools:
  - name: pool-a
    nodeCount: %d
  - name: pool-b
    nodeCount: %d
`, a, b)
}

// RealTopoLVMWorld is World with TopoLVM's bring-up delays at zero (lvmd start, CSI
// registration) and external-provisioner's CSIStorageCapacity client at 500 writes/s instead of
// its default 1/s (burst 5): start-up then measures what the sandbox and TopoLVM's own code cost,
// not the waits the world file adds to look like GKE (at the defaults, 500 nodes take ~8 min for
// their capacity objects alone, on GKE too). The capacity poll stays at its default: a node's
// first CSIStorageCapacity does not wait for it (the sandbox's kubelet shim registers a node's
// plugin only once TopoLVM's controller's cache shows the node, see internal/sandbox/README.md).
func RealTopoLVMWorld(a, b int) string {
	return World(a, b) + `topolvm:
  bringUp:
    lvmdStart: 0s
    csiRegistration: 0s
    capacityQPS: 500
    capacityBurst: 500
`
}

// StartSandbox runs `bin up --state-dir dir/state --config dir/world.yaml [args]` and waits (up
// to timeout) for DIR/ready. Its output goes to dir/sandbox.log.
func StartSandbox(ctx context.Context, bin, dir, world string, timeout time.Duration, args ...string) (*Sandbox, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	cfgPath := filepath.Join(dir, "world.yaml")
	if err := os.WriteFile(cfgPath, []byte(world), 0o644); err != nil {
		return nil, err
	}
	state := filepath.Join(dir, "state")
	_ = os.RemoveAll(state)
	logf, err := os.Create(filepath.Join(dir, "sandbox.log"))
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, append([]string{"up", "--state-dir", state, "--config", cfgPath}, args...)...)
	cmd.Stdout, cmd.Stderr = logf, logf
	start := time.Now()
	if err := cmd.Start(); err != nil {
		_ = logf.Close()
		return nil, fmt.Errorf("starting %s: %w", bin, err)
	}
	s := &Sandbox{Dir: state, cmd: cmd, exited: make(chan struct{})}
	go func() { s.waitErr = cmd.Wait(); _ = logf.Close(); close(s.exited) }()

	// Polling a file: the sandbox's only readiness signal is DIR/ready (see DESIGN.md).
	err = wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		select {
		case <-s.exited:
			return false, fmt.Errorf("sandbox exited before ready (%v); see %s", s.waitErr, logf.Name())
		default:
		}
		_, err := os.Stat(filepath.Join(state, "ready"))
		return err == nil, nil
	})
	if err != nil {
		s.Stop()
		return nil, fmt.Errorf("sandbox not ready: %w", err)
	}
	s.StartToReady = time.Since(start)
	s.RSSAtReadyMiB = s.PeakRSSMiB()
	s.CPUToReady = s.CPU()

	if s.Env, err = readEnv(filepath.Join(state, "env")); err != nil {
		s.Stop()
		return nil, err
	}
	s.Kubeconfig = filepath.Join(state, "kubeconfig")
	if s.Rest, err = clientcmd.BuildConfigFromFlags("", s.Kubeconfig); err != nil {
		s.Stop()
		return nil, err
	}
	s.Rest.QPS, s.Rest.Burst = 100, 200
	if s.Kube, err = kubernetes.NewForConfig(s.Rest); err != nil {
		s.Stop()
		return nil, err
	}
	nodes, err := s.Kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		s.Stop()
		return nil, err
	}
	for i := range nodes.Items {
		if stsutil.NodeReady(&nodes.Items[i]) == corev1.ConditionTrue {
			s.ReadyNodes++
		}
	}
	return s, nil
}

// PeakRSSMiB is the process's VmHWM now, plus its children's (the olapgke-topolvm process of
// `--topolvm real`): a bound on the peak of both together, their peaks need not coincide.
func (s *Sandbox) PeakRSSMiB() int {
	var sum int
	for _, pid := range s.pids() {
		v, _ := PeakRSSMiB(pid)
		sum += v
	}
	return sum
}

// CPU is the user+system time the sandbox process and its direct children have used so far.
func (s *Sandbox) CPU() time.Duration {
	var sum time.Duration
	for _, pid := range s.pids() {
		c, _ := cpuTime(pid)
		sum += c
	}
	return sum
}

// pids is the sandbox process and its direct children.
func (s *Sandbox) pids() []int {
	pid := s.cmd.Process.Pid
	out := []int{pid}
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
	for _, t := range tasks {
		b, err := os.ReadFile(t)
		if err != nil {
			continue
		}
		for _, f := range strings.Fields(string(b)) {
			if c, err := strconv.Atoi(f); err == nil {
				out = append(out, c)
			}
		}
	}
	return out
}

// Stop sends SIGTERM and waits up to 30 s, then kills.
func (s *Sandbox) Stop() {
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.exited:
	case <-time.After(30 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.exited
	}
}

// PeakRSSMiB reads VmHWM (the kernel's peak resident set size) of pid.
func PeakRSSMiB(pid int) (int, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	defer func() { _ = f.Close() }()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			kb, err := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")))
			return kb / 1024, err
		}
	}
	return 0, errors.New("no VmHWM in /proc status")
}

// cpuTime is utime+stime of pid (fields 14 and 15 of /proc/pid/stat, in clock ticks of 1/100 s:
// Linux's USER_HZ is 100 on every architecture Go supports).
func cpuTime(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	f := strings.Fields(s[i+1:]) // f[0] is field 3 (state)
	if len(f) < 13 {
		return 0, errors.New("short /proc stat")
	}
	u, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(u+st) * 10 * time.Millisecond, nil
}

func readEnv(path string) (map[string]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	env := map[string]string{}
	for _, l := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(l), "="); ok && !strings.HasPrefix(k, "#") {
			env[k] = v
		}
	}
	return env, nil
}

// Token is the bearer token the generated provider blocks use: the REST config's, else the GKE
// emulator's access token from the sandbox's env file.
func (sb *Sandbox) Token() string {
	if sb.Rest.BearerToken != "" {
		return sb.Rest.BearerToken
	}
	return sb.Env["GOOGLE_OAUTH_ACCESS_TOKEN"]
}
