package statefulset_test

import (
	"context"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/olapgke/terraform-provider-olapgke/internal/acctest"
	"github.com/olapgke/terraform-provider-olapgke/internal/engine"
)

// The incident moves the StatefulSet from pool-a to pool-b.
func TestMain(m *testing.M) { acctest.MainWithWorld(m, acctest.TwoPoolWorld) }

const res = "olapgke_statefulset.test"

// wrapped compiles a pattern whose spaces match any whitespace (Terraform wraps long diagnostics).
func wrapped(pattern string) *regexp.Regexp {
	return regexp.MustCompile("(?s)" + strings.ReplaceAll(pattern, " ", `\s+`))
}

// stsConfig is the resource with the manifest written as users write it: yamldecode of a YAML
// document. strategy is the YAML of spec.updateStrategy; extra is HCL attribute lines.
type stsConfig struct {
	ns, name, image, pool, strategy, extra, storage string
	replicas                                        int
	// tier, when set, is an extra label in the selector and the pod template.
	tier string
}

func (c stsConfig) String() string {
	if c.image == "" {
		c.image = "olap:1"
	}
	if c.pool == "" {
		c.pool = "pool-a"
	}
	if c.strategy == "" {
		c.strategy = "{type: RollingUpdate}"
	}
	if c.replicas == 0 {
		c.replicas = 3
	}
	if c.storage == "" {
		c.storage = "1Gi"
	}
	labels := "app: " + c.name
	if c.tier != "" {
		labels += ", tier: " + c.tier
	}
	return fmt.Sprintf(`
resource "olapgke_statefulset" "test" {
  manifest = yamldecode(<<-EOT
    apiVersion: apps/v1
    kind: StatefulSet
    metadata:
      name: %[2]s
      namespace: %[1]s
    spec:
      serviceName: %[2]s
      replicas: %[6]d
      persistentVolumeClaimRetentionPolicy: {whenDeleted: Retain, whenScaled: Retain}
      selector:
        matchLabels: {%[9]s}
      updateStrategy: %[5]s
      template:
        metadata:
          labels: {%[9]s}
        spec:
          nodeSelector:
            cloud.google.com/gke-nodepool: %[4]s
          containers:
          - name: olap
            image: %[3]s
            ports:
            - {name: http, containerPort: 8080, protocol: TCP}
            resources:
              requests: {cpu: 500m, memory: 1Gi}
            volumeMounts:
            - {name: cache, mountPath: /cache}
      volumeClaimTemplates:
      - metadata: {name: cache}
        spec:
          accessModes: [ReadWriteOnce]
          storageClassName: topolvm-provisioner
          # volumeClaimTemplates is an atomic list: the server's defaults inside it belong to the
          # applier, so import brings volumeMode back; writing it keeps import exact.
          volumeMode: Filesystem
          resources: {requests: {storage: %[8]s}}
    EOT
  )
%[7]s
}
`, c.ns, c.name, c.image, c.pool, c.strategy, c.replicas, c.extra, c.storage, labels)
}

// namespace creates a namespace for one test and deletes it afterwards.
func namespace(t *testing.T, kube kubernetes.Interface, name string) string {
	t.Helper()
	ctx := context.Background()
	_, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("creating namespace %s: %v", name, err)
	}
	t.Cleanup(func() { _ = kube.CoreV1().Namespaces().Delete(context.Background(), name, metav1.DeleteOptions{}) })
	return name
}

func ordinalAction(i int, action string) plancheck.PlanCheck {
	return plancheck.ExpectKnownValue(res, tfjsonpath.New("ordinals").AtSliceIndex(i).AtMapKey("action"), knownvalue.StringExact(action))
}

// podUIDs records the UIDs of the set's Pods into m.
func podUIDs(kube kubernetes.Interface, ns, name string, m map[string]types.UID) resource.TestCheckFunc {
	return func(*terraform.State) error {
		pods, err := kube.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: "app=" + name})
		if err != nil {
			return err
		}
		for k := range m {
			delete(m, k)
		}
		for _, p := range pods.Items {
			m[p.Name] = p.UID
		}
		if len(m) == 0 {
			return fmt.Errorf("no Pods of %s/%s", ns, name)
		}
		return nil
	}
}

