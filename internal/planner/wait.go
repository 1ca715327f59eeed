package planner

import (
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/olapgke/terraform-provider-olapgke/internal/stsutil"
)

// The one judge of an awaited Pod, for every wait of the engine (the rollout waiter and the
// migration): the waiter waits, JudgeWait says whether the Pod is Ready, still coming, or will
// not come without intervention, so the two waits, the `rollout` attribute's quotes and the
// apply's errors cannot disagree.
//
// The policy (one for both waiters; WaitPolicy carries its two durations):
//   - A PV node affinity conflict fails at once: the scheduler will never place the Pod.
//   - A failure that a retry may still clear fails once the waiter has seen it, for the same
//     Pod and cause, for WaitPolicy.Grace (default DefaultWaitGrace) without a look in between
//     that showed it gone: ProvisioningFailed on an unbound claim of the Pod (the provisioner
//     retries; TopoLVM's capacity may be stale), a FailedMount event while no container has
//     started (the kubelet retries mounts), and a container waiting on a kubelet error
//     (ErrImagePull / ImagePullBackOff and the other image errors, CrashLoopBackOff,
//     CreateContainerConfigError, ...: the kubelet retries with back-off).
//   - Unschedulable for another reason fails after WaitPolicy.Unschedulable; 0 (the rollout's
//     setting) keeps waiting, since a node added or a Pod gone may end it.
//   - Anything else (ContainerCreating, a readiness probe not passing yet, an image still
//     pulling) is waiting, bounded only by the caller's timeout.

// StuckCause classifies why a Pod cannot become Ready without intervention.
type StuckCause string

const (
	// CausePVNodeAffinity: the scheduler cannot place the Pod because its PVs are pinned to nodes
	// the Pod may not use (never resolves by waiting).
	CausePVNodeAffinity StuckCause = "pv_node_affinity"
	// CauseProvisioningFailed: a claim of the Pod failed provisioning.
	CauseProvisioningFailed StuckCause = "provisioning_failed"
	// CauseUnschedulable: the scheduler cannot place it for another reason (may resolve: a node
	// added, a Pod gone).
	CauseUnschedulable StuckCause = "unschedulable"
	// CauseFailedMount: the kubelet cannot mount a volume of the Pod (event FailedMount).
	CauseFailedMount StuckCause = "failed_mount"
	// CauseImagePull: a container's image cannot be pulled (ErrImagePull, ImagePullBackOff, ...).
	CauseImagePull StuckCause = "image_pull"
	// CauseCrashLoop: a container keeps exiting (CrashLoopBackOff).
	CauseCrashLoop StuckCause = "crash_loop"
	// CauseContainerError: the kubelet cannot create or start a container
	// (CreateContainerConfigError, CreateContainerError, RunContainerError, hook errors).
	CauseContainerError StuckCause = "container_error"
)

// Stuck is the judgement of a waiting Pod.
type Stuck struct {
	Cause StuckCause
	// Source says where Quote comes from ("condition PodScheduled=False (Unschedulable) on Pod
	// hist-2", "event ProvisioningFailed on PVC cache-hist-2").
	Source, Quote string
}

// Messages of a permanent scheduling failure caused by PV node affinity: the scheduler's text since
// kubernetes/kubernetes#129887 and the one before it.
var pvAffinityMessages = []string{
	"didn't match PersistentVolume's node affinity",
	"volume node affinity conflict",
}

// PVNodeAffinityConflict reports whether a scheduler message says the Pod's PVs pin it to nodes it
// cannot use.
func PVNodeAffinityConflict(msg string) bool {
	for _, m := range pvAffinityMessages {
		if strings.Contains(msg, m) {
			return true
		}
	}
	return false
}

