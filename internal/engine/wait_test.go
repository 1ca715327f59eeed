package engine

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/olapgke/terraform-provider-olapgke/internal/planner"
	"github.com/olapgke/terraform-provider-olapgke/internal/planner/migration"
)

// waitPod is ordinal 2 of olap/hist at the update revision, scheduled on n1 with its claim
// cache-hist-2, as edit leaves it.
func waitPod(edit func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "olap", Name: "hist-2", UID: "pod-new",
			Labels: map[string]string{appsv1.ControllerRevisionHashLabelKey: "hist-new"}},
		Spec: corev1.PodSpec{NodeName: "n1", Containers: []corev1.Container{{Name: "app", Image: "olap:2"}},
			Volumes: []corev1.Volume{{Name: "cache", VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "cache-hist-2"}}}}},
	}
	edit(p)
	return p
}

func waitPVC() *corev1.PersistentVolumeClaim {
	return &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "olap", Name: "cache-hist-2", UID: "pvc-new"},
		Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimPending}}
}

func waiting(reason, msg string) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Status.Phase = corev1.PodPending
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "app", State: corev1.ContainerState{
			Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: msg}}}}
	}
}

func unscheduled(msg string) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Spec.NodeName = ""
		p.Status.Phase = corev1.PodPending
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse,
			Reason: corev1.PodReasonUnschedulable, Message: msg}}
	}
}

func runningNotReady(p *corev1.Pod) {
	p.Status.Phase = corev1.PodRunning
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse, Reason: "ContainersNotReady"}}
	p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "app", State: corev1.ContainerState{
		Running: &corev1.ContainerStateRunning{}}}}
}

func podEvent(reason, msg string) *corev1.Event {
	return &corev1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: "olap", Name: "hist-2." + strings.ToLower(reason)},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: "olap", Name: "hist-2", UID: "pod-new"},
		Type:           corev1.EventTypeWarning, Reason: reason, Message: msg}
}

func pvcEvent(uid, msg string) *corev1.Event {
	return &corev1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: "olap", Name: "cache-hist-2." + uid},
		InvolvedObject: corev1.ObjectReference{Kind: "PersistentVolumeClaim", Namespace: "olap", Name: "cache-hist-2", UID: typesUID(uid)},
		Type:           corev1.EventTypeWarning, Reason: "ProvisioningFailed", Message: msg}
}

const (
	mountMsg  = `MountVolume.SetUp failed for volume "pvc-1" : rpc error: code = NotFound desc = failed to find LV: pvc-1`
	pullMsg   = `failed to pull and unpack image "olap:missing": not found`
	crashMsg  = `back-off 10s restarting failed container=app pod=hist-2_olap(pod-new)`
	noSpace   = "no enough space left on VG: free=0, requested=10737418240"
	otherNode = "0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector."
)

// look is one look of a waiter at the awaited Pod, at offset from the first, and the failure it
// must stop on ("" = it waits on).
type look struct {
	at     time.Duration
	pod    *corev1.Pod
	fail   planner.StuckCause
	quotes string
}

