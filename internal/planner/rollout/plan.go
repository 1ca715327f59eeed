package rollout

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/olapgke/terraform-provider-olapgke/internal/k8sfeatures"
	"github.com/olapgke/terraform-provider-olapgke/internal/planner"
	"github.com/olapgke/terraform-provider-olapgke/internal/stsutil"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// PlanRollout predicts what applying s.Desired over s.Live does, per ordinal. The ordinals, waves,
// stall and TopoLVM waits are judged with the nodes' volatile state lifted (held.go: cordons and
// the taints Kubernetes sets from node conditions), so that the same configuration and durable
// cluster facts give the same plan at plan and at apply; Held lists the ordinals that state
// keeps from being placed now.
func PlanRollout(s planner.Snapshot) (*Plan, error) {
	d, lifted := liftVolatile(s)
	p, err := buildOnce(d)
	if err != nil || s.Desired == nil {
		return p, err
	}
	p.TopoLVMWaits = rolloutTopoLVMWait(&d, p)
	if len(lifted) > 0 && placesNewPods(p) {
		now, err := buildOnce(s)
		if err != nil {
			return nil, err
		}
		p.Held = heldOrdinals(&s, p, now, lifted)
	}
	return p, nil
}

// PlanRolloutNow predicts what applying s.Desired over s.Live does with the nodes as they are now,
// cordons and node-condition taints included: what the StatefulSet controller and the scheduler
// do if nothing changes before the apply. PlanRollout's Held is where the two answers differ. For
// comparing the prediction with the controller (internal/snapshot's acceptance tests); plans use
// PlanRollout.
func PlanRolloutNow(s planner.Snapshot) (*Plan, error) {
	p, err := buildOnce(s)
	if err != nil || s.Desired == nil {
		return p, err
	}
	p.TopoLVMWaits = rolloutTopoLVMWait(&s, p)
	return p, nil
}

func buildOnce(s planner.Snapshot) (*Plan, error) {
	if s.Desired == nil && s.Live == nil {
		return nil, errors.New("planner: snapshot has neither a desired nor a live StatefulSet")
	}
	ix := planner.NewIndex(&s)
	if s.Desired == nil {
		return buildDestroy(&s, ix), nil
	}
	b := &builder{s: &s, ix: ix, set: s.Desired, verdicts: map[string]planner.Verdict{}}
	return b.build()
}

type builder struct {
	s   *planner.Snapshot
	ix  *planner.Index
	set *appsv1.StatefulSet // desired
	// replace: the object is re-created with its Pods (foreground); recreate:
	// it is re-created orphaning its Pods and PVCs, which the new object
	// adopts, so the rollout is planned as an update over the live Pods.
	replace, recreate bool
	verdicts          map[string]planner.Verdict // ordinal/rev -> verdict

	updateRev, currentRev string
	currentTemplate       *corev1.PodTemplateSpec
	podsByOrdinal         map[int]*corev1.Pod
}

func startOf(set *appsv1.StatefulSet) int { return int(stsutil.Start(set)) }

func replicasOf(set *appsv1.StatefulSet) int { return int(stsutil.Replicas(set)) }

// build runs the stages of the prediction in the controller's order (see the package doc,
// "Stages"): revisions, the Pods the set owns, the controller simulated twice (optimistic:
// every Pod becomes Ready, for the waves; actual: the placement verdicts decide, for stalls),
// then per ordinal the action and placement, the stall, the disruption and the replacement.
func (b *builder) build() (*Plan, error) {
	plan := &Plan{}
	if err := b.stageRevisions(plan); err != nil {
		return nil, err
	}
	b.stageClaimPods()
	cfg, err := b.stageSimConfig()
	if err != nil {
		return nil, err
	}
	initial := b.stageInitialPods()
	opt := simulate(cfg, initial, true)
	actual := simulate(cfg, initial, false)

	// Waves: distinct instants of first action, in order.
	waveOf := compressWaves(opt.touched)
	realWave := compressWaves(actual.touched)

	for _, o := range b.stageOrdinals(cfg) {
		plan.Ordinals = append(plan.Ordinals, b.stageOrdinal(o, cfg, opt, actual, waveOf, realWave))
	}
	plan.Stall = b.stageStall(plan, actual, realWave)
	plan.Disruption = Disruption{MaxUnavailable: int32(actual.maxUnavail), Unbounded: plan.Stall != nil, Waves: len(realWave)}
	if plan.Disruption.Unbounded {
		plan.Disruption.Waves = len(waveOf)
	}
	plan.Disruption.PDBsExceeded = b.pdbsExceeded(plan.Disruption.MaxUnavailable, initial, cfg)

	if b.replace || b.recreate {
		plan.Replace = b.replacement()
	}
	return plan, nil
}

