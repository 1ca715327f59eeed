package deviceclass_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apiresource "k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"

	"github.com/olapgke/terraform-provider-olapgke/internal/acctest"
)

var (
	crdGVR = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	lvGVR  = schema.GroupVersionResource{Group: "topolvm.io", Version: "v1", Resource: "logicalvolumes"}
)

// ensureLogicalVolumeCRD installs a minimal topolvm.io/v1 LogicalVolume CRD (cluster-scoped,
// status subresource) unless one exists (the sandbox's real-TopoLVM mode installs TopoLVM's).
func ensureLogicalVolumeCRD(t *testing.T, dyn dynamic.Interface) {
	t.Helper()
	ctx := t.Context()
	crd := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": "logicalvolumes.topolvm.io"},
		"spec": map[string]any{
			"group": "topolvm.io", "scope": "Cluster",
			"names": map[string]any{"kind": "LogicalVolume", "listKind": "LogicalVolumeList", "plural": "logicalvolumes", "singular": "logicalvolume"},
			"versions": []any{map[string]any{
				"name": "v1", "served": true, "storage": true,
				"subresources": map[string]any{"status": map[string]any{}},
				"schema": map[string]any{"openAPIV3Schema": map[string]any{
					"type": "object", "x-kubernetes-preserve-unknown-fields": true,
				}},
			}},
		},
	}}
	if _, err := dyn.Resource(crdGVR).Create(ctx, crd, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("creating the LogicalVolume CRD: %v", err)
	}
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := dyn.Resource(lvGVR).List(ctx, metav1.ListOptions{})
		return err == nil, nil
	})
	if err != nil {
		t.Fatalf("LogicalVolume CRD never served: %v", err)
	}
}

// realTopoLVMPV is a PV as real TopoLVM leaves it: CSI driver topolvm.io, handle, node
// affinity, and no topolvm.io/device-class volume attribute.
func realTopoLVMPV(name, handle, sc, node string) *corev1.PersistentVolume {
	return &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PersistentVolumeSpec{
			StorageClassName:              sc,
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: apiresource.MustParse("1Gi")},
			AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
			PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{
				Driver: "topolvm.io", VolumeHandle: handle, FSType: "xfs",
				VolumeAttributes: map[string]string{"topolvm.io/lv-name": handle},
			}},
			NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
				MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "topology.topolvm.io/node", Operator: corev1.NodeSelectorOpIn, Values: []string{node}}},
			}}}},
		},
	}
}

// TestAccTopoLVMDeviceClass_RefuseDestroyInUseRealTopoLVMRecords: volumes that carry no
// topolvm.io/device-class volume attribute (as real TopoLVM provisions them) keep the class
// from being destroyed: one found through its StorageClass's parameter, one whose StorageClass
// is gone found through its LogicalVolume (spec.deviceClass, status.volumeID = the PV's
// volumeHandle). The second cannot be found from the PV and StorageClasses alone.
func TestAccTopoLVMDeviceClass_RefuseDestroyInUseRealTopoLVMRecords(t *testing.T) {
	env := acctest.Sandbox(t)
	kube := env.Kube
	acctest.ThinPools(t, kube, map[string]int64{"pool-lvrec": 200})
	dyn, err := dynamic.NewForConfig(env.REST)
	if err != nil {
		t.Fatal(err)
	}
	const class, sc = "lvrec", "topolvm-lvrec"
	cfg := fmt.Sprintf(`
resource "olapgke_topolvm_device_class" "rec" {
  name         = %q
  volume_group = "vg-ssd"
  type         = "thin"
  thin_pool = {
    name                = "pool-lvrec"
    overprovision_ratio = 2
  }
  storage_class = {
    name = %q
  }
}
`, class, sc)
	node := ""
	createRecords := func() {
		ctx := t.Context()
		ensureLogicalVolumeCRD(t, dyn)
		node = firstNode(t, kube)
		for _, pv := range []*corev1.PersistentVolume{
			realTopoLVMPV("pv-lvrec-sc", "handle-lvrec-sc", sc, node),
			realTopoLVMPV("pv-lvrec-lv", "handle-lvrec-lv", "topolvm-lvrec-deleted", node),
		} {
			if _, err := kube.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{}); err != nil {
				t.Fatalf("creating PV %s: %v", pv.Name, err)
			}
		}
		// Nobody reconciles it: its node does not exist.
		lv := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "topolvm.io/v1", "kind": "LogicalVolume",
			"metadata": map[string]any{"name": "pv-lvrec-lv"},
			"spec":     map[string]any{"name": "pv-lvrec-lv", "nodeName": "lvrec-no-such-node", "deviceClass": class, "size": "1Gi"},
		}}
		got, err := dyn.Resource(lvGVR).Create(ctx, lv, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("creating LogicalVolume: %v", err)
		}
		if err := unstructured.SetNestedField(got.Object, "handle-lvrec-lv", "status", "volumeID"); err != nil {
			t.Fatal(err)
		}
		if _, err := dyn.Resource(lvGVR).UpdateStatus(ctx, got, metav1.UpdateOptions{}); err != nil {
			t.Fatalf("writing LogicalVolume status: %v", err)
		}
	}
	deleteRecords := func() {
		ctx := context.Background()
		for _, name := range []string{"pv-lvrec-sc", "pv-lvrec-lv"} {
			if err := kube.CoreV1().PersistentVolumes().Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				t.Errorf("deleting PV %s: %v", name, err)
			}
		}
		if err := dyn.Resource(lvGVR).Delete(ctx, "pv-lvrec-lv", metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("deleting LogicalVolume: %v", err)
		}
		err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
			for _, name := range []string{"pv-lvrec-sc", "pv-lvrec-lv"} {
				if _, err := kube.CoreV1().PersistentVolumes().Get(ctx, name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
					return false, nil
				}
			}
			return true, nil
		})
		if err != nil {
			t.Errorf("PVs never went away: %v", err)
		}
	}
	t.Cleanup(deleteRecords)
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories,
		CheckDestroy:             checkClassesGone(kube, sc, class),
		Steps: []resource.TestStep{
			{Config: cfg},
			{
				PreConfig:   createRecords,
				Config:      `# nothing: destroy`,
				ExpectError: wrapped(`Device Class In Use.*destroys the class.*pv-lvrec-lv.*pv-lvrec-sc.*force_destroy`),
			},
			{
				PreConfig: deleteRecords,
				Config:    `# nothing: destroy now allowed`,
			},
		},
	})
}