// checkRecreated verifies exactly the Pods in want were replaced since before was recorded.
func checkRecreated(kube kubernetes.Interface, ns, name string, before map[string]types.UID, want ...string) resource.TestCheckFunc {
	return func(*terraform.State) error {
		pods, err := kube.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: "app=" + name})
		if err != nil {
			return err
		}
		var got []string
		for _, p := range pods.Items {
			if old, ok := before[p.Name]; ok && old != p.UID {
				got = append(got, p.Name)
			}
		}
		if strings.Join(got, ",") != strings.Join(want, ",") {
			return fmt.Errorf("recreated Pods: got %v, want %v", got, want)
		}
		return nil
	}
}

func checkGone(kube kubernetes.Interface, ns, name string) resource.TestCheckFunc {
	return func(*terraform.State) error {
		_, err := kube.AppsV1().StatefulSets(ns).Get(context.Background(), name, metav1.GetOptions{})
		if !apierrors.IsNotFound(err) {
			return fmt.Errorf("StatefulSet %s/%s still exists after destroy (err %v)", ns, name, err)
		}
		_, err = kube.CoreV1().Services(ns).Get(context.Background(), name, metav1.GetOptions{})
		if !apierrors.IsNotFound(err) {
			return fmt.Errorf("headless Service %s/%s still exists after destroy (err %v)", ns, name, err)
		}
		return nil
	}
}

func TestAccStatefulSet_CreateImportUpdateDestroy(t *testing.T) {
	env := acctest.Sandbox(t)
	t.Parallel()
	ns := namespace(t, env.Kube, "sts-basic")
	cfg := stsConfig{ns: ns, name: "hist", extra: `  pod_disruption_budget = { max_unavailable = "1" }`}
	updated := cfg
	updated.image = "olap:2"
	before := map[string]types.UID{}
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories,
		CheckDestroy:             checkGone(env.Kube, ns, "hist"),
		Steps: []resource.TestStep{
			{
				Config: cfg.String() + fmt.Sprintf(`
data "olapgke_statefulset_ordinals" "test" {
  namespace  = %q
  name       = "hist"
  depends_on = [olapgke_statefulset.test]
}
`, ns),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(res, plancheck.ResourceActionCreate),
					ordinalAction(0, "create"), ordinalAction(1, "create"), ordinalAction(2, "create"),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(res, tfjsonpath.New("id"), knownvalue.StringExact(ns+"/hist")),
					statecheck.ExpectKnownValue(res, tfjsonpath.New("rollout").AtMapKey("ready_replicas"), knownvalue.Int64Exact(3)),
					statecheck.ExpectKnownValue(res, tfjsonpath.New("rollout").AtMapKey("stalled"), knownvalue.Bool(false)),
					statecheck.ExpectKnownValue("data.olapgke_statefulset_ordinals.test", tfjsonpath.New("ordinals"), knownvalue.ListSizeExact(3)),
					statecheck.ExpectKnownValue("data.olapgke_statefulset_ordinals.test",
						tfjsonpath.New("ordinals").AtSliceIndex(2).AtMapKey("volumes").AtSliceIndex(0).AtMapKey("pinned_node"),
						knownvalue.StringRegexp(regexp.MustCompile(`pool-a`))),
					statecheck.ExpectKnownValue("data.olapgke_statefulset_ordinals.test",
						tfjsonpath.New("ordinals").AtSliceIndex(0).AtMapKey("ready"), knownvalue.Bool(true)),
				},
				Check: resource.ComposeTestCheckFunc(
					podUIDs(env.Kube, ns, "hist", before),
					func(*terraform.State) error {
						ctx := context.Background()
						svc, err := env.Kube.CoreV1().Services(ns).Get(ctx, "hist", metav1.GetOptions{})
						if err != nil {
							return fmt.Errorf("headless Service: %w", err)
						}
						if svc.Spec.ClusterIP != corev1.ClusterIPNone || svc.Spec.Selector["app"] != "hist" || len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].Port != 8080 {
							return fmt.Errorf("headless Service spec: %+v", svc.Spec)
						}
						pdb, err := env.Kube.PolicyV1().PodDisruptionBudgets(ns).Get(ctx, "hist", metav1.GetOptions{})
						if err != nil {
							return fmt.Errorf("PodDisruptionBudget: %w", err)
						}
						if pdb.Spec.MaxUnavailable == nil || pdb.Spec.MaxUnavailable.IntValue() != 1 {
							return fmt.Errorf("PodDisruptionBudget maxUnavailable: %v", pdb.Spec.MaxUnavailable)
						}
						return nil
					},
				),
			},
			{
				ResourceName:            res,
				ImportState:             true,
				ImportStateId:           ns + "/hist",
				ImportStateVerify:       true,
				ImportStateVerifyIgnore: []string{"ordinals", "plan_summary", "rollout", "pod_disruption_budget", "timeouts"},
			},
			{
				Config: updated.String(),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(res, plancheck.ResourceActionUpdate),
					ordinalAction(0, "recreate"), ordinalAction(1, "recreate"), ordinalAction(2, "recreate"),
					plancheck.ExpectKnownValue(res, tfjsonpath.New("ordinals").AtSliceIndex(2).AtMapKey("wave"), knownvalue.Int64Exact(1)),
					plancheck.ExpectKnownValue(res, tfjsonpath.New("ordinals").AtSliceIndex(0).AtMapKey("wave"), knownvalue.Int64Exact(3)),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(res, tfjsonpath.New("rollout").AtMapKey("updated_replicas"), knownvalue.Int64Exact(3)),
				},
				Check: resource.ComposeTestCheckFunc(
					checkRecreated(env.Kube, ns, "hist", before, "hist-0", "hist-1", "hist-2"),
					rolloutReadyEvents(env.Kube, ns, "hist", "hist-2", "hist-1", "hist-0"),
				),
			},
			{
				// Drift: someone switches the live updateStrategy to OnDelete; the plan restores it.
				PreConfig: func() {
					patch := []byte(`{"spec":{"updateStrategy":{"type":"OnDelete","rollingUpdate":null}}}`)
					if _, err := env.Kube.AppsV1().StatefulSets(ns).Patch(context.Background(), "hist", types.MergePatchType, patch, metav1.PatchOptions{FieldManager: "kubectl-edit"}); err != nil {
						t.Fatalf("drifting updateStrategy: %v", err)
					}
				},
				// kubectl-edit now owns the field: taking it back needs force_conflicts.
				Config: withExtra(updated, "  force_conflicts = true"),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(res, plancheck.ResourceActionUpdate),
					plancheck.ExpectKnownValue(res, tfjsonpath.New("ordinals").AtSliceIndex(2).AtMapKey("action"), knownvalue.StringExact("unchanged")),
				}},
				Check: func(*terraform.State) error {
					s, err := env.Kube.AppsV1().StatefulSets(ns).Get(context.Background(), "hist", metav1.GetOptions{})
					if err != nil {
						return err
					}
					if s.Spec.UpdateStrategy.Type != appsv1.RollingUpdateStatefulSetStrategyType {
						return fmt.Errorf("updateStrategy after apply: %s", s.Spec.UpdateStrategy.Type)
					}
					return nil
				},
			},
		},
	})
}

