package migration_test

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apiresource "k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"

	"github.com/olapgke/terraform-provider-olapgke/internal/acctest"
)

const res = "olapgke_statefulset_migration.hist"

func testAccStatefulSetMigrationConfig_basic(ns, extra string) string {
	return fmt.Sprintf(`
resource "olapgke_statefulset_migration" "hist" {
  namespace       = %q
  statefulset     = "hist"
  ordinal_timeout = "3m"
%s
}
`, ns, extra)
}

// durationsRecorded checks that `completed` lists the ordinals with a
// positive duration each.
func durationsRecorded(ordinals ...int32) resource.TestCheckFunc {
	checks := []resource.TestCheckFunc{resource.TestCheckResourceAttr(res, "completed.#", strconv.Itoa(len(ordinals)))}
	for i := range ordinals {
		checks = append(checks, resource.TestCheckResourceAttrWith(res, fmt.Sprintf("completed.%d.duration_seconds", i), func(v string) error {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil || f <= 0 {
				return fmt.Errorf("duration_seconds = %q, want > 0", v)
			}
			return nil
		}))
	}
	return resource.ComposeAggregateTestCheckFunc(checks...)
}

func expectOrdinals(ordinals ...int64) knownvalue.Check {
	var elems []knownvalue.Check
	for _, o := range ordinals {
		elems = append(elems, knownvalue.ObjectPartial(map[string]knownvalue.Check{"ordinal": knownvalue.Int64Exact(o)}))
	}
	return knownvalue.ListExact(elems)
}

func testMove(t *testing.T, ns string, replicas int32) {
	env := acctest.Sandbox(t)
	ensurePool(t, env, "pool-b", 3)
	f := newSet(t, env, ns, replicas, "pool-a", "1Gi")
	f.switchPool(t, "pool-b")
	var order []int32
	var want []int64
	for o := replicas - 1; o >= 0; o-- {
		order = append(order, o)
		want = append(want, int64(o))
	}
	var mon *orderMonitor
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				PreConfig: func() { mon = f.monitor(t, order, nil) },
				Config:    testAccStatefulSetMigrationConfig_basic(ns, ""),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(res, plancheck.ResourceActionCreate),
					plancheck.ExpectKnownValue(res, tfjsonpath.New("moves"), expectOrdinals(want...)),
					plancheck.ExpectKnownValue(res, tfjsonpath.New("moves").AtSliceIndex(0).AtMapKey("to_pool_or_selector"), knownvalue.StringExact("pool-b")),
				}},
				Check: resource.ComposeAggregateTestCheckFunc(
					func(*terraformState) error { mon.verify(t); f.checkMoved(t, "pool-b", order...); return nil },
					durationsRecorded(order...),
				),
			},
			{
				// Refresh: nothing left to move, empty plan.
				Config: testAccStatefulSetMigrationConfig_basic(ns, ""),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectEmptyPlan(),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(res, tfjsonpath.New("moves"), knownvalue.ListSizeExact(0)),
				},
			},
			{
				// Drift: ordinal 1 is back on pool-a; the plan moves it again.
				PreConfig: func() { f.moveBack(t, 1, "pool-a", "pool-b") },
				Config:    testAccStatefulSetMigrationConfig_basic(ns, ""),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(res, plancheck.ResourceActionUpdate),
					plancheck.ExpectKnownValue(res, tfjsonpath.New("moves"), expectOrdinals(1)),
				}},
				Check: func(*terraformState) error { f.waitPlaced(t, "pool-b"); return nil },
			},
			{
				ResourceName: res, ImportState: true, ImportStateId: ns + "/hist", ImportStateVerify: true,
				ImportStateVerifyIgnore: []string{"completed", "moves", "plan_summary", "timeouts", "ordinal_timeout"},
			},
		},
	})
}

func TestAccStatefulSetMigration_ThreeOrdinals(t *testing.T) { testMove(t, "mig-three", 3) }

func TestAccStatefulSetMigration_TenOrdinals(t *testing.T) { testMove(t, "mig-ten", 10) }

func TestAccStatefulSetMigration_Subset(t *testing.T) {
	env := acctest.Sandbox(t)
	ensurePool(t, env, "pool-b", 3)
	f := newSet(t, env, "mig-subset", 3, "pool-a", "1Gi")
	f.switchPool(t, "pool-b")
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories,
		Steps: []resource.TestStep{{
			Config: testAccStatefulSetMigrationConfig_basic("mig-subset", "  ordinals = [1]"),
			ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
				plancheck.ExpectKnownValue(res, tfjsonpath.New("moves"), expectOrdinals(1)),
			}},
			Check: resource.ComposeAggregateTestCheckFunc(
				func(*terraformState) error { f.checkMoved(t, "pool-b", 1); f.checkUntouched(t, 0, 2); return nil },
				durationsRecorded(1),
			),
		}},
	})
}

