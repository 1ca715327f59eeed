package migration

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/olapgke/terraform-provider-olapgke/internal/stsutil"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// Warm moves (issue 46): while an ordinal's Pod serves, its node-local claims are copied to new
// claims provisioned on the target node; then its Pod and old claims go, and the new volumes are
// handed to claims with the ordinal's own names, so that the Pod the StatefulSet controller
// recreates starts on the target node with its cache. NextWarmStep decides each step from the
// cluster alone (every object a warm move creates carries LabelWarmMove), so that an apply
// killed at any step resumes where it stopped.
//
// The hand-over uses the PV controller's pre-binding (kubernetes pkg/controller/volume/
// persistentvolume pv_controller.go syncVolume: a PV whose claimRef has no UID is Available and
// reserved for the claim it names; syncUnboundClaim binds that claim to it as soon as it
// exists, even for a WaitForFirstConsumer class, since FindMatchingVolume returns a pre-bound
// volume before it looks at delayed binding). The new PV is made Retain before its temporary
// claim is deleted, pre-bound to the ordinal's claim name while the old claim still exists
// (Terminating, held by the source copier), and only then is the old claim let go: when the
// StatefulSet controller creates the ordinal's claim again for the Pending Pod
// (stateful_set_control.go: createMissingPersistentVolumeClaims for a pending Pod), the only
// volume it can get is the warm one.
const (
	// LabelWarmMove is on every object a warm move creates (the next claims, the copier Pods):
	// the ordinal's Pod name.
	LabelWarmMove = "olapgke.io/warm-move"
	// LabelCopierRole is a copier Pod's end: CopierSource or CopierSink.
	LabelCopierRole = "olapgke.io/copier"
	// AnnWarmClaim is, on a next claim, the ordinal's claim it replaces and, on its PV from the
	// cut-over on, "<namespace>/<claim>" it is handed to.
	AnnWarmClaim = "olapgke.io/warm-move-claim"
	// AnnReclaimPolicy is, on a handed-over PV, its reclaim policy before the hand-over
	// (restored once the ordinal's claim is bound to it).
	AnnReclaimPolicy = "olapgke.io/warm-move-reclaim-policy"
	// AnnSelectedNode is the annotation that makes external-provisioner provision a
	// WaitForFirstConsumer claim on one node without a Pod (the scheduler's own hand-off).
	AnnSelectedNode = "volume.kubernetes.io/selected-node"

	// AnnFinalSynced is, on a handed-over PV, "true" once the final pass (WarmOptions.FinalSync)
	// copied what changed while the old Pod still ran.
	AnnFinalSynced = "olapgke.io/warm-move-final-synced"

	CopierSource = "source"
	CopierSink   = "sink"
	// CopierFinal is the sink of the final pass: it runs after the old Pod is gone.
	CopierFinal = "final-sync"
)

// WarmOptions are the copy's bounds as NextWarmStep judges them.
type WarmOptions struct {
	// Timeout bounds the copy from the sink's creation (0: none).
	Timeout time.Duration
	// FinalSync: once the old Pod is gone, a second sink copies what changed since the first
	// pass, before the copy is handed over.
	FinalSync bool
}

// NextClaimName is the name of the claim a warm move provisions on the target node for the
// ordinal's claim pvc.
func NextClaimName(pvc string) string { return pvc + "-warm" }

// CopierPodName is the name of ordinal Pod pod's copier at end role.
func CopierPodName(pod, role string) string { return pod + "-copy-" + role }

// WarmStepKind is NextWarmStep's answer.
type WarmStepKind string

