package engine

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"

	"github.com/olapgke/terraform-provider-olapgke/internal/planner"
	"github.com/olapgke/terraform-provider-olapgke/internal/planner/gates"
	"github.com/olapgke/terraform-provider-olapgke/internal/planner/migration"
	"github.com/olapgke/terraform-provider-olapgke/internal/stsutil"
)

// MigrationRun configures Migrate.
type MigrationRun struct {
	Namespace, Name string
	// Ordinals to restart or move, in order (the plan's moves).
	Ordinals []int32
	// Actions are the planned actions per ordinal. A planned restart never
	// deletes a PVC: if the live state asks for that by then, the ordinal
	// stops before anything is deleted. Ordinals without an entry take what
	// the planner decides when their turn comes.
	Actions map[int32]migration.MigrationAction
	// Claims are the node-local volumeClaimTemplates whose PVCs are recreated.
	Claims []string
	// Parallelism is how many ordinals move at once (>= 1).
	Parallelism        int
	RequireOthersReady bool
	// MinReady is the soak after each new Pod is Ready.
	MinReady time.Duration
	// OrdinalTimeout bounds each ordinal from its first step, and each wait, while none is
	// moving, for the next ordinal(s) to be allowed to start (0: only ctx bounds them).
	OrdinalTimeout time.Duration
	// UnschedulableGrace is how long a new Pod may stay Unschedulable, or
	// fail in a way a retry may clear (provisioning, mount, image pull,
	// crash loop: planner.JudgeWait), before the move fails quoting the cause
	// (default planner.DefaultWaitGrace). A PV node affinity conflict fails at
	// once.
	UnschedulableGrace time.Duration
	// Resync is the longest the loop waits without an informer event before
	// re-reading its caches (default 5s); waits are event-driven.
	Resync time.Duration
	// Placement, when set, is the pod template placement the plan was made
	// for; the live template must ask for the same placement.
	Placement *corev1.PodTemplateSpec
	// UpdateRevision, when set, is the update revision the plan was made
	// for; the live StatefulSet must be at it before anything is deleted.
	UpdateRevision string
	// Clock is injected for tests (default: real clock).
	Clock clock.Clock
	// Log receives one line per step ("ordinal 2 (1/3): PVC cache-hist-2 deleted").
	Log func(string)
	// Done is called when an ordinal is finished, so the caller can save state; with gates,
	// once when its step ends and again, with Gates, when its gates passed.
	Done func(MigratedOrdinal)
	// Gates are waited for after each batch's steps, before the next batch starts (with
	// gates the window of Parallelism ordinals moves as a batch, see slide)
	// (gates.go). Ordinals whose action is migration.MigrationGate only wait for them.
	Gates []gates.Gate
	// HTTPClient sends the HTTP gates' requests (default http.DefaultClient).
	HTTPClient *http.Client
	// ForceDeleteOnUnreachableNodes: an ordinal whose Pod is on a node that does not answer
	// (planner.PodOnUnreachableNode) has its Pod force-deleted (grace period 0) and is moved;
	// without it the migration stops at that ordinal before deleting anything of it, or, when
	// its Pod is already Terminating there, at once instead of waiting out OrdinalTimeout.
	ForceDeleteOnUnreachableNodes bool
	// Copy, when set, makes each move warm (warm.go, migration.NextWarmStep): the ordinal's
	// claims are copied to the target node while its Pod serves, and handed to its recreated
	// Pod there. Restarts are unchanged.
	Copy *migration.CopySpec
}

// MigratedOrdinal is one finished ordinal.
type MigratedOrdinal struct {
	Ordinal  int32
	Action   migration.MigrationAction
	Pod      string
	PodUID   types.UID
	Node     string
	PVs      []string
	Duration time.Duration
	Finished time.Time
	// Gates are the gates' waits, once they passed (nil before, or without gates).
	Gates []GateResult
}

// MigrationError is a move that stopped. Every other ordinal is untouched.
type MigrationError struct {
	Ordinal int32
	Pod     string
	// Phase is the NextStep kind the ordinal was in ("wait", "delete_pod", ...).
	Phase string
	// Source says where Quote comes from ("condition PodScheduled of Pod hist-2",
	// "event ProvisioningFailed on PVC cache-hist-2", "timeout").
	Source string
	// Cause classifies a quote from the scheduler or the provisioner ("" otherwise).
	Cause planner.StuckCause
	Quote string
	// Reason is what the ordinal was waiting for or why it failed.
	Reason string
	// Node is the node at fault (CauseUnreachableNode), "" otherwise.
	Node string
	// Timeout is true when the per-ordinal timeout (or ctx) ended the wait.
	Timeout bool
	// Deleted are the ordinal's objects this run deleted before it stopped ("PVC cache-hist-2",
	// "Pod hist-2"): where a cancelled or timed-out run left the ordinal.
	Deleted []string
	Err     error
}

