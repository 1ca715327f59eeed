package migration

import (
	"fmt"
	"time"

	"github.com/olapgke/terraform-provider-olapgke/internal/planner"
)

// UnreachableOrdinal is an ordinal whose current Pod is on a node that does not answer.
type UnreachableOrdinal struct {
	Ordinal int32
	Pod     string
	Node    string
	// Why is what NodeUnreachable found ("condition Ready=Unknown since ..., taint ...").
	Why string
	// Terminating: the Pod is already being deleted (it stays Terminating).
	Terminating bool
}

// Describe is one line for diagnostics.
func (u UnreachableOrdinal) Describe() string {
	s := fmt.Sprintf("ordinal %d: Pod %s on node %s (%s)", u.Ordinal, u.Pod, u.Node, u.Why)
	if u.Terminating {
		s += ", already Terminating"
	}
	return s
}

// Unreachable judges ordinal o's current Pod (PodOnUnreachableNode), nil when it has none or its
// node answers.
func (v *Migration) Unreachable(o int32, now time.Time) *UnreachableOrdinal {
	if v.set == nil {
		return nil
	}
	pod := v.pod(o)
	if pod == nil {
		return nil
	}
	st := planner.PodOnUnreachableNode(pod, v.ix.Node(pod.Spec.NodeName), now)
	if st == nil {
		return nil
	}
	return &UnreachableOrdinal{Ordinal: o, Pod: pod.Name, Node: pod.Spec.NodeName, Why: st.Quote,
		Terminating: pod.DeletionTimestamp != nil}
}

// unreachableSteps are the steps whose Pod is on a node that does not answer.
func (v *Migration) unreachableSteps(steps []Move, now time.Time) []UnreachableOrdinal {
	var out []UnreachableOrdinal
	for _, m := range steps {
		if m.Action == MigrationGate {
			continue
		}
		if u := v.Unreachable(m.Ordinal, now); u != nil {
			out = append(out, *u)
		}
	}
	return out
}
