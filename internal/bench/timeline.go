package bench

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/olapgke/terraform-provider-olapgke/internal/stsutil"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// Timeline watches the Pods of one namespace and records, per Pod UID, when this process saw the
// Pod start terminating (deletionTimestamp set, or the delete event if that came first) and first
// Ready. Object timestamps (metadata.deletionTimestamp, the Ready condition's
// lastTransitionTime) have one-second resolution, too coarse for ~1 s moves, so the watch's
// arrival times are used; they lag the API server by the same small delay for every tool.
type Timeline struct {
	mu   sync.Mutex
	pods map[types.UID]*podTimes
	stop context.CancelFunc
}

type podTimes struct {
	name string
	// added: first seen; succeeded: first seen in phase Succeeded (a copier that finished).
	added, deleting, gone, ready, succeeded time.Time
}

func newTimeline(stop context.CancelFunc) *Timeline {
	return &Timeline{pods: map[types.UID]*podTimes{}, stop: stop}
}

// WatchPods starts the informer and waits for its first LIST.
func WatchPods(ctx context.Context, kube kubernetes.Interface, ns string) (*Timeline, error) {
	ctx, cancel := context.WithCancel(ctx)
	t := newTimeline(cancel)
	f := informers.NewSharedInformerFactoryWithOptions(kube, 0, informers.WithNamespace(ns))
	inf := f.Core().V1().Pods().Informer()
	_, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { t.observe(o, false) },
		UpdateFunc: func(_, o any) { t.observe(o, false) },
		DeleteFunc: func(o any) {
			if d, ok := o.(cache.DeletedFinalStateUnknown); ok {
				o = d.Obj
			}
			t.observe(o, true)
		},
	})
	if err != nil {
		cancel()
		return nil, err
	}
	f.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		cancel()
		return nil, fmt.Errorf("pod informer of namespace %s did not sync", ns)
	}
	return t, nil
}

func (t *Timeline) observe(o any, deleted bool) { t.observeAt(o, deleted, time.Now()) }

// observeAt records what the event of Pod o (deleted: its delete event) shows, seen at now.
func (t *Timeline) observeAt(o any, deleted bool, now time.Time) {
	p, ok := o.(*corev1.Pod)
	if !ok {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	pt := t.pods[p.UID]
	if pt == nil {
		pt = &podTimes{name: p.Name, added: now}
		t.pods[p.UID] = pt
	}
	if pt.succeeded.IsZero() && p.Status.Phase == corev1.PodSucceeded {
		pt.succeeded = now
	}
	if (deleted || p.DeletionTimestamp != nil) && pt.deleting.IsZero() {
		pt.deleting = now
	}
	if deleted && pt.gone.IsZero() {
		pt.gone = now
	}
	if pt.ready.IsZero() && p.DeletionTimestamp == nil && !deleted && stsutil.PodReady(p) {
		pt.ready = now
	}
}

// Stop ends the watch.
func (t *Timeline) Stop() { t.stop() }

// Current maps the names of the Pods not terminating now to their UIDs (the "old" Pods of a move).
func (t *Timeline) Current() map[string]types.UID {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := map[string]types.UID{}
	for uid, pt := range t.pods {
		if pt.deleting.IsZero() {
			out[pt.name] = uid
		}
	}
	return out
}

// Move is one Pod replaced: the old Pod seen terminating -> its successor (same name) seen Ready.
type Move struct {
	Pod                   string
	Deleting, Gone, Ready time.Time // Gone: the old Pod's delete event (zero if not seen)
}

// Latency is the cluster's own time for the move.
func (m Move) Latency() time.Duration { return m.Ready.Sub(m.Deleting) }

// Moves returns, for every Pod of old, when it was seen terminating and when the next Pod of the
// same name was seen Ready; an error names the Pods whose move was not seen complete.
func (t *Timeline) Moves(old map[string]types.UID) ([]Move, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []Move
	var missing []string
	for name, uid := range old {
		o := t.pods[uid]
		var ready time.Time
		for u, pt := range t.pods {
			if u != uid && pt.name == name && !pt.ready.IsZero() && (ready.IsZero() || pt.ready.Before(ready)) && o != nil && pt.ready.After(o.deleting) {
				ready = pt.ready
			}
		}
		if o == nil || o.deleting.IsZero() || ready.IsZero() {
			missing = append(missing, name)
			continue
		}
		out = append(out, Move{Pod: name, Deleting: o.deleting, Gone: o.gone, Ready: ready})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Deleting.Before(out[j].Deleting) })
	if len(missing) > 0 {
		sort.Strings(missing)
		return out, fmt.Errorf("moves not seen complete for Pods %v", missing)
	}
	return out, nil
}

// MoveStats sums a set of moves: Sum of the cluster's latencies, Span from the first old Pod seen
// terminating to the last new Pod seen Ready.
type MoveStats struct {
	N         int
	Sum, Span time.Duration
	// Terminating sums, over the moves whose old Pod was seen gone, the time it spent
	// terminating (the grace period as the simulated kubelet plays it); the rest of Sum is
	// the controllers recreating the Pod and its volume.
	Terminating time.Duration
}

// Stats computes MoveStats.
func Stats(moves []Move) MoveStats {
	s := MoveStats{N: len(moves)}
	var first, last time.Time
	for _, m := range moves {
		s.Sum += m.Latency()
		if !m.Gone.IsZero() {
			s.Terminating += m.Gone.Sub(m.Deleting)
		}
		if first.IsZero() || m.Deleting.Before(first) {
			first = m.Deleting
		}
		if m.Ready.After(last) {
			last = m.Ready
		}
	}
	s.Span = last.Sub(first)
	return s
}

// Add sums two MoveStats (spans of separate runs add up).
func (s MoveStats) Add(o MoveStats) MoveStats {
	return MoveStats{N: s.N + o.N, Sum: s.Sum + o.Sum, Span: s.Span + o.Span, Terminating: s.Terminating + o.Terminating}
}

// Overhead is Span/Sum - 1: the share of the span not spent waiting on the cluster.
func (s MoveStats) Overhead() float64 {
	if s.Sum <= 0 {
		return 0
	}
	return float64(s.Span)/float64(s.Sum) - 1
}
