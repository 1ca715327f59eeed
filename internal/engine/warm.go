package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8stypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/olapgke/terraform-provider-olapgke/internal/planner/migration"
	"github.com/olapgke/terraform-provider-olapgke/internal/stsutil"
)

// Event reasons of a warm move (issue 46), on the StatefulSet like the others (events.go).
const (
	// ReasonCopyStarted: the copy's claims were provisioned and its copiers started.
	ReasonCopyStarted = "OlapgkeCopyStarted"
	// ReasonCopyFinished: the sink finished; the cut-over starts.
	ReasonCopyFinished = "OlapgkeCopyFinished"
	// ReasonCopyRolledBack: a copy failed before the cut-over; what it made was deleted.
	ReasonCopyRolledBack = "OlapgkeCopyRolledBack"
	// ReasonVolumeHandedOver: the ordinal's claim is bound to the copy on the target node.
	ReasonVolumeHandedOver = "OlapgkeVolumeHandedOver"
	// ReasonCopyProgress: how far a running copy is (bytes, rate, time left), from its log.
	ReasonCopyProgress = "OlapgkeCopyProgress"
)

// copyProgressEvery is how often a running copy's log is read; an Event is recorded when the
// copy has crossed another tenth of a claim (or started the next claim) since the last one, so
// a two-hour copy leaves a dozen Events per claim, not hundreds.
const copyProgressEvery = 15 * time.Second

// copyLogTail is how many lines of a copier's log CopyProgressOf reads: rsync writes about one
// record a second, and the claim marker must be among them for the record to name its claim.
const copyLogTail = 400

// copyLogTimeout bounds one read of a copier's log.
const copyLogTimeout = 5 * time.Second

// CopyProgressOf is how far copier Pod pod in namespace ns is, from the tail of its log
// (migration.ParseCopyProgress): the apply's Events and the plan's in-progress warning both
// read it here. ok is false when the log says nothing of progress yet (or the copier prints
// none); err when the log cannot be read (pods/log not allowed, the node's kubelet not
// answering).
func CopyProgressOf(ctx context.Context, kube kubernetes.Interface, ns, pod string) (p migration.CopyProgress, ok bool, err error) {
	// The API server proxies the read to the node's kubelet: one that does not answer must not
	// hold up the migration (or the plan) for longer than a glance.
	ctx, cancel := context.WithTimeout(ctx, copyLogTimeout)
	defer cancel()
	b, err := kube.CoreV1().Pods(ns).GetLogs(pod, &corev1.PodLogOptions{Container: migration.CopierContainer,
		TailLines: ptr.To(int64(copyLogTail))}).DoRaw(ctx)
	if err != nil {
		return p, false, err
	}
	p, ok = migration.ParseCopyProgress(string(b))
	return p, ok, nil
}

// copyProgress reads ordinal r's running copy (copier) at most every copyProgressEvery, logs
// it and records an Event when it has moved on by a tenth; it returns when to read again.
func (m *migrator) copyProgress(ctx context.Context, r *ordinalRun, copier string, now time.Time) time.Duration {
	if !r.progressRead.IsZero() && now.Sub(r.progressRead) < copyProgressEvery {
		return copyProgressEvery - now.Sub(r.progressRead)
	}
	r.progressRead = now
	p, ok, err := CopyProgressOf(ctx, m.kube, m.run.Namespace, copier)
	switch {
	case err != nil:
		if !r.logged["progress:"+copier] {
			r.logged["progress:"+copier] = true
			m.logf(r.o, r.idx, "the progress of copier %s cannot be read from its log (%v); the copy goes on", copier, err)
		}
	case ok:
		m.logf(r.o, r.idx, "copier %s: %s", copier, p.Describe())
		mark := fmt.Sprintf("%s/%s/%d", copier, p.Claim, p.Percent/10)
		if mark != r.progressMark {
			r.progressMark = mark
			m.ev.record(false, ReasonCopyProgress, "Copy", podRef(m.run.Namespace, copier, ""), "ordinal %d (%d/%d): copier %s: %s",
				r.o, r.idx, m.total, copier, p.Describe())
		}
	}
	return copyProgressEvery
}

