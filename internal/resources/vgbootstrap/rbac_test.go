package vgbootstrap

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// TestPublishedInstallerRole checks examples/rbac/vg-bootstrap.yaml, the role the least-privilege
// guide gives for this resource, against the objects the resource writes: create and patch
// (server-side apply) and delete on each by name, get where Read and apply read, and escalate and
// bind on the bootstrap's own ClusterRole, whose rules the provider's role does not hold.
func TestPublishedInstallerRole(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "..", "examples", "rbac", "vg-bootstrap.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var role *rbacv1.ClusterRole
	for _, doc := range bytes.Split(data, []byte("\n---")) {
		var r rbacv1.ClusterRole
		if err := yaml.UnmarshalStrict(doc, &r); err == nil && r.Kind == "ClusterRole" {
			role = &r
			break
		}
	}
	if role == nil {
		t.Fatal("examples/rbac/vg-bootstrap.yaml has no ClusterRole")
	}
	allows := func(group, resource, name, verb string) bool {
		for _, r := range role.Rules {
			if slices.Contains(r.APIGroups, group) && slices.Contains(r.Resources, resource) &&
				(len(r.ResourceNames) == 0 || slices.Contains(r.ResourceNames, name)) && slices.Contains(r.Verbs, verb) {
				return true
			}
		}
		return false
	}
	objs, err := manifests(options{Namespace: "olapgke-system", CreateNamespace: true, Image: "x", VolumeGroup: "vg-ssd", LVMMode: "auto", RecheckSeconds: 60})
	if err != nil {
		t.Fatal(err)
	}
	for _, obj := range objs {
		res, _ := gvr(obj)
		name := obj.(metav1.Object).GetName()
		verbs := []string{"create", "patch", "delete"}
		switch res.Resource {
		case "namespaces", "daemonsets":
			verbs = append(verbs, "get")
		case "clusterroles":
			verbs = append(verbs, "escalate", "bind")
		}
		for _, v := range verbs {
			if !allows(res.Group, res.Resource, name, v) {
				t.Errorf("the installer role does not allow %s on %s %q", v, res.Resource, name)
			}
		}
	}
}
