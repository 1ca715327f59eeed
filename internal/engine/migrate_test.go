package engine

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/olapgke/terraform-provider-olapgke/internal/planner"
)

func TestMigrationWatcherProvisioningFailedMatchesCurrentPVCByUID(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pvc := func(name, uid string, del bool) *corev1.PersistentVolumeClaim {
		c := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "olap", Name: name, UID: typesUID(uid)}}
		if del {
			now := metav1.Now()
			c.DeletionTimestamp = &now
			c.Finalizers = []string{"kubernetes.io/pvc-protection"}
		}
		return c
	}
	ev := func(name, uid, msg string, at time.Time) *corev1.Event {
		return &corev1.Event{
			ObjectMeta:     metav1.ObjectMeta{Namespace: "olap", Name: name},
			InvolvedObject: corev1.ObjectReference{Kind: "PersistentVolumeClaim", Namespace: "olap", Name: "cache-hist-2", UID: typesUID(uid)},
			Reason:         "ProvisioningFailed", Message: msg, LastTimestamp: metav1.NewTime(at),
		}
	}
	t0 := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	kube := fake.NewClientset(
		&appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: "olap", Name: "hist"}},
		pvc("cache-hist-2", "new", false),
		ev("e-old", "old", "old PVC failed", t0.Add(time.Minute)),
		ev("e-new-1", "new", "first failure", t0),
		ev("e-new-2", "new", "no enough space left on VG: free=0, requested=10737418240", t0.Add(time.Second)),
	)
	w, err := newMigrationWatcher(ctx, kube, "olap", "hist", labels.Everything())
	if err != nil {
		t.Fatal(err)
	}
	defer w.stop()
	s, set, err := w.snapshot()
	if err != nil || set == nil {
		t.Fatalf("snapshot: set %v, err %v", set, err)
	}
	got := w.provisioningFailed(s, "olap", "hist", 2, []string{"cache"})
	if got == nil || got.Message != "no enough space left on VG: free=0, requested=10737418240" {
		t.Fatalf("got %+v, want the latest event of the current PVC", got)
	}
	if got := w.provisioningFailed(s, "olap", "hist", 1, []string{"cache"}); got != nil {
		t.Fatalf("ordinal 1 has no PVC, got %+v", got)
	}
}

func TestFailFast(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	m := &migrator{run: MigrationRun{Name: "hist", UnschedulableGrace: 20 * time.Second, Clock: clocktesting.NewFakeClock(t0)},
		w: &migrationWatcher{evInf: nil}}
	r := &ordinalRun{o: 2}
	wait := planner.Step{Kind: planner.StepWait, Pod: planner.ObjectRef{Name: "hist-2", UID: "u1"},
		Reason: "waiting for Pod hist-2 to be scheduled", Unschedulable: "0/6 nodes are available: 3 node(s) were unschedulable."}

	d, err := m.failFast(nil, r, wait, t0)
	if err != nil || d != 20*time.Second {
		t.Fatalf("first sight: d=%s err=%v, want 20s and no error", d, err)
	}
	d, err = m.failFast(nil, r, wait, t0.Add(5*time.Second))
	if err != nil || d != 15*time.Second {
		t.Fatalf("within grace: d=%s err=%v", d, err)
	}
	// A new Pod restarts the grace period.
	other := wait
	other.Pod.UID = "u2"
	if _, err := m.failFast(nil, r, other, t0.Add(19*time.Second)); err != nil {
		t.Fatalf("new Pod: %v", err)
	}
	_, err = m.failFast(nil, r, other, t0.Add(40*time.Second))
	var me *MigrationError
	if !errors.As(err, &me) || me.Quote != wait.Unschedulable || me.Ordinal != 2 || !strings.Contains(me.Source, "PodScheduled") {
		t.Fatalf("after grace: %v, want a MigrationError quoting the scheduler", err)
	}
	// PV node affinity fails at once.
	r2 := &ordinalRun{o: 1}
	aff := wait
	aff.Unschedulable = "0/6 nodes are available: 3 node(s) didn't match PersistentVolume's node affinity, 3 node(s) didn't match Pod's node affinity/selector."
	if _, err := m.failFast(nil, r2, aff, t0); !errors.As(err, &me) || me.Quote != aff.Unschedulable {
		t.Fatalf("PV affinity: %v, want immediate failure", err)
	}
}

func TestWithoutAndJoin(t *testing.T) {
	t.Parallel()
	if d := cmp.Diff([]int32{3, 0}, without([]int32{3, 2, 1, 0}, []int32{1, 2})); d != "" {
		t.Error(d)
	}
	if got := joinOrdinals([]int32{2, 1}); got != "2, 1" {
		t.Errorf("join = %q", got)
	}
}

type typesUID = types.UID