// stageRevisions mirrors the controller's getStatefulSetRevisions: the update revision the
// desired template hashes to (among the live object's ControllerRevisions), the current
// revision and its template, and whether the template changes. It also decides whether the
// object is re-created (replace: foreground, with its Pods; recreate: orphaning them).
func (b *builder) stageRevisions(plan *Plan) error {
	s, set := b.s, b.set
	if s.Live != nil && s.Immutable != nil {
		if RecreateModeFor(s.Live, set) == RecreateForeground {
			b.replace = true
		} else {
			b.recreate = true
		}
	}
	live := s.Live
	var owned []*appsv1.ControllerRevision
	var collision int32
	if live != nil && !b.replace {
		owned = planner.OwnedRevisions(live, s.Revisions)
		if live.Status.CollisionCount != nil {
			collision = *live.Status.CollisionCount
		}
	}
	var err error
	b.updateRev, err = planner.ResolveUpdateRevision(set, owned, collision)
	if err != nil {
		return err
	}
	plan.UpdateRevision = b.updateRev
	b.currentRev = b.updateRev
	b.currentTemplate = &set.Spec.Template
	if live != nil && !b.replace && live.Status.CurrentRevision != "" {
		b.currentRev = live.Status.CurrentRevision
		b.currentTemplate = &live.Spec.Template
		for _, r := range owned {
			if r.Name == b.currentRev {
				if t, err := planner.RevisionTemplate(r); err == nil {
					b.currentTemplate = t
				}
			}
		}
	}
	if live != nil {
		plan.CurrentRevision = live.Status.CurrentRevision
		liveRev := live.Status.UpdateRevision
		if liveRev == "" {
			liveRev, _ = planner.ResolveUpdateRevision(live, owned, collision)
		}
		plan.TemplateChanged = b.replace || liveRev != b.updateRev
		if b.recreate {
			// The new object gets a fresh status: its current revision is its
			// update revision (getStatefulSetRevisions finds no other).
			b.currentRev, b.currentTemplate = b.updateRev, &set.Spec.Template
		}
	}
	return nil
}

// stageClaimPods mirrors the controller's getPodsForStatefulSet: the Pods the set owns, by
// ordinal (the live object's, or the desired one's when there is no live object).
func (b *builder) stageClaimPods() {
	live := b.s.Live
	b.podsByOrdinal = stsutil.OwnedPods(live, b.s.Pods)
	if live == nil {
		b.podsByOrdinal = stsutil.OwnedPods(b.set, b.s.Pods)
	}
}

// stageSimConfig reads what the controller looks at in the desired set: ordinal range, pod
// management policy, update strategy, partition and maxUnavailable (honoured only with
// MaxUnavailableStatefulSet on), and wires the placement verdicts in as "can this Pod become
// Ready".
func (b *builder) stageSimConfig() (simConfig, error) {
	s, set := b.s, b.set
	cfg := simConfig{
		start:      startOf(set),
		replicas:   replicasOf(set),
		parallel:   set.Spec.PodManagementPolicy == appsv1.ParallelPodManagement,
		onDelete:   set.Spec.UpdateStrategy.Type == appsv1.OnDeleteStatefulSetStrategyType,
		updateRev:  b.updateRev,
		currentRev: b.currentRev,
	}
	cfg.maxUnavailable = 1
	cfg.legacy = !s.Server.Enabled(k8sfeatures.MaxUnavailableStatefulSet)
	if ru := set.Spec.UpdateStrategy.RollingUpdate; ru != nil && !cfg.onDelete {
		if ru.Partition != nil {
			cfg.partition = int(*ru.Partition)
		}
		v, err := intstr.GetScaledValueFromIntOrPercent(intstr.ValueOrDefault(ru.MaxUnavailable, intstr.FromInt32(1)), cfg.replicas, false)
		if err != nil {
			return simConfig{}, fmt.Errorf("planner: spec.updateStrategy.rollingUpdate.maxUnavailable: %w", err)
		}
		if v > 1 && !cfg.legacy {
			cfg.maxUnavailable = v
		}
	}
	cfg.canReady = func(o int, rev string) bool { return b.verdict(o, rev).OK }
	cfg.existingCanReady = func(o int) bool {
		p := b.podsByOrdinal[o]
		if p == nil || p.Spec.NodeName != "" {
			return true
		}
		return b.existingVerdict(o, p).OK
	}

	cfg.counted = map[int]bool{}
	for o := range b.podsByOrdinal {
		cfg.counted[o] = true
	}
	return cfg, nil
}

