// Package rollout predicts, per StatefulSet ordinal, what the StatefulSet controller and the
// scheduler do after an apply (PlanRollout: the controller simulated as the cluster's Kubernetes
// version runs it, placement judged by the planner kernel), the live rollout's status
// (Rollout, RolloutStatus: stuck ordinals) and the rollout's one-line summary.
//
// # Stages
//
// PlanRollout runs named stages that mirror the steps of the StatefulSet controller
// (pkg/controller/statefulset/stateful_set_control.go), so that a reader who knows the controller
// finds the same steps here. In order (plan.go, builder.build):
//
//  1. stageRevisions: getStatefulSetRevisions; the update and current revisions, and whether the
//     object is re-created (replace / recreate).
//  2. stageClaimPods: getPodsForStatefulSet; the Pods the set owns, by ordinal.
//  3. stageSimConfig and stageInitialPods: what the controller reads in the spec (policy,
//     strategy, partition, maxUnavailable) and the Pods' state it starts from.
//  4. simulate, twice (simulate.go; optimistic for the waves, actual for stalls). Each sync is
//     updateStatefulSet in its order: simProcessReplicas (processReplica over the replicas,
//     ascending: create missing Pods; OrderedReady stops at the first creation or unready Pod),
//     simProcessCondemned (processCondemned over the Pods outside the range, descending), then
//     simRollingUpdate (updateStatefulSetAfterInvariantEstablished, MaxUnavailableStatefulSet
//     on) or simLegacyRollingUpdate (the one-Pod-at-a-time loop with the gate off). Between
//     syncs simPassTime lets time pass (terminating Pods go, placeable Pods become Ready); at
//     the end simVerdict reads the stuck ordinals and whether the rollout stalls.
//  5. stageOrdinals: the split into replicas and condemned; the ordinals the plan covers.
//  6. stageOrdinal per ordinal: the action and wave, as processReplica (in range) or
//     processCondemned (out of range) treats it, and stageVerdict: the placement verdict
//     (the scheduler on the Pod the controller creates, or whether a kept Pod could come back;
//     stranded when it could not).
//  7. stageStall, then the disruption (maxUnavailable reached, PDBs exceeded) and, for an
//     immutable change, the replacement.
//
// The package has no clients, no Terraform types, no logging and no clock.
package rollout

import "github.com/olapgke/terraform-provider-olapgke/internal/planner"

// Action is what an apply does to one ordinal.
type Action string

const (
	ActionCreate   Action = "create"
	ActionDelete   Action = "delete"
	ActionRecreate Action = "recreate"
	ActionStale    Action = "stale"
	// ActionStranded is a stale ordinal (kept on the old revision: OnDelete, partition) whose
	// Pod could not come back in place if it were deleted or evicted, keeping its PVCs (its PVs
	// are pinned to nodes the update revision may not use): olapgke_statefulset_migration's to
	// move. Its Schedulable says whether the Pod the apply keeps is placed; Reason says why it
	// could not come back.
	ActionStranded  Action = "stranded"
	ActionUnchanged Action = "unchanged"
)

// PVC fates for deleted ordinals.
const (
	PVCsRetained = "retained"
	PVCsDeleted  = "deleted"
)

// OrdinalPlan is the prediction for one ordinal.
type OrdinalPlan struct {
	Ordinal int32
	Pod     string
	// Node is the node the Pod runs on today, "" when none.
	Node   string
	Action Action
	// Wave is the order the controller acts in: 0 = it does not act on this
	// ordinal in this apply; 1 = as soon as the apply lands; k+1 = once wave
	// k is Running and Ready (or, for deletions, gone). For Blocked ordinals
	// it is the wave they would have had without the stall.
	Wave int
	// Schedulable and Reason describe the Pod the ordinal runs after this
	// apply (for stale: the Pod it would get if deleted, keeping its PVCs;
	// for stranded: Schedulable is whether the kept Pod is placed, Reason why
	// it could not come back).
	Schedulable bool
	Reason      string
	// ShortReason is Reason without the ordinal and Pod it is about (planner.Verdict.Short), for
	// lists that name them already; "" when Reason names neither.
	ShortReason string
	// Blocked is true when an earlier wave stalls, so the controller never
	// reaches this ordinal.
	Blocked bool
	// NoPod is true when the controller deletes this ordinal's Pod but never
	// recreates it because a lower ordinal never becomes Ready
	// (OrderedReady with maxUnavailable > 1). The controller deletes the
	// higher ordinal first and keeps no expectations for Pods
	// (stateful_set_control.go): a sync that sees this deletion before the
	// lower ordinal's recreates this Pod at the update revision, and it stays
	// Pending like the lower one. Either way the rollout stalls at the same
	// wave and no PVC is touched.
	NoPod    bool
	Revision string // revision the ordinal's Pod has after the apply ("" for delete)
	Volumes  []planner.Volume
	// PVCsAfter is, for delete, "retained" or "deleted" (retention policy).
	PVCsAfter string
}

