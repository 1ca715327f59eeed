package engine

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// authorize answers SelfSubjectAccessReviews: allowed unless "verb resource" is in deny.
func authorize(kube *fake.Clientset, deny ...string) {
	kube.PrependReactor("create", "selfsubjectaccessreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
		r := a.(k8stesting.CreateAction).GetObject().(*authorizationv1.SelfSubjectAccessReview).DeepCopy()
		attrs := r.Spec.ResourceAttributes
		r.Status.Allowed = true
		for _, d := range deny {
			if d == attrs.Verb+" "+attrs.Resource {
				r.Status.Allowed, r.Status.Reason = false, "RBAC: no rule"
			}
		}
		return true, r, nil
	})
}

func TestCheckAccess(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	kube := fake.NewClientset()
	authorize(kube)
	if err := checkAccess(ctx, kube, "olap"); err != nil {
		t.Fatalf("all allowed: %v", err)
	}

	kube = fake.NewClientset()
	authorize(kube, "watch poddisruptionbudgets", "list nodes")
	err := checkAccess(ctx, kube, "olap")
	if !apierrors.IsForbidden(err) {
		t.Fatalf("denied: %v, want Forbidden", err)
	}
	for _, want := range []string{
		`cannot watch resource "poddisruptionbudgets" in API group "policy" in the namespace "olap"`,
		`cannot list resource "nodes" in API group ""`,
		"RBAC: no rule",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if strings.Contains(err.Error(), `"nodes" in API group "" in the namespace`) {
		t.Errorf("cluster-scoped nodes reported with a namespace: %v", err)
	}

	// Reviews that cannot be made (here: always 500) do not block the migration.
	kube = fake.NewClientset()
	kube.PrependReactor("create", "selfsubjectaccessreviews", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewInternalError(errors.New("authorizer down"))
	})
	if err := checkAccess(ctx, kube, "olap"); err != nil {
		t.Fatalf("reviews failing: %v, want the check skipped", err)
	}
}

// A role without a verb the migration needs is refused before the first delete, even when the
// missing verb (a watch) would only fail once the informers have listed.
func TestMigrateChecksAccessBeforeDeleting(t *testing.T) {
	t.Parallel()
	kube := fake.NewClientset(oneOrdinalOnPoolA()...)
	authorize(kube, "watch poddisruptionbudgets")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	err := Migrate(ctx, kube, MigrationRun{Namespace: "olap", Name: "hist", Ordinals: []int32{0}, Claims: []string{"cache"}})
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), `cannot watch resource "poddisruptionbudgets"`) {
		t.Fatalf("Migrate: %v, want Forbidden naming the watch", err)
	}
	for _, a := range kube.Actions() {
		if a.GetVerb() == "delete" || a.GetVerb() == "watch" {
			t.Errorf("%s %s before the access check failed", a.GetVerb(), a.GetResource().Resource)
		}
	}
}