const (
	// WarmCreateClaims: create Step.Claims' next claims, pinned to Step.Target.
	WarmCreateClaims WarmStepKind = "warm_create_claims"
	// WarmCreateSource: create the source copier on Step.Node, mounting the live claims.
	WarmCreateSource WarmStepKind = "warm_create_source"
	// WarmCreateSink: create the sink copier on Step.Target, mounting the next claims, reading
	// from Step.SourceIP.
	WarmCreateSink WarmStepKind = "warm_create_sink"
	// WarmWait: provisioning, the source starting, the copy, a deletion (Step.Reason).
	WarmWait WarmStepKind = "warm_wait"
	// WarmRollback: delete Step.Delete (the copiers and the next claims, nothing else); the move
	// then fails with Step.Reason and the ordinal is as it was.
	WarmRollback WarmStepKind = "warm_rollback"
	// WarmRetain: the copy is complete; record and set Retain on Step.PVs (the cut-over starts).
	WarmRetain WarmStepKind = "warm_retain"
	// WarmCutOver: the ordinal's old claims and Pod go, as in a cold move (Step.Cold says which,
	// with its UID preconditions).
	WarmCutOver WarmStepKind = "warm_cut_over"
	// WarmRelease: delete the sink and the next claims; their PVs stay (Retain).
	WarmRelease WarmStepKind = "warm_release"
	// WarmPreBind: point Step.PVs' claimRef at the ordinal's claims (no UID).
	WarmPreBind WarmStepKind = "warm_prebind"
	// WarmDropSource: delete the source copier; the old claims go with it.
	WarmDropSource WarmStepKind = "warm_drop_source"
	// WarmRestore: the ordinal's claims are bound to the warm PVs: restore Step.PVs' recorded
	// reclaim policy.
	WarmRestore WarmStepKind = "warm_restore"
	// WarmHandedOver: nothing of the warm move is left; NextStep decides (the new Pod's wait).
	WarmHandedOver WarmStepKind = "warm_handed_over"
	// WarmCreateFinal: create the final pass's sink on Step.Target (the old Pod is gone).
	WarmCreateFinal WarmStepKind = "warm_create_final"
	// WarmFinalFailed: the final pass failed: delete it (Step.Delete) and stop with Step.Reason;
	// the old claims are still there (held by the source), the next apply runs the pass again.
	WarmFinalFailed WarmStepKind = "warm_final_failed"
	// WarmFinalSynced: the final pass finished: mark Step.PVs.
	WarmFinalSynced WarmStepKind = "warm_final_synced"
)

// WarmStep is NextWarmStep's answer.
type WarmStep struct {
	Kind    WarmStepKind
	Ordinal int32
	Reason  string
	// Claims are the ordinal's node-local claims (PVC names), in the order of claims.
	Claims []string
	// Node is the node the ordinal's data is on today; Target the node it moves to.
	Node, Target string
	// SourceIP is the source copier's Pod IP (WarmCreateSink).
	SourceIP string
	// PVs are the warm volumes (WarmRetain, WarmPreBind, WarmRestore).
	PVs []string
	// Delete lists what WarmRollback or WarmRelease deletes: "pod/<name>" and "pvc/<name>".
	Delete []string
	// Cold is the cold step the cut-over takes (WarmCutOver).
	Cold Step
	// Copier is, while WarmWait waits for a running copy (the sink or the final pass), that
	// copier Pod: its log says how far it is (ParseCopyProgress).
	Copier string
}