func (e *MigrationError) Error() string {
	s := fmt.Sprintf("ordinal %d (Pod %s): %s", e.Ordinal, e.Pod, e.Reason)
	if e.Quote != "" {
		s += fmt.Sprintf("; %s: %q", e.Source, e.Quote)
	}
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

func (e *MigrationError) Unwrap() error { return e.Err }

// PreconditionError is a check that failed before anything was deleted. Err, when set, is the
// cause that ended the wait (the run's context: cancelled or timed out).
type PreconditionError struct {
	Msg string
	Err error
}

func (e *PreconditionError) Error() string { return e.Msg }

func (e *PreconditionError) Unwrap() error { return e.Err }

// Migrate moves run.Ordinals one batch at a time: per ordinal it deletes the
// old node-local PVCs (without waiting: pvc-protection holds them while the
// Pod exists), then the Pod (UID preconditions), and waits, driven by
// informers, until the new Pod is Running and Ready at the update revision on
// a node the template admits with new PVs pinned there; then it soaks and
// reports the ordinal through run.Done. Decisions are migration.NextStep's:
// this function only reads state, acts once, and waits for the next change.
func Migrate(ctx context.Context, kube kubernetes.Interface, run MigrationRun) (retErr error) {
	if run.Clock == nil {
		run.Clock = clock.RealClock{}
	}
	if run.Log == nil {
		run.Log = func(string) {}
	}
	if run.Done == nil {
		run.Done = func(MigratedOrdinal) {}
	}
	if run.UnschedulableGrace <= 0 {
		run.UnschedulableGrace = planner.DefaultWaitGrace
	}
	if run.Resync <= 0 {
		run.Resync = 5 * time.Second
	}
	if run.Parallelism < 1 {
		run.Parallelism = 1
	}
	if len(run.Ordinals) == 0 {
		return nil
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	set, err := kube.AppsV1().StatefulSets(run.Namespace).Get(ctx, run.Name, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("reading StatefulSet %s/%s: %w", run.Namespace, run.Name, err)
	}
	sel, err := metav1.LabelSelectorAsSelector(set.Spec.Selector)
	if err != nil {
		return fmt.Errorf("StatefulSet %s/%s selector: %w", run.Namespace, run.Name, err)
	}
	var extra []access
	if len(run.Gates) > 0 {
		extra = append(extra, gatesAccess)
	}
	if run.Copy != nil {
		extra = append(extra, warmAccess...)
	}
	if err := checkAccess(ctx, kube, run.Namespace, extra...); err != nil {
		return err
	}
	w, err := newMigrationWatcher(ctx, kube, run.Namespace, run.Name, sel)
	if err != nil {
		return err
	}
	defer w.stop()
	ev := newStepEvents(ctx, kube, set, run.Log) // events.go
	defer func() { ev.finish("Migrate", retErr); ev.close() }()

	m := &migrator{run: run, kube: kube, w: w, setUID: set.UID, total: len(run.Ordinals), ev: ev,
		deleted: map[types.UID]bool{}, forced: map[types.UID]bool{}, pending: map[int32]bool{}, finished: map[int32]finishedOrdinal{}, targets: map[int32]string{}}
	for _, o := range stsutil.GatesPending(set) {
		m.pending[o] = true
	}
	var remaining []int32
	for _, o := range run.Ordinals {
		if run.Actions[o] != migration.MigrationGate {
			remaining = append(remaining, o)
			continue
		}
		// Resumed at its gates: an earlier run finished its step (nothing is deleted again).
		if err := m.gateOnly(ctx, o); err != nil {
			return err
		}
	}
	return m.slide(ctx, remaining)
}

// gateOnly waits for the gates of ordinal o, whose step an earlier run finished, and reports it.
func (m *migrator) gateOnly(ctx context.Context, o int32) error {
	m.started++
	idx := m.started
	name := stsutil.PodName(m.run.Name, o)
	m.logf(o, idx, "resuming at its gates (its step was finished by an earlier apply)")
	res, err := m.awaitGates(ctx, o, idx)
	if err != nil {
		return err
	}
	rec := MigratedOrdinal{Ordinal: o, Action: migration.MigrationGate, Pod: name, Finished: m.run.Clock.Now(), Gates: res}
	if p := m.w.pod(name); p != nil {
		rec.PodUID, rec.Node = p.UID, p.Spec.NodeName
	}
	m.gatesPassed(rec, res)
	if s, _, err := m.w.snapshot(); err == nil {
		rec.PVs = boundPVs(s, m.run.Namespace, m.run.Name, o, m.run.Claims)
	}
	m.run.Done(rec)
	return m.markGatesPending(ctx, []int32{o}, false)
}

type migrator struct {
	run     MigrationRun
	kube    kubernetes.Interface
	w       *migrationWatcher
	setUID  types.UID
	total   int
	started int
	deleted map[types.UID]bool
	// forced are the Pods this run force-deleted (ForceDeleteOnUnreachableNodes).
	forced map[types.UID]bool
	// pending is what the StatefulSet's pending-gates annotation says (as this run wrote it).
	pending map[int32]bool
	// finished are the ordinals whose step ended, until their gates pass.
	finished map[int32]finishedOrdinal
	// ev records each step as an Event on the StatefulSet (events.go; nil: none).
	ev *stepEvents
	// targets are the nodes the latest preflight placed each ordinal on (a warm move's copy
	// goes there).
	targets map[int32]string
}

type finishedOrdinal struct {
	MigratedOrdinal
	idx int
}

func (m *migrator) logf(o int32, idx int, format string, args ...any) {
	m.run.Log(fmt.Sprintf("ordinal %d (%d/%d): ", o, idx, m.total) + fmt.Sprintf(format, args...))
}

// judgeBatch checks the live set against the plan and picks the next ordinals, at most free of
// them, while the ordinals in moving are on their way: an error when they cannot start
// (nothing is deleted), else what they wait for ("" when they can start now).
func (m *migrator) judgeBatch(v *migration.Migration, set *appsv1.StatefulSet, remaining []int32, free int, moving []int32) ([]int32, string, error) {
	if p := m.run.Placement; p != nil && !planner.PlacementEqual(p, &set.Spec.Template) {
		return nil, "", &PreconditionError{Msg: fmt.Sprintf(
			"the live template of StatefulSet %s/%s asks for placement %q, the plan was made for %q: the StatefulSet was not updated as planned",
			m.run.Namespace, m.run.Name, planner.DescribePlacement(&set.Spec.Template), planner.DescribePlacement(p))}
	}
	if r := m.run.UpdateRevision; r != "" && set.Status.UpdateRevision != r {
		return nil, "", &PreconditionError{Msg: fmt.Sprintf(
			"the update revision of StatefulSet %s/%s is %s, the plan was made for %s: the StatefulSet was not updated as planned (plan again)",
			m.run.Namespace, m.run.Name, set.Status.UpdateRevision, r)}
	}
	batch := v.Batch(remaining, free)
	// The migration's preflight again, before anything of the batch is deleted, the question
	// the plan asked (migration.Preflight): each ordinal placed again against the live cluster
	// (the watcher keeps every Pod, CSIDriver, CSINode and capacity the scheduler reads), and
	// whether its Pod is on a node that answers.
	steps := make([]migration.Move, 0, len(batch))
	for _, o := range batch {
		steps = append(steps, migration.Move{Ordinal: o, Action: m.action(v, o)})
	}
	pf := v.Preflight(steps, migration.PreflightOptions{Mode: migration.PreflightApply, Claims: m.run.Claims,
		Now: m.run.Clock.Now(), ForceDeleteOnUnreachableNodes: m.run.ForceDeleteOnUnreachableNodes, Warm: m.run.Copy != nil})
	// A Pod on a node that does not answer would stay Terminating: stop before deleting
	// anything of its ordinal, unless the user accepted to force-delete it.
	if !m.run.ForceDeleteOnUnreachableNodes && len(pf.Unreachable) > 0 {
		return nil, "", unreachableError(pf.Unreachable[0], "check", false)
	}
	// While a step does not fit only because TopoLVM is not ready yet on target nodes (a pool
	// created in this apply), wait for them: the planner decides.
	for _, st := range pf.Steps {
		if st.Target != "" {
			m.targets[st.Ordinal] = st.Target
		}
	}
	for _, st := range pf.Steps {
		if len(st.Wait) > 0 {
			return batch, "TopoLVM to be ready on the target nodes " + planner.DescribeNodeWaits(st.Wait), nil
		}
		if st.Problem != "" {
			return nil, "", &PreconditionError{Msg: st.Problem}
		}
	}
	// An ordinal outside the batch that is down is refused at once, before waiting for a
	// budget that it alone may be holding at zero; one that is only coming up where the
	// template places it (an earlier apply's step, stopped before its Pod was Ready) is waited
	// for, up to the ordinal timeout: the planner decides which is which.
	if m.run.RequireOthersReady {
		down, up := v.OthersDown(m.run.Claims, batch, without(remaining, batch), moving)
		if len(down) > 0 {
			return nil, "", &PreconditionError{Msg: fmt.Sprintf("before moving ordinal(s) %s, ordinals that are not moved must be Running and Ready: %s",
				migration.JoinOrdinals(batch), strings.Join(down, "; "))}
		}
		if len(up) > 0 {
			return batch, "ordinals that are not moved to be Running and Ready: " + strings.Join(up, "; "), nil
		}
	}
	return batch, v.PDBBlocks(batch), nil
}

// action is the planned action of ordinal o, or what the planner decides
// from s when the plan named none.
func (m *migrator) action(v *migration.Migration, o int32) migration.MigrationAction {
	if a, ok := m.run.Actions[o]; ok && a != "" {
		return a
	}
	if a := v.Need(o, m.run.Claims); a != "" {
		return a
	}
	return migration.MigrationRestart
}

func podOf(s *planner.Snapshot, name string) *corev1.Pod {
	for i := range s.Pods {
		if s.Pods[i].Name == name {
			return &s.Pods[i]
		}
	}
	return nil
}

type ordinalRun struct {
	o        int32
	action   migration.MigrationAction
	idx      int
	progress migration.MoveProgress
	start    time.Time
	last     migration.Step
	// wait keeps the awaited Pod's failure durations for planner.JudgeWait.
	wait   planner.WaitClock
	done   bool
	logged map[string]bool
	// handedOver: the warm move's steps are over (or it has none); NextStep decides the rest.
	handedOver bool
	// progressRead is when the running copy's log was last read; progressMark what its last
	// progress Event said (copier, claim, tenth).
	progressRead time.Time
	progressMark string
	// deleted are the objects of this ordinal this run deleted ("PVC x", "Pod y").
	deleted []string
}

// slide moves remaining through a window of run.Parallelism ordinals, as the StatefulSet
// controller does with maxUnavailable (kubernetes pkg/controller/statefulset/
// stateful_set_control.go, updateStatefulSetAfterInvariantEstablished): a slot is taken by
// the next ordinal as soon as the ordinal in it is done, not when a whole wave is. An ordinal
// starts only after judgeBatch allows it on the latest look (placement, the others' readiness,
// the PodDisruptionBudgets), and the window never holds more than run.Parallelism ordinals.
//
// With gates the window is a batch: a gate is a cluster-wide check (a Druid load status) that
// means something only while no ordinal is down, so the next ordinals start once every
// ordinal of the batch is done and its gates passed.
//
// Timeouts: each ordinal has run.OrdinalTimeout from its first step; waiting for the next
// ordinal(s) to be allowed to start has run.OrdinalTimeout too, counted while the window is
// empty (as the batches' wait was).
func (m *migrator) slide(ctx context.Context, remaining []int32) error {
	var (
		active    []*ordinalRun
		batch     []int32 // with gates: the ordinals of the window, in start order
		v         *migration.Migration
		waitSince time.Time // when the next ordinal(s) began to wait for a slot's judgement
		waiting   string    // what they wait for
		logged    string
	)
	for {
		if v == nil {
			s, _, err := m.w.snapshot()
			if err != nil {
				return err
			}
			v = migration.NewMigration(s)
		}
		set := v.Snapshot().Live
		if set == nil || set.UID != m.setUID {
			msg := "StatefulSet " + m.run.Namespace + "/" + m.run.Name + " was deleted or replaced during the migration"
			if len(active) > 0 {
				return &MigrationError{Ordinal: active[0].o, Pod: stsutil.PodName(m.run.Name, active[0].o), Reason: msg}
			}
			return &PreconditionError{Msg: msg}
		}
		now := m.run.Clock.Now()
		wake := m.run.Resync

		// 1. One look for every ordinal in the window.
		still := active[:0]
		for _, r := range active {
			var d time.Duration
			var err error
			if v, d, err = m.look(ctx, v, r, now); err != nil {
				return err
			}
			if r.done {
				continue
			}
			still = append(still, r)
			if d > 0 && d < wake {
				wake = d
			}
		}
		active = still

		// 2. With gates, a finished batch waits for them before anything else starts.
		if len(active) == 0 && len(batch) > 0 {
			for _, o := range batch {
				rec := m.finished[o]
				gates, err := m.awaitGates(ctx, o, rec.idx)
				if err != nil {
					return err
				}
				rec.Gates = gates
				m.gatesPassed(rec.MigratedOrdinal, rec.Gates)
				m.run.Done(rec.MigratedOrdinal)
			}
			if err := m.markGatesPending(ctx, batch, false); err != nil {
				return err
			}
			batch, v = nil, nil // the gates took time: look again
			continue
		}
		if len(active) == 0 && len(remaining) == 0 {
			return nil
		}

		// 3. Fill the window's free slots (with gates, only an empty window).
		free := m.run.Parallelism - len(active)
		if len(m.run.Gates) > 0 && len(active) > 0 {
			free = 0
		}
		if free > 0 && len(remaining) > 0 {
			waiting = fmt.Sprintf("the StatefulSet controller to observe generation %d of %s/%s", set.Generation, m.run.Namespace, m.run.Name)
			if set.Status.ObservedGeneration >= set.Generation {
				next, why, err := m.judgeBatch(v, set, remaining, free, ordinalsOf(active))
				if err != nil {
					return err
				}
				if why == "" {
					if err := m.markGatesPending(ctx, next, true); err != nil {
						return &PreconditionError{Msg: err.Error()}
					}
					if len(m.run.Gates) > 0 {
						batch = next
					}
					remaining = without(remaining, next)
					active = append(active, m.start(v, next)...)
					waitSince, logged = time.Time{}, ""
					continue // their first look on the same view, without waiting for an event
				}
				if logged != why {
					logged = why
					m.run.Log(fmt.Sprintf("ordinal(s) %s: waiting: %s", migration.JoinOrdinals(next), why))
				}
				waiting = why
			}
			// The wait is timed only while the window is empty: an ordinal in it has its own
			// timeout, and what the next one waits for may be that ordinal (a budget it holds).
			if len(active) > 0 {
				waitSince = time.Time{}
			} else if waitSince.IsZero() {
				waitSince = now
			}
			if m.run.OrdinalTimeout > 0 && !waitSince.IsZero() {
				left := waitSince.Add(m.run.OrdinalTimeout).Sub(now)
				if left <= 0 {
					return &PreconditionError{Msg: fmt.Sprintf("before moving the next ordinal(s), still waiting after %s for %s", m.run.OrdinalTimeout, waiting)}
				}
				wake = min(wake, left)
			}
		}

		// 4. Each ordinal in the window has its own timeout.
		if m.run.OrdinalTimeout > 0 {
			for _, r := range active {
				left := r.start.Add(m.run.OrdinalTimeout).Sub(now)
				if left <= 0 {
					return m.timeout([]*ordinalRun{r}, fmt.Errorf("per-ordinal timeout %s reached", m.run.OrdinalTimeout))
				}
				wake = min(wake, left)
			}
		}

		select {
		case <-ctx.Done():
			if len(active) > 0 {
				return m.timeout(active, context.Cause(ctx))
			}
			return &PreconditionError{Msg: fmt.Sprintf("before moving the next ordinal(s), still waiting for %s: %v", waiting, context.Cause(ctx)), Err: context.Cause(ctx)}
		case <-m.w.changed:
		case <-m.w.stopped: // the next snapshot says why
		case <-m.run.Clock.After(wake):
		}
		v = nil
	}
}

// start opens a run for each ordinal of next, judged on v, and records its first step.
func (m *migrator) start(v *migration.Migration, next []int32) []*ordinalRun {
	s := v.Snapshot()
	runs := make([]*ordinalRun, 0, len(next))
	for _, o := range next {
		m.started++
		r := &ordinalRun{o: o, idx: m.started, action: m.action(v, o), progress: v.StartProgress(o, m.run.Claims),
			start: m.run.Clock.Now(), logged: map[string]bool{}}
		runs = append(runs, r)
		// The Event is related to the ordinal's Pod, which keeps ordinals' Events apart.
		name := stsutil.PodName(m.run.Name, o)
		node, related := "", podRef(m.run.Namespace, name, "")
		if p := podOf(s, name); p != nil {
			node, related = p.Spec.NodeName, podRef(m.run.Namespace, name, p.UID)
		}
		if r.action == migration.MigrationRestart {
			m.step(o, r.idx, ReasonOrdinalRestarting, "Restart", related, "restarting in place on node %s at revision %s (PVCs kept)", node, v.UpdateRevision())
		} else {
			m.step(o, r.idx, ReasonOrdinalMoving, "Move", related, "moving to %s", planner.DescribePlacement(&s.Live.Spec.Template))
		}
	}
	return runs
}

// look takes ordinal r's next steps on v's snapshot: at most maxStepsPerLook, since a delete
// that went through is applied to the snapshot at once and the next step decided again (the
// PVC deletes, then the Pod delete, without waiting a watch round trip between them), as the
// upstream controllers do with their expectations; the informer event that follows confirms
// what the snapshot already shows. It returns the view after its acts and how soon to look
// again without an event (0: the default resync).
func (m *migrator) look(ctx context.Context, v *migration.Migration, r *ordinalRun, now time.Time) (*migration.Migration, time.Duration, error) {
	if m.run.Copy != nil && r.action == migration.MigrationMove && !r.handedOver {
		done, wake, err := m.warmLook(ctx, v, r, now)
		if err != nil || !done {
			return v, wake, err
		}
		r.handedOver = true
	}
	s := v.Snapshot()
	var d time.Duration
	for range maxStepsPerLook {
		st := v.NextStep(r.o, m.run.Claims, r.progress, m.run.MinReady, now)
		r.last = st
		if u := m.oldPodUnreachable(v, s, r.o, st, now); u != nil {
			if !m.run.ForceDeleteOnUnreachableNodes {
				return v, 0, unreachableError(*u, string(st.Kind), len(m.deletedOf(s, r.o)) > 0)
			}
			if u.Terminating && st.Kind == migration.StepWait {
				// Already deleted (by this run, an earlier one or taint eviction) and its
				// PVCs too (NextStep deletes them first, so that the controller cannot
				// give the new Pod an old claim): finish it.
				acted, err := m.forceDelete(ctx, s, r, *u, now)
				if err != nil {
					return v, 0, err
				}
				if acted {
					v = migration.NewMigration(s)
					continue
				}
			}
		}
		if st.Kind == migration.StepDeletePVCs && r.action == migration.MigrationRestart {
			return v, 0, &MigrationError{Ordinal: r.o, Pod: stsutil.PodName(m.run.Name, r.o), Phase: string(st.Kind),
				Reason: "the plan restarts this ordinal in place, keeping its PVCs, but the live state now needs them recreated (" +
					st.Reason + "); stopped before deleting any PVC. Plan again to see the ordinal as a move"}
		}
		var acted bool
		var err error
		d, acted, err = m.act(ctx, s, r, st, now)
		if err != nil {
			return v, 0, err
		}
		if !acted {
			break
		}
		v = migration.NewMigration(s) // s changed under the view
	}
	return v, d, nil
}

func ordinalsOf(runs []*ordinalRun) []int32 {
	out := make([]int32, len(runs))
	for i, r := range runs {
		out[i] = r.o
	}
	return out
}

func (m *migrator) timeout(runs []*ordinalRun, cause error) error {
	for _, r := range runs {
		if r.done {
			continue
		}
		e := &MigrationError{Ordinal: r.o, Pod: stsutil.PodName(m.run.Name, r.o), Phase: string(r.last.Kind),
			Reason: "still " + r.last.Reason, Timeout: true, Deleted: r.deleted, Err: cause}
		if r.last.Unschedulable != "" {
			e.Source, e.Quote, e.Cause = "condition PodScheduled of Pod "+e.Pod, r.last.Unschedulable, planner.CauseUnschedulable
		}
		return e
	}
	return cause
}

// maxStepsPerLook bounds how many steps one look at the state may take for an
// ordinal: delete PVCs, delete the Pod, then a wait.
const maxStepsPerLook = 3

// act performs st for r. It returns how soon the loop should look again
// without an event (0: the default resync), and whether it issued a delete
// and applied its effect to s, so that the next step can be decided from s
// without waiting for the informer event.
func (m *migrator) act(ctx context.Context, s *planner.Snapshot, r *ordinalRun, st migration.Step, now time.Time) (time.Duration, bool, error) {
	pod := stsutil.PodName(m.run.Name, r.o)
	switch st.Kind {
	case migration.StepDeletePVCs:
		acted := false
		for _, c := range st.PVCs {
			if m.deleted[c.UID] {
				continue
			}
			err := m.kube.CoreV1().PersistentVolumeClaims(m.run.Namespace).Delete(ctx, c.Name, metav1.DeleteOptions{
				Preconditions: &metav1.Preconditions{UID: &c.UID}})
			if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
				return 0, false, &MigrationError{Ordinal: r.o, Pod: pod, Phase: string(st.Kind), Reason: "deleting PVC " + c.Name, Err: err}
			}
			m.deleted[c.UID] = true
			r.deleted = append(r.deleted, "PVC "+c.Name)
			m.step(r.o, r.idx, ReasonPVCDeleted, "DeletePVC", pvcRef(m.run.Namespace, c.Name, c.UID), "PVC %s deleted (%s)", c.Name, st.Reason)
			if !apierrors.IsConflict(err) { // a conflict: another PVC by that name, the next event tells
				acted = expectPVCDeleted(s, c.UID, apierrors.IsNotFound(err), now) || acted
			}
		}
		return 0, acted, nil
	case migration.StepDeletePod:
		if m.deleted[st.Pod.UID] {
			return 0, false, nil
		}
		uid := st.Pod.UID
		opts := metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}}
		force := m.run.ForceDeleteOnUnreachableNodes && planner.PodOnUnreachableNode(podOf(s, st.Pod.Name), nodeOf(s, st.Node), now) != nil
		if force {
			// No kubelet would confirm a graceful delete: remove the object at once, as
			// `kubectl delete pod --grace-period=0 --force` does.
			opts.GracePeriodSeconds = ptr.To[int64](0)
		}
		err := m.kube.CoreV1().Pods(m.run.Namespace).Delete(ctx, st.Pod.Name, opts)
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return 0, false, &MigrationError{Ordinal: r.o, Pod: pod, Phase: string(st.Kind), Reason: "deleting Pod " + st.Pod.Name, Err: err}
		}
		m.deleted[uid] = true
		r.deleted = append(r.deleted, "Pod "+st.Pod.Name)
		if force {
			m.step(r.o, r.idx, ReasonPodDeleted, "DeletePod", podRef(m.run.Namespace, st.Pod.Name, uid), "Pod %s force-deleted (grace period 0) from unreachable node %s (%s)", st.Pod.Name, st.Node, st.Reason)
		} else {
			m.step(r.o, r.idx, ReasonPodDeleted, "DeletePod", podRef(m.run.Namespace, st.Pod.Name, uid), "Pod %s deleted from node %s (%s)", st.Pod.Name, st.Node, st.Reason)
		}
		gone := apierrors.IsNotFound(err) || (force && err == nil)
		return 0, !apierrors.IsConflict(err) && expectPodDeleted(s, uid, gone, now), nil
	case migration.StepWait:
		if !r.logged[st.Reason] {
			r.logged[st.Reason] = true
			m.logf(r.o, r.idx, "%s", st.Reason)
		}
		d, err := m.failFast(s, r, st, now)
		return d, false, err
	case migration.StepSoak:
		if !r.logged["soak"] {
			r.logged["soak"] = true
			m.logf(r.o, r.idx, "Pod Ready on %s after %s; soaking %s", st.Node, now.Sub(r.start).Round(100*time.Millisecond), st.Remaining.Round(time.Second))
		}
		return st.Remaining, false, nil
	case migration.StepDone:
		r.done = true
		res := MigratedOrdinal{Ordinal: r.o, Action: r.action, Pod: pod, PodUID: st.Pod.UID, Node: st.Node, Duration: now.Sub(r.start), Finished: now}
		res.PVs = boundPVs(s, m.run.Namespace, m.run.Name, r.o, m.run.Claims)
		m.step(r.o, r.idx, ReasonPodReady, "WaitForReady", podRef(m.run.Namespace, st.Pod.Name, st.Pod.UID), "Pod %s Ready on node %s after %s", st.Pod.Name, st.Node, res.Duration.Round(100*time.Millisecond))
		m.finished[r.o] = finishedOrdinal{MigratedOrdinal: res, idx: r.idx}
		m.run.Done(res)
	case migration.StepFail:
		return 0, false, &MigrationError{Ordinal: r.o, Pod: pod, Phase: string(st.Kind), Reason: st.Reason}
	}
	return 0, false, nil
}

