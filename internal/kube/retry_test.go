package kube

import (
	"context"
	"errors"
	"fmt"
	"io"
	"syscall"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
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