// waitCases is the table both waiters run (TestWaitersAgree): each look's verdict must be the
// same from the rollout waiter and from the migration, with the same policy.
var waitCases = map[string]struct {
	events []*corev1.Event
	looks  []look
}{
	"ready": {looks: []look{
		{at: 0, pod: waitPod(func(p *corev1.Pod) {
			p.Status.Phase = corev1.PodRunning
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
		})},
	}},
	"PV node affinity fails at once": {looks: []look{
		{at: 0, pod: waitPod(unscheduled(pvMsg)), fail: planner.CausePVNodeAffinity, quotes: pvMsg},
	}},
	"unschedulable fails after the grace": {looks: []look{
		{at: 0, pod: waitPod(unscheduled(otherNode))},
		{at: 19 * time.Second, pod: waitPod(unscheduled(otherNode))},
		{at: 20 * time.Second, pod: waitPod(unscheduled(otherNode)), fail: planner.CauseUnschedulable, quotes: otherNode},
	}},
	"provisioning failed after the grace": {events: []*corev1.Event{pvcEvent("pvc-new", noSpace)}, looks: []look{
		{at: 0, pod: waitPod(waiting("ContainerCreating", ""))},
		{at: 20 * time.Second, pod: waitPod(waiting("ContainerCreating", "")), fail: planner.CauseProvisioningFailed, quotes: noSpace},
	}},
	"an earlier PVC's provisioning failure is not this one's": {events: []*corev1.Event{pvcEvent("pvc-old", noSpace)}, looks: []look{
		{at: 0, pod: waitPod(waiting("ContainerCreating", ""))},
		{at: time.Minute, pod: waitPod(waiting("ContainerCreating", ""))},
	}},
	"image pull: ErrImagePull then ImagePullBackOff is one failure": {looks: []look{
		{at: 0, pod: waitPod(waiting("ErrImagePull", pullMsg))},
		{at: 10 * time.Second, pod: waitPod(waiting("ImagePullBackOff", `Back-off pulling image "olap:missing": ErrImagePull: `+pullMsg))},
		{at: 20 * time.Second, pod: waitPod(waiting("ImagePullBackOff", `Back-off pulling image "olap:missing": ErrImagePull: `+pullMsg)),
			fail: planner.CauseImagePull, quotes: "ImagePullBackOff: Back-off pulling image"},
	}},
	"image pull that clears in between starts the grace again": {looks: []look{
		{at: 0, pod: waitPod(waiting("ErrImagePull", pullMsg))},
		{at: 15 * time.Second, pod: waitPod(waiting("ContainerCreating", ""))},
		{at: 20 * time.Second, pod: waitPod(waiting("ErrImagePull", pullMsg))},
		{at: 40 * time.Second, pod: waitPod(waiting("ErrImagePull", pullMsg)), fail: planner.CauseImagePull, quotes: "ErrImagePull: " + pullMsg},
	}},
	"crash loop": {looks: []look{
		{at: 0, pod: waitPod(func(p *corev1.Pod) {
			runningNotReady(p)
			waiting("CrashLoopBackOff", crashMsg)(p)
			p.Status.Phase = corev1.PodRunning
		})},
		{at: 20 * time.Second, pod: waitPod(func(p *corev1.Pod) {
			runningNotReady(p)
			waiting("CrashLoopBackOff", crashMsg)(p)
			p.Status.Phase = corev1.PodRunning
		}),
			fail: planner.CauseCrashLoop, quotes: "CrashLoopBackOff: " + crashMsg},
	}},
	"FailedMount while ContainerCreating": {events: []*corev1.Event{podEvent("FailedMount", mountMsg)}, looks: []look{
		{at: 0, pod: waitPod(waiting("ContainerCreating", ""))},
		{at: 20 * time.Second, pod: waitPod(waiting("ContainerCreating", "")), fail: planner.CauseFailedMount, quotes: mountMsg},
	}},
	"a FailedMount before the containers started is over once they run": {events: []*corev1.Event{podEvent("FailedMount", mountMsg)}, looks: []look{
		{at: 0, pod: waitPod(runningNotReady)},
		{at: time.Minute, pod: waitPod(runningNotReady)},
	}},
	"readiness delay waits": {looks: []look{
		{at: 0, pod: waitPod(waiting("ContainerCreating", ""))},
		{at: time.Minute, pod: waitPod(runningNotReady)},
		{at: 10 * time.Minute, pod: waitPod(runningNotReady)},
	}},
	"a terminating Pod is not judged": {looks: []look{
		{at: 0, pod: waitPod(func(p *corev1.Pod) { waiting("ErrImagePull", pullMsg)(p); p.DeletionTimestamp = &metav1.Time{} })},
		{at: time.Minute, pod: waitPod(func(p *corev1.Pod) { waiting("ErrImagePull", pullMsg)(p); p.DeletionTimestamp = &metav1.Time{} })},
	}},
}

// waitPolicy is the policy both waiters run the table with: the migration's default.
var waitPolicy = planner.WaitPolicy{Grace: 20 * time.Second, Unschedulable: 20 * time.Second}

// rolloutJudge runs the rollout waiter's judgement of ordinal 2 over the looks.
func rolloutJudge(t *testing.T, events []*corev1.Event, looks []look) []*StuckError {
	t.Helper()
	t0 := time.Date(2026, 12, 5, 8, 0, 0, 0, time.UTC)
	pods := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	pvcs := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	evs := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	if err := pvcs.Add(waitPVC()); err != nil {
		t.Fatal(err)
	}
	for _, e := range events {
		if err := evs.Add(e); err != nil {
			t.Fatal(err)
		}
	}
	o := &observer{w: RolloutWait{Namespace: "olap", Name: "hist", Policy: waitPolicy},
		pods: corelisters.NewPodLister(pods).Pods("olap"), pvcs: corelisters.NewPersistentVolumeClaimLister(pvcs).PersistentVolumeClaims("olap"),
		events: corelisters.NewEventLister(evs).Events("olap"), last: map[int32]string{}, clocks: map[int32]*planner.WaitClock{}}
	var out []*StuckError
	for _, l := range looks {
		if err := pods.Update(l.pod); err != nil {
			t.Fatal(err)
		}
		_, stuck := o.ordinal(testSet(1, 1), 2, t0.Add(l.at))
		out = append(out, stuck)
	}
	return out
}

