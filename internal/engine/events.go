package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
)

// Reasons of the Kubernetes Events olapgke records on a StatefulSet while it migrates or rolls
// it out, one Event per step. They are part of the provider's interface (alerts, dashboards and
// `kubectl get events --field-selector reason=...` match them): never rename one.
const (
	// ReasonOrdinalMoving: an ordinal's move to the template's placement starts.
	ReasonOrdinalMoving = "OlapgkeOrdinalMoving"
	// ReasonOrdinalRestarting: an ordinal's restart in place (PVCs kept) starts.
	ReasonOrdinalRestarting = "OlapgkeOrdinalRestarting"
	// ReasonPVCDeleted: a node-local PVC of the ordinal was deleted (its data goes with it).
	ReasonPVCDeleted = "OlapgkePVCDeleted"
	// ReasonPodDeleted: the ordinal's Pod was deleted (force-deleted on an unreachable node).
	ReasonPodDeleted = "OlapgkePodDeleted"
	// ReasonPodReady: the ordinal's new Pod is Running and Ready at the update revision (after
	// the soak), on the node the note names.
	ReasonPodReady = "OlapgkePodReady"
	// ReasonGatePassed: the ordinal's gates passed (the note says after how many polls).
	ReasonGatePassed = "OlapgkeGatePassed"
	// ReasonStepFailed (Warning): the migration or rollout stopped; the note says where and why.
	ReasonStepFailed = "OlapgkeStepFailed"
	// ReasonCancelled (Warning): the apply was cancelled (Ctrl-C, a cancelled run); the note
	// says where it stopped.
	ReasonCancelled = "OlapgkeCancelled"
)

// EventsController is the reportingController of olapgke's Events.
const EventsController = "olapgke.io/terraform-provider-olapgke"

// eventsFlush bounds how long the end of a run waits for its Events to reach the API server.
const eventsFlush = 5 * time.Second

// stepEvents records one run's steps as Events regarding its StatefulSet, through client-go's
// events.k8s.io/v1 broadcaster (tools/events, as the scheduler records its own). Events are
// best effort: a denied or failed write never stops a migration; without the right to create
// Events (checked first with a SelfSubjectAccessReview) none are recorded and the log says so.
// A nil *stepEvents records nothing.
type stepEvents struct {
	b    events.EventBroadcaster
	rec  events.EventRecorder
	set  *appsv1.StatefulSet
	sink *countingSink
	stop context.CancelFunc

	mu      sync.Mutex
	emitted int
}

// newStepEvents starts recording Events on set. log receives one line when Events cannot be
// recorded. The returned value must be closed.
func newStepEvents(ctx context.Context, kube kubernetes.Interface, set *appsv1.StatefulSet, log func(string)) *stepEvents {
	if !mayCreateEvents(ctx, kube, set.Namespace) {
		log(fmt.Sprintf("no Kubernetes Events are recorded on StatefulSet %s/%s: the credentials may not create events.k8s.io events there", set.Namespace, set.Name))
		return nil
	}
	sink := &countingSink{EventSinkImpl: events.EventSinkImpl{Interface: kube.EventsV1()}, done: make(chan struct{}, 1)}
	b := events.NewBroadcaster(sink)
	// Events outlive the run's context: a cancelled apply still records where it stopped.
	bctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	if err := b.StartRecordingToSinkWithContext(bctx); err != nil {
		stop()
		log("no Kubernetes Events are recorded: " + err.Error())
		return nil
	}
	return &stepEvents{b: b, rec: b.NewRecorder(scheme.Scheme, EventsController), set: set, sink: sink, stop: stop}
}

// mayCreateEvents asks the API server whether events.k8s.io events may be created in ns. When
// the review itself cannot be made, it answers yes: the writes will tell (and never fail a run).
func mayCreateEvents(ctx context.Context, kube kubernetes.Interface, ns string) bool {
	res, err := kube.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{
		Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{
			Group: "events.k8s.io", Resource: "events", Verb: "create", Namespace: ns}}}, metav1.CreateOptions{})
	return err != nil || res.Status.Allowed
}

// record writes one Event. related is the Pod or PVC the step acted on (nil: none); it must
// also keep Events of different ordinals apart: the broadcaster merges Events with the same type,
// reason, action and objects into a series, whatever their notes (tools/events getKey).
func (e *stepEvents) record(warning bool, reason, action string, related runtime.Object, format string, args ...any) {
	if e == nil {
		return
	}
	typ := corev1.EventTypeNormal
	if warning {
		typ = corev1.EventTypeWarning
	}
	e.mu.Lock()
	e.emitted++
	e.mu.Unlock()
	e.rec.Eventf(e.set, related, typ, reason, action, format, args...)
}

// close waits until every Event recorded reached the API server (or eventsFlush passed), then
// stops the broadcaster.
func (e *stepEvents) close() {
	if e == nil {
		return
	}
	deadline := time.NewTimer(eventsFlush)
	defer deadline.Stop()
	for {
		e.mu.Lock()
		n := e.emitted
		e.mu.Unlock()
		if e.sink.written() >= n {
			break
		}
		select {
		case <-e.sink.done:
		case <-deadline.C:
			e.stop()
			e.b.Shutdown()
			return
		}
	}
	e.stop()
	e.b.Shutdown()
}

