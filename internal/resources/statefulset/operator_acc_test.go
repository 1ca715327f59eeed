package statefulset_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/olapgke/terraform-provider-olapgke/internal/acctest"
	"github.com/olapgke/terraform-provider-olapgke/internal/fixture"
	"github.com/olapgke/terraform-provider-olapgke/internal/stsutil"
)

// testOperator is a small operator: it turns ConfigMap "custom resources" (data: replicas, pool,
// updateStrategy) into StatefulSets it owns, writing as field manager "test-operator". With
// hardcode set it ignores the requested updateStrategy and writes RollingUpdate, as the operator
// of the incident did.
type testOperator struct {
	hardcode atomic.Bool
}

const operatorManager = "test-operator"

func startOperator(t *testing.T, env *acctest.Env, ns string, hardcode bool) *testOperator {
	op := &testOperator{}
	op.hardcode.Store(hardcode)
	ctx, cancel := context.WithCancel(context.Background())
	factory := informers.NewSharedInformerFactoryWithOptions(env.Kube, 0, informers.WithNamespace(ns))
	reconcile := func(obj any) {
		cm, ok := obj.(*corev1.ConfigMap)
		if !ok || cm.Labels["olap.test/cr"] != "historical" {
			return
		}
		if err := op.reconcile(ctx, env, cm); err != nil && ctx.Err() == nil {
			t.Errorf("test operator: %v", err)
		}
	}
	_, _ = factory.Core().V1().ConfigMaps().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: reconcile, UpdateFunc: func(_, n any) { reconcile(n) },
	})
	factory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())
	t.Cleanup(func() { cancel(); factory.Shutdown() })
	return op
}

func (op *testOperator) reconcile(ctx context.Context, env *acctest.Env, cm *corev1.ConfigMap) error {
	replicas, _ := strconv.Atoi(cm.Data["replicas"])
	want := fixture.Historical{Namespace: cm.Namespace, Name: cm.Data["name"], Replicas: int32(replicas), Pool: cm.Data["pool"],
		Claim: "cache", StorageClass: "topolvm-provisioner", Size: "1Gi"}.StatefulSet()
	want.Spec.UpdateStrategy = appsv1.StatefulSetUpdateStrategy{Type: appsv1.StatefulSetUpdateStrategyType(cm.Data["updateStrategy"])}
	if op.hardcode.Load() {
		want.Spec.UpdateStrategy = appsv1.StatefulSetUpdateStrategy{Type: appsv1.RollingUpdateStatefulSetStrategyType}
	}
	want.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: cm.Name, UID: cm.UID,
		Controller: ptr.To(true)}}
	sets := env.Kube.AppsV1().StatefulSets(cm.Namespace)
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := sets.Get(ctx, want.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			_, err = sets.Create(ctx, want, metav1.CreateOptions{FieldManager: operatorManager})
			return err
		}
		if err != nil {
			return err
		}
		cur = cur.DeepCopy()
		cur.OwnerReferences = want.OwnerReferences
		cur.Spec.Replicas, cur.Spec.UpdateStrategy = want.Spec.Replicas, want.Spec.UpdateStrategy
		cur.Spec.Template.Spec.NodeSelector = want.Spec.Template.Spec.NodeSelector
		_, err = sets.Update(ctx, cur, metav1.UpdateOptions{FieldManager: operatorManager})
		return err
	})
}

