package migration_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	kresource "k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"

	"github.com/olapgke/terraform-provider-olapgke/internal/acctest"
	"github.com/olapgke/terraform-provider-olapgke/internal/stsutil"
)

// TestAccStatefulSetMigration_ResumeBeforeControllerRecreates: an apply stopped right after it
// deleted ordinal 1's PVC and Pod, and both are gone before the StatefulSet controller has
// created them again (here held deterministically by a ResourceQuota of PVCs, which refuses the
// controller's new PVC, so it creates no Pod either; after a SIGKILL the
// controller's back-off makes the same gap, which is how CI found it). The next plan must take
// ordinal 1 as the step in progress, not as a down "other" ordinal that require_others_ready
// refuses; the apply finishes it first and then moves the rest, one at a time.
func TestAccStatefulSetMigration_ResumeBeforeControllerRecreates(t *testing.T) {
	env := acctest.Sandbox(t)
	ensurePool(t, env, "pool-b", 3)
	f := newSet(t, env, "mig-gap", 3, "pool-a", "1Gi")
	f.switchPool(t, "pool-b")
	kube := env.Kube
	quotas := kube.CoreV1().ResourceQuotas(f.ns)
	hold := &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: "hold-claims"},
		Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{
			corev1.ResourcePersistentVolumeClaims: kresource.MustParse("2"),
		}},
	}
	release := func() {
		if err := quotas.Delete(context.Background(), hold.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("deleting ResourceQuota %s: %v", hold.Name, err)
		}
	}
	t.Cleanup(release)

	// What the killed apply did to ordinal 1: its PVC, then its Pod (UID preconditions).
	leaveGap := func() {
		ctx := t.Context()
		q, err := quotas.Create(ctx, hold, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		// The sandbox runs no resource-quota controller, and quota admission enforces only
		// what the status counts: write it as the controller would (3 claims of 2 allowed).
		q.Status = corev1.ResourceQuotaStatus{Hard: hold.Spec.Hard, Used: corev1.ResourceList{
			corev1.ResourcePersistentVolumeClaims: kresource.MustParse("3"),
		}}
		if _, err := quotas.UpdateStatus(ctx, q, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		pod, pvc := f.get(t, 1)
		if err := kube.CoreV1().PersistentVolumeClaims(f.ns).Delete(ctx, pvc.Name,
			metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &pvc.UID}}); err != nil {
			t.Fatal(err)
		}
		if err := kube.CoreV1().Pods(f.ns).Delete(ctx, pod.Name,
			metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &pod.UID}}); err != nil {
			t.Fatal(err)
		}
		err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			_, errPod := kube.CoreV1().Pods(f.ns).Get(ctx, pod.Name, metav1.GetOptions{})
			_, errPVC := kube.CoreV1().PersistentVolumeClaims(f.ns).Get(ctx, pvc.Name, metav1.GetOptions{})
			return apierrors.IsNotFound(errPod) && apierrors.IsNotFound(errPVC), nil
		})
		if err != nil {
			t.Fatalf("ordinal 1's Pod and PVC never both gone: %v", err)
		}
	}

	var mon *orderMonitor
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories,
		Steps: []resource.TestStep{{
			PreConfig: func() { leaveGap(); mon = f.monitor(t, []int32{2, 0}, nil) },
			Config:    testAccStatefulSetMigrationConfig_basic(f.ns, ""),
			ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
				plancheck.ExpectResourceAction(res, plancheck.ResourceActionCreate),
				// A step under way: `moves` is decided at apply ("Migration In Progress").
				plancheck.ExpectUnknownValue(res, tfjsonpath.New("moves")),
				// Nothing new has been created for ordinal 1 while this plan was made.
				gapHeld{f: f},
				// Let the controller create ordinal 1 again during the apply.
				afterPlan(release),
			}},
			Check: func(*terraformState) error {
				mon.verify(t)
				mon.mu.Lock()
				ready1, deleted2 := mon.readyAt[1], mon.deletedAt[2]
				mon.mu.Unlock()
				if ready1.IsZero() || deleted2.IsZero() || deleted2.Before(ready1) {
					t.Errorf("ordinal 1 was not finished (new Pod Ready at %v) before ordinal 2 was moved (deleted at %v)", ready1, deleted2)
				}
				f.checkMoved(t, "pool-b", 2, 1, 0)
				return nil
			},
		}},
	})
}

// gapHeld fails the plan check unless ordinal 1 still has neither Pod nor PVC.
type gapHeld struct{ f *setFixture }

