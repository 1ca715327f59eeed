// Package migration decides olapgke_statefulset_migration: per ordinal restart, move or leave
// (NewMigration, Migration.Plan), the preflight checks the plan and the engine both ask before
// anything is deleted (Migration.Preflight), the next idempotent step the engine takes (NextStep,
// Batch, OthersDown), step estimates from recorded durations, the migration's summary, and the day-2
// verbs' requests as the migration reads them (verbs.go).
//
// The package has no clients, no Terraform types, no logging and no clock.
package migration

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/olapgke/terraform-provider-olapgke/internal/planner"
	"github.com/olapgke/terraform-provider-olapgke/internal/stsutil"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// Migration: replacing StatefulSet ordinals one at a time. Per ordinal there
// are two steps, chosen by one predicate (Migration.need, decide.go)
// that the plan (Migration.Plan) and the apply (Migration.NextStep) both call:
//
//   - restart: the Pod must be recreated (it is not at the update revision
//     under OnDelete) and its node and every node-local PV still satisfy the
//     template's placement: only the Pod is deleted; the controller recreates
//     it with the same PVCs on the same node, its cache kept;
//   - move: the Pod's node or one of its PVs fails the placement: the
//     node-local PVCs are deleted, then the Pod, which comes back on a node the
//     template selects with new PVs pinned there.
//
// A Migration reads a Snapshot: Live is the StatefulSet as stored; Desired,
// when set, is the StatefulSet that will be live when the migration runs (the
// same apply changes it first), as the API server's dry run defaulted it; its
// template, strategy and update revision are the ones judged.

// MigrationOrder is the order ordinals are moved in.
type MigrationOrder string

const (
	OrderDescending MigrationOrder = "descending"
	OrderAscending  MigrationOrder = "ascending"
	// OrderExplicit moves MigrationOptions.Ordinals in the order given.
	OrderExplicit MigrationOrder = "explicit"
)

// MigrationAction is how a migration replaces one ordinal's Pod.
type MigrationAction string

const (
	// MigrationRestart deletes only the Pod (UID precondition); the controller
	// recreates it with the same PVCs, so it comes back on the same node.
	MigrationRestart MigrationAction = "restart"
	// MigrationMove deletes the ordinal's node-local PVCs, then the Pod.
	MigrationMove MigrationAction = "move"
)

// MigrationOptions are the user's choices.
type MigrationOptions struct {
	// Ordinals restricts the candidates; nil means every ordinal of the set.
	// Of the candidates only those that need a move are moved.
	Ordinals []int32
	Order    MigrationOrder
	// VolumeClaims names the node-local volumeClaimTemplates whose PVCs are
	// recreated; nil means those whose PVs carry a required node affinity
	// (or, with no PV yet, whose StorageClass is TopoLVM's).
	VolumeClaims []string
	// MaxUnavailable is how many ordinals move at once (>= 1); a PDB
	// selecting the Pods lowers it.
	MaxUnavailable int
	// RequireOthersReady refuses to move while an ordinal that is not moved
	// is not Running and Ready.
	RequireOthersReady bool
	// Gated: the migration has hydration gates. Candidates the live set marks as pending
	// gates (stsutil.AnnotationGatesPending) and that need no step are planned as
	// MigrationGate, ahead of every other step.
	Gated bool
	// ForceDeleteOnUnreachableNodes: an ordinal whose Pod is on a node that does not answer
	// (Unreachable) is moved anyway, its Pod force-deleted, instead of being a problem.
	ForceDeleteOnUnreachableNodes bool
	// Now is when node conditions are judged (NodeUnreachable); zero: the taints alone.
	Now time.Time
	// Warm: moves are warm (a copy block, warm.go): each move's copy claims (CopyRequest) are
	// placed on the target node while the ordinal's old volumes still exist, and Move.CopyBytes
	// says how much space that takes there.
	Warm bool
}

