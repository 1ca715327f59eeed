package statefulset_test

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"

	"github.com/olapgke/terraform-provider-olapgke/internal/acctest"
	"github.com/olapgke/terraform-provider-olapgke/internal/stsutil"
)

// chartService creates Service hist in ns as field manager manager (Helm writes with create and
// patch, recorded as Update operations), headless, with the given labels, selector and port.
func chartService(t *testing.T, kube kubernetes.Interface, ns, manager string, labels, selector map[string]string, port int32) {
	t.Helper()
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "hist", Labels: labels},
		Spec: corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone, Selector: selector, Ports: []corev1.ServicePort{
			{Name: "http", Port: port, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(port)},
		}},
	}
	if _, err := kube.CoreV1().Services(ns).Create(t.Context(), svc, metav1.CreateOptions{FieldManager: manager}); err != nil {
		t.Fatal(err)
	}
}

// svcConfig is a one-replica olapgke_statefulset "hist" with manage_service and force_conflicts.
func svcConfig(ns string, manage, force bool, extra string) string {
	return stsConfig{ns: ns, name: "hist", replicas: 1,
		extra: fmt.Sprintf("  manage_service  = %t\n  force_conflicts = %t\n%s", manage, force, extra)}.String()
}

func noStatefulSet(t *testing.T, kube kubernetes.Interface, ns string) {
	t.Helper()
	if _, err := kube.AppsV1().StatefulSets(ns).Get(t.Context(), "hist", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("StatefulSet %s/hist exists after the refused apply (err %v)", ns, err)
	}
}

