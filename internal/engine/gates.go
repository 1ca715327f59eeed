package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/olapgke/terraform-provider-olapgke/internal/planner/gates"
	"github.com/olapgke/terraform-provider-olapgke/internal/planner/migration"
	"github.com/olapgke/terraform-provider-olapgke/internal/stsutil"
)

// GateResult is how long one gate of an ordinal took to pass.
type GateResult struct {
	Name     string
	Duration time.Duration
	Polls    int
}

// GateError is a gate that did not pass: the ordinal's step is done (its Pod is back), the next
// batch was not started, and the StatefulSet still marks the ordinal as pending gates, so the
// next run waits for them again without deleting anything of it.
type GateError struct {
	Ordinal int32
	Pod     string
	// Gate describes the gate (gates.DescribeGate: never a header value).
	Gate string
	// Answer is the last poll's answer; Polls how many polls were made in Waited.
	Answer string
	Polls  int
	Waited time.Duration
	// Timeout is true when the gate's own timeout ended the wait (else ctx did, in Err).
	Timeout bool
	Err     error
}

func (e *GateError) Error() string {
	s := fmt.Sprintf("ordinal %d (Pod %s): gate %s did not pass after %s (%d polls); last answer: %s",
		e.Ordinal, e.Pod, e.Gate, e.Waited.Round(100*time.Millisecond), e.Polls, e.Answer)
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

func (e *GateError) Unwrap() error { return e.Err }

// gateBody bounds how much of an answer is read.
const gateBody = 64 << 10

// markGatesPending records ordinals as pending gates on the StatefulSet before anything of them is
// deleted (add) or after their gates passed (remove). The migrator keeps the set it wrote, so a
// watch cache that has not caught up with the previous write cannot undo it.
func (m *migrator) markGatesPending(ctx context.Context, ordinals []int32, add bool) error {
	if len(m.run.Gates) == 0 || len(ordinals) == 0 {
		return nil
	}
	for _, o := range ordinals {
		if add {
			m.pending[o] = true
		} else {
			delete(m.pending, o)
		}
	}
	var list []int32
	for o := range m.pending {
		list = append(list, o)
	}
	var value any = stsutil.FormatGatesPending(list)
	if len(list) == 0 {
		value = nil // removes the annotation
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]any{stsutil.AnnotationGatesPending: value}}})
	if err != nil {
		return err
	}
	_, err = m.kube.AppsV1().StatefulSets(m.run.Namespace).Patch(ctx, m.run.Name, types.MergePatchType, patch,
		metav1.PatchOptions{FieldManager: stsutil.FieldManagerMigration})
	if err != nil {
		return fmt.Errorf("recording the pending gates of ordinal(s) %s on StatefulSet %s/%s (annotation %s): %w",
			migration.JoinOrdinals(ordinals), m.run.Namespace, m.run.Name, stsutil.AnnotationGatesPending, err)
	}
	return nil
}

// awaitGates waits until every gate passes for ordinal o (each gate on its own interval and
// timeout, all at once) and returns how long each took. The first gate that fails ends the wait.
func (m *migrator) awaitGates(ctx context.Context, o int32, idx int) ([]GateResult, error) {
	if len(m.run.Gates) == 0 {
		return nil, nil
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	results := make([]GateResult, len(m.run.Gates))
	errs := make([]error, len(m.run.Gates))
	var wg sync.WaitGroup
	for i, g := range m.run.Gates {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i], errs[i] = m.awaitGate(ctx, o, idx, g)
			if errs[i] != nil {
				cancel() // one failing gate stops the others
			}
		}()
	}
	wg.Wait()
	// The gate that failed on its own, not one the failure cancelled.
	var first error
	for _, err := range errs {
		var ge *GateError
		if errors.As(err, &ge) && ge.Timeout {
			return nil, err
		}
		if first == nil && err != nil {
			first = err
		}
	}
	return results, first
}

