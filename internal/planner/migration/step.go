package migration

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/olapgke/terraform-provider-olapgke/internal/planner"
	"github.com/olapgke/terraform-provider-olapgke/internal/stsutil"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
)

// StepKind is the next action for an ordinal being moved.
type StepKind string

const (
	// StepDeletePVCs: delete Step.PVCs (UID preconditions) without waiting;
	// pvc-protection keeps them until the Pod is gone.
	StepDeletePVCs StepKind = "delete_pvcs"
	// StepDeletePod: delete Step.Pod (UID precondition).
	StepDeletePod StepKind = "delete_pod"
	// StepWait: nothing to do but wait for the controllers (Step.Reason).
	StepWait StepKind = "wait"
	// StepSoak: the new Pod is Ready; wait Step.Remaining of min_ready_seconds.
	StepSoak StepKind = "soak"
	// StepDone: the ordinal runs Ready on a target node with new pinned PVs.
	StepDone StepKind = "done"
	// StepFail: the move cannot finish by waiting (Step.Reason says why).
	StepFail StepKind = "fail"
)

// ObjectRef names an object and the UID an action is conditioned on.
type ObjectRef struct {
	Name string
	UID  types.UID
}

// Step is NextStep's answer.
type Step struct {
	Kind    StepKind
	Ordinal int32
	PVCs    []ObjectRef // StepDeletePVCs
	Pod     ObjectRef   // StepDeletePod; for wait/soak/done the current Pod
	Reason  string
	// Unschedulable is the scheduler's message while the new Pod cannot be
	// scheduled (PodScheduled=False, reason Unschedulable).
	Unschedulable string
	// Node is the node of the current Pod ("" when none).
	Node string
	// ReadySince is when the new Pod became Ready (soak and done).
	ReadySince time.Time
	// Remaining is the rest of the soak.
	Remaining time.Duration
}

// MoveProgress is what the executor remembers about an ordinal it started
// restarting or moving: the UIDs of the Pod and PVCs it found to replace
// before its first step. Zero value when unknown (a resumed apply): NextStep
// then decides from the live state alone.
type MoveProgress struct {
	OldPodUID  types.UID
	OldPVCUIDs map[string]types.UID // by PVC name
}

// StartProgress records the Pod and PVCs of ordinal o that the step
// replaces: those the decision predicates say must go by the live state.
// Call it once before the first step of an ordinal.
func (v *Migration) StartProgress(o int32, claims []string) MoveProgress {
	pr := MoveProgress{OldPVCUIDs: map[string]types.UID{}}
	if v.set == nil {
		return pr
	}
	pod := v.pod(o)
	if pod != nil && pod.DeletionTimestamp == nil && v.podNeedsReplace(pod, MoveProgress{}) != "" {
		pr.OldPodUID = pod.UID
	}
	for _, c := range claims {
		pvc := v.pvc(stsutil.ClaimPVCName(c, v.set.Name, o))
		if pvc != nil && pvc.DeletionTimestamp == nil && v.pvcNeedsReplace(pvc, MoveProgress{}) != "" {
			pr.OldPVCUIDs[pvc.Name] = pvc.UID
		}
	}
	return pr
}

