package statefulset

import (
	"context"
	"errors"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

func testManifest() *manifest {
	set := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: "olap", Name: "hist"}, Spec: appsv1.StatefulSetSpec{ServiceName: "hist"}}
	return &manifest{Namespace: "olap", Name: "hist", Set: set, Obj: map[string]any{
		"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": map[string]any{"namespace": "olap", "name": "hist"},
	}}
}

// The plan's dry run is a read: a transient failure is retried (kube.RetryRead), a real apply is
// not (it may have been carried out).
func TestDryRunApplyIsRetriedOnTransientErrors(t *testing.T) {
	t.Parallel()
	for _, dryRun := range []bool{true, false} {
		kube := fake.NewClientset()
		calls := 0
		kube.PrependReactor("patch", "statefulsets", func(k8stesting.Action) (bool, runtime.Object, error) {
			calls++
			if calls == 1 {
				return true, nil, apierrors.NewServiceUnavailable("injected")
			}
			return true, &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: "olap", Name: "hist"}}, nil
		})
		_, err := applyStatefulSetAs(context.Background(), kube, testManifest(), FieldManager, false, dryRun)
		if dryRun && (err != nil || calls != 2) {
			t.Errorf("dry run: err %v after %d calls, want success on the second", err, calls)
		}
		if !dryRun && (err == nil || calls != 1) {
			t.Errorf("apply: err %v after %d calls, want the 503 of the only call", err, calls)
		}
	}
}

// A dry run that keeps failing transiently is not a bad manifest.
func TestRejectedTellsTransientFromRefused(t *testing.T) {
	t.Parallel()
	d := rejected(apierrors.NewServiceUnavailable("injected by faultproxy"))
	if d.Summary() != "StatefulSet Dry Run Failed" || strings.Contains(d.Detail(), "Fix the manifest") ||
		!strings.Contains(d.Detail(), "run the command again") || !strings.Contains(d.Detail(), "Nothing was changed") {
		t.Errorf("503: %s\n%s", d.Summary(), d.Detail())
	}
	d = rejected(apierrors.NewForbidden(schema.GroupResource{Group: "apps", Resource: "statefulsets"}, "hist",
		errors.New(`User "tf" cannot patch resource "statefulsets" in API group "apps" in the namespace "olap"`)))
	if d.Summary() != "StatefulSet Dry Run Failed" || !strings.Contains(d.Detail(), "lacks a permission") {
		t.Errorf("403: %s\n%s", d.Summary(), d.Detail())
	}
	d = rejected(apierrors.NewBadRequest(`strict decoding error: unknown field "spec.replica"`))
	if d.Summary() != "StatefulSet Rejected By The API Server" || !strings.Contains(d.Detail(), `unknown field "spec.replica"`) {
		t.Errorf("400: %s\n%s", d.Summary(), d.Detail())
	}
}

// The headless Service's advice follows the failure: manage_service/force_conflicts for a
// conflict, "run again" for a transient error (the reliability suite met a 503 told to set
// manage_service = false).
func TestServiceApplyFailedAdvice(t *testing.T) {
	t.Parallel()
	m := testManifest()
	for _, tc := range []struct {
		err       error
		want, not string
	}{
		{apierrors.NewServiceUnavailable("injected"), "run the command again", "manage_service"},
		{apierrors.NewConflict(schema.GroupResource{Resource: "services"}, "hist", errors.New("Apply failed with 1 conflict")), "force_conflicts = true", "transient"},
		{apierrors.NewInvalid(schema.GroupKind{Kind: "Service"}, "hist", nil), "Fix what the cause names", "transient"},
	} {
		d := serviceApplyFailed(m, tc.err)
		if d.Summary() != "Headless Service Apply Failed" || !strings.Contains(d.Detail(), tc.want) || strings.Contains(d.Detail(), tc.not) {
			t.Errorf("%v: %s\n%s", tc.err, d.Summary(), d.Detail())
		}
	}
}