// Move is one ordinal the migration replaces: restarts in place or moves.
type Move struct {
	Ordinal int32
	Pod     string
	// Action is restart (only the Pod is deleted) or move (PVCs, then Pod).
	Action   MigrationAction
	FromNode string // node the Pod runs on today, "" when none
	// Target describes where it goes: the node pool named by the template
	// (cloud.google.com/gke-nodepool) or the template's node selector.
	Target string
	// Volumes are the node-local claims a move recreates, as they are today;
	// none for a restart (every PVC is kept).
	Volumes []planner.Volume
	Reason  string
	// TargetNode is the node the placement simulation put it on (a
	// prediction: the scheduler decides); for a restart, the node it keeps.
	TargetNode string
	// CopyBytes is, for a warm move (MigrationOptions.Warm), the space its copy's claims take
	// on the target node while both copies exist: the sum of CopyRequest over the node-local
	// claims. 0 otherwise.
	CopyBytes int64
}

// MigrationProblemKind classifies a preflight problem.
type MigrationProblemKind string

const (
	ProblemNoStatefulSet      MigrationProblemKind = "no_statefulset"
	ProblemUnknownOrdinal     MigrationProblemKind = "unknown_ordinal"
	ProblemUnknownClaim       MigrationProblemKind = "unknown_claim"
	ProblemTargetNodesMissing MigrationProblemKind = "target_nodes_missing"
	ProblemCapacity           MigrationProblemKind = "capacity"
	ProblemStrategy           MigrationProblemKind = "strategy"
	ProblemPDB                MigrationProblemKind = "pdb"
	ProblemOthersUnhealthy    MigrationProblemKind = "others_unhealthy"
	// ProblemUnschedulable: a restarted or moved Pod could not be placed
	// after the steps before it.
	ProblemUnschedulable MigrationProblemKind = "unschedulable"
	// ProblemUnreachableNode: the Pod of an ordinal to replace is on a node that does not
	// answer (NodeUnreachable): its deletion would never be confirmed.
	ProblemUnreachableNode MigrationProblemKind = "unreachable_node"
)

// MigrationProblem is a reason the migration cannot succeed.
type MigrationProblem struct {
	Kind MigrationProblemKind
	// Ordinal is the ordinal at fault, -1 when the problem is not about one.
	Ordinal int32
	// Message says what was found, without advice.
	Message string
	// Fix is the change to the StatefulSet that clears the problem, when the planner knows one
	// ("set updateStrategy.type to OnDelete"); the caller says where to make it.
	Fix string
}

// MigrationPlan is Migration.Plan's answer.
type MigrationPlan struct {
	// Moves in the order they run.
	Moves []Move
	// Claims are the node-local volumeClaimTemplates that are recreated.
	Claims []string
	Target string
	// TargetNodes are the nodes the template admits that can take new Pods.
	TargetNodes []string
	// UpdateRevision is the revision the replaced Pods come back at.
	UpdateRevision string
	// Parallelism is how many ordinals move at once.
	Parallelism int
	Problems    []MigrationProblem
	// TopoLVMWaits are the target nodes TopoLVM is not ready on yet, when that alone keeps the
	// moves from fitting: the apply waits for them before deleting anything (no problem then).
	TopoLVMWaits []planner.NodeWait
	// OthersComingUp are ordinals left alone that are not Ready yet but run where and as the
	// template says (OthersDown): with RequireOthersReady the apply waits for them before its
	// first batch (no problem then).
	OthersComingUp []string
	// Unreachable are the steps whose Pod is on a node that does not answer: problems, or with
	// ForceDeleteOnUnreachableNodes the Pods the apply force-deletes.
	Unreachable []UnreachableOrdinal
}

// OK reports whether the plan has no problems.
func (p MigrationPlan) OK() bool { return len(p.Problems) == 0 }

// migrationSet is the set whose template and strategy are judged.
func migrationSet(s *planner.Snapshot) *appsv1.StatefulSet {
	if s.Desired != nil {
		return s.Desired
	}
	return s.Live
}

