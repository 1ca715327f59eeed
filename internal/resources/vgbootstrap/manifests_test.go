package vgbootstrap

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	topolvmgke "github.com/olapgke/terraform-provider-olapgke/examples/topolvm-gke"
)

func TestManifests(t *testing.T) {
	o := options{Namespace: "storage", CreateNamespace: true, Image: "r.example/vgb:1", VolumeGroup: "vg-x", LVMMode: "host", RecheckSeconds: 30}
	objs, err := manifests(o)
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, obj := range objs {
		kinds = append(kinds, obj.GetObjectKind().GroupVersionKind().Kind)
		if _, ok := gvr(obj); !ok {
			t.Errorf("no resource for %s", obj.GetObjectKind().GroupVersionKind())
		}
		if m, ok := obj.(metav1.Object); ok {
			switch obj.(type) {
			case *corev1.Namespace, *rbacv1.ClusterRole, *rbacv1.ClusterRoleBinding:
			default:
				if m.GetNamespace() != "storage" {
					t.Errorf("%T %s in namespace %q", obj, m.GetName(), m.GetNamespace())
				}
			}
		}
		switch x := obj.(type) {
		case *corev1.Namespace:
			if x.Name != "storage" || x.Labels[managedByLabel] != managedByOlapgke || x.Labels["pod-security.kubernetes.io/enforce"] != "privileged" {
				t.Errorf("namespace %+v", x.ObjectMeta)
			}
		case *rbacv1.ClusterRoleBinding:
			if x.Subjects[0].Namespace != "storage" {
				t.Errorf("binding subject %+v", x.Subjects)
			}
		case *corev1.ConfigMap:
			if x.Data[ScriptKey] != topolvmgke.Script || x.Name != ScriptConfigMap {
				t.Errorf("script ConfigMap %s", x.Name)
			}
		case *appsv1.DaemonSet:
			image, vg, mode, recheck, ok := fromDaemonSet(x)
			if !ok || image != o.Image || vg != o.VolumeGroup || mode != o.LVMMode || recheck != o.RecheckSeconds {
				t.Errorf("daemonset: %q %q %q %d %v", image, vg, mode, recheck, ok)
			}
			if x.Labels["app.kubernetes.io/name"] != "olapgke-vg-bootstrap" {
				t.Errorf("daemonset labels %v", x.Labels)
			}
		}
	}
	want := []string{"Namespace", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "ConfigMap", "DaemonSet"}
	if len(kinds) != len(want) {
		t.Fatalf("kinds %v, want %v", kinds, want)
	}
	for i := range want {
		if kinds[i] != want[i] {
			t.Fatalf("kinds %v, want %v", kinds, want)
		}
	}
	o.CreateNamespace = false
	objs, err = manifests(o)
	if err != nil {
		t.Fatal(err)
	}
	for _, obj := range objs {
		if _, ok := obj.(*corev1.Namespace); ok {
			t.Error("namespace rendered with create_namespace = false")
		}
	}
}
