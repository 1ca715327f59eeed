package kube

import (
	"context"
	"errors"
	"fmt"
	"io"
	"syscall"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestIsTransient(t *testing.T) {
	t.Parallel()
	gr := schema.GroupResource{Resource: "pods"}
	for _, c := range []struct {
		err  error
		want bool
	}{
		{apierrors.NewTooManyRequests("slow down", 1), true},
		{apierrors.NewInternalError(errors.New("boom")), true},
		{apierrors.NewServiceUnavailable("leader changed"), true},
		{apierrors.NewServerTimeout(gr, "list", 1), true},
		{apierrors.NewTimeoutError("took too long", 1), true},
		{fmt.Errorf("read: %w", syscall.ECONNRESET), true},
		{io.ErrUnexpectedEOF, true},
		{apierrors.NewNotFound(gr, "x"), false},
		{apierrors.NewForbidden(gr, "x", errors.New("RBAC")), false},
		{apierrors.NewConflict(gr, "x", errors.New("changed")), false},
		{apierrors.NewBadRequest("bad"), false},
		// What a server-side apply with an unknown field gets back: a 500 that is the request's fault.
		{&apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: 500, Reason: metav1.StatusReasonUnknown,
			Message: "failed to create typed patch object (sts-bad/bad; apps/v1, Kind=StatefulSet): .spec.bogusField: field not declared in schema"}}, false},
		{context.Canceled, false},
	} {
		if got := IsTransient(c.err); got != c.want {
			t.Errorf("IsTransient(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}

func TestRetryReadStopsWhenContextEnds(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	calls := 0
	err := RetryRead(ctx, func(context.Context) error {
		calls++
		cancel()
		return apierrors.NewServiceUnavailable("down")
	})
	if calls != 1 || !apierrors.IsServiceUnavailable(err) {
		t.Fatalf("%d calls, err %v: want one call once ctx ended", calls, err)
	}
}

// Get retries a transient failure (a 500 without Retry-After, which client-go does not retry) and
// stops at once at an answer that is not transient (404: the object is gone).
func TestGetRetriesTransientOnly(t *testing.T) {
	gr := schema.GroupResource{Group: "apps", Resource: "statefulsets"}
	for _, tc := range []struct {
		name      string
		first     error
		wantCalls int
		wantErr   bool
	}{
		{"500 then the object", apierrors.NewInternalError(errors.New("etcdserver: leader changed")), 2, false},
		{"404", apierrors.NewNotFound(gr, "hist"), 1, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			calls := 0
			got, err := Get(context.Background(), func(_ context.Context, name string, _ metav1.GetOptions) (string, error) {
				calls++
				if calls == 1 {
					return "", tc.first
				}
				return name, nil
			}, "hist")
			if calls != tc.wantCalls || (err != nil) != tc.wantErr || (!tc.wantErr && got != "hist") {
				t.Errorf("Get = %q, %v after %d calls; want %d calls, error %v", got, err, calls, tc.wantCalls, tc.wantErr)
			}
		})
	}
}