// warmLook takes ordinal r's next warm step (migration.NextWarmStep) and says whether the warm
// move is over (the cold NextStep then waits for the new Pod), and, while a copy runs, when to
// read its progress again (0: no timer). After a write it waits for the informers' event
// before it decides again.
func (m *migrator) warmLook(ctx context.Context, v *migration.Migration, r *ordinalRun, now time.Time) (handedOver bool, wake time.Duration, err error) {
	ws := v.NextWarmStep(r.o, m.run.Claims, m.targets[r.o], m.w.copiers(),
		migration.WarmOptions{Timeout: m.run.Copy.Timeout, FinalSync: m.run.Copy.FinalSync}, now)
	switch ws.Kind {
	case migration.WarmHandedOver:
		return true, 0, nil
	case migration.WarmWait:
		// What a timeout or a cancel reports the ordinal was doing.
		r.last = migration.Step{Kind: migration.StepWait, Ordinal: r.o, Reason: ws.Reason}
		if !r.logged[ws.Reason] {
			r.logged[ws.Reason] = true
			m.logf(r.o, r.idx, "%s", ws.Reason)
		}
		if ws.Copier != "" {
			return false, m.copyProgress(ctx, r, ws.Copier, now), nil
		}
		return false, 0, nil
	case migration.WarmCutOver:
		// The cold steps on the old claims and Pod, with their UID preconditions.
		_, _, err := m.act(ctx, v.Snapshot(), r, ws.Cold, now)
		return false, 0, err
	}
	if err := m.warmAct(ctx, v, r, ws); err != nil {
		return false, 0, err
	}
	if ws.Kind == migration.WarmFinalFailed {
		return false, 0, &MigrationError{Ordinal: r.o, Pod: stsutil.PodName(m.run.Name, r.o), Phase: string(ws.Kind), Reason: ws.Reason}
	}
	if ws.Kind == migration.WarmRollback {
		return false, 0, &MigrationError{Ordinal: r.o, Pod: stsutil.PodName(m.run.Name, r.o), Phase: string(ws.Kind),
			Reason: ws.Reason + "; the copy's claims and copiers were deleted, the ordinal's Pod and PVCs were not touched"}
	}
	return false, 0, nil
}

// warmAct performs one warm step's writes (each idempotent: AlreadyExists and NotFound are
// the step already done).
func (m *migrator) warmAct(ctx context.Context, v *migration.Migration, r *ordinalRun, ws migration.WarmStep) error {
	ns, pod := m.run.Namespace, stsutil.PodName(m.run.Name, r.o)
	fail := func(what string, err error) error {
		return &MigrationError{Ordinal: r.o, Pod: pod, Phase: string(ws.Kind), Reason: what, Err: err}
	}
	kube := m.kube
	switch ws.Kind {
	case migration.WarmCreateClaims:
		for _, c := range m.run.Claims {
			name := stsutil.ClaimPVCName(c, m.run.Name, r.o)
			if !slices.Contains(ws.Claims, name) {
				continue
			}
			live := pvcOf(v.Snapshot(), name)
			if live == nil {
				return fail("reading PVC "+name, fmt.Errorf("not found"))
			}
			next := v.NextClaim(r.o, c, live, ws.Target)
			if _, err := kube.CoreV1().PersistentVolumeClaims(ns).Create(ctx, next, metav1.CreateOptions{FieldManager: "olapgke"}); err != nil && !apierrors.IsAlreadyExists(err) {
				return fail("creating PVC "+next.Name, err)
			}
		}
		m.step(r.o, r.idx, ReasonCopyStarted, "ProvisionCopy", podRef(ns, pod, ""), "provisioning a copy of %s on node %s", strings.Join(ws.Claims, ", "), ws.Target)
	case migration.WarmCreateSource, migration.WarmCreateSink, migration.WarmCreateFinal:
		role, node := migration.CopierSource, ws.Node
		switch ws.Kind {
		case migration.WarmCreateSink:
			role, node = migration.CopierSink, ws.Target
		case migration.WarmCreateFinal:
			role, node = migration.CopierFinal, ws.Target
		}
		p := v.CopierPod(r.o, m.run.Claims, role, node, ws.SourceIP, *m.run.Copy)
		if _, err := kube.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{FieldManager: "olapgke"}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fail("creating the copier Pod "+p.Name, err)
		}
		m.step(r.o, r.idx, ReasonCopyStarted, "StartCopier", podRef(ns, p.Name, ""), "copier %s started on node %s", p.Name, node)
	case migration.WarmRetain:
		for i, pv := range ws.PVs {
			claim := ws.Claims[i]
			cur, err := kube.CoreV1().PersistentVolumes().Get(ctx, pv, metav1.GetOptions{})
			if err != nil {
				return fail("reading PV "+pv, err)
			}
			ann := map[string]string{migration.AnnWarmClaim: ns + "/" + claim}
			if cur.Annotations[migration.AnnReclaimPolicy] == "" {
				ann[migration.AnnReclaimPolicy] = string(cur.Spec.PersistentVolumeReclaimPolicy)
			}
			if err := m.patchPV(ctx, pv, map[string]any{"metadata": map[string]any{"annotations": ann},
				"spec": map[string]any{"persistentVolumeReclaimPolicy": corev1.PersistentVolumeReclaimRetain}}); err != nil {
				return fail("keeping PV "+pv, err)
			}
		}
		m.step(r.o, r.idx, ReasonCopyFinished, "FinishCopy", podRef(ns, migration.CopierPodName(pod, migration.CopierSink), ""),
			"copy finished on node %s; PVs %s kept (Retain) for the hand-over", ws.Target, strings.Join(ws.PVs, ", "))
	case migration.WarmFinalSynced:
		for _, pv := range ws.PVs {
			if err := m.patchPV(ctx, pv, map[string]any{"metadata": map[string]any{"annotations": map[string]string{migration.AnnFinalSynced: "true"}}}); err != nil {
				return fail("marking PV "+pv, err)
			}
		}
		m.step(r.o, r.idx, ReasonCopyFinished, "FinishFinalPass", podRef(ns, migration.CopierPodName(pod, migration.CopierFinal), ""),
			"final pass finished on node %s", ws.Target)
	case migration.WarmRollback, migration.WarmRelease, migration.WarmFinalFailed:
		for _, d := range ws.Delete {
			kind, name, _ := strings.Cut(d, "/")
			var err error
			switch kind {
			case "pod":
				err = kube.CoreV1().Pods(ns).Delete(ctx, name, metav1.DeleteOptions{})
			case "pvc":
				err = kube.CoreV1().PersistentVolumeClaims(ns).Delete(ctx, name, metav1.DeleteOptions{})
			}
			if err != nil && !apierrors.IsNotFound(err) {
				return fail("deleting "+d, err)
			}
		}
		if ws.Kind == migration.WarmRollback {
			m.step(r.o, r.idx, ReasonCopyRolledBack, "RollBackCopy", podRef(ns, pod, ""), "%s; deleted %s", ws.Reason, strings.Join(ws.Delete, ", "))
		} else {
			m.logf(r.o, r.idx, "%s: deleted %s", ws.Reason, strings.Join(ws.Delete, ", "))
		}
	case migration.WarmPreBind:
		for i, pv := range ws.PVs {
			// claimRef without uid or resourceVersion: the PV controller makes the PV Available,
			// reserved for the claim of that name (pv_controller.go syncVolume).
			if err := m.patchPV(ctx, pv, map[string]any{"spec": map[string]any{"claimRef": map[string]any{
				"apiVersion": "v1", "kind": "PersistentVolumeClaim", "namespace": ns, "name": ws.Claims[i], "uid": nil, "resourceVersion": nil}}}); err != nil {
				return fail("reserving PV "+pv, err)
			}
		}
		m.logf(r.o, r.idx, "PVs %s reserved for %s", strings.Join(ws.PVs, ", "), strings.Join(ws.Claims, ", "))
	case migration.WarmDropSource:
		name := migration.CopierPodName(pod, migration.CopierSource)
		if err := kube.CoreV1().Pods(ns).Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return fail("deleting the copier Pod "+name, err)
		}
		m.logf(r.o, r.idx, "copier %s deleted: the old claims go", name)
	case migration.WarmRestore:
		for _, pv := range ws.PVs {
			if err := restorePV(ctx, kube, pv); err != nil {
				return fail("restoring PV "+pv, err)
			}
		}
		m.step(r.o, r.idx, ReasonVolumeHandedOver, "HandOver", podRef(ns, pod, ""), "%s bound to the copy (PVs %s) on node %s", strings.Join(ws.Claims, ", "), strings.Join(ws.PVs, ", "), ws.Target)
	}
	return nil
}

