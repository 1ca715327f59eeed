// Package planner is the kernel of olapgke's pure decisions: the Snapshot (Kubernetes API
// objects as data) and its Index, placement verdicts (can a Pod run, can it come back on the
// nodes its local PVs are pinned to; node.go judges one node), the scheduling simulation's
// bridge (scheduling.go), TopoLVM readiness per node, the controller's revision hash, the one
// wait judgement (wait.go: JudgeWait), unreachable nodes, local data lost outside Terraform and
// the volume-group bootstrap's progress. The questions built on it have their own packages:
// planner/rollout (what an apply does per ordinal), planner/migration (the migration's plan and
// next step) and planner/gates (hydration gates' verdicts).
//
// The package has no clients, no Terraform types, no logging and no clock.
package planner

import (
	"github.com/olapgke/terraform-provider-olapgke/internal/k8sfeatures"
	"github.com/olapgke/terraform-provider-olapgke/internal/schedsim"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	storagev1 "k8s.io/api/storage/v1"
)

// Snapshot is everything the planner looks at. The snapshot package fills it
// with LIST calls; tests build it by hand.
type Snapshot struct {
	// Desired is the StatefulSet as defaulted by a server-side dry run; nil
	// when the set is being destroyed.
	Desired *appsv1.StatefulSet
	// Live is the StatefulSet as stored today; nil when it does not exist yet.
	Live *appsv1.StatefulSet
	// Revisions are the ControllerRevisions in the namespace (the planner
	// keeps those owned by Live).
	Revisions []appsv1.ControllerRevision
	// Pods are the StatefulSet's Pods (its namespace and selector).
	Pods []corev1.Pod
	// AllPods are every Pod of the cluster, for the scheduling simulation (resources, ports,
	// affinity and spread of other workloads); nil means Pods.
	AllPods        []corev1.Pod
	PVCs           []corev1.PersistentVolumeClaim
	PVs            []corev1.PersistentVolume
	Nodes          []corev1.Node
	StorageClasses []storagev1.StorageClass
	// Capacities are CSIStorageCapacity objects; TopoLVM's node annotations
	// capacity.topolvm.io/<device-class> are read from Nodes.
	Capacities []storagev1.CSIStorageCapacity
	// CSIDrivers (storageCapacity: true makes the scheduler check Capacities) and CSINodes
	// (per-node volume limits) as the scheduler reads them.
	CSIDrivers []storagev1.CSIDriver
	CSINodes   []storagev1.CSINode
	PDBs       []policyv1.PodDisruptionBudget
	// PodCache, when set, carries bound pods' scheduling data from one snapshot's simulation
	// to the next (the migration executor looks at the cluster many times); a memo only, it
	// never changes a verdict.
	PodCache *PodCache
	// Server is the control plane's effective Kubernetes version and the feature
	// gates observed off; the rollout is simulated as that version's
	// StatefulSet controller runs it (zero: Kubernetes 1.37).
	Server k8sfeatures.Server
	// Immutable is set by the caller when the API server's dry run rejected
	// an in-place update of Live (immutable fields).
	Immutable *ImmutableChange
}

// PodCache is the scheduling simulation's memo of bound Pods (schedsim.PodCache): give one to
// every Snapshot of the same cluster that is simulated one after another.
type PodCache = schedsim.PodCache

// NewPodCache returns an empty PodCache.
func NewPodCache() *PodCache { return schedsim.NewPodCache() }

// ImmutableChange is the API server's answer to an in-place update it refuses.
type ImmutableChange struct {
	// Fields are the field paths the server named (e.g. "spec").
	Fields []string
	// Message is the server's message, verbatim.
	Message string
}

// Volume is one volumeClaimTemplate of one ordinal.
type Volume struct {
	Claim      string // volumeClaimTemplate name
	PVC        string // <claim>-<set>-<ordinal>
	PV         string // bound PV, "" when not bound (yet)
	PinnedNode string // node the PV's required node affinity pins it to, "" when none
}

// Verdict is the answer of a placement predicate.
type Verdict struct {
	OK     bool
	Reason string
	// Short is Reason without the ordinal and the Pod it is about, for a list whose items name
	// them already; "" when Reason names neither (the scheduler's message).
	Short string
	// Node is one node the Pod can run on (when OK), or the node its PVs pin
	// it to (when not OK and pinned).
	Node string
}

// ClaimState is one PVC the Pod will mount, as the scheduler will see it.
type ClaimState struct {
	Claim string // volumeClaimTemplate name ("" for plain volumes)
	PVC   string // claim name
	// PV is the bound PV; nil when the claim is still to be provisioned.
	PV *corev1.PersistentVolume
	// StorageClass and Request describe a claim still to be provisioned.
	StorageClass string
	RequestBytes int64
	// Spec is the claim template's spec for a claim still to be provisioned (access modes,
	// volume mode), when known.
	Spec *corev1.PersistentVolumeClaimSpec
}
