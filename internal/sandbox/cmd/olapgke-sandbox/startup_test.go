package main

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestWatchStartupEndsWaitOnComponentError(t *testing.T) {
	t.Parallel()
	errCh := make(chan error, 2)
	ctx, failed := watchStartup(context.Background(), errCh)
	boom := errors.New("olapgke-topolvm exited: exit status 1")
	errCh <- boom
	select {
	case <-ctx.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the start-up wait was not ended by the component's error")
	}
	if !errors.Is(context.Cause(ctx), boom) {
		t.Errorf("cause %v, want %v", context.Cause(ctx), boom)
	}
	if err := failed(); !errors.Is(err, boom) {
		t.Errorf("failed() = %v, want %v", err, boom)
	}
}

func TestWatchStartupLeavesLaterErrorsForTheRunningSandbox(t *testing.T) {
	t.Parallel()
	errCh := make(chan error, 2)
	ctx, failed := watchStartup(context.Background(), errCh)
	if err := failed(); err != nil {
		t.Fatalf("failed() = %v, want nil", err)
	}
	if ctx.Err() == nil {
		t.Error("the watch context outlives the watch")
	}
	later := errors.New("GKE API emulator stopped")
	errCh <- later
	if got := <-errCh; !errors.Is(got, later) {
		t.Errorf("errCh gave %v, want %v", got, later)
	}
}