// NextStep decides the single next action for ordinal o, from the live
// state (Live set; its template is the placement judged) and what the
// executor remembers. Every step is idempotent, so a resumed apply that calls
// NextStep again continues from any point: after the PVC deletion, after the
// Pod deletion, while waiting, during the soak.
//
// Order (see DESIGN.md "Decisions"): PVCs to replace first, then the Pod. A
// PVC is replaced only when pvcNeedsReplace says so (its PV is pinned where
// the template does not go, or it is the one remembered); a restart keeps
// every PVC. The Pod is replaced when podNeedsReplace says so, or when it
// holds a PVC being deleted.
func (v *Migration) NextStep(o int32, claims []string, pr MoveProgress, minReady time.Duration, now time.Time) Step {
	st := Step{Ordinal: o}
	if v.live == nil {
		st.Kind, st.Reason = StepFail, "the StatefulSet does not exist any more"
		return st
	}
	set := v.set
	podName := stsutil.PodName(set.Name, o)
	pod := v.pods[podName]
	if pod != nil {
		st.Pod = ObjectRef{Name: pod.Name, UID: pod.UID}
		st.Node = pod.Spec.NodeName
	}

	// 1. PVCs to replace that are still there and not being deleted.
	var del []ObjectRef
	var terminating, held []string
	for _, c := range claims {
		name := stsutil.ClaimPVCName(c, set.Name, o)
		pvc := v.pvc(name)
		if pvc == nil {
			continue
		}
		if pvc.DeletionTimestamp != nil {
			terminating = append(terminating, name)
			if pod != nil && v.mayHold(pod, pvc) {
				held = append(held, name)
			}
			continue
		}
		if why := v.pvcNeedsReplace(pvc, pr); why != "" {
			del = append(del, ObjectRef{Name: pvc.Name, UID: pvc.UID})
			st.Reason = "PVC " + name + ": " + why
		}
	}
	if len(del) > 0 {
		st.Kind, st.PVCs = StepDeletePVCs, del
		return st
	}

	// 2. The Pod.
	if pod != nil && pod.DeletionTimestamp != nil {
		st.Kind, st.Reason = StepWait, "Pod "+pod.Name+" is terminating"
		return st
	}
	if pod != nil {
		why := v.podNeedsReplace(pod, pr)
		if why == "" && len(held) > 0 {
			why = "holds PVC " + strings.Join(held, ", ") + ", which is being deleted"
		}
		if why != "" {
			// A Pod created by the controller after the step began that is
			// still to be replaced means the live template does not give it
			// what the plan expected: deleting it again would loop.
			if pr.OldPodUID != "" && pod.UID != pr.OldPodUID && len(terminating) == 0 && pod.Spec.NodeName != "" {
				st.Kind = StepFail
				st.Reason = fmt.Sprintf("the recreated Pod %s (uid %s) %s too. The live StatefulSet template does not move it", pod.Name, pod.UID, why)
				return st
			}
			st.Kind, st.Reason = StepDeletePod, "Pod "+pod.Name+" "+why
			return st
		}
	}

	// 3. Waiting for the controllers.
	if len(terminating) > 0 {
		st.Kind = StepWait
		st.Reason = "waiting for PVC " + strings.Join(terminating, ", ") + " to be removed"
		return st
	}
	if pod == nil {
		st.Kind, st.Reason = StepWait, "waiting for the StatefulSet controller to create Pod "+podName
		return st
	}
	if pod.Spec.NodeName == "" {
		st.Kind, st.Unschedulable = StepWait, UnschedulableMessage(pod)
		st.Reason = "waiting for Pod " + pod.Name + " to be scheduled"
		return st
	}
	for _, c := range claims {
		name := stsutil.ClaimPVCName(c, set.Name, o)
		pvc := v.pvc(name)
		if pvc == nil {
			st.Kind, st.Reason = StepWait, "waiting for PVC "+name+" to be created"
			return st
		}
		pv := v.boundPV(pvc)
		if pv == nil {
			st.Kind, st.Reason = StepWait, "waiting for PVC "+name+" to be bound"
			return st
		}
		if pin := v.ix.PinnedNode(pv); pin != "" && pin != pod.Spec.NodeName {
			// A bound PV pinned to another node than the Pod's. The scheduler never places a
			// Pod against a bound PV's node affinity, so its claim was not bound yet when it
			// was placed: the StatefulSet controller created the claim unbound (a warm move's
			// hand-over: the ordinal's claim name is free only once the old claim is gone),
			// the scheduler chose a node to provision on, and the PV controller bound the
			// claim to the copy reserved for it (pv_controller.go syncUnboundClaim: a
			// pre-bound PV comes first). The Pod cannot mount its volume there; deleting it
			// (nothing of the volume is touched) lets the controller recreate it and the
			// scheduler place it by the now bound claim, on the PV's node.
			st.Kind = StepDeletePod
			st.Reason = fmt.Sprintf("Pod %s was placed on node %s, but PV %s of its PVC %s is pinned to %q (the claim was bound after the Pod was placed): "+
				"it cannot mount its volume there", pod.Name, pod.Spec.NodeName, pv.Name, name, pin)
			return st
		}
	}
	if !stsutil.PodReady(pod) || pod.Status.Phase != corev1.PodRunning {
		st.Kind = StepWait
		st.Reason = fmt.Sprintf("waiting for Pod %s on node %s to be Running and Ready (phase %s)", pod.Name, pod.Spec.NodeName, pod.Status.Phase)
		return st
	}
	st.ReadySince = readySince(pod)
	if minReady > 0 {
		if el := now.Sub(st.ReadySince); el < minReady {
			st.Kind, st.Remaining = StepSoak, minReady-el
			st.Reason = fmt.Sprintf("Pod %s Ready on node %s; soaking %s more", pod.Name, pod.Spec.NodeName, st.Remaining.Round(time.Second))
			return st
		}
	}
	st.Kind = StepDone
	st.Reason = fmt.Sprintf("Pod %s Ready on node %s", pod.Name, pod.Spec.NodeName)
	return st
}

