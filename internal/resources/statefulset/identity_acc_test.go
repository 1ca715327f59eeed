package statefulset_test

import (
	"context"
	"fmt"
	"regexp"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"

	"github.com/olapgke/terraform-provider-olapgke/internal/acctest"
)

// importByIdentity is an import block for olapgke_statefulset.adopt with an identity.
func importByIdentity(ns, name string) string {
	return fmt.Sprintf(`
import {
  to       = olapgke_statefulset.adopt
  identity = { namespace = %q, name = %q }
}
`, ns, name)
}

// Import by resource identity (Terraform 1.12+): the identity recorded at create is
// {namespace, name}; an import block with that identity adopts the StatefulSet with the same
// identity and a no-op plan; an identity naming no StatefulSet fails with Terraform's own
// error (Read removed the object: the framework still requires an identity, from the prior
// state), and one that is not a namespace and a name with the provider's.
func TestAccStatefulSet_ImportByIdentity(t *testing.T) {
	env := acctest.Sandbox(t)
	t.Parallel()
	ns := namespace(t, env.Kube, "sts-identity")
	cfg := stsConfig{ns: ns, name: "hist", replicas: 1}
	other := stsConfig{ns: ns, name: "other", replicas: 1}
	adopt := regexp.MustCompile(`resource "olapgke_statefulset" "test"`).ReplaceAllString(other.String(), `resource "olapgke_statefulset" "adopt"`)
	resource.Test(t, resource.TestCase{
		TerraformVersionChecks:   acctest.IdentityCLI,
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories,
		CheckDestroy:             checkGone(env.Kube, ns, "hist"),
		Steps: []resource.TestStep{
			{
				Config: cfg.String(),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectIdentity(res, map[string]knownvalue.Check{
						"namespace": knownvalue.StringExact(ns), "name": knownvalue.StringExact("hist"),
					}),
				},
			},
			{
				ResourceName: res, ImportState: true, ImportStateKind: resource.ImportBlockWithResourceIdentity,
				ImportPlanChecks: resource.ImportPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(res, plancheck.ResourceActionNoop),
				}},
			},
			{
				Config:      cfg.String() + adopt + importByIdentity(ns, "other"),
				PlanOnly:    true,
				ExpectError: wrapped(`Cannot import non-existent remote object`),
			},
			{
				Config:      cfg.String() + adopt + importByIdentity(ns, "a/b"),
				PlanOnly:    true,
				ExpectError: wrapped(`Invalid Import Identity .*"a/b", which is empty or holds a "/"`),
			},
		},
	})
}

// A StatefulSet deleted outside Terraform: the refresh removes it from state and the plan creates
// it again, on every CLI. With a CLI older than 1.12 (or a state written before identities) the
// prior identity is null, and the framework still requires one after a Read that removed the
// object: the identity then comes from the prior state.
func TestAccStatefulSet_RecreatedAfterOutOfBandDelete(t *testing.T) {
	env := acctest.Sandbox(t)
	t.Parallel()
	ns := namespace(t, env.Kube, "sts-gone")
	cfg := stsConfig{ns: ns, name: "hist", replicas: 1}
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories,
		CheckDestroy:             checkGone(env.Kube, ns, "hist"),
		Steps: []resource.TestStep{
			{Config: cfg.String()},
			{
				PreConfig: func() {
					ctx := context.Background()
					sets := env.Kube.AppsV1().StatefulSets(ns)
					if err := sets.Delete(ctx, "hist", metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationForeground)}); err != nil {
						t.Fatal(err)
					}
					if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
						_, err := sets.Get(ctx, "hist", metav1.GetOptions{})
						return apierrors.IsNotFound(err), nil
					}); err != nil {
						t.Fatalf("StatefulSet %s/hist still there after a foreground delete: %v", ns, err)
					}
				},
				Config: cfg.String(),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(res, plancheck.ResourceActionCreate),
				}},
			},
		},
	})
}