// The seed incident: nodeSelector pool-a -> pool-b under RollingUpdate while every PV is pinned to
// a pool-a node. The plan must refuse, naming each ordinal, PV and node.
func TestAccStatefulSet_IncidentRefused(t *testing.T) {
	env := acctest.Sandbox(t)
	t.Parallel()
	ns := namespace(t, env.Kube, "sts-incident")
	cfg := stsConfig{ns: ns, name: "hist"}
	moved := cfg
	moved.pool = "pool-b"
	expect := new(regexp.Regexp)
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config: cfg.String(),
				Check: func(*terraform.State) error {
					// Build the expected error from the live PVs: every ordinal, its PV and its node.
					var parts []string
					for o := 2; o >= 0; o-- {
						pvc, err := env.Kube.CoreV1().PersistentVolumeClaims(ns).Get(context.Background(), fmt.Sprintf("cache-hist-%d", o), metav1.GetOptions{})
						if err != nil {
							return err
						}
						pod, err := env.Kube.CoreV1().Pods(ns).Get(context.Background(), fmt.Sprintf("hist-%d", o), metav1.GetOptions{})
						if err != nil {
							return err
						}
						parts = append(parts, fmt.Sprintf(`hist-%d\s+\(\w+\):.*%s.*%s`, o, regexp.QuoteMeta(pvc.Spec.VolumeName), regexp.QuoteMeta(pod.Spec.NodeName)))
					}
					// Errors list ordinals ascending; match each independently.
					*expect = *regexp.MustCompile(`(?s)Ordinals Would Stay Pending.*` + strings.Join(reverse(parts), `.*`))
					return nil
				},
			},
			{
				Config:      moved.String(),
				PlanOnly:    true,
				ExpectError: expect,
			},
		},
	})
}