// restorePV gives a handed-over warm volume back its recorded reclaim policy and drops the warm
// move's annotations.
func restorePV(ctx context.Context, kube kubernetes.Interface, name string) error {
	cur, err := kube.CoreV1().PersistentVolumes().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	patch := map[string]any{"metadata": map[string]any{"annotations": map[string]any{migration.AnnWarmClaim: nil, migration.AnnReclaimPolicy: nil, migration.AnnFinalSynced: nil}}}
	if p := cur.Annotations[migration.AnnReclaimPolicy]; p != "" {
		patch["spec"] = map[string]any{"persistentVolumeReclaimPolicy": p}
	}
	return patchPV(ctx, kube, name, patch)
}

// FinishHandOvers performs migration.HandOversToFinish's steps (each a WarmRestore of a volume
// the controllers handed over after the apply that started it was killed), before an apply
// moves anything; log says what it did.
func FinishHandOvers(ctx context.Context, kube kubernetes.Interface, steps []migration.WarmStep, log func(string)) error {
	for _, ws := range steps {
		for _, pv := range ws.PVs {
			if err := restorePV(ctx, kube, pv); err != nil && !apierrors.IsNotFound(err) {
				return fmt.Errorf("finishing the hand-over of PV %s to %s: %w", pv, strings.Join(ws.Claims, ", "), err)
			}
		}
		log(fmt.Sprintf("ordinal %d: %s bound to the copy (PVs %s) on node %s: reclaim policy restored (the apply that moved it was stopped before it could)",
			ws.Ordinal, strings.Join(ws.Claims, ", "), strings.Join(ws.PVs, ", "), ws.Target))
	}
	return nil
}

func (m *migrator) patchPV(ctx context.Context, name string, patch map[string]any) error {
	return patchPV(ctx, m.kube, name, patch)
}

func patchPV(ctx context.Context, kube kubernetes.Interface, name string, patch map[string]any) error {
	body, err := json.Marshal(patch)
	if err != nil {
		return err
	}
	_, err = kube.CoreV1().PersistentVolumes().Patch(ctx, name, k8stypes.MergePatchType, body, metav1.PatchOptions{FieldManager: "olapgke"})
	return err
}