// oldPodUnreachable is migration.Migration.Unreachable for the Pod that step st of ordinal o is
// about to delete (delete_pvcs, delete_pod) or waits to go (Terminating); nil for a new Pod
// or when its node answers.
func (m *migrator) oldPodUnreachable(v *migration.Migration, s *planner.Snapshot, o int32, st migration.Step, now time.Time) *migration.UnreachableOrdinal {
	switch st.Kind {
	case migration.StepDeletePVCs, migration.StepDeletePod:
	case migration.StepWait:
		if p := podOf(s, stsutil.PodName(m.run.Name, o)); p == nil || p.DeletionTimestamp == nil {
			return nil
		}
	default:
		return nil
	}
	return v.Unreachable(o, now)
}

// deletedOf are the PVCs and Pods of ordinal o this run deleted.
func (m *migrator) deletedOf(s *planner.Snapshot, o int32) []string {
	var out []string
	if p := podOf(s, stsutil.PodName(m.run.Name, o)); p != nil && m.deleted[p.UID] {
		out = append(out, "Pod "+p.Name)
	}
	for _, c := range m.run.Claims {
		name := stsutil.ClaimPVCName(c, m.run.Name, o)
		for i := range s.PVCs {
			if s.PVCs[i].Name == name && m.deleted[s.PVCs[i].UID] {
				out = append(out, "PVC "+name)
			}
		}
	}
	return out
}

