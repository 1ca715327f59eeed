package engine

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

func settleSet(gen, observed int64) *appsv1.StatefulSet {
	return &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: "olap", Name: "hist", Generation: gen},
		Status: appsv1.StatefulSetStatus{ObservedGeneration: observed}}
}

func TestAwaitSettled(t *testing.T) {
	t.Parallel()
	t.Run("observed and quiet", func(t *testing.T) {
		t.Parallel()
		kube := fake.NewClientset(settleSet(3, 3))
		got, err := AwaitSettled(t.Context(), kube, "olap", "hist", SettleOptions{Quiet: 100 * time.Millisecond, Poll: 10 * time.Millisecond})
		if err != nil || got.Set == nil || got.FirstGeneration != 3 {
			t.Fatalf("got %+v, %v", got, err)
		}
	})
	t.Run("never observed", func(t *testing.T) {
		t.Parallel()
		kube := fake.NewClientset(settleSet(4, 3))
		ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
		defer cancel()
		_, err := AwaitSettled(ctx, kube, "olap", "hist", SettleOptions{Quiet: 10 * time.Millisecond, Poll: 10 * time.Millisecond})
		if err == nil || !strings.Contains(err.Error(), "observe generation 4") {
			t.Fatalf("err %v, want the wait for the controller named", err)
		}
	})
	t.Run("missing, then created and changed", func(t *testing.T) {
		t.Parallel()
		kube := fake.NewClientset()
		// The owner creates the object once the wait has seen it missing three times.
		var gets atomic.Int32
		kube.PrependReactor("get", "statefulsets", func(k8stesting.Action) (bool, runtime.Object, error) {
			if gets.Add(1) == 3 {
				_ = kube.Tracker().Add(settleSet(1, 1))
			}
			return false, nil, nil
		})
		got, err := AwaitSettled(t.Context(), kube, "olap", "hist", SettleOptions{Quiet: 100 * time.Millisecond, Poll: 10 * time.Millisecond})
		if err != nil || got.Set == nil || got.Set.Generation != 1 || gets.Load() < 4 {
			t.Fatalf("got %+v, %v", got, err)
		}
	})
}
