package statefulset

import (
	"context"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/olapgke/terraform-provider-olapgke/internal/diagnostics/diagtest"
)

// helmConflict is the API server's answer to an apply of the Service a Helm chart shipped.
func helmConflict() *apierrors.StatusError {
	return &apierrors.StatusError{ErrStatus: metav1.Status{Code: 409, Reason: metav1.StatusReasonConflict,
		Message: `Apply failed with 2 conflicts: conflicts with "helm": ...`,
		Details: &metav1.StatusDetails{Causes: []metav1.StatusCause{
			{Type: metav1.CauseTypeFieldManagerConflict, Message: `conflict with "helm"`, Field: ".spec.selector"},
			{Type: metav1.CauseTypeFieldManagerConflict, Message: `conflict with "helm"`, Field: ".metadata.labels.app.kubernetes.io/managed-by"},
		}}}}
}

func service(managers ...metav1.ManagedFieldsEntry) *corev1.Service {
	return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "olap", Name: "hist", ManagedFields: managers}}
}

// checkService follows the dry run: no Service or one olapgke applied says nothing; a conflict is
// an error naming the owner, each field and both fixes, unless force_conflicts takes the fields
// over (then the adoption warning lists them); a Service of another manager without conflicts
// is adopted with a warning; a transient failure is not blamed on the configuration.
func TestCheckService(t *testing.T) {
	t.Parallel()
	helm := metav1.ManagedFieldsEntry{Manager: "helm", Operation: metav1.ManagedFieldsOperationUpdate}
	ours := metav1.ManagedFieldsEntry{Manager: FieldManager, Operation: metav1.ManagedFieldsOperationApply}
	for _, tc := range []struct {
		name     string
		live     *corev1.Service
		force    bool
		dryRun   func(force bool) error
		summary  string // "" for no diagnostic
		severity diag.Severity
		want     []string
		not      string // the detail must not say this
	}{
		{name: "no Service", dryRun: func(bool) error { return nil }},
		{name: "applied by olapgke", live: service(ours), dryRun: func(bool) error { return nil }},
		{name: "conflict", live: service(helm), dryRun: func(force bool) error {
			if force {
				return nil
			}
			return helmConflict()
		},
			summary: "Headless Service Owned By Another Manager", severity: diag.SeverityError,
			want: []string{`- .spec.selector (owned by "helm")`, `- .metadata.labels.app.kubernetes.io/managed-by (owned by "helm")`,
				`Its field managers: "helm" (Update).`, "set manage_service = false", "set force_conflicts = true", "Nothing was changed."}},
		{name: "conflict, force would fail too", live: service(helm),
			dryRun: func(force bool) error {
				if force {
					return apierrors.NewInvalid(schema.GroupKind{Kind: "Service"}, "hist", nil)
				}
				return helmConflict()
			},
			summary: "Headless Service Owned By Another Manager", severity: diag.SeverityError,
			want: []string{`- .spec.selector (owned by "helm")`, "set manage_service = false", "force_conflicts = true would not take it over",
				`Service "hist" is invalid`, "delete it and plan again"},
			not: "set force_conflicts = true"},
		{name: "conflict forced", live: service(helm), force: true,
			dryRun: func(force bool) error {
				if force {
					return nil
				}
				return helmConflict()
			},
			summary: "Headless Service Will Be Adopted", severity: diag.SeverityWarning,
			want: []string{`force_conflicts = true takes these fields over`, `- .spec.selector (owned by "helm")`, "deletes the Service"}},
		{name: "adopted without conflict", live: service(metav1.ManagedFieldsEntry{Manager: "kubectl-create", Operation: metav1.ManagedFieldsOperationUpdate}),
			dryRun:  func(bool) error { return nil },
			summary: "Headless Service Will Be Adopted", severity: diag.SeverityWarning,
			want: []string{`its field managers: "kubectl-create" (Update)`, "deletes the Service", "manage_service = false"}},
		{name: "transient", dryRun: func(bool) error { return apierrors.NewServiceUnavailable("injected") },
			summary: "Headless Service Dry Run Failed", severity: diag.SeverityError, want: []string{"run the command again"}},
		{name: "refused", live: service(helm), dryRun: func(bool) error {
			return apierrors.NewInvalid(schema.GroupKind{Kind: "Service"}, "hist", nil)
		},
			summary: "Headless Service Rejected By The API Server", severity: diag.SeverityError, want: []string{"manage_service = false"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			kube := fake.NewClientset()
			if tc.live != nil {
				kube = fake.NewClientset(tc.live)
			}
			kube.PrependReactor("patch", "services", func(a k8stesting.Action) (bool, runtime.Object, error) {
				opts := a.(k8stesting.PatchActionImpl).PatchOptions
				force := opts.Force != nil && *opts.Force
				if len(opts.DryRun) == 0 {
					t.Errorf("the check wrote the Service (no dry run)")
				}
				return true, &corev1.Service{}, tc.dryRun(force)
			})
			diags := checkService(context.Background(), kube, testManifest(), tc.force)
			if tc.summary == "" {
				if len(diags) != 0 {
					t.Fatalf("want no diagnostic, got %v", diags)
				}
				return
			}
			if len(diags) != 1 || diags[0].Summary() != tc.summary || diags[0].Severity() != tc.severity {
				t.Fatalf("want one %v %q, got %v", tc.severity, tc.summary, diags)
			}
			for _, w := range tc.want {
				if !strings.Contains(diags[0].Detail(), w) {
					t.Errorf("detail does not say %q:\n%s", w, diags[0].Detail())
				}
			}
			if tc.not != "" && strings.Contains(diags[0].Detail(), tc.not) {
				t.Errorf("detail says %q:\n%s", tc.not, diags[0].Detail())
			}
			for _, p := range diagtest.Problems(diags[0]) { // at 80 columns, as Terraform prints it
				t.Error(p)
			}
		})
	}
}