// forceDelete removes ordinal o's Terminating Pod on an unreachable node with grace period 0
// (once per Pod), and applies it to s. It reports whether s changed.
func (m *migrator) forceDelete(ctx context.Context, s *planner.Snapshot, r *ordinalRun, u migration.UnreachableOrdinal, now time.Time) (bool, error) {
	p := podOf(s, u.Pod)
	if p == nil || m.forced[p.UID] {
		return false, nil
	}
	uid := p.UID
	err := m.kube.CoreV1().Pods(m.run.Namespace).Delete(ctx, u.Pod, metav1.DeleteOptions{
		GracePeriodSeconds: ptr.To[int64](0), Preconditions: &metav1.Preconditions{UID: &uid}})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return false, &MigrationError{Ordinal: r.o, Pod: u.Pod, Phase: string(migration.StepWait), Reason: "force-deleting Pod " + u.Pod, Err: err}
	}
	m.forced[uid], m.deleted[uid] = true, true
	r.deleted = append(r.deleted, "Pod "+u.Pod)
	m.step(r.o, r.idx, ReasonPodDeleted, "DeletePod", podRef(m.run.Namespace, u.Pod, uid), "Pod %s was Terminating on unreachable node %s (%s): force-deleted (grace period 0)", u.Pod, u.Node, u.Why)
	return !apierrors.IsConflict(err) && expectPodDeleted(s, uid, true, now), nil
}