// NextWarmStep decides the next step of ordinal o's warm move to target (the node the plan's
// placement chose; read back from the next claims once they exist). copyTimeout bounds the copy
// from the sink's creation. pods are the namespace's Pods beyond the set's own (the copiers).
// claims are the node-local claim templates.
func (v *Migration) NextWarmStep(o int32, claims []string, target string, copiers []*corev1.Pod, opt WarmOptions, now time.Time) WarmStep {
	copyTimeout := opt.Timeout
	st := WarmStep{Ordinal: o}
	if v.set == nil {
		st.Kind, st.Reason = WarmRollback, "the StatefulSet does not exist any more"
		return st
	}
	ns, podName := v.set.Namespace, stsutil.PodName(v.set.Name, o)
	var source, sink, final *corev1.Pod
	for _, p := range copiers {
		if p.Labels[LabelWarmMove] != podName {
			continue
		}
		switch p.Labels[LabelCopierRole] {
		case CopierSource:
			source = p
		case CopierSink:
			sink = p
		case CopierFinal:
			final = p
		}
	}
	pairs := make([]warmPair, 0, len(claims))
	handedAll, handedAny := true, false
	for _, c := range claims {
		name := stsutil.ClaimPVCName(c, v.set.Name, o)
		st.Claims = append(st.Claims, name)
		p := warmPair{old: v.pvc(name), next: v.pvc(NextClaimName(name))}
		if p.next != nil && p.next.Labels[LabelWarmMove] != podName {
			p.next = nil // not ours
		}
		if pv := v.boundPV(p.next); pv != nil {
			p.pv = pv.Name
		}
		for i := range v.s.PVs {
			pv := &v.s.PVs[i]
			if pv.Annotations[AnnWarmClaim] == ns+"/"+name {
				p.pv, p.handed = pv.Name, true
			}
		}
		if p.next != nil && p.next.Annotations[AnnSelectedNode] != "" {
			target = p.next.Annotations[AnnSelectedNode]
		}
		if p.old != nil && st.Node == "" {
			if pv := v.boundPV(p.old); pv != nil {
				st.Node = v.ix.PinnedNode(pv)
			}
		}
		handedAll = handedAll && p.handed
		handedAny = handedAny || p.handed
		pairs = append(pairs, p)
	}
	st.Target = target
	if !handedAny {
		return v.warmBeforeCutOver(st, o, pairs, source, sink, copyTimeout, now)
	}
	for _, p := range pairs {
		st.PVs = append(st.PVs, p.pv)
	}
	if !handedAll {
		// The cut-over marks the PVs one request each: finish marking.
		st.Kind, st.Reason = WarmRetain, "finish keeping the copy's volumes"
		return st
	}

	// The cut-over: the ordinal's old claims and Pod go (the cold steps), then the hand-over.
	pod := v.pod(o)
	oldLeft := false
	for _, p := range pairs {
		if p.old != nil && p.old.DeletionTimestamp == nil && p.old.Spec.VolumeName != p.pv {
			oldLeft = true
		}
	}
	if oldLeft || (pod != nil && pod.DeletionTimestamp == nil && st.Node != "" && pod.Spec.NodeName == st.Node) {
		if cold := v.NextStep(o, claims, MoveProgress{}, 0, now); cold.Kind == StepDeletePVCs || cold.Kind == StepDeletePod {
			st.Kind, st.Cold, st.Reason = WarmCutOver, cold, cold.Reason
			return st
		}
	}
	if pod != nil && pod.DeletionTimestamp != nil {
		st.Kind, st.Reason = WarmWait, "Pod "+pod.Name+" is terminating"
		return st
	}
	// The final pass, while nothing writes the old volumes any more.
	if opt.FinalSync && !v.finalSynced(st.PVs) {
		switch {
		case final != nil && final.DeletionTimestamp != nil:
			st.Kind, st.Reason = WarmWait, "waiting for the copier "+final.Name+" to be removed"
		case final != nil && final.Status.Phase == corev1.PodFailed:
			st.Kind, st.Delete = WarmFinalFailed, []string{"pod/" + final.Name}
			st.Reason = "the final pass " + final.Name + " failed: " + terminationMessage(final) +
				"; the old volumes are kept (the source copier holds them) and the next apply runs the pass again"
		case final != nil && final.Status.Phase == corev1.PodSucceeded:
			st.Kind, st.Reason = WarmFinalSynced, "the final pass is complete"
		case final != nil:
			st.Kind, st.Reason = WarmWait, "final pass to node "+target+" ("+final.Name+" "+string(final.Status.Phase)+")"
			if final.Status.Phase == corev1.PodRunning {
				st.Copier = final.Name
			}
		case source == nil || source.Status.Phase != corev1.PodRunning || source.Status.PodIP == "":
			st.Kind, st.Reason = WarmWait, "waiting for the source copier to serve the final pass"
		default:
			st.Kind, st.SourceIP, st.Reason = WarmCreateFinal, source.Status.PodIP, "copy what changed since the first pass to node "+target
		}
		return st
	}
	// The release: the sinks and the temporary claims go; the PVs stay (Retain).
	var release []string
	if final != nil && final.DeletionTimestamp == nil {
		release = append(release, "pod/"+final.Name)
	}
	if sink != nil {
		if sink.DeletionTimestamp != nil {
			st.Kind, st.Reason = WarmWait, "waiting for the copier "+sink.Name+" to be removed"
			return st
		}
		release = append(release, "pod/"+sink.Name)
	}
	for _, p := range pairs {
		if p.next == nil {
			continue
		}
		if p.next.DeletionTimestamp != nil {
			st.Kind, st.Reason = WarmWait, "waiting for PVC "+p.next.Name+" to be removed"
			return st
		}
		release = append(release, "pvc/"+p.next.Name)
	}
	if len(release) > 0 {
		st.Kind, st.Delete, st.Reason = WarmRelease, release, "release the copy's volumes from their temporary claims"
		return st
	}
	for i, p := range pairs {
		pv := v.ix.PV(p.pv)
		if pv == nil {
			st.Kind, st.Reason = WarmRollback, "PV "+p.pv+" of the copy is gone"
			return st
		}
		if ref := pv.Spec.ClaimRef; ref == nil || ref.Namespace != ns || ref.Name != st.Claims[i] {
			st.Kind, st.Reason = WarmPreBind, "reserve the copy's volumes for the ordinal's claims"
			return st
		}
	}
	if source != nil {
		st.Kind, st.Reason = WarmDropSource, "stop the copy's source: the old claims go"
		if source.DeletionTimestamp != nil {
			// Deleted already: deleting it again at every look would only repeat the request.
			st.Kind, st.Reason = WarmWait, "waiting for the copier "+source.Name+" to be removed: the old claims go with it"
		}
		return st
	}
	for i, p := range pairs {
		if c := v.pvc(st.Claims[i]); c == nil || c.Spec.VolumeName != p.pv {
			st.Kind, st.Reason = WarmWait, "waiting for PVC "+st.Claims[i]+" to be created again and bound to "+p.pv
			if c != nil && c.DeletionTimestamp != nil {
				st.Reason = "waiting for PVC " + st.Claims[i] + " (the old volume) to be removed"
			}
			return st
		}
	}
	st.Kind, st.Reason = WarmRestore, "the ordinal's claims hold the copy: restore the volumes' reclaim policy"
	return st
}