func readySince(p *corev1.Pod) time.Time {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
			return c.LastTransitionTime.Time
		}
	}
	return time.Time{}
}

// mayHold reports whether pod can be using pvc: it is not scheduled yet, or it is on a node
// pvc's PV admits (or pvc has no PV). A Pod the scheduler placed on a node the PV is not pinned
// to cannot be: the PVC informer has not caught up with the PVC's removal while the Pod informer
// already shows the Pod recreated with its successor (the two watches are apart; a dropped or
// expired one is relisted later). Deleting that Pod would restart an ordinal that has finished.
func (v *Migration) mayHold(pod *corev1.Pod, pvc *corev1.PersistentVolumeClaim) bool {
	pv := v.boundPV(pvc)
	if pod.Spec.NodeName == "" || pv == nil {
		return true
	}
	p := v.ix.Pin(pv)
	if p.Unconstrained {
		return true
	}
	for _, i := range p.Nodes {
		if v.ix.Nodes[i].Name == pod.Spec.NodeName {
			return true
		}
	}
	return false
}

// Batch returns the next ordinals to replace together: the first
// `parallelism` of remaining (in order) — but ordinals whose Pod is not Ready
// today go first, since replacing them costs no availability.
func (v *Migration) Batch(remaining []int32, parallelism int) []int32 {
	if parallelism < 1 {
		parallelism = 1
	}
	idx := make([]int, len(remaining))
	for i := range idx {
		idx[i] = i
	}
	if v.set != nil {
		sort.SliceStable(idx, func(a, b int) bool {
			ra, rb := v.notReady(remaining[idx[a]]) == "", v.notReady(remaining[idx[b]]) == ""
			return !ra && rb
		})
	}
	var out []int32
	for _, i := range idx {
		if len(out) == parallelism {
			break
		}
		out = append(out, remaining[i])
	}
	return out
}

// PDBBlocks says why moving batch now would exceed a PodDisruptionBudget that
// selects the set's Pods, "" when it fits. Each Ready Pod in batch costs one
// disruption out of the budget's status.disruptionsAllowed (the disruption
// controller's latest count; a Pod already not Ready costs nothing). The
// executor checks it before each ordinal starts: a budget that was fine at plan time
// can be used up by then (another Pod went down, the budget changed), and
// right after a move the controller needs a moment to count the new Pod.
func (v *Migration) PDBBlocks(batch []int32) string {
	s := v.s
	if v.live == nil || v.set == nil {
		return ""
	}
	cost := 0
	for _, o := range batch {
		if v.notReady(o) == "" {
			cost++
		}
	}
	if cost == 0 {
		return ""
	}
	podLabels := labels.Set(v.live.Spec.Template.Labels)
	for i := range s.PDBs {
		pdb := &s.PDBs[i]
		if pdb.Namespace != v.live.Namespace || !pdbSelects(pdb, podLabels) {
			continue
		}
		if pdb.Status.ObservedGeneration < pdb.Generation {
			return fmt.Sprintf("PodDisruptionBudget %s/%s changed and the disruption controller has not counted it yet", pdb.Namespace, pdb.Name)
		}
		if allowed := v.disruptionsAllowedNow(pdb); cost > allowed {
			return fmt.Sprintf("PodDisruptionBudget %s/%s allows %d disruption(s) now (%d of %d desired healthy) and moving ordinal(s) %s takes %d",
				pdb.Namespace, pdb.Name, allowed, pdb.Status.CurrentHealthy, pdb.Status.DesiredHealthy, JoinOrdinals(batch), cost)
		}
	}
	return ""
}

