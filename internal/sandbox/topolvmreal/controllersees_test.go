package topolvmreal

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/topolvm/topolvm"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

// TestWaitControllerSees: the kubelet shim's CSINode write waits until topolvm-controller's
// Node view has what TopoLVM's GetCapacity looks for (the topology label and the capacity
// annotation), and only that long.
func TestWaitControllerSees(t *testing.T) {
	t.Parallel()
	capKey := topolvm.GetCapacityKeyPrefix() + topolvm.DefaultDeviceClassAnnotationName
	node := func(labels, ann map[string]string) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: labels, Annotations: ann}}
	}
	label := map[string]string{topolvm.GetTopologyNodeKey(): "n1"}
	annotated := map[string]string{capKey: "1000"}
	for name, tc := range map[string]struct {
		objs []client.Object
		want bool // the wait ends before the deadline
	}{
		"label and annotation":                 {[]client.Object{node(label, annotated)}, true},
		"no node yet":                          {nil, false},
		"label, no annotation":                 {[]client.Object{node(label, nil)}, false},
		"annotation, no label":                 {[]client.Object{node(nil, annotated)}, false},
		"annotation, label of another segment": {[]client.Object{node(map[string]string{topolvm.GetTopologyNodeKey(): "n2"}, annotated)}, false},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			r := fake.NewClientBuilder().WithScheme(scheme).WithObjects(tc.objs...).Build()
			ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
			defer cancel()
			err := waitControllerSees(ctx, r, "n1", "n1", capKey)
			if tc.want && err != nil {
				t.Fatalf("wait failed: %v", err)
			}
			if !tc.want && !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("wait ended with %v, want it to last until the deadline", err)
			}
		})
	}
	if err := waitControllerSees(context.Background(), nil, "n1", "n1", capKey); err != nil {
		t.Errorf("no controller in the process: %v, want no wait", err)
	}
}
