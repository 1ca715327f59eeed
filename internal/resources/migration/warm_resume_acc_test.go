package migration_test

import (
	"context"
	"os"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"

	"github.com/olapgke/terraform-provider-olapgke/internal/acctest"
	planmigration "github.com/olapgke/terraform-provider-olapgke/internal/planner/migration"
)

// A warm move killed (SIGKILL of terraform and the provider together) at each of its phases
// resumes on the next apply, from the cluster alone: once the sink copier exists (the copy
// under way), once the copy's PV is kept for the hand-over (the cut-over started), and once it
// is reserved for the ordinal's claim (the old claim about to go). Every ordinal ends on pool-b
// with its claim bound to the copy, nothing of the copy left, and the next plan is empty.
//
// make testacc runs the last phase (the hand-over's: the old claim about to go) to keep CI on its
// budget; `make testacc-warm-kill` (OLAPGKE_WARM_KILL_PHASES=all) runs the three.
func TestAccStatefulSetMigration_WarmMoveResumesAfterSIGKILL(t *testing.T) {
	t.Parallel()
	env := acctest.Sandbox(t)
	acctest.PreCheck(t)
	ensurePool(t, env, "pool-b", 3)
	for _, phase := range []struct {
		name string
		pod  func(*corev1.Pod) bool
		pv   func(*corev1.PersistentVolume) bool
	}{
		{name: "copying", pod: func(p *corev1.Pod) bool { return p.Labels[planmigration.LabelCopierRole] == planmigration.CopierSink }},
		{name: "cut-over", pv: func(pv *corev1.PersistentVolume) bool { return pv.Annotations[planmigration.AnnWarmClaim] != "" }},
		{name: "reserved", pv: func(pv *corev1.PersistentVolume) bool {
			return pv.Annotations[planmigration.AnnWarmClaim] != "" && pv.Spec.ClaimRef != nil && pv.Spec.ClaimRef.UID == ""
		}},
	} {
		if phase.name != "reserved" && os.Getenv("OLAPGKE_WARM_KILL_PHASES") != "all" {
			continue
		}
		t.Run(phase.name, func(t *testing.T) {
			t.Parallel()
			ns := "mig-warm-kill-" + phase.name
			f := newSet(t, env, ns, 2, "pool-a", "1Gi")
			f.switchPool(t, "pool-b")
			seen := watchCopiers(t, env, f.ns)
			tf := acctest.NewTF(t, testAccStatefulSetMigrationConfig_basic(ns, warmCopyHCL(0, "")))
			first, out1 := tf.Cmd(t.Context(), "apply", "-auto-approve")
			killed := make(chan struct{}, 1)
			kill := func() {
				if first.Process != nil && syscall.Kill(-first.Process.Pid, syscall.SIGKILL) == nil {
					select {
					case killed <- struct{}{}:
					default:
					}
				}
			}
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			pods := informers.NewSharedInformerFactoryWithOptions(env.Kube, 0, informers.WithNamespace(ns))
			cluster := informers.NewSharedInformerFactory(env.Kube, 0)
			on := func(match func(any) bool) cache.ResourceEventHandlerFuncs {
				return cache.ResourceEventHandlerFuncs{
					AddFunc: func(o any) {
						if match(o) {
							kill()
						}
					},
					UpdateFunc: func(_, o any) {
						if match(o) {
							kill()
						}
					},
				}
			}
			if phase.pod != nil {
				_, _ = pods.Core().V1().Pods().Informer().AddEventHandler(on(func(o any) bool { p, ok := o.(*corev1.Pod); return ok && phase.pod(p) }))
			}
			if phase.pv != nil {
				_, _ = cluster.Core().V1().PersistentVolumes().Informer().AddEventHandler(on(func(o any) bool {
					pv, ok := o.(*corev1.PersistentVolume)
					return ok && pv.Spec.ClaimRef != nil && pv.Spec.ClaimRef.Namespace == ns && phase.pv(pv)
				}))
			}
			pods.Start(ctx.Done())
			cluster.Start(ctx.Done())
			pods.WaitForCacheSync(ctx.Done())
			cluster.WaitForCacheSync(ctx.Done())
			must(t, first.Start())
			done := make(chan error, 1)
			go func() { done <- first.Wait() }()
			select {
			case <-killed:
				t.Logf("terraform and the provider killed (SIGKILL) at phase %s; apply ended: %v", phase.name, <-done)
			case err := <-done:
				select {
				case <-killed:
				default:
					t.Fatalf("first apply ended before phase %s (%v):\n%s", phase.name, err, out1)
				}
			case <-time.After(5 * time.Minute):
				kill()
				t.Fatalf("first apply never reached phase %s:\n%s", phase.name, out1)
			}
			cancel()
			second, out2 := tf.Cmd(t.Context(), "apply", "-auto-approve")
			if err := second.Run(); err != nil {
				t.Fatalf("second apply failed: %v\n%s", err, out2)
			}
			f.checkMoved(t, "pool-b", 1, 0)
			f.checkWarm(t, seen, 1, 0)
			tf.PlanEmpty()
			if out, err := tf.Run("destroy", "-auto-approve"); err != nil {
				t.Errorf("destroy: %v\n%s", err, out)
			}
		})
	}
}
