package bench

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// A sandbox binary that exits before DIR/ready must give an error at once, and cleaning up after
// it must not hang (it once did: the exit was consumed by the readiness poll).
func TestStartSandboxExitsBeforeReady(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	start := time.Now()
	_, err := StartSandbox(ctx, "/bin/false", t.TempDir(), World(1, 1), 15*time.Second)
	if err == nil || !strings.Contains(err.Error(), "exited before ready") {
		t.Fatalf("StartSandbox(/bin/false) = %v, want an 'exited before ready' error", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("StartSandbox took %s to notice the exit", d)
	}
}

// The provider's peak RSS is read from /proc by executable: a running process is found and its
// VmHWM read; an executable that never ran reads 0.
func TestPeakRSSOf(t *testing.T) {
	exe, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep on PATH")
	}
	if exe, err = filepath.EvalSymlinks(exe); err != nil {
		t.Fatal(err)
	}
	if got := peakRSSOf(filepath.Join(t.TempDir(), "sleep")); got != 0 {
		t.Fatalf("an executable that never ran: %d KiB", got)
	}
	cmd := exec.Command(exe, "5")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	peak := watchPeakRSS(exe)
	if err := wait.PollUntilContextTimeout(context.Background(), 10*time.Millisecond, 5*time.Second, true, func(context.Context) (bool, error) {
		return peakRSSOf(exe) > 0, nil
	}); err != nil {
		t.Fatalf("no VmHWM read for the running %s", exe)
	}
	if kb := peakRSSOf(exe); kb <= 0 || kb > 1<<20 {
		t.Errorf("VmHWM of sleep: %d KiB", kb)
	}
	if got := peak(); got <= 0 {
		t.Errorf("watchPeakRSS of a running sleep: %d KiB", got)
	}
}