// Migration is a read-only view of one snapshot for everything a migration
// decides: build one per snapshot with NewMigration and ask it (the plan, the
// next step of an ordinal, the next batch, PDB and readiness checks). Like
// kubectl drain's Helper, it indexes the snapshot once. Not safe for
// concurrent use.
type Migration struct {
	s        *planner.Snapshot
	ix       *planner.Index
	set      *appsv1.StatefulSet // judged set (Desired or Live)
	live     *appsv1.StatefulSet
	tmpl     *corev1.PodTemplateSpec
	affinity planner.PodPlacement
	pods     map[string]*corev1.Pod
	// targetRev is the revision replaced Pods come back at: the live update
	// revision, or the one the controller will give Desired's template.
	targetRev string
	onDelete  bool
	// restart is the restart olapgke_restart_ordinals requested (stsutil.AnnotationRestart on
	// the live set): Pod name -> the UID to replace.
	restart map[string]string
}

// Snapshot is the snapshot the view was built on.
func (v *Migration) Snapshot() *planner.Snapshot { return v.s }

// NewMigration indexes s. It keeps pointers into s: do not change s while
// the view is in use.
func NewMigration(s *planner.Snapshot) *Migration {
	v := &Migration{s: s, ix: planner.NewIndex(s), set: migrationSet(s), live: s.Live, pods: map[string]*corev1.Pod{}}
	if v.set != nil {
		v.tmpl = &v.set.Spec.Template
		v.affinity = planner.NewPodPlacement(v.tmpl)
		v.onDelete = v.set.Spec.UpdateStrategy.Type == appsv1.OnDeleteStatefulSetStrategyType
	}
	if v.live != nil {
		if r := stsutil.ReadRestart(v.live); r != nil {
			v.restart = r.Pods
		}
		v.targetRev = v.live.Status.UpdateRevision
		stale := v.live.Status.ObservedGeneration < v.live.Generation
		if s.Desired != nil && (stale || !apiequality.Semantic.DeepEqual(s.Desired.Spec.Template, v.live.Spec.Template)) {
			// The template changes before the migration runs, or the
			// controller has not named the live one yet: name the revision
			// as the controller will (it reuses an equal one).
			var cc int32
			if v.live.Status.CollisionCount != nil {
				cc = *v.live.Status.CollisionCount
			}
			if rev, err := planner.ResolveUpdateRevision(s.Desired, planner.OwnedRevisions(v.live, s.Revisions), cc); err == nil {
				v.targetRev = rev
			}
		}
	}
	ns := ""
	if v.set != nil {
		ns = v.set.Namespace
	}
	for i := range s.Pods {
		p := &s.Pods[i]
		if ns != "" && p.Namespace != "" && p.Namespace != ns {
			continue
		}
		v.pods[p.Name] = p
	}
	return v
}

// UpdateRevision is the revision replaced Pods come back at ("" without a
// live StatefulSet).
func (v *Migration) UpdateRevision() string { return v.targetRev }

func (v *Migration) pvc(name string) *corev1.PersistentVolumeClaim {
	return v.ix.PVC(v.set.Namespace, name)
}

func (v *Migration) pod(o int32) *corev1.Pod { return v.pods[stsutil.PodName(v.set.Name, o)] }

func (v *Migration) boundPV(c *corev1.PersistentVolumeClaim) *corev1.PersistentVolume {
	if c == nil || c.Spec.VolumeName == "" {
		return nil
	}
	return v.ix.PV(c.Spec.VolumeName)
}

