package apifailure

import (
	"errors"
	"fmt"
	"strings"
	"syscall"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

var sts = schema.GroupResource{Group: "apps", Resource: "statefulsets"}

func TestClassify(t *testing.T) {
	terminating := apierrors.NewForbidden(schema.GroupResource{Resource: "services"}, "hist",
		errors.New("unable to create new content in namespace olap because it is being terminated"))
	terminating.ErrStatus.Details.Causes = append(terminating.ErrStatus.Details.Causes, metav1.StatusCause{
		Type: corev1.NamespaceTerminatingCause, Message: "namespace olap is being terminated", Field: "metadata.namespace",
	})
	for _, tc := range []struct {
		name string
		err  error
		want Class
	}{
		{"503", apierrors.NewServiceUnavailable("injected"), Transient},
		{"500", apierrors.NewInternalError(errors.New("etcdserver: leader changed")), Transient},
		{"429", apierrors.NewTooManyRequests("slow down", 1), Transient},
		{"504", apierrors.NewTimeoutError("timed out", 1), Transient},
		{"connection reset", fmt.Errorf("Patch \"https://x\": %w", syscall.ECONNRESET), Transient},
		{"401", apierrors.NewUnauthorized("token expired"), Unauthorized},
		{"403 RBAC", apierrors.NewForbidden(sts, "hist", errors.New(`User "system:serviceaccount:olap:tf" cannot patch resource "statefulsets" in API group "apps" in the namespace "olap"`)), Forbidden},
		{"403 webhook", apierrors.NewForbidden(sts, "hist", errors.New(`admission webhook "policy.example.com" denied the request: images must come from our registry`)), Refused},
		{"403 namespace terminating", terminating, NamespaceTerminating},
		{"422", apierrors.NewInvalid(schema.GroupKind{Group: "apps", Kind: "StatefulSet"}, "hist", field.ErrorList{field.Required(field.NewPath("spec", "selector"), "")}), Refused},
		{"409", apierrors.NewConflict(sts, "hist", errors.New("the object has been modified")), Refused},
		{"404", apierrors.NewNotFound(sts, "hist"), Refused},
		// A server-side apply with an unknown field is answered with a 500 (kube.IsTransient).
		{"500 of an apply that does not fit the schema", &apierrors.StatusError{ErrStatus: metav1.Status{
			Status: metav1.StatusFailure, Code: 500, Reason: metav1.StatusReasonUnknown,
			Message: "failed to create typed patch object (olap/hist; apps/v1, Kind=StatefulSet): .spec.bogusField: field not declared in schema",
		}}, Refused},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Classify(tc.err); got != tc.want {
				t.Errorf("Classify(%v) = %d, want %d", tc.err, got, tc.want)
			}
		})
	}
}

func TestDetail(t *testing.T) {
	refused := Advice{Found: "The API server refused it.", Do: "Fix the manifest where the message points."}
	for _, tc := range []struct {
		name      string
		err       error
		advice    Advice
		want, not []string
	}{
		{"transient is not a bad manifest", apierrors.NewServiceUnavailable("injected"), refused,
			[]string{"usually transient: run the command again", "Cause: injected"}, []string{"Fix the manifest"}},
		{"refusal gets the caller's advice", apierrors.NewBadRequest("spec.replicas: must be >= 0"), refused,
			[]string{"The API server refused it.", "Fix the manifest where the message points.", "Cause: spec.replicas"}, []string{"transient"}},
		{"RBAC names the role", apierrors.NewForbidden(sts, "hist", errors.New(`User "u" cannot patch resource "statefulsets" in API group "apps"`)), refused,
			[]string{"lacks a permission", "Least-privilege Kubernetes access"}, []string{"Fix the manifest"}},
		{"RBAC with the caller's permissions", apierrors.NewForbidden(sts, "hist", errors.New(`User "u" cannot create resource "daemonsets" in API group "apps"`)),
			Advice{Found: "x", Do: "y", Permissions: "create on daemonsets"},
			[]string{"Grant it create on daemonsets and run the command again."}, []string{"Least-privilege"}},
		{"conflict advice for a 409", apierrors.NewConflict(sts, "hist", errors.New("Apply failed with 1 conflict")),
			Advice{Found: "x", Do: "y", Conflict: &Advice{Found: "Another field manager owns fields.", Do: "Set force_conflicts = true."}},
			[]string{"Another field manager owns fields.", "Set force_conflicts = true."}, []string{"\n\ny"}},
		{"no conflict advice for a refusal", apierrors.NewBadRequest("bad"), Advice{Found: "x", Do: "y", Conflict: &Advice{Found: "c", Do: "force_conflicts"}},
			[]string{"\n\nx\n\ny"}, []string{"force_conflicts"}},
		{"credentials", apierrors.NewUnauthorized("Unauthorized"), refused,
			[]string{"did not accept the provider's credentials"}, []string{"Fix the manifest"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := Detail("Server-side apply of StatefulSet olap/hist.", tc.err, tc.advice).String()
			if !strings.HasPrefix(d, "Server-side apply of StatefulSet olap/hist.") {
				t.Errorf("detail does not start with what was checked:\n%s", d)
			}
			for _, w := range tc.want {
				if !strings.Contains(d, w) {
					t.Errorf("detail lacks %q:\n%s", w, d)
				}
			}
			for _, n := range tc.not {
				if strings.Contains(d, n) {
					t.Errorf("detail has %q:\n%s", n, d)
				}
			}
		})
	}
}
