package reliability

import (
	"fmt"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/olapgke/terraform-provider-olapgke/internal/acctest"
)

// TestAccReliability_SIGKILLAtEachPhase kills terraform apply (and the provider plugin with it,
// SIGKILL to the process group) at each phase of an ordinal's move, then applies again:
//
//   - pvc-deleted: right after the ordinal's PVC got its deletionTimestamp;
//   - pod-deleted: right after its Pod got its deletionTimestamp;
//   - pod-created: while waiting for the new Pod to become Ready;
//   - ready: during the soak (min_ready_seconds) after the new Pod became Ready.
//
// The kill hits the second ordinal of the run, so one ordinal is finished and the rest are not
// started. The re-apply must complete, the next plan must be empty, and the monitor's
// invariants must hold across both runs.
func TestAccReliability_SIGKILLAtEachPhase(t *testing.T) {
	slow(t)
	env := acctest.Sandbox(t)
	acctest.PreCheck(t)
	phases := []string{"pvc-deleted", "pod-deleted", "pod-created", "ready"}
	if fast() {
		phases = []string{"pod-deleted"}
	}
	for _, phase := range phases {
		t.Run(phase, func(t *testing.T) {
			ns := "kill-" + phase
			s := newSet(t, env.Kube, ns, 4, "pool-a")
			s.switchPool(t, "pool-b")
			all := []int32{0, 1, 2, 3}
			f := newTF(t, migrationConfig(ns, "  min_ready_seconds = 3"))
			cmd, out := f.Cmd(t.Context(), "apply", "-auto-approve")

			var (
				mu       sync.Mutex
				first    int32 = -1
				killedAt string
			)
			killed := make(chan struct{})
			mon := s.watch(t, all, func(kind string, o int32) {
				mu.Lock()
				defer mu.Unlock()
				if first == -1 && kind == "pvc-deleted" {
					first = o
				}
				if kind != phase || o == first || killedAt != "" || cmd.Process == nil {
					return
				}
				if err := syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); err == nil {
					killedAt = fmt.Sprintf("%s of ordinal %d", kind, o)
					close(killed)
				}
			})
			mu.Lock()
			must(t, cmd.Start())
			mu.Unlock()
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			select {
			case <-killed:
				t.Logf("killed apply ended: %v", <-done)
			case err := <-done:
				select {
				case <-killed:
				default:
					t.Fatalf("first apply ended (%v) before phase %s of a second ordinal:\n%s", err, phase, out)
				}
			case <-time.After(5 * time.Minute):
				_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
				t.Fatalf("phase %s never reached:\n%s", phase, out)
			}
			t.Logf("terraform apply and the provider SIGKILLed at %s", killedAt)

			begin := time.Now()
			if out, err := f.Apply(); err != nil {
				t.Fatalf("apply after the SIGKILL failed: %v\n%s", err, out)
			}
			resume := time.Since(begin)
			f.PlanEmpty()
			longest, _ := mon.verify(t)
			s.checkFinal(t, "pool-b", all)
			result(t, "killed at %s; re-apply completed in %s; 4 ordinals on pool-b; longest move %s", killedAt, resume.Round(time.Millisecond), longest.Round(time.Millisecond))
			_, _ = f.Run("destroy", "-auto-approve")
		})
	}
}