// DefaultClaims returns the node-local claim templates of the set: those
// with a bound PV that has a required node affinity; for templates with no
// PV yet, those whose StorageClass is provisioned by TopoLVM.
func (v *Migration) DefaultClaims() []string {
	if v.set == nil {
		return nil
	}
	var out []string
	for _, vct := range v.set.Spec.VolumeClaimTemplates {
		seenPV, pinned := false, false
		for _, o := range stsutil.OrdinalRange(v.set) {
			pv := v.boundPV(v.pvc(stsutil.ClaimPVCName(vct.Name, v.set.Name, o)))
			if pv == nil {
				continue
			}
			seenPV = true
			if pv.Spec.NodeAffinity != nil && pv.Spec.NodeAffinity.Required != nil && len(pv.Spec.NodeAffinity.Required.NodeSelectorTerms) > 0 {
				pinned = true
			}
		}
		if !seenPV {
			sc := v.ix.Scs[v.ix.StorageClassFor(vct.Spec.StorageClassName)]
			pinned = sc != nil && (sc.Provisioner == stsutil.ProvisionerTopoLVM || sc.Provisioner == stsutil.ProvisionerTopoLVMLegacy)
		}
		if pinned {
			out = append(out, vct.Name)
		}
	}
	return out
}

// Plan selects the ordinals to restart or move and runs the preflight checks (Preflight, then
// the strategy, PodDisruptionBudgets and RequireOthersReady over the whole migration).
func (v *Migration) Plan(opt MigrationOptions) MigrationPlan {
	var plan MigrationPlan
	if v.set == nil || v.live == nil {
		plan.Problems = append(plan.Problems, MigrationProblem{Kind: ProblemNoStatefulSet, Ordinal: -1,
			Message: "the StatefulSet does not exist"})
		return plan
	}
	set := v.set
	plan.Target = v.affinity.Describe()
	plan.UpdateRevision = v.targetRev

	// Claims.
	if opt.VolumeClaims == nil {
		plan.Claims = v.DefaultClaims()
	} else {
		known := map[string]bool{}
		for _, vct := range set.Spec.VolumeClaimTemplates {
			known[vct.Name] = true
		}
		for _, c := range opt.VolumeClaims {
			if !known[c] {
				plan.Problems = append(plan.Problems, MigrationProblem{Kind: ProblemUnknownClaim, Ordinal: -1,
					Message: fmt.Sprintf("volume claim %q is not a volumeClaimTemplate of StatefulSet %s/%s (it has %s)",
						c, set.Namespace, set.Name, strings.Join(claimNames(set), ", "))})
				continue
			}
			plan.Claims = append(plan.Claims, c)
		}
	}

	// Candidates.
	rng := stsutil.OrdinalRange(set)
	inRange := map[int32]bool{}
	for _, o := range rng {
		inRange[o] = true
	}
	cands := rng
	if opt.Ordinals != nil {
		cands = nil
		seen := map[int32]bool{}
		for _, o := range opt.Ordinals {
			if seen[o] {
				continue
			}
			seen[o] = true
			if !inRange[o] {
				plan.Problems = append(plan.Problems, MigrationProblem{Kind: ProblemUnknownOrdinal, Ordinal: o,
					Message: fmt.Sprintf("ordinal %d is not an ordinal of StatefulSet %s/%s (it has %s)",
						o, set.Namespace, set.Name, describeRange(rng))})
				continue
			}
			cands = append(cands, o)
		}
	}

	// Selection: one predicate per ordinal (restart, move or leave).
	for _, o := range cands {
		if n := v.need(o, plan.Claims); n.action != "" {
			plan.Moves = append(plan.Moves, v.move(o, plan.Claims, plan.Target, n))
		}
	}
	if opt.Warm {
		for i := range plan.Moves {
			if plan.Moves[i].Action == MigrationMove {
				plan.Moves[i].CopyBytes = v.CopyBytes(plan.Moves[i].Ordinal, plan.Claims)
			}
		}
	}
	orderMoves(plan.Moves, opt)
	// steps are the restarts and moves (they delete something); gate-only steps go first.
	steps := plan.Moves
	if opt.Gated {
		gates := v.pendingGates(cands, plan.Moves)
		plan.Moves = append(gates, plan.Moves...)
		steps = plan.Moves[len(gates):]
	}
	moving := 0
	for _, m := range plan.Moves {
		if m.Action == MigrationMove {
			moving++
		}
	}

	// Target nodes (only moves need new nodes).
	for _, n := range v.targetNodes() {
		plan.TargetNodes = append(plan.TargetNodes, n.Name)
	}
	// Preflight: placement step after step, TopoLVM waits, unreachable nodes (preflight.go;
	// the engine asks the same before each batch).
	pf := v.Preflight(steps, PreflightOptions{Mode: PreflightPlan, Claims: plan.Claims, Now: opt.Now,
		ForceDeleteOnUnreachableNodes: opt.ForceDeleteOnUnreachableNodes, Warm: opt.Warm})
	plan.Problems = append(plan.Problems, pf.Problems...)
	plan.TopoLVMWaits = pf.TopoLVMWaits
	plan.Unreachable = pf.Unreachable

	// Strategy (a restart needs OnDelete by construction: see need).
	if moving > 0 {
		if p, ok := v.strategyProblem(rng); ok {
			plan.Problems = append(plan.Problems, p)
		}
	}

	// PDBs and parallelism.
	plan.Parallelism = opt.MaxUnavailable
	if plan.Parallelism < 1 {
		plan.Parallelism = 1
	}
	if len(steps) > 0 {
		par, probs := v.pdbLimit(steps, plan.Parallelism)
		plan.Parallelism = par
		plan.Problems = append(plan.Problems, probs...)
	}

	// Others ready.
	if opt.RequireOthersReady && len(plan.Moves) > 0 {
		var moved []int32
		for _, m := range plan.Moves {
			moved = append(moved, m.Ordinal)
		}
		down, up := v.OthersDown(plan.Claims, moved)
		if len(down) > 0 {
			plan.Problems = append(plan.Problems, MigrationProblem{Kind: ProblemOthersUnhealthy, Ordinal: -1,
				Message: "ordinals that are not replaced are not Running and Ready: " + strings.Join(down, "; ")})
		}
		plan.OthersComingUp = up
	}
	return plan
}