func withExtra(c stsConfig, extra string) string {
	c.extra = extra
	return c.String()
}

func reverse(s []string) []string {
	out := make([]string, 0, len(s))
	for i := len(s) - 1; i >= 0; i-- {
		out = append(out, s[i])
	}
	return out
}

// The same change under OnDelete plans every ordinal as stranded, with no error, and the apply
// (wait_for_rollout = true) returns without recreating anything.
func TestAccStatefulSet_OnDeleteStale(t *testing.T) {
	env := acctest.Sandbox(t)
	t.Parallel()
	ns := namespace(t, env.Kube, "sts-ondelete")
	cfg := stsConfig{ns: ns, name: "hist", strategy: "{type: OnDelete}"}
	moved := cfg
	moved.pool = "pool-b"
	before := map[string]types.UID{}
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{Config: cfg.String(), Check: podUIDs(env.Kube, ns, "hist", before)},
			{
				Config: moved.String(),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(res, plancheck.ResourceActionUpdate),
					// Kept on the old template and unable to come back in place: stranded; the Pod
					// the apply keeps is placed, so schedulable stays true.
					ordinalAction(0, "stranded"), ordinalAction(1, "stranded"), ordinalAction(2, "stranded"),
					plancheck.ExpectKnownValue(res, tfjsonpath.New("ordinals").AtSliceIndex(2).AtMapKey("schedulable"), knownvalue.Bool(true)),
				}},
				Check: checkRecreated(env.Kube, ns, "hist", before),
			},
		},
	})
}

// partition = 2 of 3 replicas recreates exactly ordinal 2.
func TestAccStatefulSet_Partition(t *testing.T) {
	env := acctest.Sandbox(t)
	t.Parallel()
	ns := namespace(t, env.Kube, "sts-partition")
	cfg := stsConfig{ns: ns, name: "hist", strategy: "{type: RollingUpdate, rollingUpdate: {partition: 2}}"}
	updated := cfg
	updated.image = "olap:2"
	before := map[string]types.UID{}
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{Config: cfg.String(), Check: podUIDs(env.Kube, ns, "hist", before)},
			{
				Config: updated.String(),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					ordinalAction(0, "stale"), ordinalAction(1, "stale"), ordinalAction(2, "recreate"),
				}},
				Check: checkRecreated(env.Kube, ns, "hist", before, "hist-2"),
			},
		},
	})
}

// A rollout forced into the incident with allow_unschedulable fails fast quoting the scheduler,
// and the state's rollout then names the stuck ordinal (which every later plan warns about).
func TestAccStatefulSet_StalledRollout(t *testing.T) {
	env := acctest.Sandbox(t)
	t.Parallel()
	ns := namespace(t, env.Kube, "sts-stalled")
	cfg := stsConfig{ns: ns, name: "hist"}
	moved := cfg
	moved.pool = "pool-b"
	moved.extra = "  allow_unschedulable = true"
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{Config: cfg.String()},
			{
				Config:      moved.String(),
				ExpectError: wrapped(`Rollout Cannot Progress.*Ordinal 2 \(Pod hist-2\).*didn't match PersistentVolume's node affinity`),
			},
			{
				RefreshState: true,
				Check: resource.ComposeTestCheckFunc(
					resource.TestCheckResourceAttr(res, "rollout.stalled", "true"),
					resource.TestCheckResourceAttr(res, "rollout.stuck.0.ordinal", "2"),
					resource.TestCheckResourceAttr(res, "rollout.stuck.0.reason", "Unschedulable"),
					resource.TestMatchResourceAttr(res, "rollout.stuck.0.message", regexp.MustCompile(`didn't match PersistentVolume's node affinity`)),
				),
			},
		},
	})
}