// containerFailures are the kubelet's waiting reasons of a container that a retry with back-off
// may or may not clear, by cause: kubernetes v1.37.2 pkg/kubelet/images/types.go (ErrImagePull,
// ImagePullBackOff, ErrImageNeverPull, InvalidImageName, ImageInspectError), cri-api
// pkg/errors (RegistryUnavailable, SignatureValidationFailed), pkg/kubelet/container/
// sync_result.go (CrashLoopBackOff, RunContainerError) and pkg/kubelet/kuberuntime/
// kuberuntime_container.go (CreateContainerConfigError, CreateContainerError,
// PreStartHookError, PostStartHookError).
var containerFailures = map[string]StuckCause{
	"ErrImagePull":               CauseImagePull,
	"ImagePullBackOff":           CauseImagePull,
	"ErrImageNeverPull":          CauseImagePull,
	"InvalidImageName":           CauseImagePull,
	"ImageInspectError":          CauseImagePull,
	"RegistryUnavailable":        CauseImagePull,
	"SignatureValidationFailed":  CauseImagePull,
	"CrashLoopBackOff":           CauseCrashLoop,
	"RunContainerError":          CauseContainerError,
	"CreateContainerConfigError": CauseContainerError,
	"CreateContainerError":       CauseContainerError,
	"PreStartHookError":          CauseContainerError,
	"PostStartHookError":         CauseContainerError,
}

// EventFailedMount is the kubelet's event reason for a volume it cannot mount (kubernetes v1.37.2
// pkg/kubelet/events/event.go FailedMountVolume).
const EventFailedMount = "FailedMount"

// DefaultWaitGrace is WaitPolicy.Grace when unset: twice the kubelet's first container restart
// and image pull back-off (10 s, doubling: kubernetes v1.37.2 pkg/kubelet/kubelet.go
// backOffPeriod, imageBackOffPeriod), so a retry is seen before a failure is final; also the
// migration's unschedulable_timeout default.
const DefaultWaitGrace = 20 * time.Second

// WaitPolicy holds the durations of the judgement (see the policy above).
type WaitPolicy struct {
	// Grace is how long a failure a retry may clear must last before the wait fails
	// (0: DefaultWaitGrace).
	Grace time.Duration
	// Unschedulable is how long a Pod may stay Unschedulable (not for PV node affinity) before
	// the wait fails; 0: it does not fail the wait.
	Unschedulable time.Duration
}

func (p WaitPolicy) grace(c StuckCause) (time.Duration, bool) {
	switch c {
	case CausePVNodeAffinity:
		return 0, true
	case CauseUnschedulable:
		return p.Unschedulable, p.Unschedulable > 0
	}
	if p.Grace <= 0 {
		return DefaultWaitGrace, true
	}
	return p.Grace, true
}

// WaitState is JudgeWait's answer.
type WaitState string

const (
	// WaitReady: the Pod is Running and Ready.
	WaitReady WaitState = "ready"
	// WaitWaiting: waiting may still end it (Cause, when set, is a failure within its grace).
	WaitWaiting WaitState = "waiting"
	// WaitFailed: it will not become Ready without intervention (Cause, Source, Quote say why).
	WaitFailed WaitState = "failed"
)

// WaitVerdict is the judgement of an awaited Pod.
type WaitVerdict struct {
	State WaitState
	// Cause, Source and Quote: the failure seen ("" while nothing is wrong), with where its words
	// come from ("event FailedMount on Pod hist-2", "container app of Pod hist-2 waiting
	// (ImagePullBackOff)") and the words, verbatim.
	Cause         StuckCause
	Source, Quote string
	// Message is the latest word about the Pod for progress lines: the scheduler's message, else
	// the failure's quote.
	Message string
	// Grace is the time the failure is allowed in all (0 for an immediate one) and Remaining
	// what is left of it (Waiting with a Cause only): the waiter looks again by then.
	Grace, Remaining time.Duration
	// For is how long the failure has been seen.
	For time.Duration
}

// Stuck is the verdict's failure as a Stuck (nil without one).
func (v WaitVerdict) Stuck() *Stuck {
	if v.Cause == "" {
		return nil
	}
	return &Stuck{Cause: v.Cause, Source: v.Source, Quote: v.Quote}
}