// pendingGates are the gate-only steps: candidates whose gates an earlier run did not see pass
// and that need no restart or move now (one that does is gated again after it), in the order
// they were started (ascending).
func (v *Migration) pendingGates(cands []int32, steps []Move) []Move {
	isCand := map[int32]bool{}
	for _, o := range cands {
		isCand[o] = true
	}
	for _, m := range steps {
		isCand[m.Ordinal] = false
	}
	var out []Move
	for _, o := range stsutil.GatesPending(v.live) {
		if !isCand[o] {
			continue
		}
		m := Move{Ordinal: o, Pod: stsutil.PodName(v.set.Name, o), Action: MigrationGate,
			Reason: "an earlier apply restarted or moved it and stopped before its gates passed; nothing of it is deleted again"}
		if pod := v.pod(o); pod != nil {
			m.FromNode, m.TargetNode = pod.Spec.NodeName, pod.Spec.NodeName
		}
		out = append(out, m)
	}
	return out
}

func claimNames(set *appsv1.StatefulSet) []string {
	var out []string
	for _, v := range set.Spec.VolumeClaimTemplates {
		out = append(out, v.Name)
	}
	if len(out) == 0 {
		return []string{"none"}
	}
	return out
}

func describeRange(r []int32) string {
	if len(r) == 0 {
		return "no ordinals"
	}
	return fmt.Sprintf("ordinals %d..%d", r[0], r[len(r)-1])
}

// orderMoves sorts moves as opt says (explicit: the order of opt.Ordinals).
func orderMoves(moves []Move, opt MigrationOptions) {
	switch opt.Order {
	case OrderAscending:
		sort.SliceStable(moves, func(i, j int) bool { return moves[i].Ordinal < moves[j].Ordinal })
	case OrderExplicit:
		pos := map[int32]int{}
		for i, o := range opt.Ordinals {
			if _, ok := pos[o]; !ok {
				pos[o] = i
			}
		}
		sort.SliceStable(moves, func(i, j int) bool { return pos[moves[i].Ordinal] < pos[moves[j].Ordinal] })
	default:
		sort.SliceStable(moves, func(i, j int) bool { return moves[i].Ordinal > moves[j].Ordinal })
	}
}

