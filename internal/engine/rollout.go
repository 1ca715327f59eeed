// Package engine holds olapgke's effects: the migration executor and the rollout waiter. Waits are
// watch-driven (informers), never fixed sleeps.
package engine

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/olapgke/terraform-provider-olapgke/internal/planner"
	"github.com/olapgke/terraform-provider-olapgke/internal/stsutil"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"
)

// RolloutWait says what WaitForRollout waits for after a StatefulSet write.
type RolloutWait struct {
	Namespace, Name string
	// UID of the written object; a different UID means the object was replaced under us.
	UID types.UID
	// Generation is metadata.generation of the written object: the wait first waits until the
	// controller has observed it (status.observedGeneration), so status.updateRevision is current.
	Generation int64
	// Ordinals whose Pods must be Running and Ready at status.updateRevision: for RollingUpdate the
	// ordinals the plan said would be recreated or created, for OnDelete only the created ones.
	Ordinals []int32
	// Deleted are ordinals the apply removes (a scale-down): their Pods must be gone.
	Deleted []int32
	// Progress, when set, is called each time an ordinal's state changes.
	Progress func(OrdinalProgress)
	// Log, when set, receives the one line saying why no Events are recorded (events.go).
	Log func(string)
	// Policy is how long a failure may last before the wait stops (planner.JudgeWait, the
	// migration's judge too); the zero value is the rollout's: the default grace, and
	// Unschedulable waits for the timeout.
	Policy planner.WaitPolicy
	// Clock is injected for tests (default: real clock).
	Clock clock.Clock
}

// OrdinalProgress is the observed state of one awaited ordinal.
type OrdinalProgress struct {
	Ordinal int32
	Pod     string
	Node    string
	// State is one of "waiting for pod", "terminating", "old revision", "pending", "not ready", "ready".
	State   string
	Message string
	// PodUID is the UID of the Pod observed (empty while there is none).
	PodUID types.UID
}

func (p OrdinalProgress) String() string {
	s := fmt.Sprintf("ordinal %d (Pod %s): %s", p.Ordinal, p.Pod, p.State)
	if p.Node != "" {
		s += " on node " + p.Node
	}
	if p.Message != "" {
		s += ": " + p.Message
	}
	return s
}

// RolloutResult is what a completed wait observed.
type RolloutResult struct {
	UpdateRevision string
	Ordinals       []OrdinalProgress
}

// StuckError reports an ordinal whose Pod will not become Ready without intervention, as
// planner.JudgeWait judges it: the scheduler cannot place it because its PVs are pinned to nodes
// the Pod may not use (at once), or, for longer than the grace, its volume cannot be provisioned
// or mounted, or a container cannot pull its image, keeps crashing or cannot be created. Quote is
// the scheduler's condition message, the event or the container's waiting reason, verbatim.
type StuckError struct {
	Ordinal int32
	Pod     string
	Cause   planner.StuckCause
	// Source says where the quote comes from, e.g. "event FailedScheduling on Pod olap-2".
	Source string
	Quote  string
	// For is how long the failure was seen (0 for one that fails at once).
	For time.Duration
}

func (e *StuckError) Error() string {
	s := fmt.Sprintf("ordinal %d (Pod %s) cannot become Ready: %s: %q", e.Ordinal, e.Pod, e.Source, e.Quote)
	if e.For > 0 {
		s += fmt.Sprintf(" (for %s)", e.For.Round(time.Second))
	}
	return s
}

// RolloutTimeoutError is returned when the context ends before every awaited ordinal is Ready.
type RolloutTimeoutError struct {
	Waiting []OrdinalProgress
	Err     error
}

func (e *RolloutTimeoutError) Error() string {
	parts := make([]string, 0, len(e.Waiting))
	for _, p := range e.Waiting {
		parts = append(parts, p.String())
	}
	return fmt.Sprintf("rollout not finished (%v); still waiting for: %s", e.Err, strings.Join(parts, "; "))
}

func (e *RolloutTimeoutError) Unwrap() error { return e.Err }

// ErrSetGone is returned when the StatefulSet disappears or is replaced during the wait.
var ErrSetGone = errors.New("the StatefulSet was deleted or replaced during the wait")

// PVNodeAffinityConflict is planner.PVNodeAffinityConflict.
func PVNodeAffinityConflict(msg string) bool { return planner.PVNodeAffinityConflict(msg) }

