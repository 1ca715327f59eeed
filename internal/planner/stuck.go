package planner

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// The judge of a Pod that is not Ready yet, for the waits of the engine (rollout and migration):
// the waiter waits, this says whether waiting can end by itself, so the `rollout` attribute and
// the apply's errors cannot disagree.

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

// JudgeWaitingPod looks at a Pod that is not Ready (and not terminating): the scheduler's latest
// word about it (PodScheduled=False, or a FailedScheduling event) and ProvisioningFailed events
// on its unbound claims. It returns the latest message and, when waiting cannot end by itself
// (PV node affinity) or a claim failed provisioning, the Stuck judgement; Unschedulable for
// another reason is returned as Stuck with CauseUnschedulable, for callers that give it a grace
// period. pvc looks up a claim by name in the Pod's namespace (nil when absent).
func JudgeWaitingPod(pod *corev1.Pod, pvc func(name string) *corev1.PersistentVolumeClaim, events []*corev1.Event) (string, *Stuck) {
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
		if ev.InvolvedObject.Kind == "Pod" && ev.InvolvedObject.UID == pod.UID && ev.Reason == "FailedScheduling" {
			msg = ev.Message
			if PVNodeAffinityConflict(ev.Message) {
				return msg, &Stuck{Cause: CausePVNodeAffinity, Source: "event FailedScheduling on Pod " + pod.Name, Quote: ev.Message}
			}
		}
	}
	for _, v := range pod.Spec.Volumes {
		if v.PersistentVolumeClaim == nil {
			continue
		}
		c := pvc(v.PersistentVolumeClaim.ClaimName)
		if c == nil || c.Status.Phase == corev1.ClaimBound {
			continue
		}
		for _, ev := range events {
			if ev.InvolvedObject.Kind == "PersistentVolumeClaim" && ev.InvolvedObject.UID == c.UID && ev.Reason == "ProvisioningFailed" {
				return msg, &Stuck{Cause: CauseProvisioningFailed, Source: "event ProvisioningFailed on PVC " + c.Name, Quote: ev.Message}
			}
		}
	}
	return msg, unsched
}