// Stall says where a rollout stops for good.
type Stall struct {
	Wave     int
	Ordinals []int32
	Reason   string
}

// Disruption summarises availability during the apply.
type Disruption struct {
	// MaxUnavailable is the number of ordinals in the desired range that are
	// not Running and Ready at the worst moment (Pods Pending today count).
	MaxUnavailable int32
	// Unbounded is true when the rollout stalls: the worst moment lasts
	// until someone intervenes.
	Unbounded bool
	// Waves is the number of waves the controller goes through.
	Waves int
	// PDBsExceeded names PodDisruptionBudgets selecting the Pods whose
	// allowed disruptions the worst moment exceeds (the controller does not
	// honour PDBs when it recreates Pods).
	PDBsExceeded []string
}

// RecreateMode is how olapgke carries out a change the API server refuses to
// make in place (immutable fields).
type RecreateMode string

const (
	// RecreateOrphan deletes the StatefulSet object with orphan propagation
	// and creates it again: Pods and PVCs are kept, and the new object adopts
	// them (and the ControllerRevisions) by selector. No Pod is deleted.
	RecreateOrphan RecreateMode = "orphan"
	// RecreateForeground deletes the object with its Pods first (the
	// selector changes, so the new object could not adopt them).
	RecreateForeground RecreateMode = "foreground"
)

// ClaimExpansion is one existing PVC grown in place to its claim template's
// new storage request.
type ClaimExpansion struct {
	Claim, PVC   string
	Ordinal      int32
	From, To     int64 // bytes: the PVC's request today, the template's new one
	Node         string
	StorageClass string
	// Retained: the claim of an ordinal outside the set's range (kept by whenScaled: Retain
	// after a scale-down); it grows like the others, so the ordinal comes back on a volume of
	// the template's size.
	Retained bool
	// Why a retained claim cannot grow and keeps its size (Replacement.Kept).
	Why string
}

// Replacement explains an immutable change that re-creates the StatefulSet.
type Replacement struct {
	Fields  []string
	Message string
	Mode    RecreateMode
	// WhenDeleted is the live retention policy applied when the old object is
	// deleted: "Retain" or "Delete" (foreground only: an orphaning delete
	// keeps every PVC).
	WhenDeleted string
	// Readopted are existing PVCs the new StatefulSet adopts by name.
	Readopted []string
	// Deleted are PVCs deleted with the old object (whenDeleted: Delete).
	Deleted []string
	// Orphaned are PVCs kept but no longer named by any claim template.
	Orphaned []string
	// Expansions are PVCs grown in place before the object is re-created
	// (a larger storage request in a claim template), retained claims of
	// scaled-down ordinals included.
	Expansions []ClaimExpansion
	// Kept are retained claims of scaled-down ordinals that cannot grow (their
	// node is gone, or it lacks the space) and keep their size: the ordinal
	// comes back on the smaller volume if the set is scaled up again. They do
	// not block the change.
	Kept []ClaimExpansion
	// Problems make the change impossible as planned (a shrink, a class
	// without allowVolumeExpansion, growth that does not fit a node).
	Problems []string
	// Explanation is a sentence for diagnostics.
	Explanation string
}

// Plan is the planner's answer.
type Plan struct {
	// Ordinals covers every ordinal in old ∪ new range and every existing
	// Pod, ascending.
	Ordinals []OrdinalPlan
	// UpdateRevision is the ControllerRevision name (<set>-<hash>) the
	// desired template resolves to, as the controller names it.
	UpdateRevision string
	// CurrentRevision is the live status.currentRevision ("" without Live).
	CurrentRevision string
	TemplateChanged bool
	Stall           *Stall
	Disruption      Disruption
	Replace         *Replacement
	// TopoLVMWaits are the nodes the desired template admits on which TopoLVM is not ready yet
	// (TopoLVMNotReady), when that alone keeps ordinals this apply creates or recreates from
	// being placed: with TopoLVM ready there every one of them would be. The scheduler retries
	// such Pods, so they land once TopoLVM is ready (a pool or a device class created in the
	// same apply). Empty otherwise.
	TopoLVMWaits []planner.NodeWait
	// Held are the ordinals this apply creates or recreates that Ordinals places, but that a
	// cordon or a node condition's taint keeps from being placed now (held.go). Ordinals never
	// depend on that state: it changes between a plan and its apply by itself.
	Held []HeldOrdinal
}