// Bad manifests fail at plan with the API server's own message.
func TestAccStatefulSet_BadManifests(t *testing.T) {
	env := acctest.Sandbox(t)
	t.Parallel()
	ns := namespace(t, env.Kube, "sts-bad")
	base := stsConfig{ns: ns, name: "bad"}.String()
	cases := []struct {
		name, from, to string
		want           *regexp.Regexp
	}{
		{"selector", "matchLabels: {app: bad}", "matchLabels: {app: other}", wrapped("StatefulSet Rejected By The API Server.*selector.*does not match template")},
		{"unknown field", "replicas: 3\n", "replicas: 3\n      bogusField: 1\n", wrapped(`StatefulSet Rejected By The API Server.*bogusField`)},
		{"mount without claim template", "- {name: cache, mountPath: /cache}", "- {name: data, mountPath: /data}", wrapped(`StatefulSet Rejected By The API Server.*Not found: "data"`)},
		{"missing serviceName", "      serviceName: bad\n", "", wrapped(`StatefulSet Has No serviceName`)},
		{"claim template not mounted", "            volumeMounts:\n            - {name: cache, mountPath: /cache}\n", "", wrapped(`Volume Claim Template Not Mounted.*cache`)},
	}
	var steps []resource.TestStep
	for _, c := range cases {
		cfg := strings.Replace(base, c.from, c.to, 1)
		if cfg == base {
			t.Fatalf("case %s: pattern %q not in the config", c.name, c.from)
		}
		steps = append(steps, resource.TestStep{Config: cfg, PlanOnly: true, ExpectError: c.want})
	}
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories,
		Steps:                    steps,
	})
}

// A change the API server refuses in place (volumeClaimTemplates) replaces the StatefulSet; with
// whenDeleted: Retain the new object re-adopts the PVCs by name.
// uids records the UIDs of the namespace's Pods and PVCs by name.
func uids(t *testing.T, kube kubernetes.Interface, ns string) (pods, pvcs map[string]types.UID) {
	t.Helper()
	pods, pvcs = map[string]types.UID{}, map[string]types.UID{}
	pl, err := kube.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pl.Items {
		pods[p.Name] = p.UID
	}
	cl, err := kube.CoreV1().PersistentVolumeClaims(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cl.Items {
		pvcs[c.Name] = c.UID
	}
	return pods, pvcs
}

// A larger storage request in the claim template: the PVCs are expanded in place (TopoLVM grows
// them online), then the object is re-created orphaning its Pods: an update, no Pod restarted, no
// PVC replaced, every PVC at the new size. Shrinking, and growth that does not fit the node, are
// refused at plan.
func TestAccStatefulSet_ClaimGrowthExpandsInPlace(t *testing.T) {
	env := acctest.Sandbox(t)
	t.Parallel()
	ns := namespace(t, env.Kube, "sts-grow")
	cfg := stsConfig{ns: ns, name: "hist", replicas: 2, strategy: "{type: OnDelete}"}
	bigger := cfg
	bigger.storage = "2Gi"
	huge := cfg
	huge.storage = "100Ti"
	var pods, pvcs map[string]types.UID
	var setUID string
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{Config: cfg.String(), Check: func(s *terraform.State) error {
				pods, pvcs = uids(t, env.Kube, ns)
				setUID = s.RootModule().Resources[res].Primary.Attributes["uid"]
				if len(pods) != 2 || len(pvcs) != 2 {
					return fmt.Errorf("pods %v pvcs %v", pods, pvcs)
				}
				return nil
			}},
			{Config: huge.String(), ExpectError: regexp.MustCompile(`Claim Template Change Not Possible[\s\S]*has only`)},
			{
				Config: bigger.String(),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(res, plancheck.ResourceActionUpdate),
					plancheck.ExpectUnknownValue(res, tfjsonpath.New("uid")),
					ordinalAction(0, "unchanged"), ordinalAction(1, "unchanged"),
					plancheck.ExpectKnownValue(res, tfjsonpath.New("claim_resizes"), knownvalue.ListExact([]knownvalue.Check{
						claimGrows("cache-hist-0"), claimGrows("cache-hist-1"),
					})),
				}},
				Check: func(s *terraform.State) error {
					if s.RootModule().Resources[res].Primary.Attributes["uid"] == setUID {
						return fmt.Errorf("the StatefulSet object was not re-created")
					}
					gotPods, gotPVCs := uids(t, env.Kube, ns)
					if fmt.Sprint(gotPods) != fmt.Sprint(pods) || fmt.Sprint(gotPVCs) != fmt.Sprint(pvcs) {
						return fmt.Errorf("Pods %v -> %v, PVCs %v -> %v: nothing may be replaced", pods, gotPods, pvcs, gotPVCs)
					}
					for name := range pvcs {
						c, err := env.Kube.CoreV1().PersistentVolumeClaims(ns).Get(context.Background(), name, metav1.GetOptions{})
						if err != nil {
							return err
						}
						if q := c.Status.Capacity[corev1.ResourceStorage]; q.String() != "2Gi" {
							return fmt.Errorf("PVC %s capacity %s, want 2Gi", name, q.String())
						}
					}
					return nil
				},
			},
			{Config: cfg.String(), ExpectError: regexp.MustCompile(`Claim Template Change Not Possible[\s\S]*PVCs cannot shrink`)},
		},
	})
}