// podRef and pvcRef are the related objects of an Event (name and UID are what it shows).
func podRef(ns, name string, uid types.UID) runtime.Object {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: uid}}
}

func pvcRef(ns, name string, uid types.UID) runtime.Object {
	return &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: uid}}
}

// step is one step of ordinal o: one INFO log line and one Event with the same text.
func (m *migrator) step(o int32, idx int, reason, action string, related runtime.Object, format string, args ...any) {
	m.logf(o, idx, format, args...)
	m.ev.record(false, reason, action, related, "ordinal %d (%d/%d): %s", o, idx, m.total, fmt.Sprintf(format, args...))
}

// gatesPassed records that ordinal r's gates passed.
func (m *migrator) gatesPassed(r MigratedOrdinal, gates []GateResult) {
	if len(gates) == 0 {
		return
	}
	parts := make([]string, 0, len(gates))
	for _, g := range gates {
		parts = append(parts, fmt.Sprintf("%s after %s (%d polls)", g.Name, g.Duration.Round(time.Second), g.Polls))
	}
	m.ev.record(false, ReasonGatePassed, "WaitForGates", podRef(m.run.Namespace, r.Pod, r.PodUID),
		"ordinal %d (Pod %s): gates passed: %s", r.Ordinal, r.Pod, strings.Join(parts, ", "))
}

// finish records how the run (action: "Migrate" or "WaitForRollout") ended, when it did not
// succeed: cancelled (and where), or failed.
func (e *stepEvents) finish(action string, err error) {
	if e == nil || err == nil {
		return
	}
	if errors.Is(err, context.Canceled) {
		e.record(true, ReasonCancelled, action, nil, "%s", limitNote("cancelled: "+StoppedAt(err)))
		return
	}
	e.record(true, ReasonStepFailed, action, nil, "%s", limitNote(err.Error()))
}

// StoppedAt says where a migration that returned err stopped: the ordinal, its Pod, the step and
// what this run had deleted of it; or that no ordinal had started.
func StoppedAt(err error) string {
	var me *MigrationError
	var ge *GateError
	var pe *PreconditionError
	var re *RolloutTimeoutError
	switch {
	case errors.As(err, &me):
		s := fmt.Sprintf("at ordinal %d (Pod %s), step %s", me.Ordinal, me.Pod, me.Phase)
		if len(me.Deleted) > 0 {
			s += ", after this run deleted " + strings.Join(me.Deleted, " and ")
		} else {
			s += ", before this run deleted anything of it"
		}
		return s + ": " + strings.TrimPrefix(me.Reason, "still ")
	case errors.As(err, &ge):
		return fmt.Sprintf("at ordinal %d (Pod %s), waiting for gate %s after %d polls (its step was finished)", ge.Ordinal, ge.Pod, ge.Gate, ge.Polls)
	case errors.As(err, &pe):
		return "before the next ordinal started (nothing of it was deleted): " + pe.Msg
	case errors.As(err, &re) && len(re.Waiting) > 0:
		waiting := make([]string, 0, len(re.Waiting))
		for _, p := range re.Waiting {
			waiting = append(waiting, p.String())
		}
		return "waiting for the rollout: " + strings.Join(waiting, "; ")
	}
	return err.Error()
}

// limitNote keeps an Event's note within the API's 1 kB.
func limitNote(s string) string {
	const maxNote = 1024
	if len(s) <= maxNote {
		return s
	}
	return s[:maxNote-3] + "..."
}

// countingSink counts the writes to the API server (whatever their outcome), so that close can
// wait for them: the broadcaster writes each Event from a goroutine of its own and its Shutdown
// does not wait for them. A retried write counts again, so close may return while a retry is
// pending; an Event merged into a series by the broadcaster counts once, when its patch is sent.
type countingSink struct {
	events.EventSinkImpl
	mu   sync.Mutex
	n    int
	done chan struct{}
}

func (s *countingSink) count(*eventsv1.Event) {
	s.mu.Lock()
	s.n++
	s.mu.Unlock()
	select {
	case s.done <- struct{}{}:
	default:
	}
}

func (s *countingSink) written() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n
}

func (s *countingSink) Create(ctx context.Context, ev *eventsv1.Event) (*eventsv1.Event, error) {
	out, err := s.EventSinkImpl.Create(ctx, ev)
	s.count(ev)
	return out, err
}

func (s *countingSink) Update(ctx context.Context, ev *eventsv1.Event) (*eventsv1.Event, error) {
	out, err := s.EventSinkImpl.Update(ctx, ev)
	s.count(ev)
	return out, err
}

func (s *countingSink) Patch(ctx context.Context, ev *eventsv1.Event, data []byte) (*eventsv1.Event, error) {
	out, err := s.EventSinkImpl.Patch(ctx, ev, data)
	s.count(ev)
	return out, err
}
