package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"sync"

	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"

	olapkube "github.com/olapgke/terraform-provider-olapgke/internal/kube"
)

// access is one permission a migration uses; Namespaced ones are checked in the set's namespace.
type access struct {
	Group, Resource, Verb string
	Namespaced            bool
}

// migrationAccess is every request Migrate makes: the informers' list and watch, the deletes.
var migrationAccess = []access{
	{"apps", "statefulsets", "get", true},
	{"apps", "statefulsets", "list", true},
	{"apps", "statefulsets", "watch", true},
	{"", "pods", "list", true},
	{"", "pods", "watch", true},
	{"", "pods", "delete", true},
	{"", "persistentvolumeclaims", "list", true},
	{"", "persistentvolumeclaims", "watch", true},
	{"", "persistentvolumeclaims", "delete", true},
	{"policy", "poddisruptionbudgets", "list", true},
	{"policy", "poddisruptionbudgets", "watch", true},
	{"", "events", "list", true},
	{"", "events", "watch", true},
	{"", "persistentvolumes", "list", false},
	{"", "persistentvolumes", "watch", false},
	{"", "nodes", "list", false},
	{"", "nodes", "watch", false},
	// The scheduling simulation's inputs, watched (placement checked again before each ordinal starts).
	{"", "pods", "list", false},
	{"", "pods", "watch", false},
	{"storage.k8s.io", "storageclasses", "list", false},
	{"storage.k8s.io", "storageclasses", "watch", false},
	{"storage.k8s.io", "csistoragecapacities", "list", false},
	{"storage.k8s.io", "csistoragecapacities", "watch", false},
	{"storage.k8s.io", "csidrivers", "list", false},
	{"storage.k8s.io", "csidrivers", "watch", false},
	{"storage.k8s.io", "csinodes", "list", false},
	{"storage.k8s.io", "csinodes", "watch", false},
}

// warmAccess is what a warm move (MigrationRun.Copy) needs besides: the copy's claims and
// copier Pods, and its PVs kept, reserved and restored (warm.go).
var warmAccess = []access{
	{"", "persistentvolumeclaims", "create", true},
	{"", "pods", "create", true},
	{"", "persistentvolumes", "get", false},
	{"", "persistentvolumes", "patch", false},
}

// gatesAccess is what a migration with gates needs besides: the pending-gates annotation.
var gatesAccess = access{"apps", "statefulsets", "patch", true}

// checkAccess asks the API server (SelfSubjectAccessReview, as `kubectl auth can-i` does; it
// consults every authorizer, GKE's IAM included) whether the credentials may make every request
// of a migration in namespace ns, before anything is deleted. A denial is returned as a
// Forbidden error naming the verb and the resource. When the reviews themselves cannot be made,
// the check is skipped: the requests will tell.
func checkAccess(ctx context.Context, kube kubernetes.Interface, ns string, extra ...access) error {
	var mu sync.Mutex
	var denied []error
	var wg sync.WaitGroup
	for _, a := range append(slices.Clip(migrationAccess), extra...) {
		wg.Go(func() {
			attrs := &authorizationv1.ResourceAttributes{Group: a.Group, Resource: a.Resource, Verb: a.Verb}
			where := ""
			if a.Namespaced {
				attrs.Namespace = ns
				where = fmt.Sprintf(" in the namespace %q", ns)
			}
			var res *authorizationv1.SelfSubjectAccessReview
			err := olapkube.RetryRead(ctx, func(ctx context.Context) error { // a review changes nothing
				var err error
				res, err = kube.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx,
					&authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: attrs}},
					metav1.CreateOptions{})
				return err
			})
			if err != nil || res.Status.Allowed {
				return
			}
			why := ""
			if res.Status.Reason != "" {
				why = ": " + res.Status.Reason
			}
			mu.Lock()
			denied = append(denied, apierrors.NewForbidden(schema.GroupResource{Group: a.Group, Resource: a.Resource}, "",
				fmt.Errorf("cannot %s resource %q in API group %q%s (checked with a SelfSubjectAccessReview before anything was deleted)%s",
					a.Verb, a.Resource, a.Group, where, why)))
			mu.Unlock()
		})
	}
	wg.Wait()
	if len(denied) == 0 {
		return nil
	}
	sort.Slice(denied, func(i, j int) bool { return denied[i].Error() < denied[j].Error() })
	return errors.Join(denied...)
}