func TestAccStatefulSetMigration_CapacityShortage(t *testing.T) {
	env := acctest.Sandbox(t)
	// pool-c: one node, 2 Local SSDs (~740Gi for TopoLVM); three 300Gi claims do not fit.
	ensurePool(t, env, "pool-c", 1)
	f := newSet(t, env, "mig-capacity", 3, "pool-a", "300Gi")
	f.switchPool(t, "pool-c")
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories,
		Steps: []resource.TestStep{{
			// The shortage is judged only once TopoLVM is ready on pool-c; before, the plan
			// rightly waits for it. Checked again right before the plan, with the planner's
			// own predicate, so a plan that waits names why in the log.
			PreConfig:   func() { waitPoolReady(t, env, "pool-c", 1) },
			Config:      testAccStatefulSetMigrationConfig_basic("mig-capacity", ""),
			PlanOnly:    true,
			ExpectError: regexp.MustCompile(`Not Enough Device-Class Capacity[\s\S]*Ordinal\s+0\s+cannot\s+be\s+placed[\s\S]*did\s+not\s+have\s+enough\s+free\s+storage`),
		}},
	})
	f.checkUntouched(t, 0, 1, 2)
}

func TestAccStatefulSetMigration_FailureMidway(t *testing.T) {
	env := acctest.Sandbox(t)
	ensurePool(t, env, "pool-b", 3)
	f := newSet(t, env, "mig-fail", 3, "pool-a", "1Gi")
	f.switchPool(t, "pool-b")
	t.Cleanup(func() { _ = cordonPool(context.Background(), env.Kube, "pool-b", false) })
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				PreConfig: func() {
					// Inject: cordon the target pool as soon as ordinal 2's new Pod is bound to
					// a pool-b node (its new PV is then provisioned and bound there), before
					// ordinal 1 moves.
					go func() {
						if err := waitScheduledOnPool(t.Context(), env.Kube, f, 2, "pool-b"); err == nil {
							_ = cordonPool(t.Context(), env.Kube, "pool-b", true)
						}
					}()
				},
				Config: testAccStatefulSetMigrationConfig_basic("mig-fail", `  unschedulable_timeout = "5s"`),
				// Two failures are right, depending on when the cordon lands: after ordinal 1's
				// batch preflight its new Pod stays Unschedulable; before it (ordinal 2's Pod is
				// Ready only once its volume is mounted, which leaves time) the preflight's
				// placement check refuses with nothing deleted for ordinal 1.
				ExpectError: regexp.MustCompile(`Moved Pod Cannot Be Scheduled(.|\n)*[Oo]rdinal 1(.|\n)*unschedulable|` +
					`Migration Precondition Failed(.|\n)*cordoned(.|\n)*Nothing was deleted`),
			},
			{
				PreConfig: func() {
					f.checkMoved(t, "pool-b", 2)
					f.checkUntouched(t, 0)
					if err := cordonPool(t.Context(), env.Kube, "pool-b", false); err != nil {
						t.Fatal(err)
					}
				},
				Config: testAccStatefulSetMigrationConfig_basic("mig-fail", `  unschedulable_timeout = "5s"`),
				Check: func(*terraformState) error {
					f.checkMoved(t, "pool-b", 2, 1, 0)
					return nil
				},
			},
		},
	})
}

type terraformState = terraform.State

func TestAccStatefulSetMigration_TwoAtATime(t *testing.T) {
	env := acctest.Sandbox(t)
	ensurePool(t, env, "pool-b", 3)
	f := newSet(t, env, "mig-two", 4, "pool-a", "1Gi")
	f.switchPool(t, "pool-b")
	var mon *orderMonitor
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories,
		Steps: []resource.TestStep{{
			PreConfig: func() { mon = f.monitor(t, []int32{3, 2, 1, 0}, nil); mon.batch = 2 },
			Config:    testAccStatefulSetMigrationConfig_basic("mig-two", "  max_unavailable = 2"),
			ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
				plancheck.ExpectKnownValue(res, tfjsonpath.New("moves"), expectOrdinals(3, 2, 1, 0)),
			}},
			Check: resource.ComposeAggregateTestCheckFunc(
				func(*terraformState) error {
					mon.verify(t)
					if !mon.overlapped() {
						t.Error("max_unavailable = 2: the second ordinal was not deleted before the first one was Ready again")
					}
					f.checkMoved(t, "pool-b", 3, 2, 1, 0)
					return nil
				},
				durationsRecorded(0, 1, 2, 3),
			),
		}},
	})
}