// WaitForRollout waits, driven by informers on the namespace's StatefulSets, Pods, PVCs and
// Events, until every awaited ordinal is Running and Ready at the update revision. It returns a
// *StuckError when planner.JudgeWait judges an awaited Pod failed (w.Policy), and a
// *RolloutTimeoutError when ctx ends first. A LIST or WATCH the credentials may not make
// (Forbidden) ends it at once with that error, as in the migration's watcher: a reflector
// would retry it until the timeout.
func WaitForRollout(ctx context.Context, kube kubernetes.Interface, w RolloutWait) (_ *RolloutResult, retErr error) {
	if w.Clock == nil {
		w.Clock = clock.RealClock{}
	}

	factory := informers.NewSharedInformerFactoryWithOptions(kube, 0, informers.WithNamespace(w.Namespace))
	sets := factory.Apps().V1().StatefulSets()
	pods := factory.Core().V1().Pods()
	pvcs := factory.Core().V1().PersistentVolumeClaims()
	events := factory.Core().V1().Events()
	// The migration's informerWatch (watch.go): one change signal, and the first Forbidden list
	// or watch ends the wait with the API server's answer instead of at the timeout.
	iw := newInformerWatch(ctx, factory)
	ctx = iw.ctx
	every := iw.everyEvent()
	for _, x := range []struct {
		inf   cache.SharedIndexInformer
		probe watchFunc
	}{
		{sets.Informer(), kube.AppsV1().StatefulSets(w.Namespace).Watch},
		{pods.Informer(), kube.CoreV1().Pods(w.Namespace).Watch},
		{pvcs.Informer(), kube.CoreV1().PersistentVolumeClaims(w.Namespace).Watch},
		{events.Informer(), kube.CoreV1().Events(w.Namespace).Watch},
	} {
		if err := iw.add(x.inf, every, x.probe); err != nil {
			iw.cancel()
			return nil, err
		}
	}
	refused := func() error {
		if err := iw.forbidden(); err != nil {
			return fmt.Errorf("watching the rollout: %w", err)
		}
		return nil
	}
	if err := iw.start("the rollout"); err != nil {
		if f := iw.forbidden(); f != nil || apierrors.IsForbidden(err) {
			if f == nil {
				f = err
			}
			return nil, fmt.Errorf("watching the rollout: %w", f)
		}
		return nil, &RolloutTimeoutError{Err: err}
	}
	defer iw.stop()

	o := &observer{w: w, pods: pods.Lister().Pods(w.Namespace), pvcs: pvcs.Lister().PersistentVolumeClaims(w.Namespace),
		events: events.Lister().Events(w.Namespace), last: map[int32]string{}, clocks: map[int32]*planner.WaitClock{},
		readySeen: map[types.UID]bool{}}
	// One Event per awaited ordinal that comes up, and one where the wait stopped (events.go),
	// recorded on the StatefulSet from its first observation on.
	defer func() { o.ev.finish("WaitForRollout", retErr); o.ev.close() }()
	for {
		set, err := sets.Lister().StatefulSets(w.Namespace).Get(w.Name)
		switch {
		case apierrors.IsNotFound(err):
			return nil, ErrSetGone
		case err != nil:
			return nil, err
		case w.UID != "" && set.UID != w.UID:
			return nil, ErrSetGone
		}
		if !o.evStarted && len(w.Ordinals)+len(w.Deleted) > 0 {
			o.evStarted = true
			logf := w.Log
			if logf == nil {
				logf = func(string) {}
			}
			o.ev = newStepEvents(ctx, kube, set, logf)
		}
		res, done, err := o.evaluate(set, w.Clock.Now())
		if err != nil || done {
			return res, err
		}
		var wake <-chan time.Time
		if o.wake > 0 { // a failure within its grace: judge again when it ends, event or not
			wake = w.Clock.After(o.wake)
		}
		select {
		case <-ctx.Done():
			if err := refused(); err != nil {
				return nil, err
			}
			return nil, &RolloutTimeoutError{Waiting: o.waiting(res), Err: context.Cause(ctx)}
		case <-iw.stopped:
			return nil, refused()
		case <-iw.changed:
		case <-wake:
		}
	}
}

type observer struct {
	w      RolloutWait
	pods   corelisters.PodNamespaceLister
	pvcs   corelisters.PersistentVolumeClaimNamespaceLister
	events corelisters.EventNamespaceLister
	last   map[int32]string
	// clocks keep each awaited ordinal's failure durations for planner.JudgeWait.
	clocks map[int32]*planner.WaitClock
	// wake is the soonest end of a failure's grace seen by the last evaluate (0: none).
	wake time.Duration
	// ev records the rollout's Events (nil: none); readySeen are the Pods whose Ready Event
	// was recorded.
	ev        *stepEvents
	evStarted bool
	readySeen map[types.UID]bool
}

func (o *observer) waiting(res *RolloutResult) []OrdinalProgress {
	if res == nil {
		return []OrdinalProgress{{Pod: o.w.Name, State: "waiting for the controller to observe the new generation"}}
	}
	var out []OrdinalProgress
	for _, p := range res.Ordinals {
		if p.State != "ready" {
			out = append(out, p)
		}
	}
	return out
}

