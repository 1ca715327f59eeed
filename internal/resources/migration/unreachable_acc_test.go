package migration_test

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/olapgke/terraform-provider-olapgke/internal/acctest"
	"github.com/olapgke/terraform-provider-olapgke/internal/planner"
)

// TestAccStatefulSetMigration_UnreachableNode (#40 item 2): the node of ordinal 1 first runs a
// kubelet whose container runtime is down (Ready=False, tainted not-ready at once: refused the
// same way, the kubelet's message quoted), then loses its kubelet (the sandbox stops its Lease renewals and heartbeats; the node lifecycle controller
// marks it Unknown and taints it unreachable after its grace period). Moving the set to another
// pool then stops within seconds, naming the node and the ordinal, with nothing of that ordinal
// deleted, where it used to delete the PVC and the Pod and wait out ordinal_timeout for a Pod
// that stays Terminating. The near miss: with force_delete_on_unreachable_nodes = true the same
// apply force-deletes the Pod and moves every ordinal (ordinal 1 onto a new, empty PVC). The
// nodes live in pools of their own, so that other tests of the package never meet the dead node.
func TestAccStatefulSetMigration_UnreachableNode(t *testing.T) {
	env := acctest.Sandbox(t)
	ensurePool(t, env, "unreach-a", 2)
	ensurePool(t, env, "unreach-b", 2)
	ns := "mig-unreachable"
	f := newSet(t, env, ns, 2, "unreach-a", "1Gi")
	f.switchPool(t, "unreach-b")
	pod1, pvc1 := f.get(t, 1)
	dead := pod1.Spec.NodeName
	if p0, _ := f.get(t, 0); p0.Spec.NodeName == dead {
		t.Fatalf("ordinals 0 and 1 share node %s: the test needs them apart", dead)
	}
	ctx := t.Context()
	t.Cleanup(func() {
		if err := env.SetKubelet(context.Background(), dead, acctest.KubeletAlive); err != nil {
			t.Errorf("bringing node %s back: %v", dead, err)
		}
	})
	// The node lifecycle controller's judgement, by the planner's own predicate.
	kubeletState := func(state, want string) {
		t.Helper()
		if err := env.SetKubelet(ctx, dead, state); err != nil {
			t.Fatal(err)
		}
		var why string
		err := wait.PollUntilContextTimeout(ctx, time.Second, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
			n, err := env.Kube.CoreV1().Nodes().Get(ctx, dead, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			why = planner.NodeUnreachable(n, time.Now())
			return strings.Contains(why, want), nil
		})
		if err != nil {
			t.Fatalf("node %s never became unreachable (%q) after its kubelet went %s: %v", dead, why, state, err)
		}
	}
	// First a kubelet without its container runtime: Ready=False, the not-ready taint.
	kubeletState(acctest.KubeletNotReady, "Ready=False")

	var started time.Time
	cfg := func(force bool) string {
		return testAccStatefulSetMigrationConfig_basic(ns, fmt.Sprintf("  force_delete_on_unreachable_nodes = %v\n", force))
	}
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				// Not ready: refused the same way, quoting the kubelet's own condition.
				Config: cfg(false),
				ExpectError: regexp.MustCompile(`(?s)Ordinal On Unreachable Node.*Ordinal\s+1:\s+Pod\s+hist-1\s+on\s+node\s+` +
					regexp.QuoteMeta(dead) + `.*container\s+runtime\s+is\s+down.*force_delete_on_unreachable_nodes`),
			},
			{
				PreConfig: func() {
					f.checkUntouched(t, 0, 1)
					// Dead: nothing renews the Lease; Unknown after the grace period.
					kubeletState(acctest.KubeletDead, "Ready=Unknown")
					started = time.Now()
				},
				Config: cfg(false),
				ExpectError: regexp.MustCompile(`(?s)Ordinal On Unreachable Node.*Ordinal\s+1:\s+Pod\s+hist-1\s+on\s+node\s+` +
					regexp.QuoteMeta(dead) + `.*force_delete_on_unreachable_nodes`),
			},
			{
				PreConfig: func() {
					// ordinal_timeout is 3m: a stop "at once" is well under it.
					if el := time.Since(started); el > time.Minute {
						t.Errorf("the refused apply took %s (ordinal_timeout 3m)", el.Round(time.Second))
					}
					f.checkUntouched(t, 0, 1)
					if _, c := f.get(t, 1); c.UID != pvc1.UID || c.DeletionTimestamp != nil {
						t.Errorf("ordinal 1's PVC was touched: UID %s (was %s), deletionTimestamp %v", c.UID, pvc1.UID, c.DeletionTimestamp)
					}
				},
				Config: cfg(true),
				Check: func(*terraformState) error {
					for _, o := range []int32{0, 1} {
						ok, why, err := placed(ctx, env.Kube, ns, "hist", o, "unreach-b")
						if err != nil || !ok {
							return fmt.Errorf("ordinal %d not on unreach-b: %s %v", o, why, err)
						}
					}
					if _, c := f.get(t, 1); c.UID == pvc1.UID {
						return fmt.Errorf("ordinal 1 kept PVC %s (UID %s): not moved", c.Name, c.UID)
					}
					return nil
				},
			},
		},
	})
	// Once the node is back, its TopoLVM agent finishes the deletion of the abandoned volume.
	if err := env.SetKubelet(ctx, dead, acctest.KubeletAlive); err != nil {
		t.Fatal(err)
	}
	abandonedVolumeGone(t, env, f.pvs[1], pod1.UID, ns)
}

// abandonedVolumeGone waits until PV pv (the abandoned volume) and the old Pod (uid) are gone.
func abandonedVolumeGone(t *testing.T, env *acctest.Env, pv string, uid types.UID, ns string) {
	t.Helper()
	err := wait.PollUntilContextTimeout(t.Context(), time.Second, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := env.Kube.CoreV1().PersistentVolumes().Get(ctx, pv, metav1.GetOptions{})
		if !apierrors.IsNotFound(err) {
			return false, client(err)
		}
		p, err := env.Kube.CoreV1().Pods(ns).Get(ctx, "hist-1", metav1.GetOptions{})
		if err != nil {
			return false, client(err)
		}
		return p.UID != uid && p.Status.Phase == corev1.PodRunning, nil
	})
	if err != nil {
		t.Errorf("after node came back: old PV %s or the new Pod hist-1: %v", pv, err)
	}
}