// HandOversToFinish are the warm volumes of the set whose hand-over the controllers finished
// without the apply that started it (killed once the volumes were reserved: the source went,
// the StatefulSet controller created the ordinal's claim again and the PV controller bound it to
// the copy): bound to the claim they were reserved for, still Retain and annotated. Each is a
// WarmRestore step; an ordinal that needs no move any more gets none from NextWarmStep, so the
// next apply finishes them first, whatever it moves.
func (v *Migration) HandOversToFinish() []WarmStep {
	if v.set == nil {
		return nil
	}
	var out []WarmStep
	for i := range v.s.PVs {
		pv := &v.s.PVs[i]
		ns, name, ok := strings.Cut(pv.Annotations[AnnWarmClaim], "/")
		if !ok || ns != v.set.Namespace {
			continue
		}
		claim := v.pvc(name)
		if claim == nil || claim.DeletionTimestamp != nil || claim.Spec.VolumeName != pv.Name ||
			pv.Spec.ClaimRef == nil || pv.Spec.ClaimRef.UID != claim.UID {
			continue // not bound to it (yet): NextWarmStep's hand-over, or not this set's
		}
		for _, t := range v.set.Spec.VolumeClaimTemplates {
			if o, ok := stsutil.ClaimOrdinal(name, t.Name, v.set.Name); ok {
				out = append(out, WarmStep{Kind: WarmRestore, Ordinal: o, Claims: []string{name}, PVs: []string{pv.Name},
					Target: v.ix.PinnedNode(pv), Reason: "the hand-over of " + name + " finished without the apply that started it: restore its volume's reclaim policy"})
				break
			}
		}
	}
	return out
}

