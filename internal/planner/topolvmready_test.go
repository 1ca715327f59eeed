package planner_test

import (
	"strings"
	"testing"

	"github.com/olapgke/terraform-provider-olapgke/internal/planner"
	"github.com/olapgke/terraform-provider-olapgke/internal/planner/plannertest"
	"github.com/olapgke/terraform-provider-olapgke/internal/stsutil"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func TestTopoLVMNotReady(t *testing.T) {
	t.Parallel()
	const node = "gke-olap-pool-b-0"
	tests := map[string]struct {
		setup func(s *planner.Snapshot, n *corev1.Node)
		scs   []string
		want  string
	}{
		"ready (capacity published)": {setup: func(*planner.Snapshot, *corev1.Node) {}, want: ""},
		"start-up taint": {setup: func(_ *planner.Snapshot, n *corev1.Node) {
			n.Spec.Taints = []corev1.Taint{{Key: planner.TaintStorageNotReady, Effect: corev1.TaintEffectNoSchedule}}
		}, want: "carries the start-up taint olapgke.io/storage-not-ready"},
		"CSINode without the driver": {setup: func(s *planner.Snapshot, _ *corev1.Node) {
			s.CSINodes = []storagev1.CSINode{{ObjectMeta: metav1.ObjectMeta{Name: node}}}
		}, want: "CSINode gke-olap-pool-b-0 does not list topolvm.io"},
		"CSINode with the driver": {setup: func(s *planner.Snapshot, _ *corev1.Node) {
			s.CSINodes = []storagev1.CSINode{{ObjectMeta: metav1.ObjectMeta{Name: node},
				Spec: storagev1.CSINodeSpec{Drivers: []storagev1.CSINodeDriver{{Name: "topolvm.io", NodeID: node}}}}}
		}, want: ""},
		"no CSINode, no topology label": {setup: func(_ *planner.Snapshot, n *corev1.Node) {
			delete(n.Labels, stsutil.LabelTopoLVMNode)
		}, want: "no CSINode, no topology.topolvm.io/node label"},
		"no CSIStorageCapacity for the node yet": {setup: func(s *planner.Snapshot, _ *corev1.Node) {
			var keep []storagev1.CSIStorageCapacity
			for _, c := range s.Capacities {
				if c.NodeTopology.MatchLabels[stsutil.LabelTopoLVMNode] != node {
					keep = append(keep, c)
				}
			}
			s.Capacities = keep
		}, want: "no CSIStorageCapacity of StorageClass topolvm-provisioner for it yet"},
		"capacity published but small: not a readiness question": {setup: func(s *planner.Snapshot, _ *corev1.Node) {
			for i := range s.Capacities {
				if s.Capacities[i].NodeTopology.MatchLabels[stsutil.LabelTopoLVMNode] == node {
					s.Capacities[i].Capacity = ptr.To(resource.MustParse("1Gi"))
				}
			}
		}, want: ""},
		"capacity published as 0, annotation says free space: the first publication raced TopoLVM": {setup: func(s *planner.Snapshot, _ *corev1.Node) {
			for i := range s.Capacities {
				if s.Capacities[i].NodeTopology.MatchLabels[stsutil.LabelTopoLVMNode] == node {
					s.Capacities[i].Capacity = ptr.To(resource.MustParse("0"))
				}
			}
		}, want: "its CSIStorageCapacity of StorageClass topolvm-provisioner says 0 while capacity.topolvm.io/ssd says"},
		"capacity published as 0, annotation says 0: a full node, not a readiness question": {setup: func(s *planner.Snapshot, n *corev1.Node) {
			for i := range s.Capacities {
				if s.Capacities[i].NodeTopology.MatchLabels[stsutil.LabelTopoLVMNode] == node {
					s.Capacities[i].Capacity = ptr.To(resource.MustParse("0"))
				}
			}
			n.Annotations[stsutil.AnnotationCapacityPrefix+"ssd"] = "0"
		}, want: ""},
		"driver without capacity tracking: the annotation": {setup: func(s *planner.Snapshot, n *corev1.Node) {
			s.CSIDrivers = []storagev1.CSIDriver{{ObjectMeta: metav1.ObjectMeta{Name: "topolvm.io"}}}
			delete(n.Annotations, stsutil.AnnotationCapacityPrefix+"ssd")
		}, want: "no capacity.topolvm.io/ssd annotation yet"},
		"StorageClass of another provisioner is not judged": {scs: []string{"standard-rwo"}, setup: func(s *planner.Snapshot, n *corev1.Node) {
			s.StorageClasses = append(s.StorageClasses, storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "standard-rwo"}, Provisioner: "pd.csi.storage.gke.io"})
			delete(n.Labels, stsutil.LabelTopoLVMNode)
		}, want: ""},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			w := plannertest.NewMigWorld(3, "pool-a")
			s := w.Final()
			var n *corev1.Node
			for i := range s.Nodes {
				if s.Nodes[i].Name == node {
					n = &s.Nodes[i]
				}
			}
			tc.setup(s, n)
			scs := tc.scs
			if scs == nil {
				scs = []string{plannertest.MigSC}
			}
			got := planner.NewIndex(s).TopoLVMNotReady(n, scs)
			if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
				t.Errorf("TopoLVMNotReady = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestDescribeNodeWaits(t *testing.T) {
	t.Parallel()
	got := planner.DescribeNodeWaits([]planner.NodeWait{{"n1", "carries the start-up taint x"}, {"n2", "no y"}})
	if want := "n1 (carries the start-up taint x); n2 (no y)"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}