// stageInitialPods is the state the simulation starts from: each owned Pod's revision,
// readiness and whether it is terminating (none when the object is replaced with its Pods).
func (b *builder) stageInitialPods() map[int]*simPod {
	initial := map[int]*simPod{}
	if b.replace {
		return initial
	}
	for o, p := range b.podsByOrdinal {
		// A Running Pod that is not Ready right now is counted as Ready: readiness flips
		// between a plan and its apply (a probe failing for a moment), and the waves must
		// not (Terraform plans again at apply and requires the same values). The rollout
		// then only waits longer for it.
		ready := stsutil.PodReady(p) || (p.Spec.NodeName != "" && p.Status.Phase == corev1.PodRunning)
		sp := &simPod{exists: true, rev: p.Labels[stsutil.LabelControllerRevision], ready: ready, terminating: p.DeletionTimestamp != nil}
		if p.Status.Phase == corev1.PodFailed || p.Status.Phase == corev1.PodSucceeded {
			sp.terminating = true
		}
		initial[o] = sp
	}
	return initial
}

// stageOrdinals mirrors the controller's split of the Pods into replicas and condemned: the
// ordinals the plan covers, ascending: the desired range, the live range and every owned Pod.
func (b *builder) stageOrdinals(cfg simConfig) []int {
	live := b.s.Live
	ords := map[int]bool{}
	for o := cfg.start; o < cfg.start+cfg.replicas; o++ {
		ords[o] = true
	}
	if live != nil {
		for o := startOf(live); o < startOf(live)+replicasOf(live); o++ {
			ords[o] = true
		}
	}
	for o := range b.podsByOrdinal {
		ords[o] = true
	}
	sorted := make([]int, 0, len(ords))
	for o := range ords {
		sorted = append(sorted, o)
	}
	sort.Ints(sorted)
	return sorted
}

// stageOrdinal is the prediction for one ordinal, as the controller's processReplica (in
// range) or processCondemned (out of range) handles it: the action, its wave (from the
// optimistic run; from the actual one unless the ordinal is blocked), the revision its Pod
// runs, the placement verdict (stageVerdict) and its volumes.
func (b *builder) stageOrdinal(o int, cfg simConfig, opt, actual simResult, waveOf, realWave map[int]int) OrdinalPlan {
	set, live := b.set, b.s.Live
	inRange := o >= cfg.start && o < cfg.start+cfg.replicas
	pod := b.podsByOrdinal[o]
	op := OrdinalPlan{Ordinal: int32(o), Pod: fmt.Sprintf("%s-%d", set.Name, o), Schedulable: true}
	if pod != nil {
		op.Node = pod.Spec.NodeName
	}
	_, touched := opt.touched[o]
	switch {
	case !inRange:
		op.Action = ActionDelete
		op.PVCsAfter = PVCsRetained
		if b.whenScaled() == appsv1.DeletePersistentVolumeClaimRetentionPolicyType {
			op.PVCsAfter = PVCsDeleted
		}
		op.Volumes = b.volumes(o, b.claimTemplates(live))
	case pod == nil:
		op.Action = ActionCreate
	case b.replace || touched:
		op.Action = ActionRecreate
	case pod.Labels[stsutil.LabelControllerRevision] != b.updateRev:
		op.Action = ActionStale
	default:
		op.Action = ActionUnchanged
	}
	if touched {
		op.Wave = waveOf[opt.touched[o]]
		if _, ok := actual.touched[o]; !ok {
			op.Blocked = true
		} else {
			op.Wave = realWave[actual.touched[o]]
		}
	}
	if op.Action == ActionDelete {
		return op
	}
	b.stageVerdict(&op, o, pod, cfg, opt)
	if p := actual.final[o]; p != nil && !p.exists && inRange && !op.Blocked && op.Action == ActionRecreate {
		op.NoPod = true
	}
	op.Volumes = b.volumes(o, set.Spec.VolumeClaimTemplates)
	return op
}

// whenScaled is the desired set's PVC retention policy for scaled-down ordinals.
func (b *builder) whenScaled() appsv1.PersistentVolumeClaimRetentionPolicyType {
	if p := b.set.Spec.PersistentVolumeClaimRetentionPolicy; p != nil && p.WhenScaled != "" {
		return p.WhenScaled
	}
	return appsv1.RetainPersistentVolumeClaimRetentionPolicyType
}