// touchCR changes the custom resource (an annotation), so the operator reconciles again.
func touchCR(t *testing.T, env *acctest.Env, ns string) {
	t.Helper()
	cms := env.Kube.CoreV1().ConfigMaps(ns)
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cm, err := cms.Get(t.Context(), "hist-cr", metav1.GetOptions{})
		if err != nil {
			return err
		}
		cm = cm.DeepCopy()
		if cm.Annotations == nil {
			cm.Annotations = map[string]string{}
		}
		cm.Annotations["olap.test/touched"] = time.Now().Format(time.RFC3339Nano)
		_, err = cms.Update(t.Context(), cm, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

func waitStrategy(t *testing.T, env *acctest.Env, ns string, want appsv1.StatefulSetUpdateStrategyType) {
	t.Helper()
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		s, err := env.Kube.AppsV1().StatefulSets(ns).Get(ctx, "hist", metav1.GetOptions{})
		return err == nil && s.Spec.UpdateStrategy.Type == want, nil
	})
	if err != nil {
		t.Fatalf("the operator did not write updateStrategy %s: %v", want, err)
	}
}

func waitReady(t *testing.T, env *acctest.Env, ns string, n int) map[string]types.UID {
	t.Helper()
	uids := map[string]types.UID{}
	err := wait.PollUntilContextTimeout(t.Context(), 200*time.Millisecond, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		pods, err := env.Kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil //nolint:nilerr // retried
		}
		ready := 0
		for i := range pods.Items {
			if stsutil.PodReady(&pods.Items[i]) {
				ready++
				uids[pods.Items[i].Name] = pods.Items[i].UID
			}
		}
		return ready == n, nil
	})
	if err != nil {
		t.Fatalf("%d Pods of %s not Ready: %v", n, ns, err)
	}
	return uids
}

func flat(out string) string {
	return strings.Join(strings.Fields(strings.ReplaceAll(out, "│", " ")), " ")
}

