package engine

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

const pvMsg = "0/6 nodes are available: 3 node(s) didn't match PersistentVolume's node affinity, 3 node(s) didn't match Pod's node affinity/selector."

func testSet(gen, observed int64) *appsv1.StatefulSet {
	return &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: "hist", Namespace: "olap", UID: "u1", Generation: gen},
		Status:     appsv1.StatefulSetStatus{ObservedGeneration: observed, UpdateRevision: "hist-new", CurrentRevision: "hist-old"},
	}
}

func testPod(ord string, rev string, ready bool, sched *corev1.PodCondition) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "hist-" + ord, Namespace: "olap", UID: types.UID("pod-hist-" + ord),
		Labels: map[string]string{appsv1.ControllerRevisionHashLabelKey: rev}}}
	if ready {
		p.Spec.NodeName = "n1"
		p.Status.Phase = corev1.PodRunning
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	} else {
		p.Status.Phase = corev1.PodPending
	}
	if sched != nil {
		p.Status.Conditions = append(p.Status.Conditions, *sched)
	}
	return p
}

func TestWaitForRolloutFailsFastOnPVNodeAffinity(t *testing.T) {
	t.Parallel()
	kube := fake.NewClientset(testSet(2, 2),
		testPod("2", "hist-new", false, &corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: "Unschedulable", Message: pvMsg}),
		testPod("1", "hist-old", true, nil))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	start := time.Now()
	_, err := WaitForRollout(ctx, kube, RolloutWait{Namespace: "olap", Name: "hist", UID: "u1", Generation: 2, Ordinals: []int32{2, 1, 0}})
	var stuck *StuckError
	if !errors.As(err, &stuck) {
		t.Fatalf("got %v, want a StuckError", err)
	}
	if stuck.Ordinal != 2 || stuck.Quote != pvMsg {
		t.Fatalf("stuck = %+v", stuck)
	}
	if time.Since(start) > 10*time.Second {
		t.Fatalf("fail-fast took %s", time.Since(start))
	}
}

// ProvisioningFailed stops the wait after the grace (planner.JudgeWait), as in the migration.
func TestWaitForRolloutFailsOnProvisioningFailedAfterTheGrace(t *testing.T) {
	t.Parallel()
	pod := testPod("0", "hist-new", false, nil)
	pod.Spec.Volumes = []corev1.Volume{{Name: "cache", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "cache-hist-0"}}}}
	pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "cache-hist-0", Namespace: "olap", UID: "pvc-u"}, Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimPending}}
	ev := &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "e1", Namespace: "olap"}, Reason: "ProvisioningFailed", Message: "not enough space in volume group",
		InvolvedObject: corev1.ObjectReference{Kind: "PersistentVolumeClaim", Name: "cache-hist-0", UID: "pvc-u"}}
	kube := fake.NewClientset(testSet(1, 1), pod, pvc, ev)
	err := rolloutPastGrace(t, kube, 0)
	var stuck *StuckError
	if !errors.As(err, &stuck) || stuck.Quote != "not enough space in volume group" {
		t.Fatalf("got %v, want a StuckError quoting the event", err)
	}
}