// JudgeWait judges pod, which a waiter awaits Running and Ready: pvc looks up a claim by name in
// the Pod's namespace (nil when absent), events are the namespace's events (others are ignored),
// and seen says how long the waiter has seen cause on this Pod without a break (WaitClock keeps
// it; nil: never). A terminating Pod is Waiting (for its deletion) and judged no further.
func JudgeWait(pod *corev1.Pod, pvc func(name string) *corev1.PersistentVolumeClaim, events []*corev1.Event,
	seen func(StuckCause) time.Duration, p WaitPolicy) WaitVerdict {
	if pod.DeletionTimestamp != nil {
		return WaitVerdict{State: WaitWaiting}
	}
	if stsutil.PodRunningAndReady(pod) {
		return WaitVerdict{State: WaitReady}
	}
	msg, st := waitSignal(pod, pvc, events)
	v := WaitVerdict{State: WaitWaiting, Message: msg}
	if st == nil {
		return v
	}
	v.Cause, v.Source, v.Quote = st.Cause, st.Source, st.Quote
	if v.Message == "" {
		v.Message = st.Quote
	}
	grace, fails := p.grace(st.Cause)
	if seen != nil {
		v.For = seen(st.Cause)
	}
	if !fails {
		return v
	}
	v.Grace = grace
	if v.For >= grace {
		v.State = WaitFailed
		return v
	}
	v.Remaining = grace - v.For
	return v
}

// waitSignal finds the strongest failure signal of a Pod that is not Ready, in this order: a PV
// node affinity conflict, ProvisioningFailed on an unbound claim, FailedMount before any
// container started, a container waiting on a kubelet error (init containers first), then
// Unschedulable. msg is the scheduler's latest message.
func waitSignal(pod *corev1.Pod, pvc func(name string) *corev1.PersistentVolumeClaim, events []*corev1.Event) (string, *Stuck) {
	msg := ""
	var unsched *Stuck
	for i := range pod.Status.Conditions {
		c := &pod.Status.Conditions[i]
		if c.Type != corev1.PodScheduled || c.Status != corev1.ConditionFalse {
			continue
		}
		msg = c.Message
		src := "condition PodScheduled=False (" + c.Reason + ") on Pod " + pod.Name
		if PVNodeAffinityConflict(c.Message) {
			return msg, &Stuck{Cause: CausePVNodeAffinity, Source: src, Quote: c.Message}
		}
		if c.Reason == corev1.PodReasonUnschedulable {
			unsched = &Stuck{Cause: CauseUnschedulable, Source: src, Quote: c.Message}
		}
	}
	for _, ev := range events {
		if aboutPod(ev, pod) && ev.Reason == "FailedScheduling" {
			msg = ev.Message
			if PVNodeAffinityConflict(ev.Message) {
				return msg, &Stuck{Cause: CausePVNodeAffinity, Source: "event FailedScheduling on Pod " + pod.Name, Quote: ev.Message}
			}
		}
	}
	if pvc != nil {
		for _, v := range pod.Spec.Volumes {
			if v.PersistentVolumeClaim == nil {
				continue
			}
			c := pvc(v.PersistentVolumeClaim.ClaimName)
			if c == nil || c.Status.Phase == corev1.ClaimBound || c.DeletionTimestamp != nil {
				continue
			}
			if ev := latestEvent(events, func(ev *corev1.Event) bool {
				return ev.InvolvedObject.Kind == "PersistentVolumeClaim" && ev.InvolvedObject.UID == c.UID && ev.Reason == "ProvisioningFailed"
			}); ev != nil {
				return msg, &Stuck{Cause: CauseProvisioningFailed, Source: "event ProvisioningFailed on PVC " + c.Name, Quote: ev.Message}
			}
		}
	}
	if pod.Spec.NodeName != "" && !containersStarted(pod) {
		if ev := latestEvent(events, func(ev *corev1.Event) bool { return aboutPod(ev, pod) && ev.Reason == EventFailedMount }); ev != nil {
			return msg, &Stuck{Cause: CauseFailedMount, Source: "event FailedMount on Pod " + pod.Name, Quote: ev.Message}
		}
	}
	for _, list := range [][]corev1.ContainerStatus{pod.Status.InitContainerStatuses, pod.Status.ContainerStatuses} {
		for _, cs := range list {
			w := cs.State.Waiting
			if w == nil {
				continue
			}
			if cause, ok := containerFailures[w.Reason]; ok {
				q := w.Reason
				if w.Message != "" {
					q += ": " + w.Message
				}
				return msg, &Stuck{Cause: cause, Source: "container " + cs.Name + " of Pod " + pod.Name + " waiting", Quote: q}
			}
		}
	}
	return msg, unsched
}