func getService(t *testing.T, kube kubernetes.Interface, ns string) *corev1.Service {
	t.Helper()
	svc, err := kube.CoreV1().Services(ns).Get(t.Context(), "hist", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return svc
}

// TestAccStatefulSet_ChartServiceRefusedAtPlan: a chart ships the headless Service (written by
// "helm", selecting its own label value, port 9000). With manage_service = true the plan fails,
// naming helm, the fields and both fixes (force_conflicts only once forcing would work: not while
// the chart's port has the container port's name), and apply creates no StatefulSet (it used to create the
// StatefulSet and its Pods, then fail at the Service). Near misses: manage_service = false applies
// and leaves helm's Service as it is, also on destroy; force_conflicts = true takes it over, with
// a warning that names the fields, and destroy then deletes it, as the warning says.
func TestAccStatefulSet_ChartServiceRefusedAtPlan(t *testing.T) {
	env := acctest.Sandbox(t)
	acctest.PreCheck(t)
	t.Parallel()
	ns := namespace(t, env.Kube, "sts-svc-chart")
	chartService(t, env.Kube, ns, "helm", map[string]string{"app.kubernetes.io/managed-by": "Helm"}, map[string]string{"app": "hist-chart"}, 9000)

	tf := acctest.NewTF(t, svcConfig(ns, true, false, ""))
	// The chart's port 9000 is named "http" like the container port 8080: forcing would leave both
	// in the Service (ports are merged by port and protocol), which is invalid, so the plan must
	// not advise force_conflicts.
	out, err := tf.Run("plan")
	if err == nil {
		t.Fatalf("plan passed although helm owns the Service:\n%s", out)
	}
	for _, want := range []string{"Headless Service Owned By Another Manager", "set manage_service = false",
		"force_conflicts = true would not take it over", `Duplicate value: "http"`} {
		if !strings.Contains(flat(out), want) {
			t.Errorf("the plan does not say %q:\n%s", want, out)
		}
	}
	if strings.Contains(flat(out), "set force_conflicts = true") {
		t.Errorf("the plan advises force_conflicts, which would fail:\n%s", out)
	}

	// The chart names its port "native": now forcing would work, and the plan says so.
	svc := getService(t, env.Kube, ns)
	svc.Spec.Ports[0].Name = "native"
	if _, err := env.Kube.CoreV1().Services(ns).Update(t.Context(), svc, metav1.UpdateOptions{FieldManager: "helm"}); err != nil {
		t.Fatal(err)
	}
	out, err = tf.Run("plan")
	if err == nil {
		t.Fatalf("plan passed although helm owns the Service:\n%s", out)
	}
	for _, want := range []string{"Headless Service Owned By Another Manager", `.spec.selector (owned by "helm")`,
		`.metadata.labels.app.kubernetes.io/managed-by (owned by "helm")`, `"helm" (Update)`,
		"set manage_service = false", "set force_conflicts = true", "Nothing was changed."} {
		if !strings.Contains(flat(out), want) {
			t.Errorf("the plan does not say %q:\n%s", want, out)
		}
	}
	if out, err := tf.Apply(); err == nil || !strings.Contains(flat(out), "Headless Service Owned By Another Manager") {
		t.Fatalf("apply was not refused with the diagnostic (%v):\n%s", err, out)
	}
	noStatefulSet(t, env.Kube, ns)

	// Near miss: the chart keeps its Service.
	tf.Write(svcConfig(ns, false, false, ""))
	if out, err := tf.Apply(); err != nil {
		t.Fatalf("apply with manage_service = false: %v\n%s", err, out)
	} else if strings.Contains(out, "Headless Service") {
		t.Errorf("manage_service = false still judged the Service:\n%s", out)
	}
	svc = getService(t, env.Kube, ns)
	if svc.Spec.Selector["app"] != "hist-chart" || stsutil.AppliedBy(svc, "olapgke") {
		t.Fatalf("manage_service = false changed helm's Service: selector %v, managers %v", svc.Spec.Selector, svc.ManagedFields)
	}

	// force_conflicts takes it over.
	tf.Write(svcConfig(ns, true, true, ""))
	out, err = tf.Run("plan")
	if err != nil {
		t.Fatalf("plan with force_conflicts = true: %v\n%s", err, out)
	}
	for _, want := range []string{"Headless Service Will Be Adopted", `"helm" (Update)`, "force_conflicts = true takes these fields over",
		`.spec.selector (owned by "helm")`, "deletes the Service"} {
		if !strings.Contains(flat(out), want) {
			t.Errorf("the plan does not say %q:\n%s", want, out)
		}
	}
	if out, err := tf.Apply(); err != nil {
		t.Fatalf("apply with force_conflicts = true: %v\n%s", err, out)
	}
	svc = getService(t, env.Kube, ns)
	if svc.Spec.Selector["app"] != "hist" || len(svc.Spec.Selector) != 1 || svc.Labels["app.kubernetes.io/managed-by"] != "olapgke" || !stsutil.AppliedBy(svc, "olapgke") {
		t.Fatalf("force_conflicts = true did not take the Service over: selector %v, labels %v", svc.Spec.Selector, svc.Labels)
	}
	if out, err := tf.Run("destroy", "-auto-approve"); err != nil {
		t.Fatalf("destroy: %v\n%s", err, out)
	}
	if _, err := env.Kube.CoreV1().Services(ns).Get(t.Context(), "hist", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("the adopted Service was not deleted on destroy, as the warning said (err %v)", err)
	}
}

// TestAccStatefulSet_ServiceAdoptedWithWarning: a Service someone created with kubectl, with the
// same spec olapgke applies, has no conflicting field: the plan warns that apply adopts it and
// that destroy then deletes it, apply adopts it, a later plan no longer warns (olapgke applied
// it), and destroy deletes it.
func TestAccStatefulSet_ServiceAdoptedWithWarning(t *testing.T) {
	env := acctest.Sandbox(t)
	acctest.PreCheck(t)
	t.Parallel()
	ns := namespace(t, env.Kube, "sts-svc-adopt")
	chartService(t, env.Kube, ns, "kubectl-create", nil, map[string]string{"app": "hist"}, 8080)

	tf := acctest.NewTF(t, svcConfig(ns, true, false, ""))
	out, err := tf.Run("plan")
	if err != nil {
		t.Fatalf("plan: %v\n%s", err, out)
	}
	for _, want := range []string{"Headless Service Will Be Adopted", `"kubectl-create" (Update)`, "deletes the Service", "manage_service = false"} {
		if !strings.Contains(flat(out), want) {
			t.Errorf("the plan does not say %q:\n%s", want, out)
		}
	}
	if out, err := tf.Apply(); err != nil {
		t.Fatalf("apply: %v\n%s", err, out)
	}
	if svc := getService(t, env.Kube, ns); !stsutil.AppliedBy(svc, "olapgke") || svc.Labels["app.kubernetes.io/managed-by"] != "olapgke" {
		t.Fatalf("the Service was not adopted: labels %v", svc.Labels)
	}
	// Near miss: the Service is olapgke's now; a change to the resource plans without the warning.
	tf.Write(svcConfig(ns, true, false, "  wait_for_rollout = false\n"))
	out, err = tf.Run("plan")
	if err != nil || strings.Contains(out, "Headless Service") || !strings.Contains(out, "1 to change") {
		t.Fatalf("plan after the adoption (%v):\n%s", err, out)
	}
	if out, err := tf.Run("destroy", "-auto-approve"); err != nil {
		t.Fatalf("destroy: %v\n%s", err, out)
	}
	if _, err := env.Kube.CoreV1().Services(ns).Get(t.Context(), "hist", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("the adopted Service was not deleted on destroy, as the warning said (err %v)", err)
	}
}