// claimGrows checks one claim_resizes entry: the live ordinal's PVC grows from 1Gi to 2Gi.
func claimGrows(pvc string) knownvalue.Check {
	return knownvalue.ObjectPartial(map[string]knownvalue.Check{
		"name": knownvalue.StringExact(pvc), "retained": knownvalue.Bool(false), "fate": knownvalue.StringExact("grows"),
		"size_before": knownvalue.StringExact("1Gi"), "size_after": knownvalue.StringExact("2Gi"),
	})
}

// A selector change cannot be adopted by a new object: Terraform replaces it with its Pods
// (foreground), and the retained PVCs are re-adopted by name.
func TestAccStatefulSet_SelectorChangeReplaces(t *testing.T) {
	env := acctest.Sandbox(t)
	t.Parallel()
	ns := namespace(t, env.Kube, "sts-replace")
	cfg := stsConfig{ns: ns, name: "hist", replicas: 2}
	moved := cfg
	moved.tier = "hot"
	var pvcs map[string]types.UID
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{Config: cfg.String(), Check: func(*terraform.State) error { _, pvcs = uids(t, env.Kube, ns); return nil }},
			{
				Config: moved.String(),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(res, plancheck.ResourceActionDestroyBeforeCreate),
				}},
				Check: func(*terraform.State) error {
					_, got := uids(t, env.Kube, ns)
					if fmt.Sprint(got) != fmt.Sprint(pvcs) {
						return fmt.Errorf("PVCs %v -> %v: they must be re-adopted, not recreated", pvcs, got)
					}
					return nil
				},
			},
		},
	})
}

// The plan judges new Pods with kube-scheduler's own Filter plugins: what the old hand-written
// checks let through (resources, inter-Pod anti-affinity, topology spread, host ports) is refused
// at plan with the scheduler's wording, per ordinal, placing the ordinals one after another.
func TestAccStatefulSet_SchedulerVerdicts(t *testing.T) {
	env := acctest.Sandbox(t)
	t.Parallel()
	ns := namespace(t, env.Kube, "sts-sched")
	// pool-a has three n2-standard-8 nodes: a Pod on each of them holding host port 9000.
	ctx := context.Background()
	var nodes []string
	nl, err := env.Kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: "cloud.google.com/gke-nodepool=pool-a"})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range nl.Items {
		nodes = append(nodes, n.Name)
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "port-" + n.Name},
			Spec: corev1.PodSpec{NodeName: n.Name, Containers: []corev1.Container{{Name: "c", Image: "x",
				Ports: []corev1.ContainerPort{{ContainerPort: 9000, HostPort: 9000, Protocol: corev1.ProtocolTCP}}}}}}
		if _, err := env.Kube.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	base := stsConfig{ns: ns, name: "sched", replicas: 4}.String()
	cases := []struct {
		name, from, to string
		want           *regexp.Regexp
	}{
		{"cpu too large", "requests: {cpu: 500m, memory: 1Gi}", "requests: {cpu: \"64\", memory: 1Gi}",
			wrapped(`Ordinals Would Stay Pending.*sched-0 \(create\): 0/6 nodes are available: 3 Insufficient cpu, 3 node\(s\) didn't match Pod's node affinity/selector`)},
		{"memory too large", "requests: {cpu: 500m, memory: 1Gi}", "requests: {cpu: 500m, memory: 512Gi}",
			wrapped(`Ordinals Would Stay Pending.*0/6 nodes are available: 3 Insufficient memory`)},
		{"anti-affinity with fewer nodes than ordinals", "          nodeSelector:\n",
			"          affinity:\n            podAntiAffinity:\n              requiredDuringSchedulingIgnoredDuringExecution:\n              - labelSelector: {matchLabels: {app: sched}}\n                topologyKey: kubernetes.io/hostname\n          nodeSelector:\n",
			wrapped(`Ordinals Would Stay Pending.*sched-3 \(create\): 0/6 nodes are available: 3 node\(s\) didn't match Pod's node affinity/selector, 3 node\(s\) didn't match pod anti-affinity rules`)},
		{"topology spread", "          nodeSelector:\n",
			"          topologySpreadConstraints:\n          - {maxSkew: 1, minDomains: 2, topologyKey: topology.kubernetes.io/zone, whenUnsatisfiable: DoNotSchedule, labelSelector: {matchLabels: {app: sched}}}\n          nodeSelector:\n",
			wrapped(`Ordinals Would Stay Pending.*sched-1 \(create\): 0/6 nodes are available: .*didn't match pod topology spread constraints`)},
		{"host port taken", "- {name: http, containerPort: 8080, protocol: TCP}", "- {name: http, containerPort: 8080, hostPort: 9000, protocol: TCP}",
			wrapped(`Ordinals Would Stay Pending.*sched-0 \(create\): 0/6 nodes are available: 3 node\(s\) didn't have free ports for the requested pod ports, 3 node\(s\) didn't match Pod's node affinity/selector`)},
	}
	var steps []resource.TestStep
	for _, c := range cases {
		cfg := strings.Replace(base, c.from, c.to, 1)
		if cfg == base {
			t.Fatalf("case %s: pattern %q not in the config", c.name, c.from)
		}
		steps = append(steps, resource.TestStep{Config: cfg, PlanOnly: true, ExpectError: c.want})
	}
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories,
		Steps:                    steps,
	})
	_ = nodes
}

