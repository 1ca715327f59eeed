// Package engine holds olapgke's effects: the migration executor and the rollout waiter. Waits are
// watch-driven (informers), never fixed sleeps.
package engine

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

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
}

// OrdinalProgress is the observed state of one awaited ordinal.
type OrdinalProgress struct {
	Ordinal int32
	Pod     string
	Node    string
	// State is one of "waiting for pod", "terminating", "old revision", "pending", "not ready", "ready".
	State   string
	Message string
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

// StuckError reports an ordinal whose Pod can never become Ready without intervention: the
// scheduler cannot place it because its PVs are pinned to nodes the Pod may not use, or its volume
// cannot be provisioned. Quote is the scheduler's condition message or the event, verbatim.
type StuckError struct {
	Ordinal int32
	Pod     string
	// Source says where the quote comes from, e.g. "event FailedScheduling on Pod olap-2".
	Source string
	Quote  string
}

func (e *StuckError) Error() string {
	return fmt.Sprintf("ordinal %d (Pod %s) cannot become Ready: %s: %q", e.Ordinal, e.Pod, e.Source, e.Quote)
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
// *StuckError as soon as an awaited Pod is unschedulable because of PV node affinity or its claim
// failed provisioning, and a *RolloutTimeoutError when ctx ends first.
func WaitForRollout(ctx context.Context, kube kubernetes.Interface, w RolloutWait) (*RolloutResult, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	factory := informers.NewSharedInformerFactoryWithOptions(kube, 0, informers.WithNamespace(w.Namespace))
	sets := factory.Apps().V1().StatefulSets()
	pods := factory.Core().V1().Pods()
	pvcs := factory.Core().V1().PersistentVolumeClaims()
	events := factory.Core().V1().Events()

	kick := make(chan struct{}, 1)
	notify := func() {
		select {
		case kick <- struct{}{}:
		default:
		}
	}
	h := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { notify() },
		UpdateFunc: func(any, any) { notify() },
		DeleteFunc: func(any) { notify() },
	}
	for _, inf := range []cache.SharedIndexInformer{sets.Informer(), pods.Informer(), pvcs.Informer(), events.Informer()} {
		if _, err := inf.AddEventHandler(h); err != nil {
			return nil, err
		}
	}
	factory.Start(ctx.Done())
	defer func() {
		cancel() // stops the informers; Shutdown waits for them
		factory.Shutdown()
	}()
	for typ, ok := range factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			return nil, &RolloutTimeoutError{Err: fmt.Errorf("caches for %v did not sync: %w", typ, context.Cause(ctx))}
		}
	}

	o := &observer{w: w, pods: pods.Lister().Pods(w.Namespace), pvcs: pvcs.Lister().PersistentVolumeClaims(w.Namespace),
		events: events.Lister().Events(w.Namespace), last: map[int32]string{}}
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
		res, done, err := o.evaluate(set)
		if err != nil || done {
			return res, err
		}
		select {
		case <-ctx.Done():
			return nil, &RolloutTimeoutError{Waiting: o.waiting(res), Err: context.Cause(ctx)}
		case <-kick:
		}
	}
}

type observer struct {
	w      RolloutWait
	pods   corelisters.PodNamespaceLister
	pvcs   corelisters.PersistentVolumeClaimNamespaceLister
	events corelisters.EventNamespaceLister
	last   map[int32]string
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

func (o *observer) evaluate(set *appsv1.StatefulSet) (*RolloutResult, bool, error) {
	if set.Status.ObservedGeneration < o.w.Generation {
		return nil, false, nil
	}
	res := &RolloutResult{UpdateRevision: set.Status.UpdateRevision}
	done := true
	ords := append([]int32(nil), o.w.Ordinals...)
	sort.Slice(ords, func(i, j int) bool { return ords[i] > ords[j] })
	for _, ord := range ords {
		p, stuck := o.ordinal(set, ord)
		res.Ordinals = append(res.Ordinals, p)
		if s := p.String(); o.last[ord] != s {
			o.last[ord] = s
			if o.w.Progress != nil {
				o.w.Progress(p)
			}
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

func (o *observer) ordinal(set *appsv1.StatefulSet, ord int32) (OrdinalProgress, *StuckError) {
	name := stsutil.PodName(set.Name, ord)
	p := OrdinalProgress{Ordinal: ord, Pod: name}
	pod, err := o.pods.Get(name)
	if err != nil { // a lister fails only with NotFound: the controller has not created it yet
		p.State = "waiting for pod"
		return p, nil //nolint:nilerr // not an error: the wait goes on
	}
	p.Node = pod.Spec.NodeName
	switch {
	case pod.DeletionTimestamp != nil:
		p.State = "terminating"
		return p, nil
	case pod.Labels[appsv1.ControllerRevisionHashLabelKey] != set.Status.UpdateRevision:
		p.State = "old revision"
		p.Message = "revision " + pod.Labels[appsv1.ControllerRevisionHashLabelKey] + ", want " + set.Status.UpdateRevision
		return p, nil
	case stsutil.PodReady(pod):
		p.State = "ready"
		return p, nil
	}
	if pod.Spec.NodeName == "" {
		p.State = "pending"
	} else {
		p.State = "not ready"
	}
	evs, _ := o.events.List(labels.Everything())
	msg, stuck := planner.JudgeWaitingPod(pod, func(name string) *corev1.PersistentVolumeClaim {
		c, _ := o.pvcs.Get(name)
		return c
	}, evs)
	p.Message = msg
	if stuck != nil && stuck.Cause != planner.CauseUnschedulable {
		return p, &StuckError{Ordinal: ord, Pod: name, Source: stuck.Source, Quote: stuck.Quote}
	}
	return p, nil
}
