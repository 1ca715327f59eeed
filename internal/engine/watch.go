package engine

import (
	"context"
	"fmt"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
)

// watchFunc opens a WATCH of one resource (a typed client's Watch method).
type watchFunc func(context.Context, metav1.ListOptions) (watch.Interface, error)

// informerWatch is what both waiters read from: the rollout wait (WaitForRollout) and the
// migration (migrationWatcher). One set of informers started together, one change signal
// (changed: a token on every relevant event), and one Forbidden stop: a reflector retries a
// LIST or WATCH the credentials may not make (RBAC) forever, and a wait would last until its
// timeout; instead the first Forbidden closes stopped and ends start or the waiter's next look,
// quoting the API server.
type informerWatch struct {
	cancel    context.CancelFunc
	ctx       context.Context
	factories []informers.SharedInformerFactory
	watched   []watchedInformer
	changed   chan struct{}
	stopped   chan struct{} // closed at the first Forbidden list or watch (stopErr)
	stopOnce  sync.Once
	stopErr   error
}

type watchedInformer struct {
	inf   cache.SharedIndexInformer
	probe watchFunc
}

func newInformerWatch(ctx context.Context, factories ...informers.SharedInformerFactory) *informerWatch {
	ctx, cancelCause := context.WithCancelCause(ctx)
	w := &informerWatch{ctx: ctx, factories: factories, changed: make(chan struct{}, 1), stopped: make(chan struct{})}
	w.cancel = func() { cancelCause(nil) }
	return w
}

// notify drops a token into changed (one is enough: the waiter looks at everything again).
func (w *informerWatch) notify() {
	select {
	case w.changed <- struct{}{}:
	default:
	}
}

// everyEvent is the handler that notifies on every add, update and delete.
func (w *informerWatch) everyEvent() cache.ResourceEventHandler {
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { w.notify() },
		UpdateFunc: func(any, any) { w.notify() },
		DeleteFunc: func(any) { w.notify() },
	}
}

// filtered notifies only for the events relevant says may change what the waiter decides.
func (w *informerWatch) filtered(relevant func(old, cur any) bool) cache.ResourceEventHandler {
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { notifyIf(relevant(nil, o), w.notify) },
		UpdateFunc: func(old, cur any) { notifyIf(relevant(old, cur), w.notify) },
		DeleteFunc: func(o any) { notifyIf(relevant(nil, o), w.notify) },
	}
}

// add watches inf: h (nil: no notification, the cache is only read) and the Forbidden stop;
// probe opens the same WATCH once after the sync (see start).
func (w *informerWatch) add(inf cache.SharedIndexInformer, h cache.ResourceEventHandler, probe watchFunc) error {
	if h != nil {
		if _, err := inf.AddEventHandler(h); err != nil {
			return err
		}
	}
	if err := inf.SetWatchErrorHandlerWithContext(func(ctx context.Context, r *cache.Reflector, err error) {
		if apierrors.IsForbidden(err) {
			w.stopOnce.Do(func() { w.stopErr = err; close(w.stopped) })
			w.cancel()
		}
		cache.DefaultWatchErrorHandler(ctx, r, err)
	}); err != nil {
		return err
	}
	w.watched = append(w.watched, watchedInformer{inf: inf, probe: probe})
	return nil
}

// forbidden is the Forbidden answer that stopped the watch, nil while none did.
func (w *informerWatch) forbidden() error {
	select {
	case <-w.stopped:
		return w.stopErr
	default:
		return nil
	}
}

// start starts the informers and waits until their caches synced. A LIST may pass and the
// WATCH after it be refused (a role with list but not watch). The informers report that
// refusal asynchronously, after their caches synced, so each watch is also opened once here,
// from the informer's resource version (no replay), and closed: a refusal is then known before
// the waiter acts. On an error the informers are stopped; what names the waiter in it.
func (w *informerWatch) start(what string) error {
	for _, f := range w.factories {
		f.Start(w.ctx.Done())
	}
	for _, f := range w.factories {
		for typ, ok := range f.WaitForCacheSync(w.ctx.Done()) {
			if !ok {
				err := w.forbidden()
				if err == nil {
					err = context.Cause(w.ctx)
				}
				w.stop()
				return fmt.Errorf("watching %v for %s: %w", typ, what, err)
			}
		}
	}
	for _, x := range w.watched {
		if x.probe == nil {
			continue
		}
		wi, err := x.probe(w.ctx, metav1.ListOptions{ResourceVersion: x.inf.LastSyncResourceVersion(), TimeoutSeconds: ptr.To[int64](1)})
		if apierrors.IsForbidden(err) {
			w.stop()
			return err
		}
		if err == nil && wi != nil {
			wi.Stop()
		}
	}
	return nil
}

// stop stops the informers and waits for them.
func (w *informerWatch) stop() {
	w.cancel()
	for _, f := range w.factories {
		f.Shutdown()
	}
}

func notifyIf(ok bool, notify func()) {
	if ok {
		notify()
	}
}