// A create that fails after writing the StatefulSet (here: its Pods can never schedule and the
// rollout wait times out) leaves the resource tainted; the next apply replaces it, deleting the
// object and its Pods before Terraform plans the create again. The first plan cannot know the
// ordinals (the live Pods are gone by then), so they are unknown and the apply is not refused
// as "inconsistent final plan"; the warning says what the replacement does.
func TestAccStatefulSet_TaintedCreateReplaced(t *testing.T) {
	env := acctest.Sandbox(t)
	t.Parallel()
	ns := namespace(t, env.Kube, "sts-tainted")
	stuck := stsConfig{ns: ns, name: "hist", pool: "pool-none", extra: "  allow_unschedulable = true\n  timeouts {\n    create = \"10s\"\n  }"}
	fixed := stsConfig{ns: ns, name: "hist"}
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{Config: stuck.String(), ExpectError: wrapped(`Rollout Timed Out`)},
			{
				Config: fixed.String(),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(res, plancheck.ResourceActionDestroyBeforeCreate),
					plancheck.ExpectUnknownValue(res, tfjsonpath.New("ordinals")),
				}},
				Check: resource.ComposeTestCheckFunc(
					resource.TestCheckResourceAttr(res, "ordinals.#", "3"),
					resource.TestCheckResourceAttr(res, "ordinals.2.action", "create"),
					resource.TestCheckResourceAttr(res, "rollout.stalled", "false"),
				),
			},
		},
	})
}

// rolloutReadyEvents checks the Events the apply's rollout wait recorded on StatefulSet name: one
// OlapgkePodReady per recreated Pod at the update revision, in the order the controller brought
// them up (pods), each naming the Pod's node.
func rolloutReadyEvents(kube kubernetes.Interface, ns, name string, pods ...string) resource.TestCheckFunc {
	return func(*terraform.State) error {
		ctx := context.Background()
		set, err := kube.AppsV1().StatefulSets(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		list, err := kube.EventsV1().Events(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		evs := list.Items
		sort.SliceStable(evs, func(i, j int) bool { return evs[i].EventTime.Before(&evs[j].EventTime) })
		var got []string
		for _, e := range evs {
			if e.Reason == engine.ReasonPodReady && e.Action == "WaitForRollout" && e.Regarding.Name == name &&
				strings.Contains(e.Note, "at revision "+set.Status.UpdateRevision+" on node ") {
				got = append(got, e.Related.Name)
			}
		}
		if strings.Join(got, ",") != strings.Join(pods, ",") {
			return fmt.Errorf("%s Events of the rollout to %s name Pods %v, want %v", engine.ReasonPodReady, set.Status.UpdateRevision, got, pods)
		}
		return nil
	}
}
