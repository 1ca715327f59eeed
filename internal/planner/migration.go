package planner

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// Migration: moving StatefulSet ordinals one at a time to the nodes the
// template selects, recreating their node-local PVCs. PlanMigration decides
// which ordinals move and whether the move can succeed (preflight);
// NextStep (migration_step.go) decides the single next action for an ordinal
// being moved. Both read a Snapshot: Live is the StatefulSet as stored;
// Desired, when set, is the StatefulSet that will be live when the migration
// runs (the same apply changes it first), and its template and strategy are
// the ones judged.

// MigrationOrder is the order ordinals are moved in.
type MigrationOrder string

const (
	OrderDescending MigrationOrder = "descending"
	OrderAscending  MigrationOrder = "ascending"
	// OrderExplicit moves MigrationOptions.Ordinals in the order given.
	OrderExplicit MigrationOrder = "explicit"
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
}

// Move is one ordinal to move.
type Move struct {
	Ordinal  int32
	Pod      string
	FromNode string // node the Pod runs on today, "" when none
	// Target describes where it goes: the node pool named by the template
	// (cloud.google.com/gke-nodepool) or the template's node selector.
	Target string
	// Volumes are the node-local claims that are recreated, as they are today.
	Volumes []Volume
	Reason  string
	// TargetNode is the node the capacity simulation placed it on (a
	// prediction: the scheduler decides).
	TargetNode string
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
)

// MigrationProblem is a reason the migration cannot succeed.
type MigrationProblem struct {
	Kind MigrationProblemKind
	// Ordinal is the ordinal at fault, -1 when the problem is not about one.
	Ordinal int32
	Message string
}

// MigrationPlan is PlanMigration's answer.
type MigrationPlan struct {
	// Moves in the order they run.
	Moves []Move
	// Claims are the node-local volumeClaimTemplates that are recreated.
	Claims []string
	Target string
	// TargetNodes are the nodes the template admits that can take new Pods.
	TargetNodes []string
	// Parallelism is how many ordinals move at once.
	Parallelism int
	Problems    []MigrationProblem
}

// OK reports whether the plan has no problems.
func (p MigrationPlan) OK() bool { return len(p.Problems) == 0 }

// migrationSet is the set whose template and strategy are judged.
func migrationSet(s *Snapshot) *appsv1.StatefulSet {
	if s.Desired != nil {
		return s.Desired
	}
	return s.Live
}

// OrdinalRange returns the ordinals of set: [start, start+replicas).
func OrdinalRange(set *appsv1.StatefulSet) []int32 {
	start, n := int32(0), int32(1)
	if set.Spec.Ordinals != nil {
		start = set.Spec.Ordinals.Start
	}
	if set.Spec.Replicas != nil {
		n = *set.Spec.Replicas
	}
	out := make([]int32, 0, n)
	for i := int32(0); i < n; i++ {
		out = append(out, start+i)
	}
	return out
}

// PodName is the name of ordinal o's Pod.
func PodName(set string, o int32) string { return set + "-" + strconv.Itoa(int(o)) }

// ClaimPVCName is the name of ordinal o's PVC for claim template claim.
func ClaimPVCName(claim, set string, o int32) string {
	return claim + "-" + set + "-" + strconv.Itoa(int(o))
}

// migrationView bundles the lookups PlanMigration and NextStep share.
type migrationView struct {
	s        *Snapshot
	ix       *Index
	set      *appsv1.StatefulSet // judged set (Desired or Live)
	live     *appsv1.StatefulSet
	tmpl     *corev1.PodTemplateSpec
	affinity podPlacement
	pods     map[string]*corev1.Pod
	updRev   string
}