func (g gapHeld) CheckPlan(ctx context.Context, _ plancheck.CheckPlanRequest, resp *plancheck.CheckPlanResponse) {
	kube := g.f.env.Kube
	_, errPod := kube.CoreV1().Pods(g.f.ns).Get(ctx, stsutil.PodName(g.f.name, 1), metav1.GetOptions{})
	_, errPVC := kube.CoreV1().PersistentVolumeClaims(g.f.ns).Get(ctx, stsutil.ClaimPVCName(claimName, g.f.name, 1), metav1.GetOptions{})
	if !apierrors.IsNotFound(errPod) || !apierrors.IsNotFound(errPVC) {
		resp.Error = fmt.Errorf("ordinal 1 was recreated before the plan check (Pod: %v, PVC: %v): the quota did not hold the gap", errPod, errPVC)
	}
}

// afterPlan runs fn once the plan was made, before the apply.
type afterPlan func()

func (fn afterPlan) CheckPlan(context.Context, plancheck.CheckPlanRequest, *plancheck.CheckPlanResponse) {
	fn()
}

// TestAccStatefulSetMigration_WaitsForOrdinalComingUp: an earlier apply moved ordinal 1 to
// pool-b and was stopped before its new Pod was Ready (here: Ready turned False by hand, as a
// historical loading its segments stays for minutes). require_others_ready does not refuse the
// next migration for it: the plan knows its moves (2 and 0), and the apply waits until ordinal 1
// is Ready before it deletes anything of ordinal 2.
func TestAccStatefulSetMigration_WaitsForOrdinalComingUp(t *testing.T) {
	env := acctest.Sandbox(t)
	ensurePool(t, env, "pool-b", 3)
	f := newSet(t, env, "mig-up", 3, "pool-a", "1Gi")
	f.switchPool(t, "pool-b")
	f.moveBack(t, 1, "pool-b", "pool-b") // the earlier apply's move of ordinal 1
	setReady := func(ready corev1.ConditionStatus) {
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			p, err := env.Kube.CoreV1().Pods(f.ns).Get(context.Background(), stsutil.PodName(f.name, 1), metav1.GetOptions{})
			if err != nil {
				return err
			}
			p = p.DeepCopy()
			for i := range p.Status.Conditions {
				if c := &p.Status.Conditions[i]; c.Type == corev1.PodReady || c.Type == corev1.ContainersReady {
					c.Status, c.LastTransitionTime = ready, metav1.Now()
				}
			}
			_, err = env.Kube.CoreV1().Pods(f.ns).UpdateStatus(context.Background(), p, metav1.UpdateOptions{})
			return err
		})
		if err != nil {
			t.Errorf("setting Pod %s Ready=%s: %v", stsutil.PodName(f.name, 1), ready, err)
		}
	}
	// KWOK's pod-ready stage matches Pending Pods only: a Running Pod stays not Ready.
	setReady(corev1.ConditionFalse)

	var mon *orderMonitor
	var readyAgain time.Time
	var mu sync.Mutex
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories,
		Steps: []resource.TestStep{{
			PreConfig: func() { mon = f.monitor(t, []int32{2, 0}, nil) },
			Config:    testAccStatefulSetMigrationConfig_basic(f.ns, ""),
			ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
				plancheck.ExpectKnownValue(res, tfjsonpath.New("moves"), expectOrdinals(2, 0)),
				// The Pod becomes Ready while the apply runs: the outside event the apply waits
				// for (the plan above already proved ordinal 1 was not refused).
				afterPlan(func() {
					go func() {
						select {
						case <-time.After(5 * time.Second):
						case <-t.Context().Done():
							return
						}
						mu.Lock()
						readyAgain = time.Now()
						mu.Unlock()
						setReady(corev1.ConditionTrue)
					}()
				}),
			}},
			Check: func(*terraformState) error {
				mon.verify(t)
				mon.mu.Lock()
				deleted2 := mon.deletedAt[2]
				mon.mu.Unlock()
				mu.Lock()
				ready1 := readyAgain
				mu.Unlock()
				if ready1.IsZero() || deleted2.IsZero() || deleted2.Before(ready1) {
					t.Errorf("ordinal 2 was deleted at %v, before ordinal 1 was Ready again (%v)", deleted2, ready1)
				}
				f.checkMoved(t, "pool-b", 2, 1, 0)
				return nil
			},
		}},
	})
}