// stageVerdict is the placement verdict for an ordinal the apply keeps or (re)creates: the
// revision its Pod runs, and whether that Pod is placed (verdict: the scheduler on the Pod
// the controller creates; durableVerdict: whether a kept Pod could come back). A stale
// ordinal that could not come back is stranded.
func (b *builder) stageVerdict(op *OrdinalPlan, o int, pod *corev1.Pod, cfg simConfig, opt simResult) {
	rev := b.updateRev
	switch op.Action {
	case ActionCreate, ActionRecreate:
		if r, ok := opt.createdAt[o]; ok {
			rev = r
		}
	case ActionStale:
		if !cfg.onDelete && o-cfg.start < cfg.partition {
			rev = b.currentRev
		}
	}
	if op.Action == ActionStale || op.Action == ActionUnchanged {
		op.Revision = pod.Labels[stsutil.LabelControllerRevision]
	} else {
		op.Revision = rev
	}
	var v planner.Verdict
	if op.Action == ActionStale || op.Action == ActionUnchanged {
		// The apply does not recreate this Pod: say whether it could come back if it
		// were deleted, on what stays true until the apply (see PodCanComeBack).
		v = b.durableVerdict(o, rev)
	} else {
		v = b.verdict(o, rev)
	}
	op.Schedulable, op.Reason, op.ShortReason = v.OK, v.Reason, v.Short
	if op.Action == ActionStale && !v.OK {
		// Kept, but it could not come back in place: stranded. The Pod this apply leaves
		// is the running one, so "schedulable" is about that one (a plan that only
		// strands ordinals reads "unchanged" -> "stranded", not a lost placement).
		op.Action, op.Schedulable = ActionStranded, pod.Spec.NodeName != ""
	}
}

// stageStall says where the rollout stops when the actual run stalls: the ordinals that never
// become Ready, the earliest wave among them and why; nil when it completes.
func (b *builder) stageStall(plan *Plan, actual simResult, realWave map[int]int) *Stall {
	if !actual.stalled {
		return nil
	}
	st := &Stall{}
	var reasons []string
	for _, o := range actual.stuck {
		st.Ordinals = append(st.Ordinals, int32(o))
		if rev, ok := actual.createdAt[o]; ok {
			v := b.verdict(o, rev)
			reasons = append(reasons, v.Reason)
			if w := realWave[actual.touched[o]]; st.Wave == 0 || w < st.Wave {
				st.Wave = w
			}
		} else if p := b.podsByOrdinal[o]; p != nil {
			v := b.existingVerdict(o, p)
			reasons = append(reasons, fmt.Sprintf("ordinal %d: Pod %s is Pending today and stays so: %s", o, p.Name, strings.TrimPrefix(v.Reason, fmt.Sprintf("ordinal %d: ", o))))
		}
	}
	if len(st.Ordinals) == 0 {
		// Nothing stuck yet the rollout is incomplete: an OrderedReady
		// deletion left an ordinal without a Pod, or a condemned Pod waits.
		for _, op := range plan.Ordinals {
			if op.NoPod {
				st.Ordinals = append(st.Ordinals, op.Ordinal)
			}
		}
		reasons = append(reasons, "the controller waits for Pods that never become Ready")
	}
	st.Reason = strings.Join(reasons, "; ")
	return st
}

func compressWaves(touched map[int]int) map[int]int {
	var ts []int
	seen := map[int]bool{}
	for _, t := range touched {
		if !seen[t] {
			seen[t] = true
			ts = append(ts, t)
		}
	}
	sort.Ints(ts)
	out := make(map[int]int, len(ts))
	for i, t := range ts {
		out[t] = i + 1
	}
	return out
}

func (b *builder) claimTemplates(set *appsv1.StatefulSet) []corev1.PersistentVolumeClaim {
	if set == nil {
		return b.set.Spec.VolumeClaimTemplates
	}
	return set.Spec.VolumeClaimTemplates
}

func (b *builder) volumes(o int, vcts []corev1.PersistentVolumeClaim) []planner.Volume {
	var out []planner.Volume
	for _, vct := range vcts {
		name := fmt.Sprintf("%s-%s-%d", vct.Name, b.set.Name, o)
		v := planner.Volume{Claim: vct.Name, PVC: name}
		if pvc := b.ix.PVC(b.set.Namespace, name); pvc != nil && pvc.Spec.VolumeName != "" {
			v.PV = pvc.Spec.VolumeName
			v.PinnedNode = b.ix.PinnedNode(b.ix.PV(v.PV))
		}
		out = append(out, v)
	}
	return out
}