// unreachableError stops ordinal u.Ordinal because its Pod is on a node that does not answer.
// deleted says whether this run already deleted something of it.
func unreachableError(u migration.UnreachableOrdinal, phase string, deleted bool) *MigrationError {
	reason := fmt.Sprintf("its Pod %s is on node %s, which does not answer", u.Pod, u.Node)
	if u.Terminating {
		reason = fmt.Sprintf("its Pod %s is Terminating on node %s, which does not answer: no kubelet will confirm the deletion", u.Pod, u.Node)
	} else if !deleted {
		reason += "; stopped before deleting anything of this ordinal"
	}
	return &MigrationError{Ordinal: u.Ordinal, Pod: u.Pod, Phase: phase, Reason: reason,
		Source: "node " + u.Node, Quote: u.Why, Cause: planner.CauseUnreachableNode, Node: u.Node}
}

func nodeOf(s *planner.Snapshot, name string) *corev1.Node {
	for i := range s.Nodes {
		if s.Nodes[i].Name == name {
			return &s.Nodes[i]
		}
	}
	return nil
}

// expectPVCDeleted applies an accepted delete of the PVC with uid to s: gone
// (the API server said NotFound) or terminating (pvc-protection holds it while
// a Pod uses it). It reports whether s changed.
func expectPVCDeleted(s *planner.Snapshot, uid types.UID, gone bool, now time.Time) bool {
	return expectDeleted(&s.PVCs, func(c *corev1.PersistentVolumeClaim) *metav1.ObjectMeta { return &c.ObjectMeta }, uid, gone, now)
}

