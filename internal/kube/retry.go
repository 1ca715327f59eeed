package kube

import (
	"context"
	"errors"
	"io"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/version"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
)

// TransientBackoff paces RetryRead: four tries within about two seconds.
var TransientBackoff = wait.Backoff{Steps: 4, Duration: 250 * time.Millisecond, Factor: 2, Jitter: 0.1}

// IsTransient reports an error that a repeated read may not meet: the server
// overloaded or briefly unavailable (429, 500, 503, 504) or the connection
// dropped. client-go already retries GETs on connection resets and answers
// carrying Retry-After; this covers the rest (LISTs of a busy server, a 503
// without Retry-After from a load balancer).
func IsTransient(err error) bool {
	return apierrors.IsTooManyRequests(err) || (apierrors.IsInternalError(err) && !isApplySchemaError(err)) ||
		apierrors.IsServiceUnavailable(err) || apierrors.IsServerTimeout(err) || apierrors.IsTimeout(err) ||
		utilnet.IsConnectionReset(err) || utilnet.IsProbableEOF(err) || errors.Is(err, io.ErrUnexpectedEOF)
}

// isApplySchemaError reports a server-side apply whose object does not fit the type's schema
// (an unknown field): the API server answers it with a 500, not a 400. structured-merge-diff's
// error ("failed to create typed patch object (...): .spec.x: field not declared in schema",
// k8s.io/apimachinery pkg/util/managedfields/internal/structuredmerge.go) comes back from the
// patch handler as a plain error, which the response writer turns into a 500. The request is
// at fault, so a retry cannot help.
func isApplySchemaError(err error) bool {
	return strings.Contains(err.Error(), "failed to create typed patch object")
}

// RetryRead runs read until it succeeds, fails with an error that is not
// transient, ctx ends, or TransientBackoff is used up (client-go's
// retry.OnError). Only for requests that change nothing: reads and dry runs.
func RetryRead(ctx context.Context, read func(context.Context) error) error {
	return retry.OnError(TransientBackoff, func(err error) bool {
		return ctx.Err() == nil && IsTransient(err)
	}, func() error { return read(ctx) })
}

// List is one LIST call (do, e.g. kube.CoreV1().Pods(ns).List) retried with RetryRead: every
// cluster read olapgke plans with goes through it.
func List[T any](ctx context.Context, do func(context.Context, metav1.ListOptions) (T, error), opts metav1.ListOptions) (T, error) {
	var out T
	err := RetryRead(ctx, func(ctx context.Context) error {
		var err error
		out, err = do(ctx, opts)
		return err
	})
	return out, err
}

// Get is one GET (do, e.g. kube.AppsV1().StatefulSets(ns).Get) retried with RetryRead.
// client-go itself retries a GET only on a dropped connection or an answer with Retry-After;
// a refresh should not stop at a 500 either.
func Get[T any](ctx context.Context, do func(context.Context, string, metav1.GetOptions) (T, error), name string) (T, error) {
	var out T
	err := RetryRead(ctx, func(ctx context.Context) error {
		var err error
		out, err = do(ctx, name, metav1.GetOptions{})
		return err
	})
	return out, err
}

// ServerVersion is the API server's /version (retried like a read). It
// carries the emulation version when the control plane emulates an older
// minor.
func ServerVersion(ctx context.Context, kube kubernetes.Interface) (*version.Info, error) {
	var info *version.Info
	err := RetryRead(ctx, func(ctx context.Context) error {
		var err error
		info, err = kube.Discovery().ServerVersion()
		return err
	})
	return info, err
}