func (v *Migration) move(o int32, claims []string, target string, n ordinalNeed) Move {
	set := v.set
	m := Move{Ordinal: o, Pod: stsutil.PodName(set.Name, o), Action: n.action, Target: target, Reason: n.reason}
	if pod := v.pod(o); pod != nil {
		m.FromNode = pod.Spec.NodeName
	}
	if n.action != MigrationMove {
		return m
	}
	for _, c := range claims {
		vol := planner.Volume{Claim: c, PVC: stsutil.ClaimPVCName(c, set.Name, o)}
		if pv := v.boundPV(v.pvc(vol.PVC)); pv != nil {
			vol.PV = pv.Name
			vol.PinnedNode = v.ix.PinnedNode(pv)
		}
		m.Volumes = append(m.Volumes, vol)
	}
	return m
}

// targetNodes are the nodes a new Pod of the template can be placed on:
// required node affinity, not cordoned, NoSchedule/NoExecute taints tolerated.
func (v *Migration) targetNodes() []*corev1.Node {
	var out []*corev1.Node
	for _, n := range v.ix.Nodes {
		if ok, _ := v.affinity.Admits(n); ok {
			out = append(out, n)
		}
	}
	return out
}

func (v *Migration) noTargetReason() string {
	matching, evacuated, reasons := 0, 0, map[string]int{}
	for _, n := range v.ix.Nodes {
		ok, _ := v.affinity.Matches(n)
		if !ok {
			if planner.Evacuating(n) != "" {
				if f, _ := planner.JudgeNode(v.affinity.Req, nil, n, planner.CheckMatch); f == planner.FailNone {
					evacuated++
				}
			}
			continue
		}
		matching++
		if _, why := v.affinity.Admits(n); why != "" {
			reasons[why]++
		}
	}
	if matching == 0 && evacuated > 0 {
		return fmt.Sprintf("the template placement (%s) admits only nodes being evacuated (%d, taint %s): change it to admit other nodes first",
			v.affinity.Describe(), evacuated, stsutil.TaintEvacuating)
	}
	if matching == 0 {
		return fmt.Sprintf("none of the %d nodes matches the template placement (%s)", len(v.ix.Nodes), v.affinity.Describe())
	}
	var parts []string
	for why, n := range reasons {
		parts = append(parts, fmt.Sprintf("%d node(s) %s", n, why))
	}
	sort.Strings(parts)
	return fmt.Sprintf("%d node(s) match the template placement (%s) but %s", matching, v.affinity.Describe(), strings.Join(parts, ", "))
}

// simulatePlacement places the steps one after another with kube-scheduler's Filter plugins
// (scheduling.go), as they will happen: the ordinal's old Pod is removed, then its new Pod is
// placed and assumed on the node it lands on, so each later step sees the earlier ones'
// resources, ports, affinity, spread and storage. A restart keeps every PVC, so its PVs pin it
// back to its node (a cordon, a taint, resources taken there since stop it); a move gets new
// PVCs for the node-local claims (WaitForFirstConsumer, CSIStorageCapacity): of the template's
// size, or for a warm move (warm) of the copy's (CopyRequest), which the target node must hold
// while the old volumes still exist.
func (v *Migration) simulatePlacement(moves []Move, claims []string, warm bool) []MigrationProblem {
	var probs []MigrationProblem
	pl := v.ix.Placer()
	local := map[string]bool{}
	for _, c := range claims {
		local[c] = true
	}
	for i := range moves {
		m := &moves[i]
		pl.RemovePod(v.ix, v.set.Namespace, m.Pod)
		vd := pl.Place(v.ix, v.podFromTemplate(m.Ordinal), v.stepClaims(m.Ordinal, m.Action, local, warm), true)
		if vd.OK {
			m.TargetNode = vd.Node
			continue
		}
		kind, what := ProblemUnschedulable, "cannot be restarted in place"
		if m.Action == MigrationMove {
			what = "cannot be placed on the target nodes after the steps before it"
			if strings.Contains(vd.Reason, "enough free storage") {
				kind = ProblemCapacity
				if warm {
					what += fmt.Sprintf(" (its warm copy needs %s on the target node while its old volumes still exist)",
						resource.NewQuantity(v.CopyBytes(m.Ordinal, claims), resource.BinarySI))
				}
			}
		}
		probs = append(probs, MigrationProblem{Kind: kind, Ordinal: m.Ordinal,
			Message: fmt.Sprintf("ordinal %d %s; the scheduler says: %s", m.Ordinal, what, vd.Reason)})
	}
	return probs
}

