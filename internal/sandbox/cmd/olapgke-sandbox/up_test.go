package main

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/olapgke/terraform-provider-olapgke/internal/sandbox/topolvm"
)

// TestMissingCapacities: the world is ready once every TopoLVM node has a CSIStorageCapacity
// per topolvm.io StorageClass that the scheduler can use; a first publication of 0 while the
// node's annotation says there is space (external-provisioner raced TopoLVM's controller) is
// not one, a 0 that the annotation confirms (a full device class) is.
func TestMissingCapacities(t *testing.T) {
	t.Parallel()
	const node = "gke-olap-pool-a-1"
	sc := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "topolvm-provisioner"}, Provisioner: topolvm.DriverName,
		Parameters: map[string]string{topolvm.DeviceClassParam: "ssd"}}
	other := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "standard"}, Provisioner: "pd.csi.storage.gke.io"}
	capacity := func(q string) *storagev1.CSIStorageCapacity {
		return &storagev1.CSIStorageCapacity{
			ObjectMeta:       metav1.ObjectMeta{Namespace: "topolvm-system", Name: "csisc-" + q},
			NodeTopology:     &metav1.LabelSelector{MatchLabels: map[string]string{topolvm.TopologyKey: node}},
			StorageClassName: sc.Name, Capacity: ptr.To(resource.MustParse(q)),
		}
	}
	tests := map[string]struct {
		annotation string // capacity.topolvm.io/ssd; "" leaves it out
		caps       []*storagev1.CSIStorageCapacity
		want       string // substring; "" is ready
	}{
		"published":                         {annotation: "740Gi", caps: []*storagev1.CSIStorageCapacity{capacity("740Gi")}},
		"not published":                     {annotation: "740Gi", want: "has no CSIStorageCapacity for StorageClass topolvm-provisioner yet"},
		"0 while the annotation says space": {annotation: "740Gi", caps: []*storagev1.CSIStorageCapacity{capacity("0")}, want: "says 0 while capacity.topolvm.io/ssd says 740Gi"},
		"0 and the class is full":           {annotation: "0", caps: []*storagev1.CSIStorageCapacity{capacity("0")}},
		"0 then the real figure":            {annotation: "740Gi", caps: []*storagev1.CSIStorageCapacity{capacity("0"), capacity("740Gi")}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node, Labels: map[string]string{topolvm.TopologyKey: node}, Annotations: map[string]string{}}}
			if tc.annotation != "" {
				n.Annotations[topolvm.CapacityAnnPrefix+"ssd"] = tc.annotation
			}
			bare := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "no-topolvm"}} // no topology label: not waited for
			got := missingCapacities([]*corev1.Node{bare, n}, []*storagev1.StorageClass{sc, other}, tc.caps)
			if tc.want == "" && got != "" || tc.want != "" && !strings.Contains(got, tc.want) {
				t.Errorf("missingCapacities = %q, want %q", got, tc.want)
			}
		})
	}
}