// A PodDisruptionBudget allowing one disruption selects the Pods: the apply waits before each
// ordinal until the disruption controller has counted the previous one Ready again (it would
// report 0 allowed until then), so the moves go one by one and all finish.
func TestAccStatefulSetMigration_WaitsForPodDisruptionBudget(t *testing.T) {
	env := acctest.Sandbox(t)
	ensurePool(t, env, "pool-b", 3)
	f := newSet(t, env, "mig-pdb", 3, "pool-a", "1Gi")
	pdb := &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Namespace: "mig-pdb", Name: "hist"},
		Spec: policyv1.PodDisruptionBudgetSpec{
			MaxUnavailable: ptr.To(intstr.FromInt32(1)),
			Selector:       &metav1.LabelSelector{MatchLabels: map[string]string{"app": "hist"}},
		},
	}
	if _, err := env.Kube.PolicyV1().PodDisruptionBudgets("mig-pdb").Create(t.Context(), pdb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The plan reads the budget's status: wait until the disruption controller has counted it.
	if err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		p, err := env.Kube.PolicyV1().PodDisruptionBudgets("mig-pdb").Get(ctx, "hist", metav1.GetOptions{})
		return err == nil && p.Status.ObservedGeneration >= p.Generation && p.Status.DisruptionsAllowed == 1, nil
	}); err != nil {
		t.Fatalf("PodDisruptionBudget never allowed 1 disruption: %v", err)
	}
	f.switchPool(t, "pool-b")
	var mon *orderMonitor
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories,
		Steps: []resource.TestStep{{
			PreConfig: func() { mon = f.monitor(t, []int32{2, 1, 0}, nil) },
			Config:    testAccStatefulSetMigrationConfig_basic("mig-pdb", "  max_unavailable = 2"),
			ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
				plancheck.ExpectKnownValue(res, tfjsonpath.New("moves"), expectOrdinals(2, 1, 0)),
			}},
			Check: resource.ComposeAggregateTestCheckFunc(
				func(*terraformState) error {
					mon.verify(t)
					if mon.overlapped() {
						t.Error("two ordinals were down at once although the PodDisruptionBudget allows one disruption")
					}
					f.checkMoved(t, "pool-b", 2, 1, 0)
					return nil
				},
				durationsRecorded(0, 1, 2),
			),
		}},
	})
}

// Migrations whose moved Pods the scheduler could not place after the earlier moves are refused
// at plan, with the scheduler's reason and the ordinal, and nothing is deleted: anti-affinity by
// hostname onto a target pool with fewer nodes than ordinals, and a CPU request the target
// machine type cannot hold.
func TestAccStatefulSetMigration_RefusedWhenMovesCannotLand(t *testing.T) {
	env := acctest.Sandbox(t)
	ensurePool(t, env, "pool-b", 3)
	cases := []struct {
		name   string
		mutate func(*corev1.PodSpec)
		want   *regexp.Regexp
	}{
		{"anti-affinity onto fewer nodes", func(s *corev1.PodSpec) {
			s.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
				LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "hist"}}, TopologyKey: "kubernetes.io/hostname"}}}}
		}, regexp.MustCompile(`(?s)Ordinal Cannot Be Placed.*Ordinal\s+0\s+cannot\s+be\s+placed.*didn't\s+match\s+pod\s+anti-affinity\s+rules`)},
		{"cpu request larger than the target machine type", func(s *corev1.PodSpec) {
			s.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: apiresource.MustParse("64")}
		}, regexp.MustCompile(`(?s)Ordinal Cannot Be Placed.*Ordinal\s+3\s+cannot\s+be\s+placed.*Insufficient\s+cpu`)},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ns := fmt.Sprintf("mig-refused-%d", i)
			f := newSet(t, env, ns, 4, "pool-a", "1Gi")
			f.updateTemplate(t, func(s *corev1.PodSpec) {
				s.NodeSelector = map[string]string{labelPool: "pool-b"}
				c.mutate(s)
			})
			deleted := watchDeletions(t, env, ns)
			resource.Test(t, resource.TestCase{
				PreCheck:                 func() { acctest.PreCheck(t) },
				ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories,
				Steps: []resource.TestStep{{
					Config:      testAccStatefulSetMigrationConfig_basic(ns, ""),
					ExpectError: c.want,
				}},
			})
			if d := deleted(); len(d) > 0 {
				t.Errorf("deleted while refused: %v", d)
			}
			f.checkUntouched(t, 0, 1, 2, 3)
		})
	}
}
