package statefulset_test

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/olapgke/terraform-provider-olapgke/internal/acctest"
)

// mutatingWebhook serves a real admission webhook from the test process (the sandbox's API
// server runs on the same host) that rewrites spec.updateStrategy of StatefulSets to OnDelete, as
// the incident's tooling did, and registers it for namespace ns only.
func mutatingWebhook(t *testing.T, ns string) {
	t.Helper()
	env := acctest.Sandbox(t)
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var review admissionv1.AdmissionReview
		if err := json.NewDecoder(r.Body).Decode(&review); err != nil || review.Request == nil {
			http.Error(w, "bad AdmissionReview", http.StatusBadRequest)
			return
		}
		patch := []byte(`[{"op":"replace","path":"/spec/updateStrategy","value":{"type":"OnDelete"}}]`)
		pt := admissionv1.PatchTypeJSONPatch
		review.Response = &admissionv1.AdmissionResponse{UID: review.Request.UID, Allowed: true, Patch: patch, PatchType: &pt}
		review.Request = nil
		_ = json.NewEncoder(w).Encode(review)
	}))
	t.Cleanup(srv.Close)
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	url := srv.URL + "/mutate"
	none := admissionregistrationv1.SideEffectClassNone
	fail := admissionregistrationv1.Fail
	cfg := &admissionregistrationv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "force-ondelete-" + ns},
		Webhooks: []admissionregistrationv1.MutatingWebhook{{
			Name:                    "force-ondelete.sandbox.olapgke.io",
			ClientConfig:            admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: ca},
			AdmissionReviewVersions: []string{"v1"},
			SideEffects:             &none,
			FailurePolicy:           &fail,
			NamespaceSelector:       &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": ns}},
			Rules: []admissionregistrationv1.RuleWithOperations{{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
				Rule:       admissionregistrationv1.Rule{APIGroups: []string{"apps"}, APIVersions: []string{"v1"}, Resources: []string{"statefulsets"}},
			}},
		}},
	}
	ctx := context.Background()
	if _, err := env.Kube.AdmissionregistrationV1().MutatingWebhookConfigurations().Create(ctx, cfg, metav1.CreateOptions{}); err != nil {
		t.Fatalf("registering the mutating webhook: %v", err)
	}
	t.Cleanup(func() {
		_ = env.Kube.AdmissionregistrationV1().MutatingWebhookConfigurations().Delete(context.Background(), cfg.Name, metav1.DeleteOptions{})
	})
}

// A manifest whose updateStrategy an admission webhook rewrites is reported after apply.
func TestAccStatefulSet_ServerSideMutationReported(t *testing.T) {
	env := acctest.Sandbox(t)
	t.Parallel()
	ns := namespace(t, env.Kube, "sts-mutated")
	mutatingWebhook(t, ns)
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories,
		Steps: []resource.TestStep{{
			Config:      stsConfig{ns: ns, name: "hist"}.String(),
			ExpectError: wrapped(`Applied StatefulSet Differs From Configuration.*spec.updateStrategy.type: configured "RollingUpdate", stored "OnDelete"`),
		}},
	})
}
