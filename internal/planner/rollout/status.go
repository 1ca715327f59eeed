package rollout

import (
	"fmt"
	"sort"
	"strings"

	"github.com/olapgke/terraform-provider-olapgke/internal/stsutil"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
)

// RolloutStatus is the live rollout of a StatefulSet, for the `rollout`
// attribute: a stalled rollout must never be invisible.
type RolloutStatus struct {
	CurrentRevision string
	UpdateRevision  string
	Replicas        int32 // desired
	ReadyReplicas   int32
	UpdatedReplicas int32
	CurrentReplicas int32
	// Observed is false while the controller has not seen the latest spec.
	Observed bool
	// Complete: every desired Pod exists, is Ready and at the update
	// revision (OnDelete: every Pod Ready; stale Pods do not count against it).
	Complete bool
	// Stuck lists Pods that are not Ready, with the scheduler's message.
	Stuck []StuckOrdinal
}

// StuckOrdinal is one Pod that is not Running and Ready.
type StuckOrdinal struct {
	Ordinal  int32
	Pod      string
	Node     string
	Phase    string
	Revision string
	// Reason and Message come from the PodScheduled=False condition when the
	// scheduler cannot place the Pod (Reason "Unschedulable"), else from the
	// Ready condition or the first waiting container.
	Reason  string
	Message string
}

// Summary is a one-line description ("ordinal 2 (Pod olap-2) is Pending:
// Unschedulable: 0/6 nodes are available: ...").
func (s StuckOrdinal) Summary() string {
	msg := s.Reason
	if s.Message != "" {
		if msg != "" {
			msg += ": "
		}
		msg += s.Message
	}
	return strings.TrimSpace(fmt.Sprintf("ordinal %d (Pod %s) is %s at revision %s: %s", s.Ordinal, s.Pod, s.Phase, s.Revision, msg))
}

// Stalled is true when the update has not completed and some Pod is stuck.
func (r RolloutStatus) Stalled() bool {
	return !r.Complete && len(r.Stuck) > 0
}

// Rollout analyses the live rollout of set from its status and Pods.
func Rollout(live *appsv1.StatefulSet, pods []corev1.Pod) RolloutStatus {
	st := RolloutStatus{
		CurrentRevision: live.Status.CurrentRevision,
		UpdateRevision:  live.Status.UpdateRevision,
		Replicas:        int32(replicasOf(live)),
		ReadyReplicas:   live.Status.ReadyReplicas,
		UpdatedReplicas: live.Status.UpdatedReplicas,
		CurrentReplicas: live.Status.CurrentReplicas,
		Observed:        live.Status.ObservedGeneration >= live.Generation,
	}
	owned := stsutil.OwnedPods(live, pods)
	start, n := startOf(live), replicasOf(live)
	complete := st.Observed
	for o := start; o < start+n; o++ {
		p := owned[o]
		if p == nil {
			complete = false
			continue
		}
		if live.Spec.UpdateStrategy.Type != appsv1.OnDeleteStatefulSetStrategyType && p.Labels[stsutil.LabelControllerRevision] != st.UpdateRevision {
			partition := 0
			if ru := live.Spec.UpdateStrategy.RollingUpdate; ru != nil && ru.Partition != nil {
				partition = int(*ru.Partition)
			}
			if o-start >= partition {
				complete = false
			}
		}
		if stsutil.PodReady(p) && p.DeletionTimestamp == nil {
			continue
		}
		complete = false
		so := StuckOrdinal{Ordinal: int32(o), Pod: p.Name, Node: p.Spec.NodeName, Phase: string(p.Status.Phase), Revision: p.Labels[stsutil.LabelControllerRevision]}
		if p.DeletionTimestamp != nil {
			so.Phase = "Terminating"
		}
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse {
				so.Reason, so.Message = c.Reason, c.Message
			}
		}
		if so.Reason == "" {
			for _, cs := range p.Status.ContainerStatuses {
				if w := cs.State.Waiting; w != nil {
					so.Reason, so.Message = w.Reason, w.Message
					break
				}
			}
		}
		if so.Reason == "" {
			for _, c := range p.Status.Conditions {
				if c.Type == corev1.PodReady && c.Status != corev1.ConditionTrue {
					so.Reason, so.Message = c.Reason, c.Message
				}
			}
		}
		st.Stuck = append(st.Stuck, so)
	}
	sort.Slice(st.Stuck, func(i, j int) bool { return st.Stuck[i].Ordinal < st.Stuck[j].Ordinal })
	st.Complete = complete
	return st
}