// aboutPod: ev is about pod (by UID when the event names one, else by name).
func aboutPod(ev *corev1.Event, pod *corev1.Pod) bool {
	if ev.InvolvedObject.Kind != "Pod" {
		return false
	}
	if ev.InvolvedObject.UID != "" {
		return ev.InvolvedObject.UID == pod.UID
	}
	return ev.InvolvedObject.Name == pod.Name && ev.InvolvedObject.Namespace == pod.Namespace
}

// containersStarted: some container of pod runs or ran (its volumes were mounted then).
func containersStarted(pod *corev1.Pod) bool {
	for _, list := range [][]corev1.ContainerStatus{pod.Status.InitContainerStatuses, pod.Status.ContainerStatuses} {
		for _, cs := range list {
			if cs.State.Running != nil || cs.State.Terminated != nil || cs.LastTerminationState.Terminated != nil {
				return true
			}
		}
	}
	return false
}

// latestEvent is the newest event that match accepts (nil when none).
func latestEvent(events []*corev1.Event, match func(*corev1.Event) bool) *corev1.Event {
	var out []*corev1.Event
	for _, ev := range events {
		if match(ev) {
			out = append(out, ev)
		}
	}
	if len(out) == 0 {
		return nil
	}
	sort.SliceStable(out, func(i, j int) bool { return EventTime(out[i]).Before(EventTime(out[j])) })
	return out[len(out)-1]
}

// EventTime is when an event last happened: lastTimestamp, else eventTime (events.k8s.io
// writers), else its creation.
func EventTime(e *corev1.Event) time.Time {
	switch {
	case !e.LastTimestamp.IsZero():
		return e.LastTimestamp.Time
	case !e.EventTime.IsZero():
		return e.EventTime.Time
	}
	return e.CreationTimestamp.Time
}

// WaitClock remembers, for one awaited ordinal, since when its current failure (Pod UID and
// cause) has been seen without a look in between that showed it gone. The zero value is ready.
type WaitClock struct {
	uid   types.UID
	cause StuckCause
	since time.Time
}

// Judge is JudgeWait at now with the failure durations c keeps, which it updates.
func (c *WaitClock) Judge(pod *corev1.Pod, pvc func(name string) *corev1.PersistentVolumeClaim, events []*corev1.Event,
	now time.Time, p WaitPolicy) WaitVerdict {
	v := JudgeWait(pod, pvc, events, func(cause StuckCause) time.Duration {
		if c.uid == pod.UID && c.cause == cause && !c.since.IsZero() {
			return now.Sub(c.since)
		}
		return 0
	}, p)
	switch {
	case v.Cause == "":
		c.Reset()
	case c.uid != pod.UID || c.cause != v.Cause || c.since.IsZero():
		c.uid, c.cause, c.since = pod.UID, v.Cause, now
	}
	return v
}

// Reset forgets the failure seen (the awaited Pod is gone or terminating).
func (c *WaitClock) Reset() { *c = WaitClock{} }

// Advice is what to do about a Pod stopped for cause c, for the rollout's and the migration's
// diagnostics ("" for causes whose callers advise themselves).
func (c StuckCause) Advice() string {
	switch c {
	case CauseImagePull:
		return "Fix the image reference, or the nodes' access to the registry (imagePullSecrets, the node " +
			"service account's Artifact Registry reader role)."
	case CauseCrashLoop:
		return "Read why the container exits (kubectl logs --previous POD) and fix its image, command or configuration."
	case CauseContainerError:
		return "Fix what the kubelet names (a missing ConfigMap or Secret, the command, a hook) in the pod template."
	case CauseFailedMount:
		return "Inspect the volume the kubelet names (kubectl describe pod POD; the PV's node and the TopoLVM node agent's log)."
	case CauseProvisioningFailed:
		return "Free or add capacity in the volume group the claim's StorageClass uses, or fix the StorageClass."
	}
	return ""
}