func TestWaitForRolloutCompletesWhenPodsBecomeReady(t *testing.T) {
	t.Parallel()
	kube := fake.NewClientset(testSet(3, 2), testPod("0", "hist-old", true, nil))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var progress []string
	done := make(chan error, 1)
	go func() {
		res, err := WaitForRollout(ctx, kube, RolloutWait{Namespace: "olap", Name: "hist", Generation: 3, Ordinals: []int32{0},
			Progress: func(p OrdinalProgress) { progress = append(progress, p.State) }})
		if err == nil && res.UpdateRevision != "hist-new" {
			err = errors.New("wrong update revision " + res.UpdateRevision)
		}
		done <- err
	}()
	// The controller observes the generation, then the Pod comes back at the new revision.
	set := testSet(3, 3)
	if _, err := kube.AppsV1().StatefulSets("olap").UpdateStatus(ctx, set, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		t.Fatalf("returned before the Pod was at the new revision: %v", err)
	case <-time.After(200 * time.Millisecond):
	}
	if _, err := kube.CoreV1().Pods("olap").Update(ctx, testPod("0", "hist-new", true, nil), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if len(progress) == 0 || progress[len(progress)-1] != "ready" {
		t.Fatalf("progress = %v", progress)
	}
}

func TestWaitForRolloutOnDeleteWithNothingToAwait(t *testing.T) {
	t.Parallel()
	kube := fake.NewClientset(testSet(2, 2), testPod("0", "hist-old", true, nil))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := WaitForRollout(ctx, kube, RolloutWait{Namespace: "olap", Name: "hist", Generation: 2})
	if err != nil || res.UpdateRevision != "hist-new" {
		t.Fatalf("res=%+v err=%v", res, err)
	}
}

func TestWaitForRolloutTimesOut(t *testing.T) {
	t.Parallel()
	kube := fake.NewClientset(testSet(2, 2), testPod("0", "hist-new", false, nil))
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, err := WaitForRollout(ctx, kube, RolloutWait{Namespace: "olap", Name: "hist", Generation: 2, Ordinals: []int32{0}})
	var to *RolloutTimeoutError
	if !errors.As(err, &to) || len(to.Waiting) != 1 || to.Waiting[0].State != "pending" {
		t.Fatalf("got %v, want a timeout naming ordinal 0 pending", err)
	}
}

// A watch the credentials may not make stops the rollout wait at once with the API server's
// answer, as it stops the migration (TestMigrateStopsOnForbiddenWatch), not at the timeout.
func TestWaitForRolloutStopsOnForbiddenWatch(t *testing.T) {
	t.Parallel()
	kube := fake.NewClientset(testSet(2, 2), testPod("0", "hist-new", false, nil))
	kube.PrependWatchReactor("events", func(k8stesting.Action) (bool, watch.Interface, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "events"}, "",
			errors.New(`User "system:serviceaccount:olapgke-system:terraform" cannot watch resource "events"`))
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err := WaitForRollout(ctx, kube, RolloutWait{Namespace: "olap", Name: "hist", Generation: 2, Ordinals: []int32{0}})
	var to *RolloutTimeoutError
	if !apierrors.IsForbidden(err) || errors.As(err, &to) || !strings.Contains(err.Error(), `cannot watch resource "events"`) {
		t.Fatalf("got %v, want the Forbidden error", err)
	}
}

// The rollout records one Event on the StatefulSet per awaited ordinal that comes up, naming the
// Pod, its revision and its node; a cancelled wait records where it stopped (the ordinals still
// awaited), as the migration does (events.go).
func TestWaitForRolloutRecordsEvents(t *testing.T) {
	t.Parallel()
	kube := fake.NewClientset(testSet(2, 2), testPod("1", "hist-new", true, nil), testPod("0", "hist-old", true, nil))
	allowReviews(kube, false)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := WaitForRollout(ctx, kube, RolloutWait{Namespace: "olap", Name: "hist", UID: "u1", Generation: 2, Ordinals: []int32{1, 0}})
		done <- err
	}()
	if _, err := kube.CoreV1().Pods("olap").Update(ctx, testPod("0", "hist-new", true, nil), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range olapgkeEvents(t, kube) {
		got = append(got, e.Reason+" "+e.Action+" "+e.Related.Name+": "+e.Note)
	}
	want := []string{
		"OlapgkePodReady WaitForRollout hist-1: ordinal 1: Pod hist-1 Running and Ready at revision hist-new on node n1",
		"OlapgkePodReady WaitForRollout hist-0: ordinal 0: Pod hist-0 Running and Ready at revision hist-new on node n1",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("Events:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	// Cancelled while ordinal 0 is Pending: a Warning saying so, nothing else.
	kube = fake.NewClientset(testSet(2, 2), testPod("0", "hist-new", false, nil))
	allowReviews(kube, false)
	cctx, ccancel := context.WithCancel(context.Background())
	defer ccancel()
	_, err := WaitForRollout(cctx, kube, RolloutWait{Namespace: "olap", Name: "hist", UID: "u1", Generation: 2, Ordinals: []int32{0},
		Progress: func(p OrdinalProgress) {
			if p.State == "pending" { // the user presses Ctrl-C while it waits
				ccancel()
			}
		}})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want context.Canceled", err)
	}
	evs := olapgkeEvents(t, kube)
	if len(evs) != 1 || evs[0].Reason != ReasonCancelled || evs[0].Type != corev1.EventTypeWarning ||
		evs[0].Note != "cancelled: waiting for the rollout: ordinal 0 (Pod hist-0): pending" {
		t.Errorf("Events after the cancel: %+v, want one Warning %s naming ordinal 0 pending", evs, ReasonCancelled)
	}
}
