package bench

import (
	"context"
	"strings"
	"testing"
	"time"
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
