package nodepool_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"

	"github.com/olapgke/terraform-provider-olapgke/internal/acctest"
)

// Taints change in place, but a NoExecute taint evicts the Pods that do not tolerate it, and an
// ordinal whose TopoLVM volume pins it to the node then stays Pending. The guard refuses adding
// one while such an ordinal lives on the pool and names it; a NoSchedule taint (running Pods
// stay) is accepted, and so is the NoExecute taint once the ordinal's Pod tolerates it.
func TestAccLocalSSDNodePool_NoExecuteTaintGuard(t *testing.T) {
	env := acctest.Sandbox(t)
	ctx := context.Background()
	const ns, set, pool = "acc-taint", "db", "acc-taint"
	cfg := func(effect, extra string) string {
		taints := ""
		if effect != "" {
			taints = fmt.Sprintf(`taints = [{ key = "dedicated", value = "olap", effect = %q }]`, effect)
		}
		return poolConfig("test", pool, fmt.Sprintf("  node_count = 1\n  %s\n  %s\n", taints, extra))
	}
	t.Cleanup(func() {
		_ = env.Kube.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{})
	})
	var uid types.UID
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories,
		CheckDestroy:             checkGone(pool),
		Steps: []resource.TestStep{
			{
				Config: cfg("", ""),
				Check: func(*terraform.State) error {
					if err := runStatefulSet(ctx, env.Kube, ns, set, pool); err != nil {
						return err
					}
					p, err := env.Kube.CoreV1().Pods(ns).Get(ctx, set+"-0", metav1.GetOptions{})
					uid = p.UID
					return err
				},
			},
			{
				Config: cfg("NO_EXECUTE", ""),
				ExpectError: wrapped(`Pinned Ordinals Would Be Evicted.*taints add dedicated=olap:NoExecute to every node.*` +
					`StatefulSet acc-taint/db ordinal\(s\) 0.*PVC acc-taint/data-db-0.*its Pod does not tolerate dedicated=olap:NoExecute.*` +
					`add a toleration.*allow_local_data_loss = true`),
			},
			{ // NoSchedule keeps new Pods off and evicts none: accepted, applied in place
				Config: cfg("NO_SCHEDULE", ""),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(res, plancheck.ResourceActionUpdate),
				}},
				Check: resource.ComposeTestCheckFunc(
					checkNodes(env.Kube, pool, 1, nil, "dedicated"),
					checkSamePod(ctx, env.Kube, ns, set+"-0", &uid),
				),
			},
			{ // the ordinal's Pod (and its template) tolerate the taint: NoExecute is accepted
				PreConfig: func() {
					if err := tolerate(ctx, env.Kube, ns, set); err != nil {
						t.Fatalf("adding the toleration: %v", err)
					}
				},
				Config: cfg("NO_EXECUTE", ""),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(res, plancheck.ResourceActionUpdate),
				}},
				Check: resource.ComposeTestCheckFunc(
					checkNodes(env.Kube, pool, 1, nil, "dedicated"),
					checkSamePod(ctx, env.Kube, ns, set+"-0", &uid),
				),
			},
			{ // the PV is still pinned to the pool: accepting the loss lets the test's destroy go through
				Config: cfg("NO_EXECUTE", "allow_local_data_loss = true"),
			},
		},
	})
}

// tolerate adds a NoExecute toleration of dedicated=olap (no tolerationSeconds) to the
// StatefulSet's template and to its running Pod (a Pod's tolerations may be added to in place).
func tolerate(ctx context.Context, kc kubernetes.Interface, ns, set string) error {
	tol := corev1.Toleration{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "olap", Effect: corev1.TaintEffectNoExecute}
	// Read and write again on a conflict: the StatefulSet controller and KWOK update the objects'
	// status meanwhile.
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		s, err := kc.AppsV1().StatefulSets(ns).Get(ctx, set, metav1.GetOptions{})
		if err != nil {
			return err
		}
		s.Spec.Template.Spec.Tolerations = append(s.Spec.Template.Spec.Tolerations, tol)
		_, err = kc.AppsV1().StatefulSets(ns).Update(ctx, s, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return err
	}
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		p, err := kc.CoreV1().Pods(ns).Get(ctx, set+"-0", metav1.GetOptions{})
		if err != nil {
			return err
		}
		p.Spec.Tolerations = append(p.Spec.Tolerations, tol)
		_, err = kc.CoreV1().Pods(ns).Update(ctx, p, metav1.UpdateOptions{})
		return err
	})
}

// checkSamePod verifies that the Pod is the one recorded (not evicted and recreated) and Ready.
func checkSamePod(ctx context.Context, kc kubernetes.Interface, ns, name string, uid *types.UID) resource.TestCheckFunc {
	return func(*terraform.State) error {
		p, err := kc.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if p.UID != *uid || p.DeletionTimestamp != nil {
			return fmt.Errorf("pod %s/%s was replaced or is terminating (uid %s, was %s)", ns, name, p.UID, *uid)
		}
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
				return nil
			}
		}
		return fmt.Errorf("pod %s/%s is not Ready", ns, name)
	}
}
