package reliability

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	authv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/olapgke/terraform-provider-olapgke/internal/acctest"
)

// publishedRole reads the ClusterRole published in examples/rbac/clusterrole.yaml.
func publishedRole(t *testing.T) *rbacv1.ClusterRole {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(acctest.RepoRoot(), "examples", "rbac", "clusterrole.yaml"))
	must(t, err)
	for _, doc := range bytes.Split(data, []byte("\n---")) {
		var r rbacv1.ClusterRole
		if err := yaml.UnmarshalStrict(doc, &r); err == nil && r.Kind == "ClusterRole" {
			return &r
		}
	}
	t.Fatal("examples/rbac/clusterrole.yaml has no ClusterRole")
	return nil
}

// serviceAccountToken creates ServiceAccount ns/name bound (ClusterRoleBinding) to role and
// returns a token for it from the TokenRequest API.
func serviceAccountToken(t *testing.T, env *acctest.Env, ns, name string, role *rbacv1.ClusterRole) string {
	t.Helper()
	ctx := t.Context()
	kube := env.Kube
	if _, err := kube.CoreV1().Namespaces().Create(ctx, nsObject(ns), createOpts); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	role = role.DeepCopy()
	role.Name = name
	role.ResourceVersion = ""
	_, err := kube.RbacV1().ClusterRoles().Create(ctx, role, createOpts)
	must(t, err)
	_, err = kube.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}, createOpts)
	must(t, err)
	_, err = kube.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: name, Namespace: ns}},
	}, createOpts)
	must(t, err)
	t.Cleanup(func() {
		ctx := context.Background()
		_ = kube.RbacV1().ClusterRoleBindings().Delete(ctx, name, metav1.DeleteOptions{})
		_ = kube.RbacV1().ClusterRoles().Delete(ctx, name, metav1.DeleteOptions{})
		_ = kube.CoreV1().ServiceAccounts(ns).Delete(ctx, name, metav1.DeleteOptions{})
	})
	tr, err := kube.CoreV1().ServiceAccounts(ns).CreateToken(ctx, name, &authv1.TokenRequest{
		Spec: authv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}}, createOpts)
	must(t, err)
	return tr.Status.Token
}

// providerAs is a provider block that connects with a ServiceAccount token.
func providerAs(env *acctest.Env, token string) string {
	return fmt.Sprintf(`
provider "olapgke" {
  kubernetes {
    host                   = %q
    token                  = %q
    cluster_ca_certificate = <<-EOT
%s
EOT
  }
}
`, env.REST.Host, token, strings.TrimSpace(string(env.REST.CAData)))
}

// TestAccReliability_LeastPrivilege runs the provider as a ServiceAccount bound to exactly the
// published ClusterRole: a StatefulSet created on pool-a, switched to pool-b and migrated in one
// apply, and a TopoLVM device class created, then everything destroyed.
func TestAccReliability_LeastPrivilege(t *testing.T) {
	env := acctest.Sandbox(t)
	const ns = "rbac-full"
	token := serviceAccountToken(t, env, "olapgke-system", "olapgke-test-full", publishedRole(t))
	must(t, ignoreExists(env.Kube.CoreV1().Namespaces().Create(t.Context(), nsObject(ns), createOpts)))
	t.Cleanup(func() { deleteNamespace(env, ns) })
	cfg := func(pool string) string {
		return providerAs(env, token) + stsConfig(ns, pool, "olap/historical:1") + `
resource "olapgke_statefulset_migration" "hist" {
  namespace        = "` + ns + `"
  statefulset      = "hist"
  planned_manifest = jsonencode(olapgke_statefulset.hist.manifest)
  ordinal_timeout  = "3m"
  depends_on       = [olapgke_statefulset.hist]
}
` + deviceClassConfig
	}
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{Config: cfg("pool-a")},
			{
				Config: cfg("pool-b"),
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr("olapgke_statefulset_migration.hist", "completed.#", "3"),
					func(*terraform.State) error {
						s := &set{kube: env.Kube, ns: ns, n: 3}
						s.waitOn(t, "pool-b", nil)
						return nil
					},
				),
			},
		},
	})
	result(t, "StatefulSet create + pool switch + 3-ordinal migration + device class create/destroy as a ServiceAccount bound to examples/rbac/clusterrole.yaml")
}

// withoutVerb returns role with verb removed for resource (the rule is split if it names
// other resources).
func withoutVerb(role *rbacv1.ClusterRole, resourceName, verb string) *rbacv1.ClusterRole {
	out := role.DeepCopy()
	out.Rules = nil
	for _, r := range role.Rules {
		if !slices.Contains(r.Resources, resourceName) {
			out.Rules = append(out.Rules, r)
			continue
		}
		others := r.DeepCopy()
		others.Resources = slices.DeleteFunc(slices.Clone(r.Resources), func(s string) bool { return s == resourceName })
		if len(others.Resources) > 0 {
			out.Rules = append(out.Rules, *others)
		}
		mine := r.DeepCopy()
		mine.Resources = []string{resourceName}
		mine.Verbs = slices.DeleteFunc(slices.Clone(r.Verbs), func(s string) bool { return s == verb })
		out.Rules = append(out.Rules, *mine)
	}
	return out
}

// TestAccReliability_MissingVerbIsNamed removes one verb at a time from the published role and
// checks that the diagnostic names the verb and the resource, and that nothing was deleted.
func TestAccReliability_MissingVerbIsNamed(t *testing.T) {
	env := acctest.Sandbox(t)
	role := publishedRole(t)
	tests := map[string]struct {
		resource, verb string
		diag           string // Terraform's error summary
	}{
		"delete persistentvolumeclaims": {"persistentvolumeclaims", "delete", "Migration"},
		"list persistentvolumes":        {"persistentvolumes", "list", "Cluster Snapshot Failed"},
		"list pods":                     {"pods", "list", "Cluster Snapshot Failed"},
		"watch poddisruptionbudgets":    {"poddisruptionbudgets", "watch", "Migration Not Permitted"},
	}
	i := 0
	for name, tc := range tests {
		i++
		t.Run(name, func(t *testing.T) {
			ns := fmt.Sprintf("rbac-missing-%d", i)
			sa := fmt.Sprintf("olapgke-test-missing-%d", i)
			token := serviceAccountToken(t, env, "olapgke-system", sa, withoutVerb(role, tc.resource, tc.verb))
			s := newSet(t, env.Kube, ns, 2, "pool-a")
			s.switchPool(t, "pool-b")
			mon := s.watch(t, nil, nil)
			want := regexp.MustCompile(`(?s)Error: ` + tc.diag + `.*cannot\s+` + tc.verb + `\s+resource\s+"` + tc.resource + `"`)
			resource.Test(t, resource.TestCase{
				PreCheck:                 func() { acctest.PreCheck(t) },
				ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories,
				Steps: []resource.TestStep{{
					Config:      providerAs(env, token) + migrationConfig(ns, ""),
					ExpectError: want,
				}},
			})
			mon.verify(t)
			s.checkFinal(t, "pool-a", nil)
			result(t, "role without %s %s: diagnostic names both; nothing deleted", tc.verb, tc.resource)
		})
	}
}

func ignoreExists[T any](_ T, err error) error {
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}
