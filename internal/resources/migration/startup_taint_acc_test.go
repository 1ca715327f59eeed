package migration_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/olapgke/terraform-provider-olapgke/internal/acctest"
	"github.com/olapgke/terraform-provider-olapgke/internal/stsutil"
)

// TestAccStatefulSetMigration_WaitsForStartupTaint creates a pool with storage_startup_taint and
// migrates onto it in one apply. Its nodes register tainted and without TopoLVM capacity (no
// volume group yet), so the migration waits (planner.TopoLVMNotReady: the start-up taint)
// instead of refusing, and deletes nothing; once the bootstrap DaemonSet exists the sandbox
// removes the taint, capacity is published and every ordinal moves.
func TestAccStatefulSetMigration_WaitsForStartupTaint(t *testing.T) {
	env := acctest.Sandbox(t)
	const ns, pool, dsNS = "mig-startup", "pool-startup", "mig-startup-bootstrap"
	for _, n := range []string{ns, dsNS} {
		if _, err := env.Kube.CoreV1().Namespaces().Create(t.Context(), nsObject(n), createOpts); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { deleteNamespace(env, n) })
	}
	f := &setFixture{env: env, ns: ns, name: "hist", n: 2, podUIDs: map[int32]string{}, pvs: map[int32]string{}}
	withTaint := strings.Replace(testAccStatefulSetMigrationConfig_newPool(ns, pool, true),
		"  node_count            = 2\n", "  node_count            = 2\n  storage_startup_taint = true\n", 1)
	if !strings.Contains(withTaint, "storage_startup_taint") {
		t.Fatal("config builder changed: storage_startup_taint not inserted")
	}
	bootstrapped := make(chan error, 1)
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config: testAccStatefulSetMigrationConfig_newPool(ns, pool, false),
				Check: func(*terraformState) error {
					f.waitPlaced(t, "pool-a")
					for o := int32(0); o < 2; o++ {
						p, c := f.get(t, o)
						f.podUIDs[o], f.pvs[o] = string(p.UID), c.Spec.VolumeName
					}
					return nil
				},
			},
			{
				PreConfig: func() {
					deleted := watchDeletions(t, env, ns)
					go func() { bootstrapped <- bootstrapWhenWaiting(t.Context(), env, ns, pool, dsNS, deleted) }()
				},
				Config: withTaint,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction("olapgke_local_ssd_node_pool.target", plancheck.ResourceActionCreate),
					plancheck.ExpectResourceAction(res, plancheck.ResourceActionUpdate),
				}},
				Check: func(*terraformState) error {
					if err := <-bootstrapped; err != nil {
						return err
					}
					f.checkMoved(t, pool, 1, 0)
					return nil
				},
			},
		},
	})
}

// bootstrapWhenWaiting polls until the apply created the pool's nodes (tainted, no capacity) and
// moved the template to them, checks that nothing was deleted meanwhile, then creates the
// bootstrap DaemonSet (the sandbox runs no DaemonSet controller: only the object matters).
func bootstrapWhenWaiting(ctx context.Context, env *acctest.Env, ns, pool, dsNS string, deleted func() []string) error {
	var last string
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		var broken string
		if last, broken = targetPending(ctx, env, ns, pool); broken != "" {
			return false, errors.New(broken)
		}
		return last == "", nil
	})
	if err != nil {
		return fmt.Errorf("waiting for the tainted pool and the template: %s: %w", last, err)
	}
	if d := deleted(); len(d) > 0 {
		return fmt.Errorf("deleted while the target nodes carried the startup taint: %v", d)
	}
	lbl := map[string]string{"app.kubernetes.io/name": "olapgke-vg-bootstrap"}
	_, err = env.Kube.AppsV1().DaemonSets(dsNS).Create(ctx, &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: "vg-bootstrap", Labels: lbl},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: lbl},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: lbl},
				Spec: corev1.PodSpec{
					Tolerations: []corev1.Toleration{{Key: stsutil.TaintStorageNotReady, Operator: corev1.TolerationOpExists}},
					Containers:  []corev1.Container{{Name: "vg-bootstrap", Image: "olapgke/vg-bootstrap:test"}},
				},
			},
		},
	}, createOpts)
	return err
}

// targetPending is what the apply has not done yet ("" when the pool's two nodes exist and the
// template asks for them), and broken when a node is ready before the bootstrap ran.
func targetPending(ctx context.Context, env *acctest.Env, ns, pool string) (pending, broken string) {
	l, err := env.Kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: stsutil.LabelNodePool + "=" + pool})
	if err != nil {
		return err.Error(), ""
	}
	if len(l.Items) != 2 {
		return fmt.Sprintf("pool %s has %d node(s)", pool, len(l.Items)), ""
	}
	for _, n := range l.Items {
		if !hasStartupTaint(&n) || hasCapacity(&n) {
			return "", fmt.Sprintf("node %s: startup taint %v, capacity %v before the bootstrap", n.Name, hasStartupTaint(&n), hasCapacity(&n))
		}
	}
	s, err := env.Kube.AppsV1().StatefulSets(ns).Get(ctx, "hist", metav1.GetOptions{})
	if err != nil {
		return err.Error(), ""
	}
	if got := s.Spec.Template.Spec.NodeSelector[stsutil.LabelNodePool]; got != pool {
		return "template on pool " + got, ""
	}
	return "", ""
}

func hasStartupTaint(n *corev1.Node) bool {
	for _, t := range n.Spec.Taints {
		if t.Key == stsutil.TaintStorageNotReady {
			return true
		}
	}
	return false
}