// expectPodDeleted is expectPVCDeleted for the Pod with uid (terminating for
// its grace period, or gone).
func expectPodDeleted(s *planner.Snapshot, uid types.UID, gone bool, now time.Time) bool {
	return expectDeleted(&s.Pods, func(p *corev1.Pod) *metav1.ObjectMeta { return &p.ObjectMeta }, uid, gone, now)
}

func expectDeleted[T any](items *[]T, meta func(*T) *metav1.ObjectMeta, uid types.UID, gone bool, now time.Time) bool {
	for i := range *items {
		m := meta(&(*items)[i])
		if m.UID != uid {
			continue
		}
		if gone {
			*items = slices.Delete(*items, i, i+1)
			return true
		}
		if m.DeletionTimestamp == nil {
			m.DeletionTimestamp = &metav1.Time{Time: now}
			return true
		}
		return false
	}
	return false
}

// failFast turns a wait that will not end by itself into an error, as planner.JudgeWait judges
// the ordinal's current Pod (the one the step waits for: NextStep replaces any other first):
// PV node affinity at once; unschedulable, failing provisioning or mounts, or a container that
// cannot pull its image, keeps crashing or cannot be created, after the grace. It returns how
// soon to look again when a failure's grace is running.
func (m *migrator) failFast(s *planner.Snapshot, r *ordinalRun, st migration.Step, now time.Time) (time.Duration, error) {
	pod := podOf(s, stsutil.PodName(m.run.Name, r.o))
	if pod == nil || pod.DeletionTimestamp != nil {
		r.wait.Reset()
		return 0, nil
	}
	v := r.wait.Judge(pod, func(name string) *corev1.PersistentVolumeClaim { return pvcOf(s, name) }, m.w.events(), now, m.policy())
	if v.State != planner.WaitFailed {
		return v.Remaining, nil
	}
	reason := st.Reason
	if v.For > 0 {
		reason += fmt.Sprintf(": %s for %s", strings.ReplaceAll(string(v.Cause), "_", " "), v.For.Round(time.Second))
	}
	return 0, &MigrationError{Ordinal: r.o, Pod: pod.Name, Phase: string(st.Kind), Reason: reason,
		Source: v.Source, Quote: v.Quote, Cause: v.Cause}
}

