// Package apifailure says what a failed Kubernetes API request means to the user, in one place
// for every resource, so that the advice follows the failure and not the request: an API server
// that was briefly unavailable is never reported as a bad manifest, and a manifest the server
// refused is never answered with "retry".
//
// The classes are the API server's own (k8s.io/apimachinery/pkg/api/errors): 429/5xx/timeouts
// and dropped connections are transient (kube.IsTransient, the same test the provider's read
// retries use); 401 is the credentials; 403 is RBAC when the server's message is RBAC's
// ("... cannot <verb> resource ..."), a namespace being deleted when its cause says so, and
// otherwise an admission policy or webhook refusing the object (which answer 403 by default);
// everything else is the server refusing the object or request itself, where only the caller
// knows what to fix.
package apifailure

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/olapgke/terraform-provider-olapgke/internal/diagnostics"
	"github.com/olapgke/terraform-provider-olapgke/internal/kube"
)

// Class is what a failed request means.
type Class int

const (
	// Refused: the API server refused the object or the request itself (invalid, conflict, not
	// found, an admission policy or webhook): the caller's advice applies.
	Refused Class = iota
	// Transient: the server was overloaded or unavailable, or the connection dropped.
	Transient
	// Forbidden: RBAC denied the provider's identity a verb on a resource.
	Forbidden
	// Unauthorized: the server did not accept the provider's credentials.
	Unauthorized
	// NamespaceTerminating: the namespace is being deleted, so nothing new can be created in it.
	NamespaceTerminating
)

// Classify says what err, returned by a Kubernetes API request, means.
func Classify(err error) Class {
	switch {
	case err == nil:
		return Refused
	case kube.IsTransient(err):
		return Transient
	case apierrors.IsUnauthorized(err):
		return Unauthorized
	case apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause):
		return NamespaceTerminating
	case apierrors.IsForbidden(err) && isRBAC(err):
		return Forbidden
	}
	return Refused
}

// isRBAC reports the RBAC authorizer's wording (k8s.io/apiserver
// pkg/endpoints/handlers/responsewriters/errors.go forbiddenMessage: `User "u" cannot get
// resource "pods" in API group "" ...`), as opposed to an admission plugin's or webhook's 403
// ("admission webhook ... denied the request", Pod Security's "violates PodSecurity").
func isRBAC(err error) bool {
	msg := err.Error()
	return strings.Contains(msg, " cannot ") && strings.Contains(msg, ` resource "`)
}

// Advice is what the caller says for a refusal: what was found and what to do about it.
// Permissions optionally names what to grant when RBAC refused the request (default: the verb and
// resource the cause names, and the provider's least-privilege ClusterRole). Conflict, when set,
// replaces Found and Do for a 409: for a server-side apply, another field manager owns fields
// the request sets.
type Advice struct {
	Found, Do   string
	Permissions string
	Conflict    *Advice
}

// Detail is the body of the diagnostic for a request (checked) that failed with err.
func Detail(checked string, err error, refused Advice) diagnostics.Detail {
	d := diagnostics.Detail{Checked: checked, Err: err}
	switch Classify(err) {
	case Transient:
		d.Found = "The API server was overloaded or unavailable, or the connection dropped (reads and dry runs were retried a few times first)."
		d.Do = "This is usually transient: run the command again. Nothing in the configuration needs to change."
	case Unauthorized:
		d.Found = "The API server did not accept the provider's credentials."
		d.Do = "Check them (an expired token, the kubernetes block, or the GKE cluster the provider reads them from) and run the command again."
	case Forbidden:
		grant := refused.Permissions
		if grant == "" {
			grant = "the verb on the resource the cause names (the guide \"Least-privilege Kubernetes access\" in the provider's documentation lists every permission olapgke needs)"
		}
		d.Found = "The API server refused the request: the provider's identity lacks a permission (RBAC)."
		d.Do = "Grant it " + grant + " and run the command again."
	case NamespaceTerminating:
		d.Found = "The namespace is being deleted; the API server creates nothing in it until it is gone."
		d.Do = "Wait until the namespace is gone (kubectl get namespace shows what holds it) and run the command again."
	default:
		d.Found, d.Do = refused.Found, refused.Do
		if c := refused.Conflict; c != nil && apierrors.IsConflict(err) {
			d.Found, d.Do = c.Found, c.Do
		}
	}
	return d
}