// podFromTemplate is the Pod the controller creates for ordinal o from the judged template.
func (v *Migration) podFromTemplate(o int32) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: stsutil.PodName(v.set.Name, o), Namespace: v.set.Namespace,
		Labels: v.tmpl.Labels, Annotations: v.tmpl.Annotations}, Spec: v.tmpl.Spec}
}

// stepClaims are the claims ordinal o's new Pod mounts after the step: a restart keeps every
// bound PVC; a move gets new claims for the node-local templates (and keeps the others), of
// the template's request, or for a warm move of the copy's (CopyRequest).
func (v *Migration) stepClaims(o int32, action MigrationAction, local map[string]bool, warm bool) []planner.ClaimState {
	var out []planner.ClaimState
	for i := range v.set.Spec.VolumeClaimTemplates {
		vct := &v.set.Spec.VolumeClaimTemplates[i]
		name := stsutil.ClaimPVCName(vct.Name, v.set.Name, o)
		c := planner.ClaimState{Claim: vct.Name, PVC: name}
		pvc := v.pvc(name)
		pv := v.boundPV(pvc)
		fresh := pv == nil || pvc.DeletionTimestamp != nil || (action == MigrationMove && local[vct.Name])
		if !fresh {
			c.PV = pv
		} else {
			c.Spec = &vct.Spec
			c.StorageClass = v.ix.StorageClassFor(vct.Spec.StorageClassName)
			if q, ok := vct.Spec.Resources.Requests[corev1.ResourceStorage]; ok {
				c.RequestBytes = q.Value()
			}
			if warm && action == MigrationMove && local[vct.Name] && pvc != nil {
				q := CopyRequest(vct, pvc)
				c.RequestBytes = q.Value()
			}
		}
		out = append(out, c)
	}
	return out
}

// strategyProblem reports when the update strategy makes the controller act
// on its own (RollingUpdate without a partition above every ordinal) or
// recreate moved Pods at the old revision (below the partition while a
// template change is pending).
func (v *Migration) strategyProblem(rng []int32) (MigrationProblem, bool) {
	st := v.set.Spec.UpdateStrategy
	if st.Type == appsv1.OnDeleteStatefulSetStrategyType {
		return MigrationProblem{}, false
	}
	partition := int32(0)
	if st.RollingUpdate != nil && st.RollingUpdate.Partition != nil {
		partition = *st.RollingUpdate.Partition
	}
	highest := int32(-1)
	if len(rng) > 0 {
		highest = rng[len(rng)-1]
	}
	pending := v.live.Status.CurrentRevision != "" && v.live.Status.CurrentRevision != v.live.Status.UpdateRevision
	if v.s.Desired != nil && !planner.PlacementEqual(&v.s.Desired.Spec.Template, &v.live.Spec.Template) {
		pending = true
	}
	if partition <= highest {
		// A partition above every ordinal is no way out while a template change is pending (the
		// second refusal below): offer it only when none is.
		alt := ""
		if !pending {
			alt = fmt.Sprintf(" (or a partition above %d)", highest)
		}
		return MigrationProblem{Kind: ProblemStrategy, Ordinal: -1, Message: fmt.Sprintf(
			"StatefulSet %s/%s uses RollingUpdate with partition %d: the controller itself replaces ordinals %d..%d "+
				"whenever the template changes, keeping their PVCs (the Pods then cannot leave the nodes their PVs are pinned to)",
			v.set.Namespace, v.set.Name, partition, max(partition, rngStart(rng)), highest),
			Fix: "set updateStrategy.type to OnDelete" + alt}, true
	}
	if pending {
		return MigrationProblem{Kind: ProblemStrategy, Ordinal: -1, Message: fmt.Sprintf(
			"StatefulSet %s/%s uses RollingUpdate with partition %d, above every ordinal: a deleted Pod is recreated "+
				"from the current revision, not the changed template, so it would not move",
			v.set.Namespace, v.set.Name, partition),
			Fix: "set updateStrategy.type to OnDelete"}, true
	}
	return MigrationProblem{}, false
}