// policy is the migration's planner.WaitPolicy: unschedulable_timeout bounds both graces.
func (m *migrator) policy() planner.WaitPolicy {
	return planner.WaitPolicy{Grace: m.run.UnschedulableGrace, Unschedulable: m.run.UnschedulableGrace}
}

func pvcOf(s *planner.Snapshot, name string) *corev1.PersistentVolumeClaim {
	for i := range s.PVCs {
		if s.PVCs[i].Name == name {
			return &s.PVCs[i]
		}
	}
	return nil
}

func boundPVs(s *planner.Snapshot, ns, set string, o int32, claims []string) []string {
	var out []string
	for _, c := range claims {
		name := stsutil.ClaimPVCName(c, set, o)
		for i := range s.PVCs {
			if s.PVCs[i].Namespace == ns && s.PVCs[i].Name == name && s.PVCs[i].Spec.VolumeName != "" {
				out = append(out, s.PVCs[i].Spec.VolumeName)
			}
		}
	}
	return out
}

func without(all, drop []int32) []int32 {
	skip := map[int32]bool{}
	for _, o := range drop {
		skip[o] = true
	}
	var out []int32
	for _, o := range all {
		if !skip[o] {
			out = append(out, o)
		}
	}
	return out
}

// migrationWatcher keeps informer caches of what a migration reads: the
// StatefulSet, its Pods, the namespace's PVCs and PodDisruptionBudgets,
// the ProvisioningFailed and FailedMount events planner.JudgeWait reads, PVs and Nodes, on one
// informerWatch (watch.go: its change signal and Forbidden stop are the rollout wait's too).
// snapshot() assembles a planner.Snapshot from the caches (no GET per ordinal); changed
// receives a token on every relevant event.
type migrationWatcher struct {
	*informerWatch
	ns, name string
	sel      labels.Selector

	setInf, podInf, pvcInf, pdbInf, evInf, pvInf, nodeInf cache.SharedIndexInformer
	// mountEvInf holds the namespace's FailedMount events (evInf its ProvisioningFailed ones).
	mountEvInf cache.SharedIndexInformer
	// What the scheduling simulation reads besides (placement re-checked before each ordinal starts):
	// every Pod of the cluster, StorageClasses, CSIStorageCapacities, CSIDrivers, CSINodes.
	allPodInf, scInf, capInf, driverInf, csiNodeInf cache.SharedIndexInformer
	// podCache carries unchanged Pods' scheduling data from one look's simulation to the next.
	podCache *planner.PodCache
	// copierInf holds the namespace's warm-move copier Pods (label migration.LabelWarmMove).
	copierInf cache.SharedIndexInformer
}

func newMigrationWatcher(ctx context.Context, kube kubernetes.Interface, ns, name string, sel labels.Selector) (*migrationWatcher, error) {
	setF := informers.NewSharedInformerFactoryWithOptions(kube, 0, informers.WithNamespace(ns),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermEqualSelector("metadata.name", name).String()
		}))
	podF := informers.NewSharedInformerFactoryWithOptions(kube, 0, informers.WithNamespace(ns),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = sel.String() }))
	nsF := informers.NewSharedInformerFactoryWithOptions(kube, 0, informers.WithNamespace(ns))
	evF := informers.NewSharedInformerFactoryWithOptions(kube, 0, informers.WithNamespace(ns),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermEqualSelector("reason", "ProvisioningFailed").String()
		}))
	mountEvF := informers.NewSharedInformerFactoryWithOptions(kube, 0, informers.WithNamespace(ns),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermEqualSelector("reason", planner.EventFailedMount).String()
		}))
	copierF := informers.NewSharedInformerFactoryWithOptions(kube, 0, informers.WithNamespace(ns),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = migration.LabelWarmMove }))
	clF := informers.NewSharedInformerFactory(kube, 0)
	w := &migrationWatcher{informerWatch: newInformerWatch(ctx, setF, podF, nsF, evF, mountEvF, copierF, clF),
		ns: ns, name: name, sel: sel, podCache: planner.NewPodCache()}
	w.setInf = setF.Apps().V1().StatefulSets().Informer()
	w.podInf = podF.Core().V1().Pods().Informer()
	w.pvcInf = nsF.Core().V1().PersistentVolumeClaims().Informer()
	w.pdbInf = nsF.Policy().V1().PodDisruptionBudgets().Informer()
	w.evInf = evF.Core().V1().Events().Informer()
	w.mountEvInf = mountEvF.Core().V1().Events().Informer()
	w.pvInf = clF.Core().V1().PersistentVolumes().Informer()
	w.nodeInf = clF.Core().V1().Nodes().Informer()
	w.allPodInf = clF.Core().V1().Pods().Informer()
	w.scInf = clF.Storage().V1().StorageClasses().Informer()
	w.capInf = clF.Storage().V1().CSIStorageCapacities().Informer()
	w.driverInf = clF.Storage().V1().CSIDrivers().Informer()
	w.csiNodeInf = clF.Storage().V1().CSINodes().Informer()
	w.copierInf = copierF.Core().V1().Pods().Informer()
	every := w.everyEvent()
	// PVs and Nodes are cluster-wide: most of their updates (other namespaces' volumes, node
	// heartbeats) cannot change a step, and each wake-up rebuilds the snapshot while the
	// cluster is busy with the move. CSINodes and CSIStorageCapacities change as TopoLVM comes
	// up on new nodes (a wait for them ends on their event). The other cluster-wide caches are
	// only read.
	for _, x := range []struct {
		inf   cache.SharedIndexInformer
		h     cache.ResourceEventHandler
		probe watchFunc
	}{
		{w.setInf, every, kube.AppsV1().StatefulSets(ns).Watch},
		{w.podInf, every, kube.CoreV1().Pods(ns).Watch},
		{w.pvcInf, every, kube.CoreV1().PersistentVolumeClaims(ns).Watch},
		{w.pdbInf, every, kube.PolicyV1().PodDisruptionBudgets(ns).Watch},
		{w.evInf, every, kube.CoreV1().Events(ns).Watch},
		{w.mountEvInf, every, kube.CoreV1().Events(ns).Watch},
		{w.copierInf, every, kube.CoreV1().Pods(ns).Watch},
		{w.capInf, every, kube.StorageV1().CSIStorageCapacities(metav1.NamespaceAll).Watch},
		{w.csiNodeInf, every, kube.StorageV1().CSINodes().Watch},
		{w.pvInf, w.filtered(func(old, cur any) bool { return pvMayMatter(old, ns) || pvMayMatter(cur, ns) }),
			kube.CoreV1().PersistentVolumes().Watch},
		{w.nodeInf, w.filtered(nodeChangeMatters), kube.CoreV1().Nodes().Watch},
		{w.allPodInf, nil, kube.CoreV1().Pods(metav1.NamespaceAll).Watch},
		{w.scInf, nil, kube.StorageV1().StorageClasses().Watch},
		{w.driverInf, nil, kube.StorageV1().CSIDrivers().Watch},
	} {
		if err := w.add(x.inf, x.h, x.probe); err != nil {
			w.cancel()
			return nil, err
		}
	}
	if err := w.start("the migration"); err != nil {
		return nil, err
	}
	if _, _, err := w.snapshot(); err != nil {
		w.stop()
		return nil, err
	}
	return w, nil
}