// warmPair is one node-local claim of the ordinal in a warm move: its live claim, the claim of
// its copy, and the copy's PV.
type warmPair struct {
	old, next *corev1.PersistentVolumeClaim
	pv        string // the warm PV: the next claim's, or the one handed to the ordinal's claim
	handed    bool   // the PV carries AnnWarmClaim (the cut-over started)
}

// warmBeforeCutOver decides while nothing of the ordinal has been touched: a failure rolls
// back what the move made; an ordinal that needs no move (done, or moved back) has nothing warm.
func (v *Migration) warmBeforeCutOver(st WarmStep, o int32, pairs []warmPair, source, sink *corev1.Pod, copyTimeout time.Duration, now time.Time) WarmStep {
	var made []string
	for _, p := range []*corev1.Pod{sink, source} {
		if p != nil {
			made = append(made, "pod/"+p.Name)
		}
	}
	needs := false
	for _, p := range pairs {
		if p.next != nil {
			made = append(made, "pvc/"+p.next.Name)
		}
		if p.old != nil && p.old.DeletionTimestamp == nil && v.pvcNeedsReplace(p.old, MoveProgress{}) != "" {
			needs = true
		}
	}
	if !needs {
		if len(made) > 0 { // leftovers of a move that is not needed any more
			st.Kind, st.Delete, st.Reason = WarmRelease, made, "ordinal "+fmt.Sprint(o)+" needs no move: remove the copy's leftovers"
			return st
		}
		st.Kind, st.Reason = WarmHandedOver, "ordinal "+fmt.Sprint(o)+" needs no warm step"
		return st
	}
	rollback := func(why string) WarmStep {
		st.Kind, st.Reason, st.Delete = WarmRollback, why, made
		return st
	}
	if sink != nil && sink.Status.Phase == corev1.PodFailed {
		return rollback("the copier " + sink.Name + " failed: " + terminationMessage(sink))
	}
	if source != nil && (source.Status.Phase == corev1.PodFailed || source.Status.Phase == corev1.PodSucceeded) {
		return rollback("the copier " + source.Name + " stopped before the copy finished: " + terminationMessage(source))
	}
	if sink != nil && sink.Status.Phase != corev1.PodSucceeded && copyTimeout > 0 && now.Sub(sink.CreationTimestamp.Time) > copyTimeout {
		return rollback(fmt.Sprintf("the copy did not finish within copy.timeout (%s)", copyTimeout))
	}
	if pod := v.pod(o); pod == nil || pod.DeletionTimestamp != nil || st.Node == "" {
		return rollback(fmt.Sprintf("ordinal %d's Pod or volume went away before the copy finished", o))
	}
	var create []string
	for _, p := range pairs {
		switch {
		case p.old == nil || p.old.DeletionTimestamp != nil || v.boundPV(p.old) == nil:
			return rollback("a PVC of ordinal " + fmt.Sprint(o) + " is not bound any more")
		case p.next == nil:
			create = append(create, p.old.Name)
		case p.next.DeletionTimestamp != nil:
			st.Kind, st.Reason = WarmWait, "waiting for PVC "+p.next.Name+" to be removed"
			return st
		}
	}
	if len(create) > 0 {
		if st.Target == "" {
			return rollback(fmt.Sprintf("no target node was chosen for ordinal %d", o))
		}
		st.Kind, st.Claims = WarmCreateClaims, create
		st.Reason = "provision a copy of " + strings.Join(create, ", ") + " on node " + st.Target
		return st
	}
	for _, p := range pairs {
		if p.pv == "" {
			st.Kind, st.Reason = WarmWait, "waiting for PVC "+p.next.Name+" to be provisioned on node "+st.Target
			return st
		}
	}
	switch {
	case source == nil:
		st.Kind, st.Reason = WarmCreateSource, "start the copy's source on node "+st.Node
	case source.Status.Phase != corev1.PodRunning || source.Status.PodIP == "":
		st.Kind, st.Reason = WarmWait, "waiting for the copier "+source.Name+" to run on node "+st.Node
	case sink == nil:
		st.Kind, st.SourceIP, st.Reason = WarmCreateSink, source.Status.PodIP, "start the copy to node "+st.Target
	case sink.Status.Phase != corev1.PodSucceeded:
		st.Kind, st.Reason = WarmWait, "copying to node "+st.Target+" ("+sink.Name+" "+string(sink.Status.Phase)+")"
		if sink.Status.Phase == corev1.PodRunning {
			st.Copier = sink.Name
		}
	default:
		st.Kind, st.Reason = WarmRetain, "the copy is complete: keep its volumes through the hand-over"
		for _, p := range pairs {
			st.PVs = append(st.PVs, p.pv)
		}
	}
	return st
}

