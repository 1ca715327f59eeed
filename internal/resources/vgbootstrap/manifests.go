package vgbootstrap

import (
	"fmt"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/scheme"

	topolvmgke "github.com/olapgke/terraform-provider-olapgke/examples/topolvm-gke"
)

// Names in examples/topolvm-gke/vg-bootstrap.yaml that the resource relies on.
const (
	DaemonSetName    = "vg-bootstrap"
	ScriptConfigMap  = "vg-bootstrap-script"
	ScriptKey        = "vg-bootstrap.sh"
	ClusterRoleName  = "olapgke-vg-bootstrap"
	containerName    = "vg-bootstrap"
	managedByLabel   = "app.kubernetes.io/managed-by"
	managedByOlapgke = "olapgke"
)

// options are the resource's knobs over the shipped manifest.
type options struct {
	Namespace       string
	CreateNamespace bool
	Image           string
	VolumeGroup     string
	LVMMode         string
	RecheckSeconds  int64
	ThinPools       map[string]int64 // thin pool name -> percent of the volume group
}

// manifests renders vg-bootstrap.yaml (the one copy, embedded from examples/topolvm-gke) for o:
// every namespaced object and the ClusterRoleBinding's subject in o.Namespace, the Namespace only
// when o.CreateNamespace (labelled managed-by olapgke), the script as the ConfigMap the DaemonSet
// mounts, and the DaemonSet's image and environment (VG_NAME, LVM_MODE, RECHECK_SECONDS,
// THIN_POOLS). Objects come back in creation order.
func manifests(o options) ([]runtime.Object, error) {
	var out []runtime.Object
	dec := scheme.Codecs.UniversalDeserializer()
	for i, doc := range strings.Split(topolvmgke.Manifest, "\n---\n") {
		if strings.TrimSpace(stripComments(doc)) == "" {
			continue
		}
		obj, gvk, err := dec.Decode([]byte(doc), nil, nil)
		if err != nil {
			return nil, fmt.Errorf("vg-bootstrap.yaml document %d: %w", i+1, err)
		}
		obj.GetObjectKind().SetGroupVersionKind(*gvk)
		switch x := obj.(type) {
		case *corev1.Namespace:
			if !o.CreateNamespace {
				continue
			}
			x.Name = o.Namespace
			if x.Labels == nil {
				x.Labels = map[string]string{}
			}
			x.Labels[managedByLabel] = managedByOlapgke
		case *rbacv1.ClusterRoleBinding:
			for j := range x.Subjects {
				x.Subjects[j].Namespace = o.Namespace
			}
		case *appsv1.DaemonSet:
			x.Namespace = o.Namespace
			if err := setContainer(x, o); err != nil {
				return nil, err
			}
		default:
			if m, ok := obj.(metav1.Object); ok && m.GetNamespace() != "" {
				m.SetNamespace(o.Namespace)
			}
		}
		out = append(out, obj)
	}
	cm := &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Name: ScriptConfigMap, Namespace: o.Namespace},
		Data:       map[string]string{ScriptKey: topolvmgke.Script},
	}
	// Before the DaemonSet, which mounts it.
	for i, obj := range out {
		if _, ok := obj.(*appsv1.DaemonSet); ok {
			return append(out[:i], append([]runtime.Object{cm}, out[i:]...)...), nil
		}
	}
	return nil, fmt.Errorf("vg-bootstrap.yaml has no DaemonSet")
}

func setContainer(ds *appsv1.DaemonSet, o options) error {
	for i := range ds.Spec.Template.Spec.Containers {
		c := &ds.Spec.Template.Spec.Containers[i]
		if c.Name != containerName {
			continue
		}
		c.Image = o.Image
		set := map[string]string{"VG_NAME": o.VolumeGroup, "LVM_MODE": o.LVMMode, "RECHECK_SECONDS": strconv.FormatInt(o.RecheckSeconds, 10),
			"THIN_POOLS": formatThinPools(o.ThinPools)}
		for j := range c.Env {
			if v, ok := set[c.Env[j].Name]; ok {
				c.Env[j].Value = v
				delete(set, c.Env[j].Name)
			}
		}
		if len(set) > 0 {
			return fmt.Errorf("vg-bootstrap.yaml's container lacks env %v", set)
		}
		return nil
	}
	return fmt.Errorf("vg-bootstrap.yaml's DaemonSet has no container %q", containerName)
}

// fromDaemonSet reads back what the resource set on the live DaemonSet.
func fromDaemonSet(ds *appsv1.DaemonSet) (image, vg, lvmMode string, recheck int64, ok bool) {
	for _, c := range ds.Spec.Template.Spec.Containers {
		if c.Name != containerName {
			continue
		}
		for _, e := range c.Env {
			switch e.Name {
			case "VG_NAME":
				vg = e.Value
			case "LVM_MODE":
				lvmMode = e.Value
			case "RECHECK_SECONDS":
				recheck, _ = strconv.ParseInt(e.Value, 10, 64)
			}
		}
		return c.Image, vg, lvmMode, recheck, true
	}
	return "", "", "", 0, false
}

func stripComments(doc string) string {
	var b strings.Builder
	for _, l := range strings.Split(doc, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(l), "#") {
			b.WriteString(l + "\n")
		}
	}
	return b.String()
}

// gvr maps the manifest's kinds to their resources (a fixed set: the dynamic client needs it).
func gvr(obj runtime.Object) (schema.GroupVersionResource, bool) {
	gvk := obj.GetObjectKind().GroupVersionKind()
	res := map[string]string{
		"Namespace": "namespaces", "ServiceAccount": "serviceaccounts", "ClusterRole": "clusterroles",
		"ClusterRoleBinding": "clusterrolebindings", "ConfigMap": "configmaps", "DaemonSet": "daemonsets",
	}[gvk.Kind]
	return gvk.GroupVersion().WithResource(res), res != ""
}
