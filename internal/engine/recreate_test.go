package engine

import (
	"context"
	"errors"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/olapgke/terraform-provider-olapgke/internal/planner/rollout"
)

// TestRecreateOrphaningAcceptsNodeExpansionPending: a claim whose volume was grown (the PV has
// the new capacity) but whose filesystem waits for a Pod to mount it (FileSystemResizePending,
// NodeResizePending: an ordinal scaled away keeps its claim unused) does not hold the
// re-creation up; a claim whose volume was not grown yet does.
func TestRecreateOrphaningAcceptsNodeExpansionPending(t *testing.T) {
	const to = 60 << 30
	objects := func(pvGiB int64) []runtime.Object {
		pvc := &corev1.PersistentVolumeClaim{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cache-hist-3"},
			Spec: corev1.PersistentVolumeClaimSpec{VolumeName: "pv-3", Resources: corev1.VolumeResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceStorage: *resource.NewQuantity(to, resource.BinarySI)}}},
			Status: corev1.PersistentVolumeClaimStatus{
				Phase:                     corev1.ClaimBound,
				Capacity:                  corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("50Gi")},
				AllocatedResourceStatuses: map[corev1.ResourceName]corev1.ClaimResourceStatus{corev1.ResourceStorage: corev1.PersistentVolumeClaimNodeResizePending},
				Conditions:                []corev1.PersistentVolumeClaimCondition{{Type: corev1.PersistentVolumeClaimFileSystemResizePending, Status: corev1.ConditionTrue}},
			},
		}
		pv := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv-3"},
			Spec: corev1.PersistentVolumeSpec{Capacity: corev1.ResourceList{corev1.ResourceStorage: *resource.NewQuantity(pvGiB<<30, resource.BinarySI)}}}
		set := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "hist"}}
		return []runtime.Object{pvc, pv, set}
	}
	run := RecreateRun{Namespace: "ns", Name: "hist", Poll: 10 * time.Millisecond,
		Expansions: []rollout.ClaimExpansion{{Claim: "cache", PVC: "cache-hist-3", To: to}}}

	kube := fake.NewClientset()
	for _, o := range objects(60) {
		if err := kube.Tracker().Add(o); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if err := RecreateOrphaning(ctx, kube, run); err != nil {
		t.Fatalf("volume grown, filesystem pending: %v", err)
	}

	kube = fake.NewClientset()
	for _, o := range objects(50) {
		if err := kube.Tracker().Add(o); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel = context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	var re *RecreateError
	if err := RecreateOrphaning(ctx, kube, run); !errors.As(err, &re) || re.Step != "wait for expansion of" {
		t.Fatalf("volume not grown yet: err %v, want the wait for expansion to end with the deadline", err)
	}
	if _, err := kube.AppsV1().StatefulSets("ns").Get(t.Context(), "hist", metav1.GetOptions{}); err != nil {
		t.Errorf("the StatefulSet was deleted before the volume grew: %v", err)
	}
}