// disruptionsAllowedNow is pdb's status.disruptionsAllowed, lowered to what the snapshot's own
// Pods allow: the disruption controller counts healthy Pods as Ready and not being deleted
// (kubernetes pkg/controller/disruption/disruption.go, countHealthyPods) and allows
// currentHealthy - desiredHealthy. Its status lags a deletion the executor has just made;
// with a window of ordinals moving (engine.Migrate), the next ordinal must not start on a
// count that still has the previous one healthy. The snapshot holds only the StatefulSet's
// Pods: a budget that expects more Pods than the set has replicas also selects others (a
// budget over several workloads), which the snapshot cannot count, so its status is used as
// it is.
func (v *Migration) disruptionsAllowedNow(pdb *policyv1.PodDisruptionBudget) int {
	allowed := int(pdb.Status.DisruptionsAllowed)
	if v.live == nil || pdb.Status.ExpectedPods > stsutil.Replicas(v.live) {
		return allowed
	}
	healthy := 0
	for i := range v.s.Pods {
		p := &v.s.Pods[i]
		if p.Namespace == pdb.Namespace && p.DeletionTimestamp == nil && pdbSelects(pdb, labels.Set(p.Labels)) && stsutil.PodReady(p) {
			healthy++
		}
	}
	return min(allowed, max(0, healthy-int(pdb.Status.DesiredHealthy)))
}

// JoinOrdinals writes ordinals as "2, 1, 0" for messages.
func JoinOrdinals(os []int32) string {
	parts := make([]string, len(os))
	for i, o := range os {
		parts[i] = strconv.Itoa(int(o))
	}
	return strings.Join(parts, ", ")
}

// OthersDown judges the ordinals of the set that the migration leaves alone (outside skip) and
// that are not Running and Ready, as require_others_ready does at plan and before each ordinal starts.
// Those in down stop the migration. Those in comingUp are not Ready yet but run where and as the
// template says (see comingUp): the apply waits for them (up to ordinal_timeout) instead of
// refusing. Ordinals the live set does not have yet (a scale-up in the same apply) are not
// others: the controller creates them. Entries read "ordinal N: why".
func (v *Migration) OthersDown(claims []string, skip ...[]int32) (down, comingUp []string) {
	if v.set == nil || v.live == nil {
		return nil, nil
	}
	skipped := map[int32]bool{}
	for _, os := range skip {
		for _, o := range os {
			skipped[o] = true
		}
	}
	for _, o := range stsutil.OrdinalRange(v.set) {
		if skipped[o] || !stsutil.InRange(v.live, o) {
			continue
		}
		why := v.notReady(o)
		switch {
		case why == "":
		case v.comingUp(o, claims):
			comingUp = append(comingUp, fmt.Sprintf("ordinal %d: %s (scheduled on node %s at the update revision, its PVCs bound)",
				o, why, v.pod(o).Spec.NodeName))
		default:
			down = append(down, fmt.Sprintf("ordinal %d: %s", o, why))
		}
	}
	return down, comingUp
}

// comingUp: ordinal o's Pod is scheduled on a node the template selects, at the update
// revision, Pending or Running, and each of its node-local PVCs is bound to a PV that fits the
// template: what a restart or move leaves while the Pod starts. Its readiness is all that is
// left (for example after an apply that was stopped once the Pod was recreated, before it was
// Ready: a Druid historical loading its segments can take minutes).
func (v *Migration) comingUp(o int32, claims []string) bool {
	pod := v.pod(o)
	if pod == nil || pod.DeletionTimestamp != nil || pod.Spec.NodeName == "" ||
		(pod.Status.Phase != corev1.PodPending && pod.Status.Phase != corev1.PodRunning) ||
		v.targetRev == "" || pod.Labels[stsutil.LabelControllerRevision] != v.targetRev || v.nodeRejects(pod.Spec.NodeName) != "" {
		return false
	}
	for _, c := range claims {
		pvc := v.pvc(stsutil.ClaimPVCName(c, v.set.Name, o))
		if pvc == nil || pvc.DeletionTimestamp != nil || v.boundPV(pvc) == nil || v.pvcNeedsReplace(pvc, MoveProgress{}) != "" {
			return false
		}
	}
	return true
}