// claims returns the claims a Pod of ordinal o would mount, as the scheduler
// will see them after this apply.
func (b *builder) claims(o int, vcts []corev1.PersistentVolumeClaim) []planner.ClaimState {
	gone := b.replace && b.s.Live != nil && b.s.Live.Spec.PersistentVolumeClaimRetentionPolicy != nil &&
		b.s.Live.Spec.PersistentVolumeClaimRetentionPolicy.WhenDeleted == appsv1.DeletePersistentVolumeClaimRetentionPolicyType
	out := make([]planner.ClaimState, 0, len(vcts))
	for _, vct := range vcts {
		name := fmt.Sprintf("%s-%s-%d", vct.Name, b.set.Name, o)
		c := planner.ClaimState{Claim: vct.Name, PVC: name}
		pvc := b.ix.PVC(b.set.Namespace, name)
		if gone || pvc == nil || pvc.DeletionTimestamp != nil {
			c.Spec = &vct.Spec
			c.StorageClass = b.ix.StorageClassFor(vct.Spec.StorageClassName)
			if q, ok := vct.Spec.Resources.Requests[corev1.ResourceStorage]; ok {
				c.RequestBytes = q.Value()
			}
		} else if pvc.Spec.VolumeName != "" && b.ix.PV(pvc.Spec.VolumeName) != nil {
			c.PV = b.ix.PV(pvc.Spec.VolumeName)
		} else {
			c.StorageClass = b.ix.StorageClassFor(pvc.Spec.StorageClassName)
			if q, ok := pvc.Spec.Resources.Requests[corev1.ResourceStorage]; ok {
				c.RequestBytes = q.Value()
			}
		}
		out = append(out, c)
	}
	return out
}

// verdict is PodCanSchedule for the Pod the controller creates for ordinal o
// at revision rev (the desired template, or the current revision's below a
// partition).
func (b *builder) verdict(o int, rev string) planner.Verdict {
	key := strconv.Itoa(o) + "/" + rev
	if v, ok := b.verdicts[key]; ok {
		return v
	}
	tmpl := &b.set.Spec.Template
	if rev != b.updateRev && rev == b.currentRev && b.currentTemplate != nil {
		tmpl = b.currentTemplate
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%d", b.set.Name, o), Namespace: b.set.Namespace,
		Labels: tmpl.Labels, Annotations: tmpl.Annotations}, Spec: tmpl.Spec}
	claims := b.claims(o, b.set.Spec.VolumeClaimTemplates)
	// In the controller's order: the ordinal's old Pod is gone before its new one is placed,
	// and the new one then occupies its node for the ordinals after it.
	pl := b.ix.Placer()
	pl.RemovePod(b.ix, b.set.Namespace, pod.Name)
	v := pl.Place(b.ix, pod, claims, true)
	b.verdicts[key] = v
	return v
}