// finalSynced: every PV of pvs carries AnnFinalSynced.
func (v *Migration) finalSynced(pvs []string) bool {
	for _, name := range pvs {
		if pv := v.ix.PV(name); pv == nil || pv.Annotations[AnnFinalSynced] != "true" {
			return false
		}
	}
	return true
}

// terminationMessage is what a finished copier said: its container's termination message, else
// its reason and exit code.
func terminationMessage(p *corev1.Pod) string {
	for _, c := range p.Status.ContainerStatuses {
		if t := c.State.Terminated; t != nil {
			if m := strings.TrimSpace(t.Message); m != "" {
				return m
			}
			return fmt.Sprintf("%s (exit code %d)", t.Reason, t.ExitCode)
		}
	}
	if p.Status.Message != "" {
		return p.Status.Message
	}
	return "phase " + string(p.Status.Phase)
}

// CopySpec is how a warm move copies (olapgke_statefulset_migration's copy block).
type CopySpec struct {
	// Image runs both copiers; it needs sh, rsync and awk for the default commands.
	Image string
	// SourceCommand and SinkCommand replace the default commands (nil: the defaults). They get
	// the environment CopierEnv describes.
	SourceCommand, SinkCommand []string
	// BandwidthBytes bounds the copy (bytes per second; 0: unbounded).
	BandwidthBytes int64
	// Timeout bounds the copy from the sink's creation (0: none).
	Timeout time.Duration
	// Annotations go on both copier Pods (for example a service mesh's sidecar opt-out).
	Annotations map[string]string
	// FinalSync runs a second sink once the old Pod is gone (WarmOptions.FinalSync).
	FinalSync bool
}

// The copiers' contract: each claim template's volume is mounted at CopierMountRoot/<claim>
// (read-only at the source); the source serves them on CopierPort; the sink exits 0 once every
// claim is copied. Their environment: OLAPGKE_CLAIMS (the claim template names, space
// separated), OLAPGKE_SOURCE (the source's Pod IP, sink only), OLAPGKE_PORT, OLAPGKE_BWLIMIT_KBPS
// (0: unbounded), OLAPGKE_DATA (CopierMountRoot).
const (
	CopierMountRoot = "/data"
	CopierPort      = 8873
	// CopierContainer is the copier Pods' one container (its log is the copy's progress).
	CopierContainer = "copy"
)

// copierGracePeriod is the copier Pods' terminationGracePeriodSeconds.
const copierGracePeriod int64 = 1

