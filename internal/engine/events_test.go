package engine

import (
	"context"
	"errors"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	authorizationv1 "k8s.io/api/authorization/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// allowReviews answers every SelfSubjectAccessReview with allowed (or denied for denyEvents'
// events.k8s.io create).
func allowReviews(kube *fake.Clientset, denyEvents bool) {
	kube.PrependReactor("create", "selfsubjectaccessreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
		r := a.(k8stesting.CreateAction).GetObject().(*authorizationv1.SelfSubjectAccessReview).DeepCopy()
		ra := r.Spec.ResourceAttributes
		r.Status.Allowed = !denyEvents || ra.Group != "events.k8s.io" || ra.Resource != "events"
		return true, r, nil
	})
}

// olapgkeEvents are the Events olapgke recorded in namespace olap, in the order they happened.
func olapgkeEvents(t *testing.T, kube *fake.Clientset) []eventsv1.Event {
	t.Helper()
	list, err := kube.EventsV1().Events("olap").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []eventsv1.Event
	for _, e := range list.Items {
		if strings.HasPrefix(e.Reason, "Olapgke") {
			out = append(out, e)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].EventTime.Before(&out[j].EventTime) })
	return out
}

// A run cancelled while it waits for the moved Pod (Ctrl-C, a cancelled HCP run) returns an
// error that is context.Canceled and says where it stopped: the ordinal, its Pod, the step and
// what was already deleted of it. Each step before was recorded as an Event on the StatefulSet,
// in order, and the cancellation last, with the same place.
func TestMigrateCancelledSaysWhereAndRecordsEachStep(t *testing.T) {
	t.Parallel()
	kube := fake.NewClientset(oneOrdinalOnPoolA()...)
	allowReviews(kube, false)
	var mu sync.Mutex
	var deletes []string
	podDeleted := make(chan struct{})
	kube.PrependReactor("delete", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
		mu.Lock()
		defer mu.Unlock()
		name := a.GetResource().Resource + "/" + a.(k8stesting.DeleteAction).GetName()
		deletes = append(deletes, name)
		if name == "pods/hist-0" {
			close(podDeleted)
		}
		return true, nil, nil // accepted; the object stays: the new Pod never comes
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-podDeleted:
			cancel()
		case <-time.After(30 * time.Second):
		}
	}()
	var logs []string
	err := Migrate(ctx, kube, MigrationRun{
		Namespace: "olap", Name: "hist", Ordinals: []int32{0}, Claims: []string{"cache"},
		Log: func(l string) { mu.Lock(); logs = append(logs, l); mu.Unlock() },
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Migrate: %v, want context.Canceled", err)
	}
	where := StoppedAt(err)
	for _, want := range []string{"ordinal 0 (Pod hist-0), step ", "after this run deleted PVC cache-hist-0 and Pod hist-0"} {
		if !strings.Contains(where, want) {
			t.Errorf("StoppedAt = %q, want %q in it", where, want)
		}
	}
	evs := olapgkeEvents(t, kube)
	var reasons []string
	for _, e := range evs {
		reasons = append(reasons, e.Reason)
		if e.Regarding.Kind != "StatefulSet" || e.Regarding.Name != "hist" || e.ReportingController != EventsController {
			t.Errorf("event %s regards %s %s, reported by %q", e.Reason, e.Regarding.Kind, e.Regarding.Name, e.ReportingController)
		}
	}
	want := []string{ReasonOrdinalMoving, ReasonPVCDeleted, ReasonPodDeleted, ReasonCancelled}
	if d := cmp.Diff(want, reasons); d != "" {
		t.Fatalf("event reasons (-want +got):\n%s", d)
	}
	if n := evs[1].Note; !strings.Contains(n, "ordinal 0 (1/1): PVC cache-hist-0 deleted") || evs[1].Related == nil || evs[1].Related.Name != "cache-hist-0" {
		t.Errorf("PVC event: %q related %v", n, evs[1].Related)
	}
	if n := evs[3].Note; evs[3].Type != "Warning" || !strings.Contains(n, "cancelled: at ordinal 0 (Pod hist-0)") || !strings.Contains(n, "PVC cache-hist-0 and Pod hist-0") {
		t.Errorf("cancel event: %s %q", evs[3].Type, n)
	}
	mu.Lock()
	defer mu.Unlock()
	if !slices.ContainsFunc(logs, func(l string) bool { return strings.HasPrefix(l, "ordinal 0 (1/1): PVC cache-hist-0 deleted") }) {
		t.Errorf("no log line for the PVC step: %q", logs)
	}
}

// A run that fails records OlapgkeStepFailed with the error; without the right to create
// Events it records none, says so once in the log, and moves all the same.
func TestMigrateEventsFailedAndDenied(t *testing.T) {
	t.Parallel()
	run := func(deny bool) (*fake.Clientset, []string, error) {
		kube := fake.NewClientset(oneOrdinalOnPoolA()...)
		allowReviews(kube, deny)
		kube.PrependReactor("delete", "*", func(k8stesting.Action) (bool, runtime.Object, error) { return true, nil, nil })
		var logs []string
		var mu sync.Mutex
		err := Migrate(context.Background(), kube, MigrationRun{
			Namespace: "olap", Name: "hist", Ordinals: []int32{0}, Claims: []string{"cache"}, OrdinalTimeout: time.Second,
			Log: func(l string) { mu.Lock(); logs = append(logs, l); mu.Unlock() },
		})
		return kube, logs, err
	}
	kube, _, err := run(false)
	var me *MigrationError
	if !errors.As(err, &me) || !me.Timeout || errors.Is(err, context.Canceled) {
		t.Fatalf("Migrate: %v, want a per-ordinal timeout", err)
	}
	evs := olapgkeEvents(t, kube)
	if len(evs) == 0 || evs[len(evs)-1].Reason != ReasonStepFailed || !strings.Contains(evs[len(evs)-1].Note, "ordinal 0 (Pod hist-0)") {
		t.Fatalf("last event: %+v", evs)
	}

	kube, logs, err := run(true)
	if !errors.As(err, &me) {
		t.Fatalf("denied events: Migrate: %v, want the same timeout", err)
	}
	if evs := olapgkeEvents(t, kube); len(evs) != 0 {
		t.Errorf("events recorded without the right to: %v", evs)
	}
	if !slices.ContainsFunc(logs, func(l string) bool { return strings.Contains(l, "no Kubernetes Events are recorded") }) {
		t.Errorf("the log does not say that no Events are recorded: %q", logs)
	}
}