// durableVerdict is PodCanComeBack for ordinal o at revision rev, keeping the claims it has.
func (b *builder) durableVerdict(o int, rev string) planner.Verdict {
	key := strconv.Itoa(o) + "/" + rev + "/durable"
	if v, ok := b.verdicts[key]; ok {
		return v
	}
	tmpl := &b.set.Spec.Template
	if rev != b.updateRev && rev == b.currentRev && b.currentTemplate != nil {
		tmpl = b.currentTemplate
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%d", b.set.Name, o), Namespace: b.set.Namespace}, Spec: tmpl.Spec}
	v := planner.PodCanComeBack(pod, b.claims(o, b.set.Spec.VolumeClaimTemplates), b.ix)
	b.verdicts[key] = v
	return v
}

// existingVerdict evaluates a Pod that exists but is not scheduled yet, with
// its own spec and the claims it mounts.
func (b *builder) existingVerdict(o int, p *corev1.Pod) planner.Verdict {
	key := strconv.Itoa(o) + "/existing"
	if v, ok := b.verdicts[key]; ok {
		return v
	}
	var claims []planner.ClaimState
	for _, vol := range p.Spec.Volumes {
		if vol.PersistentVolumeClaim == nil {
			continue
		}
		name := vol.PersistentVolumeClaim.ClaimName
		c := planner.ClaimState{PVC: name}
		pvc := b.ix.PVC(p.Namespace, name)
		switch {
		case pvc == nil:
			continue
		case pvc.Spec.VolumeName != "" && b.ix.PV(pvc.Spec.VolumeName) != nil:
			c.PV = b.ix.PV(pvc.Spec.VolumeName)
		default:
			c.StorageClass = b.ix.StorageClassFor(pvc.Spec.StorageClassName)
			if q, ok := pvc.Spec.Resources.Requests[corev1.ResourceStorage]; ok {
				c.RequestBytes = q.Value()
			}
		}
		claims = append(claims, c)
	}
	v := b.ix.Placer().Place(b.ix, p, claims, false)
	b.verdicts[key] = v
	return v
}

func (b *builder) pdbsExceeded(worst int32, initial map[int]*simPod, cfg simConfig) []string {
	unavailableNow := int32(0)
	for i := 0; i < cfg.replicas; i++ {
		p := initial[cfg.start+i]
		if p == nil || !p.ready || p.terminating {
			unavailableNow++
		}
	}
	var out []string
	for i := range b.s.PDBs {
		pdb := &b.s.PDBs[i]
		if pdb.Namespace != "" && b.set.Namespace != "" && pdb.Namespace != b.set.Namespace {
			continue
		}
		sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
		if err != nil || sel.Empty() || !sel.Matches(labels.Set(b.set.Spec.Template.Labels)) {
			continue
		}
		if worst-unavailableNow > pdb.Status.DisruptionsAllowed {
			out = append(out, pdb.Name)
		}
	}
	sort.Strings(out)
	return out
}

// RecreateModeFor says how an immutable change from live to desired is
// carried out: orphaning the Pods (the new object adopts them), unless the
// selector changes, so that the new object could not adopt them.
func RecreateModeFor(live, desired *appsv1.StatefulSet) RecreateMode {
	if !apiequality.Semantic.DeepEqual(live.Spec.Selector, desired.Spec.Selector) {
		return RecreateForeground
	}
	return RecreateOrphan
}

func (b *builder) replacement() *Replacement {
	live := b.s.Live
	r := &Replacement{Fields: b.s.Immutable.Fields, Message: b.s.Immutable.Message, Mode: RecreateOrphan,
		WhenDeleted: string(appsv1.RetainPersistentVolumeClaimRetentionPolicyType)}
	if b.replace {
		r.Mode = RecreateForeground
		if p := live.Spec.PersistentVolumeClaimRetentionPolicy; p != nil && p.WhenDeleted != "" {
			r.WhenDeleted = string(p.WhenDeleted)
		}
	}
	newNames := map[string]bool{}
	if b.set.Name == live.Name {
		for o := startOf(b.set); o < startOf(b.set)+replicasOf(b.set); o++ {
			for _, vct := range b.set.Spec.VolumeClaimTemplates {
				newNames[fmt.Sprintf("%s-%s-%d", vct.Name, b.set.Name, o)] = true
			}
		}
	}
	var existing []string
	for o := range ordinalsWithClaims(b, live) {
		for _, vct := range live.Spec.VolumeClaimTemplates {
			name := fmt.Sprintf("%s-%s-%d", vct.Name, live.Name, o)
			if b.ix.PVC(live.Namespace, name) != nil {
				existing = append(existing, name)
			}
		}
	}
	sort.Strings(existing)
	for _, name := range existing {
		switch {
		case r.WhenDeleted == string(appsv1.DeletePersistentVolumeClaimRetentionPolicyType):
			r.Deleted = append(r.Deleted, name)
		case newNames[name]:
			r.Readopted = append(r.Readopted, name)
		default:
			r.Orphaned = append(r.Orphaned, name)
		}
	}
	if r.Mode == RecreateOrphan {
		r.Expansions, r.Kept, r.Problems = ClaimGrowth(b.s, b.ix, live, b.set)
	}
	var parts []string
	if r.Mode == RecreateOrphan {
		if len(r.Expansions) > 0 {
			var ex []string
			for _, e := range r.Expansions {
				ex = append(ex, fmt.Sprintf("%s %s -> %s", e.PVC, planner.FormatBytes(e.From), planner.FormatBytes(e.To)))
			}
			parts = append(parts, fmt.Sprintf("PVCs expanded in place first (online, TopoLVM grows the volume): %s.", strings.Join(ex, ", ")))
		}
		if len(r.Kept) > 0 {
			var kept []string
			for _, e := range r.Kept {
				kept = append(kept, fmt.Sprintf("%s keeps %s (%s)", e.PVC, planner.FormatBytes(e.From), e.Why))
			}
			parts = append(parts, fmt.Sprintf("Retained PVCs of scaled-down ordinals that cannot grow keep their size, and their ordinal comes back on it if scaled up again: %s.", strings.Join(kept, ", ")))
		}
		parts = append(parts, fmt.Sprintf("The API server refuses to update StatefulSet %s/%s in place (%s), so the object is re-created: "+
			"it is deleted with orphan propagation and created again, and the new object adopts the Pods, PVCs and revisions by selector. "+
			"No Pod is deleted by the re-creation; the ordinals' actions say which Pods restart afterwards and how.", live.Namespace, live.Name, strings.Join(r.Fields, ", ")))
	} else {
		parts = append(parts, fmt.Sprintf("The API server refuses to update StatefulSet %s/%s in place (%s) and the selector changes, so it is deleted with its Pods and created again; every Pod is deleted and recreated.", live.Namespace, live.Name, strings.Join(r.Fields, ", ")))
	}
	if len(r.Readopted) > 0 {
		parts = append(parts, fmt.Sprintf("PVCs kept and adopted again by name, with their data and node pinning: %s.", strings.Join(r.Readopted, ", ")))
	}
	if len(r.Deleted) > 0 {
		parts = append(parts, fmt.Sprintf("PVCs deleted with the old object (whenDeleted: Delete), their data is lost: %s.", strings.Join(r.Deleted, ", ")))
	}
	if len(r.Orphaned) > 0 {
		parts = append(parts, fmt.Sprintf("PVCs kept but no longer named by any claim template (left orphaned, delete them by hand): %s.", strings.Join(r.Orphaned, ", ")))
	}
	r.Explanation = strings.Join(parts, " ")
	return r
}

// ClaimGrowth lists the existing PVCs of live's claim templates whose
// storage request desired raises, and why the growth cannot be made: a
// claim template that shrinks (PVCs cannot), a StorageClass without
// allowVolumeExpansion, or growth that does not fit the free capacity of the
// node a PV is pinned to (TopoLVM expands the logical volume on that node).
// Retained claims of ordinals outside desired's range (whenScaled: Retain)
// grow too (TopoLVM grows an unmounted volume; its filesystem grows at the
// next mount); one whose node is gone or lacks the space is kept at its size
// (the second list) instead of blocking the change.
func ClaimGrowth(s *planner.Snapshot, ix *planner.Index, live, desired *appsv1.StatefulSet) ([]ClaimExpansion, []ClaimExpansion, []string) {
	var out, kept []ClaimExpansion
	var problems []string
	type key struct{ node, sc string }
	type need struct{ live, retained int64 }
	growth := map[key]*need{}
	var keys []key
	liveVCT := map[string]*corev1.PersistentVolumeClaim{}
	for i := range live.Spec.VolumeClaimTemplates {
		liveVCT[live.Spec.VolumeClaimTemplates[i].Name] = &live.Spec.VolumeClaimTemplates[i]
	}
	first, n := startOf(desired), replicasOf(desired)
	for _, vct := range desired.Spec.VolumeClaimTemplates {
		old := liveVCT[vct.Name]
		if old == nil {
			continue
		}
		want, ok := vct.Spec.Resources.Requests[corev1.ResourceStorage]
		if !ok {
			continue
		}
		if had, ok := old.Spec.Resources.Requests[corev1.ResourceStorage]; ok && want.Cmp(had) < 0 {
			problems = append(problems, fmt.Sprintf("claim template %s asks for %s, less than the %s it asks for today: PVCs cannot shrink", vct.Name, want.String(), had.String()))
			continue
		}
		prefix := vct.Name + "-" + live.Name + "-"
		for i := range s.PVCs {
			pvc := &s.PVCs[i]
			rest, ok := strings.CutPrefix(pvc.Name, prefix)
			if pvc.Namespace != live.Namespace || !ok || pvc.DeletionTimestamp != nil {
				continue
			}
			o, err := strconv.Atoi(rest)
			if err != nil || o < 0 {
				continue
			}
			cur := pvc.Spec.Resources.Requests[corev1.ResourceStorage]
			if want.Cmp(cur) <= 0 {
				continue
			}
			e := ClaimExpansion{Claim: vct.Name, PVC: pvc.Name, Ordinal: int32(o), From: cur.Value(), To: want.Value(),
				StorageClass: ix.StorageClassFor(pvc.Spec.StorageClassName), Retained: o < first || o >= first+n}
			if pv := ix.PV(pvc.Spec.VolumeName); pv != nil {
				e.Node = ix.PinnedNode(pv)
			}
			sc := ix.Scs[e.StorageClass]
			if sc == nil || sc.AllowVolumeExpansion == nil || !*sc.AllowVolumeExpansion {
				problems = append(problems, fmt.Sprintf("PVC %s uses StorageClass %q, which does not allow volume expansion (allowVolumeExpansion)", pvc.Name, e.StorageClass))
				continue
			}
			if e.Retained && e.Node != "" {
				if _, ok := ix.NodeByNm[e.Node]; !ok {
					e.Why = fmt.Sprintf("its volume's node %s no longer exists", e.Node)
					kept = append(kept, e)
					continue
				}
			}
			out = append(out, e)
			if e.Node != "" {
				k := key{e.Node, e.StorageClass}
				if _, seen := growth[k]; !seen {
					keys = append(keys, k)
					growth[k] = &need{}
				}
				if e.Retained {
					growth[k].retained += e.To - e.From
				} else {
					growth[k].live += e.To - e.From
				}
			}
		}
	}
	keep := map[string]string{}
	for _, k := range keys {
		i, ok := ix.NodeByNm[k.node]
		if !ok {
			continue
		}
		c := ix.Capacity(i, k.sc)
		g := growth[k]
		if !c.Limited || c.Bytes >= g.live+g.retained {
			continue
		}
		// The space goes to the claims of the set's ordinals first; retained claims that do
		// not fit keep their size.
		for _, e := range out {
			if e.Node == k.node && e.StorageClass == k.sc && e.Retained {
				keep[e.PVC] = fmt.Sprintf("node %s has only %s free for storage class %s (%s)", k.node, planner.FormatBytes(c.Bytes), k.sc, c.Source)
			}
		}
		if c.Bytes < g.live {
			var pvcs []string
			for _, e := range out {
				if e.Node == k.node && e.StorageClass == k.sc && !e.Retained {
					pvcs = append(pvcs, e.PVC)
				}
			}
			problems = append(problems, fmt.Sprintf("node %s has only %s free for storage class %s (%s) but growing PVC(s) %s needs %s more",
				k.node, planner.FormatBytes(c.Bytes), k.sc, c.Source, strings.Join(pvcs, ", "), planner.FormatBytes(g.live)))
		}
	}
	if len(keep) > 0 {
		grown := out[:0]
		for _, e := range out {
			if why, ok := keep[e.PVC]; ok {
				e.Why = why
				kept = append(kept, e)
				continue
			}
			grown = append(grown, e)
		}
		out = grown
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].PVC < out[j].PVC })
	sort.SliceStable(kept, func(i, j int) bool { return kept[i].PVC < kept[j].PVC })
	return out, kept, problems
}