// DefaultSourceCommand serves every claim as an rsync daemon module of its name, read-only.
func DefaultSourceCommand() []string {
	return []string{"sh", "-c", `set -e
conf=/tmp/olapgke-rsyncd.conf
printf 'use chroot = no\nuid = 0\ngid = 0\n' > "$conf"
for c in $OLAPGKE_CLAIMS; do printf '[%s]\npath = %s/%s\nread only = yes\n' "$c" "$OLAPGKE_DATA" "$c" >> "$conf"; done
exec rsync --daemon --no-detach --config="$conf" --port="$OLAPGKE_PORT"`}
}

// DefaultSinkCommand copies every claim from the source (rsync -a --delete, bounded by
// OLAPGKE_BWLIMIT_KBPS) and writes what it copied to the termination message. Its log is what
// ParseCopyProgress reads: a CopyClaimMarker line per claim, then rsync's --info=progress2
// records, which rsync separates by carriage returns: awk turns them into lines and flushes
// each one (tr would hold them in its pipe buffer for a minute), and keeps rsync's --stats for
// the termination message. rsync's own exit status is the sink's.
func DefaultSinkCommand() []string {
	return []string{"sh", "-c", `set -e
n=0; for c in $OLAPGKE_CLAIMS; do n=$((n+1)); done
i=0
for c in $OLAPGKE_CLAIMS; do
  i=$((i+1))
  echo "` + CopyClaimMarker + `$c ($i of $n)"
  { rc=0; rsync -a --delete --stats --info=progress2 --no-inc-recursive --bwlimit="$OLAPGKE_BWLIMIT_KBPS" "rsync://$OLAPGKE_SOURCE:$OLAPGKE_PORT/$c/" "$OLAPGKE_DATA/$c/" || rc=$?; echo "$rc" > /tmp/olapgke-rc; } |
    awk -v f="/tmp/$c.stats" 'BEGIN { RS = "\r" } { print; print > f; fflush() }'
  rc=$(cat /tmp/olapgke-rc); [ "$rc" = 0 ] || exit "$rc"
done
for c in $OLAPGKE_CLAIMS; do echo "$c: $(grep 'Total transferred file size' "/tmp/$c.stats")"; done > /dev/termination-log`}
}

// CopierPod is the copier Pod of ordinal o's warm move at end role (CopierSource on node with
// the live claims, read-only; CopierSink on the target with the next claims), placed by
// nodeName (the old pool may be cordoned or tainted; the node is the data's, not the
// scheduler's choice) and tolerating every taint.
func (v *Migration) CopierPod(o int32, claims []string, role, node, sourceIP string, c CopySpec) *corev1.Pod {
	podName := stsutil.PodName(v.set.Name, o)
	cmd, readOnly := c.SinkCommand, false
	if role == CopierSource {
		cmd, readOnly = c.SourceCommand, true
		if cmd == nil {
			cmd = DefaultSourceCommand()
		}
	} else if cmd == nil {
		cmd = DefaultSinkCommand()
	}
	env := []corev1.EnvVar{
		{Name: "OLAPGKE_CLAIMS", Value: strings.Join(claims, " ")},
		{Name: "OLAPGKE_PORT", Value: fmt.Sprint(CopierPort)},
		{Name: "OLAPGKE_BWLIMIT_KBPS", Value: fmt.Sprint(c.BandwidthBytes / 1024)},
		{Name: "OLAPGKE_DATA", Value: CopierMountRoot},
	}
	if role != CopierSource {
		env = append(env, corev1.EnvVar{Name: "OLAPGKE_SOURCE", Value: sourceIP})
	}
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: v.set.Namespace, Name: CopierPodName(podName, role),
			Labels: map[string]string{LabelWarmMove: podName, LabelCopierRole: role}, Annotations: maps.Clone(c.Annotations)},
		Spec: corev1.PodSpec{
			// The source's deletion is on the ordinal's downtime path (its old claims go only
			// once it is gone), and a copier has nothing to flush: the source only reads, and a
			// sink stopped before it finished is rolled back. rsync exits on SIGTERM at once; the
			// kubelet's default 30 s would only bound a copier that does not.
			TerminationGracePeriodSeconds: ptr.To(copierGracePeriod),
			NodeName:                      node, RestartPolicy: corev1.RestartPolicyNever,
			Tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
			Containers: []corev1.Container{{Name: CopierContainer, Image: c.Image, Command: cmd, Env: env,
				TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError}},
		},
	}
	if role == CopierSource {
		// The source serves until it is deleted: the kubelet restarts it if it crashes (a sink
		// reading from it then fails and the move rolls back). The sink runs once.
		p.Spec.RestartPolicy = corev1.RestartPolicyOnFailure
		p.Spec.Containers[0].Ports = []corev1.ContainerPort{{Name: "rsync", ContainerPort: CopierPort}}
	}
	for _, claim := range claims {
		pvc := stsutil.ClaimPVCName(claim, v.set.Name, o)
		if role != CopierSource { // the sink and the final pass write the copy
			pvc = NextClaimName(pvc)
		}
		p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: claim, VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: pvc, ReadOnly: readOnly}}})
		p.Spec.Containers[0].VolumeMounts = append(p.Spec.Containers[0].VolumeMounts,
			corev1.VolumeMount{Name: claim, MountPath: CopierMountRoot + "/" + claim, ReadOnly: readOnly})
	}
	return p
}

