package migration_test

import (
	"bytes"
	"context"
	"os/exec"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"

	"github.com/olapgke/terraform-provider-olapgke/internal/acctest"
	"github.com/olapgke/terraform-provider-olapgke/internal/stsutil"
)

// TestAccStatefulSetMigration_ResumeAfterSIGKILL drives the real terraform (or
// tofu) binary with a provider binary built from this checkout (dev_overrides), so
// a SIGKILL ends terraform and the provider together, as when a CI runner
// dies. It kills the apply right after the second ordinal's PVC was deleted,
// then runs apply again and checks that every ordinal ends up on pool-b with
// new pinned PVs and nothing lost.
func TestAccStatefulSetMigration_ResumeAfterSIGKILL(t *testing.T) {
	env := acctest.Sandbox(t)
	acctest.PreCheck(t)
	ensurePool(t, env, "pool-b", 3)
	f := newSet(t, env, "mig-kill", 3, "pool-a", "1Gi")
	f.switchPool(t, "pool-b")

	tf := acctest.NewTF(t, testAccStatefulSetMigrationConfig_basic("mig-kill", ""))
	tf.Env["TF_LOG_PROVIDER"] = "INFO"
	apply := func(ctx context.Context) (*exec.Cmd, *bytes.Buffer) {
		return tf.Cmd(ctx, "apply", "-auto-approve")
	}

	// Watch PVCs: kill the process group once ordinal 1's original PVC is being deleted.
	killed := make(chan string, 1)
	first, out1 := apply(t.Context())
	origPVC := map[string]bool{}
	for o := int32(0); o < f.n; o++ {
		_, c := f.get(t, o)
		origPVC[string(c.UID)] = true
	}
	target := stsutil.ClaimPVCName(claimName, f.name, 1)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	factory := informers.NewSharedInformerFactoryWithOptions(env.Kube, 0, informers.WithNamespace(f.ns))
	inf := factory.Core().V1().PersistentVolumeClaims().Informer()
	_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{UpdateFunc: func(_, n any) {
		c := n.(*corev1.PersistentVolumeClaim)
		if c.Name == target && origPVC[string(c.UID)] && c.DeletionTimestamp != nil && first.Process != nil {
			if err := syscall.Kill(-first.Process.Pid, syscall.SIGKILL); err == nil {
				select {
				case killed <- c.Name:
				default:
				}
			}
		}
	}})
	factory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())

	must(t, first.Start())
	done := make(chan error, 1)
	go func() { done <- first.Wait() }()
	select {
	case name := <-killed:
		t.Logf("terraform and the provider killed (SIGKILL) after PVC %s was deleted", name)
		t.Logf("killed apply ended: %v", <-done)
	case err := <-done:
		select {
		case name := <-killed: // killed, and Wait returned first
			t.Logf("terraform and the provider killed (SIGKILL) after PVC %s was deleted", name)
		default:
			t.Fatalf("first apply ended before it could be killed (%v):\n%s", err, out1)
		}
	case <-time.After(5 * time.Minute):
		_ = syscall.Kill(-first.Process.Pid, syscall.SIGKILL)
		t.Fatalf("first apply never deleted PVC %s:\n%s", target, out1)
	}
	cancel()
	f.checkMoved(t, "pool-b", 2)
	f.checkUntouched(t, 0)

	second, out2 := apply(t.Context())
	if err := second.Run(); err != nil {
		t.Fatalf("second apply failed: %v\n%s", err, out2)
	}
	f.checkMoved(t, "pool-b", 2, 1, 0)

	// And the next plan is empty.
	tf.PlanEmpty()
	// Clean up the state's resource (delete only forgets).
	if out, err := tf.Run("destroy", "-auto-approve"); err != nil {
		t.Errorf("destroy: %v\n%s", err, out)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