func rngStart(r []int32) int32 {
	if len(r) == 0 {
		return 0
	}
	return r[0]
}

// pdbLimit lowers the parallelism to what the PodDisruptionBudgets selecting
// the Pods allow. Moving a Pod that is already not Ready costs no budget.
func (v *Migration) pdbLimit(moves []Move, par int) (int, []MigrationProblem) {
	var probs []MigrationProblem
	podLabels := labels.Set(v.live.Spec.Template.Labels)
	readyMoves := 0
	for _, m := range moves {
		if v.notReady(m.Ordinal) == "" {
			readyMoves++
		}
	}
	for i := range v.s.PDBs {
		pdb := &v.s.PDBs[i]
		if pdb.Namespace != "" && pdb.Namespace != v.set.Namespace {
			continue
		}
		if !pdbSelects(pdb, podLabels) {
			continue
		}
		allowed := int(pdb.Status.DisruptionsAllowed)
		if allowed < 1 {
			if readyMoves > 0 {
				probs = append(probs, MigrationProblem{Kind: ProblemPDB, Ordinal: -1, Message: fmt.Sprintf(
					"PodDisruptionBudget %s/%s selects the Pods and allows %d disruptions now (%d of %d desired healthy); "+
						"moving a Ready Pod would exceed it",
					pdb.Namespace, pdb.Name, allowed, pdb.Status.CurrentHealthy, pdb.Status.DesiredHealthy)})
			}
			continue
		}
		if allowed < par {
			par = allowed
		}
	}
	return par, probs
}

func pdbSelects(pdb *policyv1.PodDisruptionBudget, l labels.Set) bool {
	if pdb.Spec.Selector == nil {
		return false
	}
	sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
	if err != nil || sel.Empty() {
		return false
	}
	return sel.Matches(l)
}

// notReady returns why ordinal o is not Running and Ready, "" when it is.
func (v *Migration) notReady(o int32) string {
	pod := v.pods[stsutil.PodName(v.set.Name, o)]
	switch {
	case pod == nil:
		return "Pod " + stsutil.PodName(v.set.Name, o) + " does not exist"
	case pod.DeletionTimestamp != nil:
		return "Pod " + pod.Name + " is terminating"
	case pod.Status.Phase != corev1.PodRunning:
		msg := "Pod " + pod.Name + " is " + string(pod.Status.Phase)
		if m := UnschedulableMessage(pod); m != "" {
			msg += ": " + m
		}
		return msg
	case !stsutil.PodReady(pod):
		return "Pod " + pod.Name + " is not Ready"
	}
	return ""
}

// UnschedulableMessage returns the scheduler's message when the Pod's
// PodScheduled condition is False with reason Unschedulable.
func UnschedulableMessage(p *corev1.Pod) string {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
			return c.Message
		}
	}
	return ""
}