func (o *observer) evaluate(set *appsv1.StatefulSet, now time.Time) (*RolloutResult, bool, error) {
	o.wake = 0
	if set.Status.ObservedGeneration < o.w.Generation {
		return nil, false, nil
	}
	res := &RolloutResult{UpdateRevision: set.Status.UpdateRevision}
	done := true
	ords := append([]int32(nil), o.w.Ordinals...)
	sort.Slice(ords, func(i, j int) bool { return ords[i] > ords[j] })
	for _, ord := range ords {
		p, stuck := o.ordinal(set, ord, now)
		res.Ordinals = append(res.Ordinals, p)
		if s := p.String(); o.last[ord] != s {
			o.last[ord] = s
			if o.w.Progress != nil {
				o.w.Progress(p)
			}
		}
		if p.State == "ready" && !o.readySeen[p.PodUID] {
			o.readySeen[p.PodUID] = true
			o.ev.record(false, ReasonPodReady, "WaitForRollout", podRef(o.w.Namespace, p.Pod, p.PodUID),
				"ordinal %d: Pod %s Running and Ready at revision %s on node %s", ord, p.Pod, set.Status.UpdateRevision, p.Node)
		}
		if stuck != nil {
			return res, false, stuck
		}
		if p.State != "ready" {
			done = false
		}
	}
	for _, ord := range o.w.Deleted {
		name := stsutil.PodName(set.Name, ord)
		pod, err := o.pods.Get(name)
		if err != nil {
			continue // gone
		}
		p := OrdinalProgress{Ordinal: ord, Pod: name, Node: pod.Spec.NodeName, State: "being deleted (scale-down)"}
		res.Ordinals = append(res.Ordinals, p)
		if s := p.String(); o.last[ord] != s {
			o.last[ord] = s
			if o.w.Progress != nil {
				o.w.Progress(p)
			}
		}
		done = false
	}
	if done && len(ords) > 0 {
		// The controller's status follows the Pods a moment later; wait for it too, so the
		// counts recorded after the wait (readyReplicas, updatedReplicas) are the final ones.
		ready, updated := o.countPods(set)
		done = set.Status.ReadyReplicas >= ready && set.Status.UpdatedReplicas >= updated
	}
	return res, done, nil
}

// countPods counts the set's Ready Pods and its Pods at the update revision, as the informer sees them.
func (o *observer) countPods(set *appsv1.StatefulSet) (ready, updated int32) {
	pods, _ := o.pods.List(labels.Everything())
	for _, p := range pods {
		if !strings.HasPrefix(p.Name, set.Name+"-") || p.DeletionTimestamp != nil || !metav1.IsControlledBy(p, set) {
			continue
		}
		if stsutil.PodReady(p) {
			ready++
		}
		if p.Labels[appsv1.ControllerRevisionHashLabelKey] == set.Status.UpdateRevision {
			updated++
		}
	}
	return ready, updated
}

func (o *observer) ordinal(set *appsv1.StatefulSet, ord int32, now time.Time) (OrdinalProgress, *StuckError) {
	name := stsutil.PodName(set.Name, ord)
	p := OrdinalProgress{Ordinal: ord, Pod: name}
	c := o.clocks[ord]
	if c == nil {
		c = &planner.WaitClock{}
		o.clocks[ord] = c
	}
	pod, err := o.pods.Get(name)
	if err != nil { // a lister fails only with NotFound: the controller has not created it yet
		c.Reset()
		p.State = "waiting for pod"
		return p, nil //nolint:nilerr // not an error: the wait goes on
	}
	p.Node, p.PodUID = pod.Spec.NodeName, pod.UID
	switch {
	case pod.DeletionTimestamp != nil:
		c.Reset()
		p.State = "terminating"
		return p, nil
	case pod.Labels[appsv1.ControllerRevisionHashLabelKey] != set.Status.UpdateRevision:
		c.Reset()
		p.State = "old revision"
		p.Message = "revision " + pod.Labels[appsv1.ControllerRevisionHashLabelKey] + ", want " + set.Status.UpdateRevision
		return p, nil
	case stsutil.PodReady(pod):
		c.Reset()
		p.State = "ready"
		return p, nil
	}
	if pod.Spec.NodeName == "" {
		p.State = "pending"
	} else {
		p.State = "not ready"
	}
	evs, _ := o.events.List(labels.Everything())
	v := c.Judge(pod, func(name string) *corev1.PersistentVolumeClaim {
		pvc, _ := o.pvcs.Get(name)
		return pvc
	}, evs, now, o.w.Policy)
	p.Message = v.Message
	switch {
	case v.State == planner.WaitFailed:
		return p, &StuckError{Ordinal: ord, Pod: name, Cause: v.Cause, Source: v.Source, Quote: v.Quote, For: v.For}
	case v.Remaining > 0 && (o.wake == 0 || v.Remaining < o.wake):
		o.wake = v.Remaining
	}
	return p, nil
}