// TestAccStatefulSetPlan_OperatorIncident: the operator hard-codes RollingUpdate. The plan data
// source predicts, for the StatefulSet the operator will write when the custom resource selects
// pool-b, that the recreated Pods would stay Pending (in a check block: a warning; outside: the
// plan fails before anything changes); with the fixed operator's OnDelete it predicts no Pod
// recreated. The expectation resource fails after reconcile naming spec.updateStrategy.type and
// the operator, passes once the operator is fixed, and a later rewrite shows in the next plan.
func TestAccStatefulSetPlan_OperatorIncident(t *testing.T) {
	env := acctest.Sandbox(t)
	acctest.PreCheck(t)
	ns := namespace(t, env.Kube, "sts-operator")
	op := startOperator(t, env, ns, true)
	if _, err := env.Kube.CoreV1().ConfigMaps(ns).Create(t.Context(), &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "hist-cr", Labels: map[string]string{"olap.test/cr": "historical"}},
		Data:       map[string]string{"name": "hist", "replicas": "2", "pool": "pool-a", "updateStrategy": "OnDelete"},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitStrategy(t, env, ns, appsv1.RollingUpdateStatefulSetStrategyType)
	before := waitReady(t, env, ns, 2)

	// What the operator will write when the CR moves to pool-b: the live object, another pool.
	predicted := func(strategy appsv1.StatefulSetUpdateStrategyType) string {
		live, err := env.Kube.AppsV1().StatefulSets(ns).Get(t.Context(), "hist", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		next := live.DeepCopy()
		next.Spec.Template.Spec.NodeSelector = map[string]string{stsutil.LabelNodePool: "pool-b"}
		next.Spec.UpdateStrategy = appsv1.StatefulSetUpdateStrategy{Type: strategy}
		b, err := json.Marshal(next)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	dataSource := fmt.Sprintf(`
  data "olapgke_statefulset_plan" "next" {
    namespace = %q
    name      = "hist"
    manifest  = jsondecode(file("next.json"))
  }`, ns)
	tf := acctest.NewTF(t, `
check "operator_change_is_safe" {`+dataSource+`
  assert {
    condition     = data.olapgke_statefulset_plan.next.all_schedulable
    error_message = "the operator's change would leave historical Pods Pending"
  }
}
`)
	write := func(name, content string) {
		if err := os.WriteFile(filepath.Join(tf.Dir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("next.json", predicted(appsv1.RollingUpdateStatefulSetStrategyType))
	out, err := tf.Run("plan")
	if err != nil {
		t.Fatalf("plan with the check block failed (a check block only warns): %v\n%s", err, out)
	}
	for _, want := range []string{"Warning: Ordinals Would Stay Pending", `check "operator_change_is_safe"`, "hist-1"} {
		if !strings.Contains(flat(out), want) {
			t.Errorf("the plan does not say %q:\n%s", want, out)
		}
	}
	tf.Write(dataSource)
	if out, err := tf.Run("plan"); err == nil || !strings.Contains(flat(out), "Error: Ordinals Would Stay Pending") {
		t.Errorf("plan without the check block: err %v, want the data source's error:\n%s", err, out)
	}
	// The fixed operator keeps OnDelete: nothing is recreated, every ordinal can come back.
	write("next.json", predicted(appsv1.OnDeleteStatefulSetStrategyType))
	tf.Write(dataSource + `
output "all_schedulable" { value = data.olapgke_statefulset_plan.next.all_schedulable }
output "actions" { value = distinct([for o in data.olapgke_statefulset_plan.next.ordinals : o.action]) }
`)
	if out, err := tf.Apply(); err != nil {
		t.Fatalf("apply (data source only): %v\n%s", err, out)
	}
	if out, _ := tf.Run("output", "-json"); !strings.Contains(flat(out), `"all_schedulable": { "sensitive": false, "type": "bool", "value": true }`) ||
		!strings.Contains(out, `"stale"`) && !strings.Contains(out, `"stranded"`) || strings.Contains(out, "recreate") {
		t.Errorf("with OnDelete the prediction should recreate nothing:\n%s", out)
	}

	// The expectation: OnDelete must reach the StatefulSet.
	tf.Write(fmt.Sprintf(`
resource "olapgke_statefulset_expectation" "hist" {
  namespace = %q
  name      = "hist"
  settle    = "2s"
  expect = {
    spec = {
      updateStrategy = { type = "OnDelete" }
      template = { spec = { nodeSelector = { "cloud.google.com/gke-nodepool" = "pool-a" } } }
    }
  }
}
`, ns))
	out, err = tf.Apply()
	if err == nil {
		t.Fatalf("apply passed with the hard-coding operator:\n%s", out)
	}
	for _, want := range []string{"Operator Did Not Apply Expected Fields", `spec.updateStrategy.type: expected "OnDelete", found "RollingUpdate"`,
		`written by field manager "test-operator"`, "owner: ConfigMap/hist-cr"} {
		if !strings.Contains(flat(out), want) {
			t.Errorf("the error does not say %q:\n%s", want, out)
		}
	}
	if strings.Contains(flat(out), "- spec.template.spec.nodeSelector") {
		t.Errorf("the error names the node selector, which holds:\n%s", out)
	}

	op.hardcode.Store(false)
	touchCR(t, env, ns)
	if out, err := tf.Apply(); err != nil {
		t.Fatalf("apply with the fixed operator: %v\n%s", err, out)
	}
	tf.PlanEmpty()

	// The operator rewrites the field later: the next plan checks again.
	op.hardcode.Store(true)
	touchCR(t, env, ns)
	waitStrategy(t, env, ns, appsv1.RollingUpdateStatefulSetStrategyType)
	out, err = tf.Run("plan", "-detailed-exitcode")
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(flat(out), "StatefulSet No Longer Holds Expected Fields") {
		t.Errorf("plan after the operator's rewrite: %v, want changes (exit 2) and the drift warning:\n%s", err, out)
	}
	// Nothing of this restarted a Pod.
	for name, uid := range waitReady(t, env, ns, 2) {
		if before[name] != uid {
			t.Errorf("Pod %s was recreated (%s -> %s)", name, before[name], uid)
		}
	}
}

const adoptYAML = `apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: hist
  namespace: sts-adopt
spec:
  serviceName: hist
  replicas: 2
  minReadySeconds: %d
  podManagementPolicy: Parallel
  selector:
    matchLabels: {app: hist}
  updateStrategy: {type: OnDelete}
  template:
    metadata:
      labels: {app: hist}
    spec:
      terminationGracePeriodSeconds: 1
      nodeSelector:
        cloud.google.com/gke-nodepool: pool-a
      containers:
      - name: olap
        image: olap:1
        volumeMounts:
        - {name: cache, mountPath: /cache}
  volumeClaimTemplates:
  - metadata: {name: cache}
    spec:
      accessModes: [ReadWriteOnce]
      storageClassName: topolvm-provisioner
      volumeMode: Filesystem
      resources: {requests: {storage: 1Gi}}
`

// TestAccStatefulSet_AdoptKubectlApplied: a StatefulSet created with kubectl (client-side apply) is
// imported into olapgke_statefulset. Without force_conflicts the plan names kubectl's field manager,
// the field and the fix; with it, import and apply take the fields over, no Pod restarts, and the
// next plan is empty.
func TestAccStatefulSet_AdoptKubectlApplied(t *testing.T) {
	env := acctest.Sandbox(t)
	acctest.PreCheck(t)
	ns := namespace(t, env.Kube, "sts-adopt")
	var set appsv1.StatefulSet
	if err := yaml.Unmarshal(fmt.Appendf(nil, adoptYAML, 5), &set); err != nil {
		t.Fatal(err)
	}
	last, _ := json.Marshal(set)
	set.Annotations = map[string]string{"kubectl.kubernetes.io/last-applied-configuration": string(last)}
	if _, err := env.Kube.AppsV1().StatefulSets(ns).Create(t.Context(), &set, metav1.CreateOptions{FieldManager: "kubectl-client-side-apply"}); err != nil {
		t.Fatal(err)
	}
	before := waitReady(t, env, ns, 2)

	// The team's manifest asks for minReadySeconds 10: a field kubectl owns with another value.
	config := func(force bool) string {
		return fmt.Sprintf(`
import {
  to = olapgke_statefulset.adopt
  id = "%s/hist"
}

resource "olapgke_statefulset" "adopt" {
  manifest        = yamldecode(file("set.yaml"))
  force_conflicts = %t
}
`, ns, force)
	}
	tf := acctest.NewTF(t, config(false))
	if err := os.WriteFile(filepath.Join(tf.Dir, "set.yaml"), fmt.Appendf(nil, adoptYAML, 10), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := tf.Run("plan")
	if err == nil {
		t.Fatalf("plan passed without force_conflicts:\n%s", out)
	}
	for _, want := range []string{"StatefulSet Fields Owned By Another Manager", `"kubectl-client-side-apply" owns .spec.minReadySeconds`, "force_conflicts = true"} {
		if !strings.Contains(flat(out), want) {
			t.Errorf("the diagnostic does not say %q:\n%s", want, out)
		}
	}
	tf.Write(config(true))
	out, err = tf.Apply()
	if err != nil || !strings.Contains(out, "1 imported") {
		t.Fatalf("import with force_conflicts: %v\n%s", err, out)
	}
	live, err := env.Kube.AppsV1().StatefulSets(ns).Get(t.Context(), "hist", metav1.GetOptions{})
	if err != nil || live.Spec.MinReadySeconds != 10 {
		t.Fatalf("minReadySeconds not taken over: %v %v", live.Spec.MinReadySeconds, err)
	}
	tf.PlanEmpty()
	for name, uid := range waitReady(t, env, ns, 2) {
		if before[name] != uid {
			t.Errorf("Pod %s was recreated by the adoption (%s -> %s)", name, before[name], uid)
		}
	}
	// Forget it without deleting the adopted object's Pods: remove from state.
	if out, err := tf.Run("state", "rm", "olapgke_statefulset.adopt"); err != nil {
		t.Errorf("state rm: %v\n%s", err, out)
	}
}