// pvMayMatter: a PV bound or being bound to a claim of namespace ns, or one
// without a claim (nil or a deleted-object tombstone count as relevant).
func pvMayMatter(o any, ns string) bool {
	pv, ok := o.(*corev1.PersistentVolume)
	if !ok {
		return o != nil
	}
	return pv.Spec.ClaimRef == nil || pv.Spec.ClaimRef.Namespace == ns
}

// nodeChangeMatters is false for a Node update that leaves everything the
// planner reads as it was (a heartbeat): labels, taints, schedulability,
// readiness, allocatable resources and deletion.
func nodeChangeMatters(old, cur any) bool {
	o, ok1 := old.(*corev1.Node)
	c, ok2 := cur.(*corev1.Node)
	if !ok1 || !ok2 {
		return true // add, delete or tombstone
	}
	return !maps.Equal(o.Labels, c.Labels) || !maps.Equal(o.Annotations, c.Annotations) ||
		!equality.Semantic.DeepEqual(o.Spec, c.Spec) ||
		!equality.Semantic.DeepEqual(o.Status.Allocatable, c.Status.Allocatable) ||
		stsutil.NodeReady(o) != stsutil.NodeReady(c) || !o.DeletionTimestamp.Equal(c.DeletionTimestamp)
}

// snapshot assembles the migration's view from the caches. Objects are
// copied one level deep (the struct values): informers replace cached
// objects and never change them in place, the planner only reads, and the
// executor only sets top-level fields of its copies (expectations), so a
// deep copy of every PV and Node on each look would only cost CPU while the
// cluster is busy with the move.
func (w *migrationWatcher) snapshot() (*planner.Snapshot, *appsv1.StatefulSet, error) {
	if err := w.forbidden(); err != nil {
		return nil, nil, fmt.Errorf("watching for the migration: %w", err)
	}
	s := &planner.Snapshot{PodCache: w.podCache}
	var set *appsv1.StatefulSet
	for _, o := range w.setInf.GetStore().List() {
		if x, ok := o.(*appsv1.StatefulSet); ok && x.Name == w.name {
			set = x.DeepCopy()
		}
	}
	s.Live = set
	s.Pods = values[corev1.Pod](w.podInf.GetStore().List())
	s.PVCs = values[corev1.PersistentVolumeClaim](w.pvcInf.GetStore().List())
	s.PDBs = values[policyv1.PodDisruptionBudget](w.pdbInf.GetStore().List())
	s.PVs = values[corev1.PersistentVolume](w.pvInf.GetStore().List())
	s.Nodes = values[corev1.Node](w.nodeInf.GetStore().List())
	s.AllPods = values[corev1.Pod](w.allPodInf.GetStore().List())
	s.StorageClasses = values[storagev1.StorageClass](w.scInf.GetStore().List())
	s.Capacities = values[storagev1.CSIStorageCapacity](w.capInf.GetStore().List())
	s.CSIDrivers = values[storagev1.CSIDriver](w.driverInf.GetStore().List())
	s.CSINodes = values[storagev1.CSINode](w.csiNodeInf.GetStore().List())
	return s, set, nil
}

func values[T any](objs []any) []T {
	out := make([]T, 0, len(objs))
	for _, o := range objs {
		if x, ok := o.(*T); ok { // an informer's store holds only its type
			out = append(out, *x)
		}
	}
	return out
}

// copiers are the cached warm-move copier Pods.
func (w *migrationWatcher) copiers() []*corev1.Pod {
	var out []*corev1.Pod
	if w.copierInf == nil {
		return nil
	}
	for _, obj := range w.copierInf.GetStore().List() {
		if p, ok := obj.(*corev1.Pod); ok {
			out = append(out, p)
		}
	}
	return out
}

// events are the cached events planner.JudgeWait reads (ProvisioningFailed, FailedMount).
func (w *migrationWatcher) events() []*corev1.Event {
	var out []*corev1.Event
	for _, inf := range []cache.SharedIndexInformer{w.evInf, w.mountEvInf} {
		if inf == nil {
			continue
		}
		for _, obj := range inf.GetStore().List() {
			if e, ok := obj.(*corev1.Event); ok {
				out = append(out, e)
			}
		}
	}
	return out
}

// IsPrecondition reports whether err is a failed precondition (nothing deleted).
func IsPrecondition(err error) bool {
	var p *PreconditionError
	return errors.As(err, &p)
}
