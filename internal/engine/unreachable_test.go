package engine

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/olapgke/terraform-provider-olapgke/internal/planner"
)

// deadA1 is oneOrdinalOnPoolA with node a1 as the node lifecycle controller leaves a node whose
// kubelet stopped: Ready Unknown and the unreachable taints. terminating marks Pod hist-0
// deleted already (taint eviction, or an earlier apply).
func deadA1(terminating bool) []runtime.Object {
	objs := oneOrdinalOnPoolA()
	for _, o := range objs {
		switch x := o.(type) {
		case *corev1.Node:
			if x.Name != "a1" {
				continue
			}
			x.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionUnknown,
				Reason: "NodeStatusUnknown", Message: "Kubelet stopped posting node status.",
				LastTransitionTime: metav1.NewTime(time.Now().Add(-time.Minute))}}
			x.Spec.Taints = []corev1.Taint{
				{Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectNoSchedule},
				{Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectNoExecute},
			}
		case *corev1.Pod:
			if terminating {
				x.DeletionTimestamp = &metav1.Time{Time: time.Now().Add(-time.Minute)}
				x.DeletionGracePeriodSeconds = new(int64(1))
				x.Finalizers = nil
			}
		}
	}
	return objs
}

type deleteLog struct {
	mu      sync.Mutex
	deletes []string
}

func (l *deleteLog) record(kube *fake.Clientset) {
	kube.PrependReactor("delete", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
		l.mu.Lock()
		defer l.mu.Unlock()
		d := a.(k8stesting.DeleteActionImpl)
		s := a.GetResource().Resource + "/" + d.GetName()
		if g := d.DeleteOptions.GracePeriodSeconds; g != nil {
			s += " grace=" + map[bool]string{true: "0", false: "n"}[*g == 0]
		}
		l.deletes = append(l.deletes, s)
		return false, nil, nil // the fake tracker deletes it
	})
}

func (l *deleteLog) get() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.deletes...)
}

// A move whose Pod is on an unreachable node stops at once, naming the node, before deleting
// anything; the near miss (the same node Ready) is TestMigratePodDeleteFollowsPVCDeleteWithoutAnEvent.
func TestMigrateStopsBeforeDeletingOnUnreachableNode(t *testing.T) {
	t.Parallel()
	for _, terminating := range []bool{false, true} {
		kube := fake.NewClientset(deadA1(terminating)...)
		var log deleteLog
		log.record(kube)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		start := time.Now()
		err := Migrate(ctx, kube, MigrationRun{
			Namespace: "olap", Name: "hist", Ordinals: []int32{0}, Claims: []string{"cache"},
			OrdinalTimeout: 20 * time.Second, Log: func(l string) { t.Log(l) },
		})
		cancel()
		var me *MigrationError
		if !errors.As(err, &me) || me.Cause != planner.CauseUnreachableNode || me.Node != "a1" || me.Timeout {
			t.Fatalf("terminating=%v: Migrate: %v, want a stop on unreachable node a1", terminating, err)
		}
		if el := time.Since(start); el > 10*time.Second {
			t.Errorf("terminating=%v: stopped after %s, want at once", terminating, el)
		}
		if d := log.get(); len(d) != 0 {
			t.Errorf("terminating=%v: deletes %v, want none", terminating, d)
		}
	}
}

// With ForceDeleteOnUnreachableNodes the PVC is deleted and the Pod force-deleted (grace 0),
// whether it was running or already Terminating there.
func TestMigrateForceDeletesOnUnreachableNode(t *testing.T) {
	t.Parallel()
	for terminating, want := range map[bool][]string{
		false: {"persistentvolumeclaims/cache-hist-0", "pods/hist-0 grace=0"},
		true:  {"persistentvolumeclaims/cache-hist-0", "pods/hist-0 grace=0"},
	} {
		kube := fake.NewClientset(deadA1(terminating)...)
		var log deleteLog
		log.record(kube)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		err := Migrate(ctx, kube, MigrationRun{
			Namespace: "olap", Name: "hist", Ordinals: []int32{0}, Claims: []string{"cache"},
			OrdinalTimeout: 2 * time.Second, ForceDeleteOnUnreachableNodes: true, Log: func(l string) { t.Log(l) },
		})
		cancel()
		var me *MigrationError
		// Nothing recreates the Pod here (no controller): the move then waits for it.
		if !errors.As(err, &me) || !me.Timeout {
			t.Fatalf("terminating=%v: Migrate: %v, want a timeout waiting for the new Pod", terminating, err)
		}
		if d := cmp.Diff(want, log.get()); d != "" {
			t.Errorf("terminating=%v: deletes (-want +got):\n%s", terminating, d)
		}
	}
}

func TestNodeUnreachable(t *testing.T) {
	now := time.Date(2026, 12, 5, 10, 0, 0, 0, time.UTC)
	cond := func(s corev1.ConditionStatus, ago time.Duration) corev1.NodeCondition {
		return corev1.NodeCondition{Type: corev1.NodeReady, Status: s, LastTransitionTime: metav1.NewTime(now.Add(-ago))}
	}
	for name, tc := range map[string]struct {
		n    corev1.Node
		want bool
	}{
		"ready":                       {corev1.Node{Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{cond(corev1.ConditionTrue, time.Hour)}}}, false},
		"unknown within grace":        {corev1.Node{Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{cond(corev1.ConditionUnknown, 10*time.Second)}}}, false},
		"unknown beyond grace":        {corev1.Node{Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{cond(corev1.ConditionUnknown, time.Minute)}}}, true},
		"false beyond grace":          {corev1.Node{Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{cond(corev1.ConditionFalse, time.Minute)}}}, true},
		"unreachable NoExecute taint": {corev1.Node{Spec: corev1.NodeSpec{Taints: []corev1.Taint{{Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectNoExecute}}}}, true},
		"not-ready NoExecute taint":   {corev1.Node{Spec: corev1.NodeSpec{Taints: []corev1.Taint{{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoExecute}}}}, true},
		"unreachable NoSchedule only": {corev1.Node{Spec: corev1.NodeSpec{Taints: []corev1.Taint{{Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectNoSchedule}}}}, false},
		"cordoned":                    {corev1.Node{Spec: corev1.NodeSpec{Unschedulable: true, Taints: []corev1.Taint{{Key: corev1.TaintNodeUnschedulable, Effect: corev1.TaintEffectNoSchedule}}}}, false},
	} {
		if got := planner.NodeUnreachable(&tc.n, now) != ""; got != tc.want {
			t.Errorf("%s: unreachable = %v, want %v (%q)", name, got, tc.want, planner.NodeUnreachable(&tc.n, now))
		}
	}
}
