package migration

import (
	"slices"
	"time"

	"github.com/olapgke/terraform-provider-olapgke/internal/planner"
)

// PreflightMode says who asks Preflight, and so how the steps are placed.
type PreflightMode int

const (
	// PreflightPlan is Plan's question over every step of the migration: the steps are placed
	// one after another (simulatePlacement), each seeing the earlier ones' Pods, as they will
	// run; a move with no target node at all is one problem for the migration (ordinal -1).
	PreflightPlan PreflightMode = iota
	// PreflightApply is the engine's question before a batch starts (engine.Migrate): each step
	// is placed alone against the live cluster, where the earlier steps have already happened
	// (StepCheck), and is judged on its own (PreflightResult.Steps), in the batch's order.
	PreflightApply
)

// PreflightOptions are what Preflight needs besides the steps.
type PreflightOptions struct {
	Mode PreflightMode
	// Claims are the node-local volumeClaimTemplates the moves recreate.
	Claims []string
	// Now is when node conditions are judged (NodeUnreachable); zero: the taints alone.
	Now time.Time
	// ForceDeleteOnUnreachableNodes: a step whose Pod is on a node that does not answer is
	// listed in Unreachable but is no problem (its Pod is force-deleted).
	ForceDeleteOnUnreachableNodes bool
	// Warm: moves are warm (MigrationOptions.Warm): their copies are placed with CopyRequest's
	// size, next to the old volumes.
	Warm bool
}

// StepPreflight is PreflightApply's verdict on one step.
type StepPreflight struct {
	Ordinal int32
	// Problem says why the step cannot land now, "" when it can.
	Problem string
	// Wait lists the target nodes TopoLVM is not ready on yet when that alone keeps the step
	// from landing: the engine waits for them (Problem says what does not fit now).
	Wait []planner.NodeWait
	// Target is the node the placement put the step on, when it lands (a warm move provisions
	// its copy there; the scheduler places the Pod once its claims are bound).
	Target string
}

// PreflightResult is Preflight's answer.
type PreflightResult struct {
	// Problems are the steps' placement problems (target nodes missing, capacity,
	// unschedulable) unless a TopoLVM wait explains them, then (unless
	// ForceDeleteOnUnreachableNodes) the unreachable nodes. PreflightPlan only.
	Problems []MigrationProblem
	// TopoLVMWaits are the target nodes the whole plan waits for (PreflightPlan only; see
	// MigrationPlan.TopoLVMWaits).
	TopoLVMWaits []planner.NodeWait
	// Unreachable are the steps (gate-only steps aside) whose Pod is on a node that does not
	// answer, in the steps' order.
	Unreachable []UnreachableOrdinal
	// Steps are the per-step verdicts, in the steps' order (PreflightApply only).
	Steps []StepPreflight
}

// Preflight is the one composition of the checks a migration runs before it deletes anything:
// can the steps land (target nodes, placement with kube-scheduler's filters, capacity), is
// TopoLVM alone why they do not (then wait instead), and are their Pods on nodes that answer.
// Plan asks it over every step (PreflightPlan) and the engine again before each batch
// (PreflightApply), so that plan and apply answer the same question with the same function;
// the modes differ only in how the steps are placed (see PreflightMode).
//
// In PreflightPlan the steps' TargetNode is set where the placement put them (steps is
// changed in place); in PreflightApply only each step's Ordinal and Action are read.
//
// The strategy (OnDelete, partition), PodDisruptionBudgets and RequireOthersReady are not
// part of it: Plan judges them over the whole migration (strategyProblem, pdbLimit,
// OthersDown), the engine against the live budget before each batch (PDBBlocks, OthersDown).
func (v *Migration) Preflight(steps []Move, opt PreflightOptions) PreflightResult {
	var res PreflightResult
	if opt.Mode == PreflightApply {
		res.Unreachable = v.unreachableSteps(steps, opt.Now)
		for _, m := range steps {
			why, wait, target := v.stepCheck(m.Ordinal, m.Action, opt.Claims, opt.Warm)
			res.Steps = append(res.Steps, StepPreflight{Ordinal: m.Ordinal, Problem: why, Wait: wait, Target: target})
		}
		return res
	}
	res.Problems = v.placementProblems(steps, opt.Claims, opt.Warm)
	// Target nodes TopoLVM is not ready on yet (a pool created moments ago): when they are
	// why the moves do not fit, the apply waits for them instead (topolvmready.go).
	if w := v.topoLVMWait(steps, opt.Claims, opt.Warm, res.Problems); len(w) > 0 {
		res.TopoLVMWaits = w
		res.Problems = slices.DeleteFunc(res.Problems, func(p MigrationProblem) bool { return placementProblem(p.Kind) })
	}
	// Pods on nodes that do not answer: deleting them is never confirmed.
	res.Unreachable = v.unreachableSteps(steps, opt.Now)
	if !opt.ForceDeleteOnUnreachableNodes {
		for _, u := range res.Unreachable {
			res.Problems = append(res.Problems, MigrationProblem{Kind: ProblemUnreachableNode, Ordinal: u.Ordinal,
				Message: u.Describe()})
		}
	}
	return res
}

// placementProblems places the steps one after another, as the scheduler will see them (only
// moves need new nodes: with none that can take them, that is the one problem).
func (v *Migration) placementProblems(steps []Move, claims []string, warm bool) []MigrationProblem {
	moving := false
	for _, m := range steps {
		moving = moving || m.Action == MigrationMove
	}
	if moving && len(v.targetNodes()) == 0 {
		return []MigrationProblem{{Kind: ProblemTargetNodesMissing, Ordinal: -1,
			Message: "no node can take the moved Pods: " + v.noTargetReason()}}
	}
	if len(steps) == 0 {
		return nil
	}
	return v.simulatePlacement(steps, claims, warm)
}