// CopyRequest is the size of the claim a warm move provisions for the ordinal's live claim live
// of claim template tmpl: the larger of the template's request and the live claim's capacity (a
// claim grown since holds more than the template asks). NextClaim requests it, and the plan and
// the engine's preflight place the copy with it (stepClaims), so that a target node without
// that much free space is refused before anything is created.
func CopyRequest(tmpl *corev1.PersistentVolumeClaim, live *corev1.PersistentVolumeClaim) resource.Quantity {
	req := tmpl.Spec.Resources.Requests[corev1.ResourceStorage]
	if live != nil {
		if c, ok := live.Status.Capacity[corev1.ResourceStorage]; ok && c.Cmp(req) > 0 {
			return c
		}
	}
	return req
}

// CopyBytes is the space ordinal o's warm move takes on its target node while both copies
// exist: CopyRequest summed over the node-local claims.
func (v *Migration) CopyBytes(o int32, claims []string) int64 {
	if v.set == nil {
		return 0
	}
	var n int64
	for i := range v.set.Spec.VolumeClaimTemplates {
		t := &v.set.Spec.VolumeClaimTemplates[i]
		if !slices.Contains(claims, t.Name) {
			continue
		}
		q := CopyRequest(t, v.pvc(stsutil.ClaimPVCName(t.Name, v.set.Name, o)))
		n += q.Value()
	}
	return n
}

// NextClaim is the claim a warm move provisions on target for the ordinal's live claim live:
// the claim template's class, access modes and volume mode, and CopyRequest's size.
func (v *Migration) NextClaim(o int32, claim string, live *corev1.PersistentVolumeClaim, target string) *corev1.PersistentVolumeClaim {
	podName := stsutil.PodName(v.set.Name, o)
	var tmpl corev1.PersistentVolumeClaim
	for _, t := range v.set.Spec.VolumeClaimTemplates {
		if t.Name == claim {
			tmpl = t
		}
	}
	spec := *tmpl.Spec.DeepCopy()
	if q := CopyRequest(&tmpl, live); !q.IsZero() {
		if spec.Resources.Requests == nil {
			spec.Resources.Requests = corev1.ResourceList{}
		}
		spec.Resources.Requests[corev1.ResourceStorage] = q
	}
	spec.VolumeName = ""
	return &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: v.set.Namespace, Name: NextClaimName(live.Name),
			Labels:      map[string]string{LabelWarmMove: podName},
			Annotations: map[string]string{AnnSelectedNode: target, AnnWarmClaim: live.Name}},
		Spec: spec,
	}
}
