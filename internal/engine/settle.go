package engine

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"
)

// Settled is what AwaitSettled saw.
type Settled struct {
	Set *appsv1.StatefulSet
	// FirstGeneration is the generation when the wait began (0: the object did not exist yet).
	FirstGeneration int64
}

// SettleOptions configure AwaitSettled.
type SettleOptions struct {
	// Quiet is how long the generation must stay unchanged, with the StatefulSet controller
	// having observed it, before the owner is taken to be done reconciling.
	Quiet time.Duration
	// Poll is the interval between reads (default 250ms).
	Poll  time.Duration
	Clock clock.Clock
}

// AwaitSettled waits until StatefulSet ns/name exists, its controller observed its latest
// generation, and no one changed its spec for opts.Quiet: the owner (an operator, Helm) finished
// reconciling what was applied before. ctx bounds the wait; its end returns what was last seen.
func AwaitSettled(ctx context.Context, kube kubernetes.Interface, ns, name string, opts SettleOptions) (Settled, error) {
	if opts.Poll <= 0 {
		opts.Poll = 250 * time.Millisecond
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	var out Settled
	first := true
	var gen int64 = -1
	var since time.Time
	waiting := "the StatefulSet to exist"
	err := wait.PollUntilContextCancel(ctx, opts.Poll, true, func(ctx context.Context) (bool, error) {
		set, err := kube.AppsV1().StatefulSets(ns).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			first, gen, waiting = false, -1, "the StatefulSet to exist"
			return false, nil
		}
		if err != nil {
			return false, nil //nolint:nilerr // a failed read is retried until ctx ends
		}
		now := opts.Clock.Now()
		if first {
			out.FirstGeneration, first = set.Generation, false
		}
		out.Set = set
		if set.Generation != gen {
			gen, since = set.Generation, now
		}
		if set.Status.ObservedGeneration < set.Generation {
			waiting = fmt.Sprintf("the StatefulSet controller to observe generation %d", set.Generation)
			return false, nil
		}
		if q := now.Sub(since); q < opts.Quiet {
			waiting = fmt.Sprintf("generation %d to stay unchanged for %s (%s so far)", set.Generation, opts.Quiet, q.Round(100*time.Millisecond))
			return false, nil
		}
		return true, nil
	})
	if err != nil {
		return out, fmt.Errorf("waiting for StatefulSet %s/%s to settle: still waiting for %s: %w", ns, name, waiting, context.Cause(ctx))
	}
	return out, nil
}