// migrationJudge runs the migration's judgement (failFast) of ordinal 2 over the looks.
func migrationJudge(t *testing.T, events []*corev1.Event, looks []look) []*MigrationError {
	t.Helper()
	t0 := time.Date(2026, 12, 5, 8, 0, 0, 0, time.UTC)
	w := &migrationWatcher{
		evInf:      cache.NewSharedIndexInformer(&cache.ListWatch{}, &corev1.Event{}, 0, cache.Indexers{}),
		mountEvInf: cache.NewSharedIndexInformer(&cache.ListWatch{}, &corev1.Event{}, 0, cache.Indexers{}),
	}
	for _, e := range events {
		inf := w.evInf
		if e.Reason == planner.EventFailedMount {
			inf = w.mountEvInf
		}
		if err := inf.GetStore().Add(e); err != nil {
			t.Fatal(err)
		}
	}
	m := &migrator{run: MigrationRun{Name: "hist", UnschedulableGrace: waitPolicy.Grace}, w: w}
	if m.policy() != waitPolicy {
		t.Fatalf("the migration's policy is %+v, the table's %+v", m.policy(), waitPolicy)
	}
	r := &ordinalRun{o: 2}
	var out []*MigrationError
	for _, l := range looks {
		s := &planner.Snapshot{Pods: []corev1.Pod{*l.pod}, PVCs: []corev1.PersistentVolumeClaim{*waitPVC()}}
		st := migration.Step{Kind: migration.StepWait, Pod: migration.ObjectRef{Name: l.pod.Name, UID: l.pod.UID},
			Reason: "waiting for Pod hist-2 to be Running and Ready"}
		_, err := m.failFast(s, r, st, t0.Add(l.at))
		var me *MigrationError
		if err != nil && !errors.As(err, &me) {
			t.Fatalf("failFast: %v", err)
		}
		out = append(out, me)
	}
	return out
}

// TestWaitersAgree runs the one wait judgement's table through both waiters: each stops on the
// same look, with the same cause and quote, and neither stops where the table waits.
func TestWaitersAgree(t *testing.T) {
	t.Parallel()
	for name, tc := range waitCases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ro := rolloutJudge(t, tc.events, tc.looks)
			mi := migrationJudge(t, tc.events, tc.looks)
			for i, l := range tc.looks {
				var rc, mc planner.StuckCause
				var rq, mq string
				if ro[i] != nil {
					rc, rq = ro[i].Cause, ro[i].Quote
				}
				if mi[i] != nil {
					mc, mq = mi[i].Cause, mi[i].Quote
				}
				if rc != l.fail || mc != l.fail {
					t.Errorf("look %d (+%s): rollout stops on %q, migration on %q, want %q", i, l.at, rc, mc, l.fail)
				}
				if rq != mq || !strings.Contains(rq, l.quotes) {
					t.Errorf("look %d: rollout quotes %q, migration %q, want %q", i, rq, mq, l.quotes)
				}
				if l.fail != "" && i < len(tc.looks)-1 {
					t.Fatalf("table error: look %d stops but is not the last", i)
				}
			}
		})
	}
}

// The rollout waiter wakes when a failure's grace ends, without an event: a Pod stuck on
// ErrImagePull changes nothing the informers would see.
func TestWaitForRolloutFailsOnImagePullAfterTheGrace(t *testing.T) {
	t.Parallel()
	pod := waitPod(waiting("ErrImagePull", pullMsg))
	pod.Spec.Volumes = nil
	kube := fake.NewClientset(testSet(1, 1), pod)
	err := rolloutPastGrace(t, kube, 2)
	var stuck *StuckError
	if !errors.As(err, &stuck) || stuck.Cause != planner.CauseImagePull || !strings.Contains(stuck.Quote, "ErrImagePull") {
		t.Fatalf("got %v, want a StuckError quoting ErrImagePull", err)
	}
}

// rolloutPastGrace runs WaitForRollout for ordinal on a fake clock, fails the test if it returns
// before the clock waits, then steps the clock over the shared grace and returns its error.
func rolloutPastGrace(t *testing.T, kube kubernetes.Interface, ordinal int32) error {
	t.Helper()
	clk := clocktesting.NewFakeClock(time.Date(2026, 12, 5, 8, 0, 0, 0, time.UTC))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := WaitForRollout(ctx, kube, RolloutWait{Namespace: "olap", Name: "hist", Generation: 1, Ordinals: []int32{ordinal}, Clock: clk})
		done <- err
	}()
	for !clk.HasWaiters() {
		select {
		case err := <-done:
			t.Fatalf("returned before the grace: %v", err)
		case <-time.After(10 * time.Millisecond):
		}
	}
	clk.Step(planner.DefaultWaitGrace)
	return <-done
}