func ordinalsWithClaims(b *builder, live *appsv1.StatefulSet) map[int]bool {
	out := map[int]bool{}
	for o := startOf(live); o < startOf(live)+replicasOf(live); o++ {
		out[o] = true
	}
	for o := range b.podsByOrdinal {
		out[o] = true
	}
	return out
}

// buildDestroy plans deleting the StatefulSet: every Pod goes at once (the
// garbage collector), PVCs follow whenDeleted.
func buildDestroy(s *planner.Snapshot, ix *planner.Index) *Plan {
	live := s.Live
	b := &builder{s: s, ix: ix, set: live}
	pods := stsutil.OwnedPods(live, s.Pods)
	ords := map[int]bool{}
	for o := startOf(live); o < startOf(live)+replicasOf(live); o++ {
		ords[o] = true
	}
	for o := range pods {
		ords[o] = true
	}
	sorted := make([]int, 0, len(ords))
	for o := range ords {
		sorted = append(sorted, o)
	}
	sort.Ints(sorted)
	after := PVCsRetained
	if p := live.Spec.PersistentVolumeClaimRetentionPolicy; p != nil && p.WhenDeleted == appsv1.DeletePersistentVolumeClaimRetentionPolicyType {
		after = PVCsDeleted
	}
	plan := &Plan{CurrentRevision: live.Status.CurrentRevision, UpdateRevision: live.Status.UpdateRevision}
	for _, o := range sorted {
		op := OrdinalPlan{Ordinal: int32(o), Pod: fmt.Sprintf("%s-%d", live.Name, o), Action: ActionDelete, Schedulable: true, PVCsAfter: after, Volumes: b.volumes(o, live.Spec.VolumeClaimTemplates)}
		if p := pods[o]; p != nil {
			op.Node = p.Spec.NodeName
			op.Wave = 1
		}
		plan.Ordinals = append(plan.Ordinals, op)
	}
	plan.Disruption = Disruption{MaxUnavailable: int32(replicasOf(live)), Waves: 1}
	return plan
}