func (m *migrator) awaitGate(ctx context.Context, o int32, idx int, g gates.Gate) (GateResult, error) {
	start := m.run.Clock.Now()
	pod := stsutil.PodName(m.run.Name, o)
	res := GateResult{Name: g.Name}
	var last gates.GateVerdict
	var lastTarget gates.GateTarget
	loggedAnswer := ""
	m.logf(o, idx, "waiting for gate %s", gates.DescribeGate(g, m.gateTarget(o)))
	err := wait.PollUntilContextTimeout(ctx, g.Interval, g.Timeout, true, func(ctx context.Context) (bool, error) {
		target := m.gateTarget(o)
		v := m.pollGate(ctx, g, target)
		if !v.Pass && done(ctx) {
			return false, nil // cut short by the gate's timeout or the run's end: not an answer
		}
		last, lastTarget = v, target
		res.Polls++
		if !last.Pass && last.Answer != loggedAnswer {
			loggedAnswer = last.Answer
			m.logf(o, idx, "gate %s: not yet: %s", g.Name, last.Answer)
		}
		return last.Pass, nil
	})
	res.Duration = m.run.Clock.Since(start)
	if err == nil {
		m.logf(o, idx, "gate %s passed after %s (%d polls)", g.Name, res.Duration.Round(100*time.Millisecond), res.Polls)
		return res, nil
	}
	if last.Answer == "" {
		last.Answer = "none (not polled yet)"
	}
	ge := &GateError{Ordinal: o, Pod: pod, Gate: gates.DescribeGate(g, lastTarget), Answer: last.Answer,
		Polls: res.Polls, Waited: res.Duration}
	// PollUntilContextTimeout reports its own timeout and the parent's end alike: tell them apart.
	if ctx.Err() != nil {
		ge.Err = context.Cause(ctx)
	} else {
		ge.Timeout = true
	}
	return res, ge
}

// gateTarget fills a gate's placeholders from ordinal o's current Pod.
func (m *migrator) gateTarget(o int32) gates.GateTarget {
	t := gates.GateTarget{Namespace: m.run.Namespace, StatefulSet: m.run.Name, Pod: stsutil.PodName(m.run.Name, o), Ordinal: o}
	if p := m.w.pod(t.Pod); p != nil {
		t.Node, t.PodIP = p.Spec.NodeName, p.Status.PodIP
	}
	return t
}

// pollGate asks once: the Pod's conditions from the watcher's cache, or one HTTP request.
func (m *migrator) pollGate(ctx context.Context, g gates.Gate, t gates.GateTarget) gates.GateVerdict {
	if c := g.PodCondition; c != nil {
		return gates.JudgePodGate(*c, m.w.pod(t.Pod))
	}
	h := g.HTTP
	// A request may take up to the interval (at least 1 s): a slow answer is "not yet", not an
	// error, and the gate's timeout still bounds the whole wait through ctx.
	rctx, cancel := context.WithTimeout(ctx, requestTimeout(g))
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, h.Method, gates.ExpandGate(h.URL, t), nil)
	if err != nil {
		return gates.GateVerdict{Answer: "invalid request: " + err.Error()}
	}
	for k, v := range h.Headers {
		req.Header.Set(k, gates.ExpandGate(v, t))
	}
	client := m.run.HTTPClient
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		if rctx.Err() != nil && ctx.Err() == nil {
			return gates.GateVerdict{Answer: fmt.Sprintf("no answer within %s", requestTimeout(g))}
		}
		// client.Do's error names the method and URL, never a header.
		return gates.GateVerdict{Answer: strings.TrimSpace(err.Error())}
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(io.LimitReader(resp.Body, gateBody))
	if err != nil {
		return gates.GateVerdict{Answer: fmt.Sprintf("HTTP %d, reading the body failed: %v", resp.StatusCode, err)}
	}
	return gates.JudgeHTTPGate(*h, t, resp.StatusCode, body)
}

// pod returns the cached Pod called name of the set, or nil.
func (w *migrationWatcher) pod(name string) *corev1.Pod {
	obj, ok, err := w.podInf.GetStore().GetByKey(w.ns + "/" + name)
	if err != nil || !ok {
		return nil
	}
	p, _ := obj.(*corev1.Pod)
	return p
}

// requestTimeout is how long one request of g may take: its interval, at least a second.
func requestTimeout(g gates.Gate) time.Duration { return max(g.Interval, time.Second) }

// done reports whether ctx has ended.
func done(ctx context.Context) bool {
	select {
	case <-ctx.Done():
		return true
	default:
		return false
	}
}