// TargetProblem checks, at apply time, that the live template can take moved
// Pods somewhere; "" when it can.
func (v *Migration) TargetProblem() string {
	if v.set == nil {
		return "the StatefulSet does not exist"
	}
	if len(v.targetNodes()) == 0 {
		return "no node can take the moved Pods: " + v.noTargetReason()
	}
	return ""
}

// InFlux lists what is changing right now among the set's ordinals
// (a move or a Pod creation under way): PVCs being deleted, missing or
// unbound, Pods missing, terminating or unscheduled. (A generation the
// controller has not observed yet is not counted: olapgke_statefulset waits
// for it, and the executor waits for it before acting.) While any is true, moves computed now can
// differ seconds later, so callers should not promise them at plan time.
func (v *Migration) InFlux(claims []string) []string {
	if v.live == nil {
		return nil
	}
	set := v.live
	var out []string
	for _, o := range stsutil.OrdinalRange(set) {
		pod := v.pods[stsutil.PodName(set.Name, o)]
		switch {
		case pod == nil:
			out = append(out, "Pod "+stsutil.PodName(set.Name, o)+" does not exist")
		case pod.DeletionTimestamp != nil:
			out = append(out, "Pod "+pod.Name+" is terminating")
		case pod.Spec.NodeName == "":
			out = append(out, "Pod "+pod.Name+" is not scheduled")
		}
		for _, c := range claims {
			name := stsutil.ClaimPVCName(c, set.Name, o)
			pvc := v.pvc(name)
			switch {
			case pvc == nil:
				out = append(out, "PVC "+name+" does not exist")
			case pvc.DeletionTimestamp != nil:
				out = append(out, "PVC "+name+" is being deleted")
			case pvc.Spec.VolumeName == "":
				out = append(out, "PVC "+name+" is not bound")
			}
		}
	}
	return out
}

// StepProblem places ordinal o again against this snapshot, as Plan did, before the executor
// deletes anything of it: a restart must still fit back on its node, a move must still find a
// target node. "" when it can land.
func (v *Migration) StepProblem(o int32, action MigrationAction, claims []string) string {
	why, _ := v.StepCheck(o, action, claims)
	return why
}

// StepCheck is StepProblem plus Plan's decision about TopoLVM readiness (topoLVMWait): when
// the step does not land now only because TopoLVM is not ready yet on target nodes, wait
// lists them and the executor waits (why says what does not fit now).
func (v *Migration) StepCheck(o int32, action MigrationAction, claims []string) (why string, wait []planner.NodeWait) {
	why, wait, _ = v.stepCheck(o, action, claims, false)
	return why, wait
}

// stepCheck is StepCheck plus the node the placement put the ordinal on when it lands (a warm
// move provisions its copy there, of CopyRequest's size: warm).
func (v *Migration) stepCheck(o int32, action MigrationAction, claims []string, warm bool) (why string, wait []planner.NodeWait, target string) {
	if v.set == nil {
		return "the StatefulSet does not exist", nil, ""
	}
	m := []Move{v.move(o, claims, v.affinity.Describe(), ordinalNeed{action: action})}
	var probs []MigrationProblem
	if action == MigrationMove && len(v.targetNodes()) == 0 {
		probs = []MigrationProblem{{Kind: ProblemTargetNodesMissing, Ordinal: o, Message: "no node can take the moved Pod: " + v.noTargetReason()}}
	} else {
		probs = v.simulatePlacement(m, claims, warm)
	}
	if len(probs) == 0 {
		return "", nil, m[0].TargetNode
	}
	return probs[0].Message, v.topoLVMWait(m, claims, warm, probs), ""
}