func newMigrationView(s *Snapshot) *migrationView {
	v := &migrationView{s: s, ix: NewIndex(s), set: migrationSet(s), live: s.Live, pods: map[string]*corev1.Pod{}}
	if v.set != nil {
		v.tmpl = &v.set.Spec.Template
		v.affinity = newPodPlacement(v.tmpl)
	}
	if v.live != nil {
		v.updRev = v.live.Status.UpdateRevision
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

func (v *migrationView) pvc(name string) *corev1.PersistentVolumeClaim {
	return v.ix.PVC(v.set.Namespace, name)
}

func (v *migrationView) boundPV(c *corev1.PersistentVolumeClaim) *corev1.PersistentVolume {
	if c == nil || c.Spec.VolumeName == "" {
		return nil
	}
	return v.ix.PV(c.Spec.VolumeName)
}

// DefaultMigrationClaims returns the node-local claim templates of the set:
// those with a bound PV that has a required node affinity; for templates
// with no PV yet, those whose StorageClass is provisioned by TopoLVM.
func DefaultMigrationClaims(s *Snapshot) []string {
	v := newMigrationView(s)
	if v.set == nil {
		return nil
	}
	return v.defaultClaims()
}

func (v *migrationView) defaultClaims() []string {
	var out []string
	for _, vct := range v.set.Spec.VolumeClaimTemplates {
		seenPV, pinned := false, false
		for _, o := range OrdinalRange(v.set) {
			pv := v.boundPV(v.pvc(ClaimPVCName(vct.Name, v.set.Name, o)))
			if pv == nil {
				continue
			}
			seenPV = true
			if pv.Spec.NodeAffinity != nil && pv.Spec.NodeAffinity.Required != nil && len(pv.Spec.NodeAffinity.Required.NodeSelectorTerms) > 0 {
				pinned = true
			}
		}
		if !seenPV {
			sc := v.ix.scs[v.ix.storageClassFor(vct.Spec.StorageClassName)]
			pinned = sc != nil && (sc.Provisioner == provisionerTopoLVM || sc.Provisioner == provisionerTopoLVMLegacy)
		}
		if pinned {
			out = append(out, vct.Name)
		}
	}
	return out
}

// PlanMigration selects the moves and runs the preflight checks.
func PlanMigration(s *Snapshot, opt MigrationOptions) MigrationPlan {
	v := newMigrationView(s)
	var plan MigrationPlan
	if v.set == nil || v.live == nil {
		plan.Problems = append(plan.Problems, MigrationProblem{Kind: ProblemNoStatefulSet, Ordinal: -1,
			Message: "the StatefulSet does not exist"})
		return plan
	}
	set := v.set
	plan.Target = v.affinity.describe()

	// Claims.
	if opt.VolumeClaims == nil {
		plan.Claims = v.defaultClaims()
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
	rng := OrdinalRange(set)
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

	// Selection.
	for _, o := range cands {
		if reason := v.needsMove(o, plan.Claims); reason != "" {
			plan.Moves = append(plan.Moves, v.move(o, plan.Claims, plan.Target, reason))
		}
	}
	orderMoves(plan.Moves, opt)

	// Target nodes.
	targets := v.targetNodes()
	for _, n := range targets {
		plan.TargetNodes = append(plan.TargetNodes, n.Name)
	}
	if len(plan.Moves) > 0 && len(targets) == 0 {
		plan.Problems = append(plan.Problems, MigrationProblem{Kind: ProblemTargetNodesMissing, Ordinal: -1,
			Message: fmt.Sprintf("no node can take the moved Pods: %s", v.noTargetReason())})
	}

	// Capacity, simulated move after move.
	if len(plan.Moves) > 0 && len(targets) > 0 {
		plan.Problems = append(plan.Problems, v.simulateCapacity(plan.Moves, plan.Claims, targets)...)
	}

	// Strategy.
	if len(plan.Moves) > 0 {
		if p, ok := v.strategyProblem(rng); ok {
			plan.Problems = append(plan.Problems, p)
		}
	}

	// PDBs and parallelism.
	plan.Parallelism = opt.MaxUnavailable
	if plan.Parallelism < 1 {
		plan.Parallelism = 1
	}
	if len(plan.Moves) > 0 {
		par, probs := v.pdbLimit(plan.Moves, plan.Parallelism)
		plan.Parallelism = par
		plan.Problems = append(plan.Problems, probs...)
	}

	// Others ready.
	if opt.RequireOthersReady && len(plan.Moves) > 0 {
		moved := map[int32]bool{}
		for _, m := range plan.Moves {
			moved[m.Ordinal] = true
		}
		// Ordinals the live set does not have yet (a scale-up in the same
		// apply) are created by the controller: they are not "other" ordinals.
		live := map[int32]bool{}
		for _, o := range OrdinalRange(v.live) {
			live[o] = true
		}
		var bad []string
		for _, o := range rng {
			if moved[o] || !live[o] {
				continue
			}
			if why := v.notReady(o); why != "" {
				bad = append(bad, fmt.Sprintf("ordinal %d: %s", o, why))
			}
		}
		if len(bad) > 0 {
			plan.Problems = append(plan.Problems, MigrationProblem{Kind: ProblemOthersUnhealthy, Ordinal: -1,
				Message: "ordinals that are not moved are not Running and Ready: " + strings.Join(bad, "; ")})
		}
	}
	return plan
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

// needsMove returns why ordinal o must move, "" when it need not.
func (v *migrationView) needsMove(o int32, claims []string) string {
	set := v.set
	pod := v.pods[PodName(set.Name, o)]
	anyPVC, missing := false, ""
	for _, c := range claims {
		name := ClaimPVCName(c, set.Name, o)
		pvc := v.pvc(name)
		if pvc == nil {
			if missing == "" {
				missing = name
			}
			continue
		}
		anyPVC = true
		if pvc.DeletionTimestamp != nil {
			return "PVC " + name + " is being deleted (a move in progress)"
		}
	}
	if pod != nil && pod.Spec.NodeName != "" {
		if n := v.ix.Node(pod.Spec.NodeName); n != nil {
			if ok, why := v.affinity.matches(n); !ok {
				return fmt.Sprintf("Pod %s runs on node %s, which %s", pod.Name, n.Name, why)
			}
		} else {
			return fmt.Sprintf("Pod %s runs on node %s, which no longer exists", pod.Name, pod.Spec.NodeName)
		}
	}
	for _, c := range claims {
		name := ClaimPVCName(c, set.Name, o)
		pv := v.boundPV(v.pvc(name))
		if pv == nil {
			continue
		}
		if ok, why := v.pvFits(pv); !ok {
			return fmt.Sprintf("PV %s of PVC %s %s", pv.Name, name, why)
		}
	}
	if pod == nil {
		if anyPVC {
			return "Pod " + PodName(set.Name, o) + " does not exist (a move in progress: the StatefulSet controller recreates it)"
		}
		// Neither Pod nor PVCs: an ordinal not created yet (scale-up) or a
		// move whose old objects are gone; the controller creates both where
		// the template says without help.
		return ""
	}
	if missing != "" {
		return "PVC " + missing + " does not exist (a move in progress)"
	}
	if v.updRev != "" && pod.Labels[LabelControllerRevision] != v.updRev {
		return fmt.Sprintf("Pod %s is at revision %s, the update revision is %s", pod.Name, pod.Labels[LabelControllerRevision], v.updRev)
	}
	if pod.Spec.NodeName == "" {
		return "Pod " + pod.Name + " is not scheduled yet (a move in progress)"
	}
	return ""
}

// pvFits reports whether a PV can be used on some node the template admits.
func (v *migrationView) pvFits(pv *corev1.PersistentVolume) (bool, string) {
	p := v.ix.pin(pv)
	if p.unconstrained {
		return true, ""
	}
	if len(p.nodes) == 0 {
		return false, fmt.Sprintf("is pinned to %s, which matches no existing node", p.desc)
	}
	var why string
	for _, i := range p.nodes {
		ok, w := v.affinity.matches(v.ix.nodes[i])
		if ok {
			return true, ""
		}
		if why == "" {
			why = fmt.Sprintf("is pinned to node %s (%s), which %s", v.ix.nodes[i].Name, p.desc, w)
		}
	}
	return false, why
}

func (v *migrationView) move(o int32, claims []string, target, reason string) Move {
	set := v.set
	m := Move{Ordinal: o, Pod: PodName(set.Name, o), Target: target, Reason: reason}
	if pod := v.pods[m.Pod]; pod != nil {
		m.FromNode = pod.Spec.NodeName
	}
	for _, c := range claims {
		vol := Volume{Claim: c, PVC: ClaimPVCName(c, set.Name, o)}
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
func (v *migrationView) targetNodes() []*corev1.Node {
	var out []*corev1.Node
	for _, n := range v.ix.nodes {
		if ok, _ := v.affinity.admits(n); ok {
			out = append(out, n)
		}
	}
	return out
}

func (v *migrationView) noTargetReason() string {
	matching, reasons := 0, map[string]int{}
	for _, n := range v.ix.nodes {
		ok, _ := v.affinity.matches(n)
		if !ok {
			continue
		}
		matching++
		if _, why := v.affinity.admits(n); why != "" {
			reasons[why]++
		}
	}
	if matching == 0 {
		return fmt.Sprintf("none of the %d nodes matches the template placement (%s)", len(v.ix.nodes), v.affinity.describe())
	}
	var parts []string
	for why, n := range reasons {
		parts = append(parts, fmt.Sprintf("%d node(s) %s", n, why))
	}
	sort.Strings(parts)
	return fmt.Sprintf("%d node(s) match the template placement (%s) but %s", matching, v.affinity.describe(), strings.Join(parts, ", "))
}

// simulateCapacity places the moves one after another on the target node
// with the most free capacity for their new PVCs, consuming it; the old PVs
// (reclaim policy Delete) give their capacity back after each move.
func (v *migrationView) simulateCapacity(moves []Move, claims []string, targets []*corev1.Node) []MigrationProblem {
	type req struct {
		sc    string
		bytes int64
	}
	var reqs []req
	for _, c := range claims {
		for _, vct := range v.set.Spec.VolumeClaimTemplates {
			if vct.Name != c {
				continue
			}
			q := vct.Spec.Resources.Requests[corev1.ResourceStorage]
			reqs = append(reqs, req{sc: v.ix.storageClassFor(vct.Spec.StorageClassName), bytes: q.Value()})
		}
	}
	type key struct {
		node int
		sc   string
	}
	free := map[key]int64{}
	info := func(node int, sc string) (capInfo, int64) {
		c := v.ix.capacity(node, sc)
		k := key{node, sc}
		if _, ok := free[k]; !ok {
			free[k] = c.bytes
		}
		return c, free[k]
	}
	var probs []MigrationProblem
	for i := range moves {
		m := &moves[i]
		need := map[string]int64{}
		for _, r := range reqs {
			need[r.sc] += r.bytes
		}
		best, bestFree := -1, int64(-1)
		var shortest string
		for _, n := range targets {
			ni := v.ix.nodeByNm[n.Name]
			fits, minFree := true, int64(1<<62)
			for sc, b := range need {
				c, f := info(ni, sc)
				if !c.limited {
					continue
				}
				maxOK := true
				for _, r := range reqs {
					if r.sc == sc && c.maxVol >= 0 && r.bytes > c.maxVol {
						maxOK = false
					}
				}
				if f < b || !maxOK {
					fits = false
					if shortest == "" {
						shortest = fmt.Sprintf("node %s has %s free for storage class %s (%s), the new PVCs need %s",
							n.Name, formatBytes(f), sc, c.source, formatBytes(b))
					}
					break
				}
				if f < minFree {
					minFree = f
				}
			}
			if fits && (best < 0 || minFree > bestFree) {
				best, bestFree = ni, minFree
			}
		}
		if best < 0 {
			probs = append(probs, MigrationProblem{Kind: ProblemCapacity, Ordinal: m.Ordinal,
				Message: fmt.Sprintf("ordinal %d: no target node has device-class capacity for its new PVCs after the moves before it (%s)",
					m.Ordinal, shortest)})
			continue
		}
		m.TargetNode = v.ix.nodes[best].Name
		for sc, b := range need {
			if c, _ := info(best, sc); c.limited {
				free[key{best, sc}] -= b
			}
		}
		// The old PVs are deleted with their PVCs and free their space.
		for _, vol := range m.Volumes {
			pv := v.ix.PV(vol.PV)
			if pv == nil || pv.Spec.PersistentVolumeReclaimPolicy != corev1.PersistentVolumeReclaimDelete {
				continue
			}
			ni, ok := v.ix.nodeByNm[vol.PinnedNode]
			if !ok {
				continue
			}
			sc := pv.Spec.StorageClassName
			if c, _ := info(ni, sc); c.limited {
				q := pv.Spec.Capacity[corev1.ResourceStorage]
				free[key{ni, sc}] += q.Value()
			}
		}
	}
	return probs
}

// strategyProblem reports when the update strategy makes the controller act
// on its own (RollingUpdate without a partition above every ordinal) or
// recreate moved Pods at the old revision (below the partition while a
// template change is pending).
func (v *migrationView) strategyProblem(rng []int32) (MigrationProblem, bool) {
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
	if partition <= highest {
		return MigrationProblem{Kind: ProblemStrategy, Ordinal: -1, Message: fmt.Sprintf(
			"StatefulSet %s/%s uses RollingUpdate with partition %d: the controller itself replaces ordinals %d..%d "+
				"whenever the template changes, keeping their PVCs (the Pods then cannot leave the nodes their PVs are pinned to). "+
				"Set updateStrategy.type to OnDelete (or a partition above %d) before migrating",
			v.set.Namespace, v.set.Name, partition, max(partition, rngStart(rng)), highest, highest)}, true
	}
	pending := v.live.Status.CurrentRevision != "" && v.live.Status.CurrentRevision != v.live.Status.UpdateRevision
	if v.s.Desired != nil && !placementEqual(&v.s.Desired.Spec.Template, &v.live.Spec.Template) {
		pending = true
	}
	if pending {
		return MigrationProblem{Kind: ProblemStrategy, Ordinal: -1, Message: fmt.Sprintf(
			"StatefulSet %s/%s uses RollingUpdate with partition %d, above every ordinal: a deleted Pod is recreated "+
				"from the current revision, not the changed template, so it would not move. Set updateStrategy.type to OnDelete",
			v.set.Namespace, v.set.Name, partition)}, true
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
func (v *migrationView) pdbLimit(moves []Move, par int) (int, []MigrationProblem) {
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
						"moving a Ready Pod would exceed it. Wait until every Pod is Ready or relax the budget",
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
func (v *migrationView) notReady(o int32) string {
	pod := v.pods[PodName(v.set.Name, o)]
	switch {
	case pod == nil:
		return "Pod " + PodName(v.set.Name, o) + " does not exist"
	case pod.DeletionTimestamp != nil:
		return "Pod " + pod.Name + " is terminating"
	case pod.Status.Phase != corev1.PodRunning:
		msg := "Pod " + pod.Name + " is " + string(pod.Status.Phase)
		if m := UnschedulableMessage(pod); m != "" {
			msg += ": " + m
		}
		return msg
	case !PodReady(pod):
		return "Pod " + pod.Name + " is not Ready"
	}
	return ""
}

// PodReady reports whether the Pod's Ready condition is True.
func PodReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
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
