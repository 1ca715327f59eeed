package main

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestWatchStartupEndsWaitOnComponentError(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		boom error
		cp   bool // reported on the control plane's channel
	}{
		{"sandbox component", errors.New("olapgke-topolvm exited: exit status 1"), false},
		// The controller manager exiting during start-up (it gives the API server 10 s to
		// become healthy): no node would lose its not-ready taint.
		{"control plane component", errors.New("kube-controller-manager: exited"), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			testWatchStartupEndsWait(t, tc.boom, tc.cp)
		})
	}
}

func testWatchStartupEndsWait(t *testing.T, boom error, onCP bool) {
	errCh, cpErr := make(chan error, 2), make(chan error, 4)
	ctx, failed := watchStartup(context.Background(), errCh, cpErr)
	if onCP {
		cpErr <- boom
	} else {
		errCh <- boom
	}
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
	errCh, cpErr := make(chan error, 2), make(chan error, 4)
	ctx, failed := watchStartup(context.Background(), errCh, cpErr)
	if err := failed(); err != nil {
		t.Fatalf("failed() = %v, want nil", err)
	}
	if ctx.Err() == nil {
		t.Error("the watch context outlives the watch")
	}
	later, cpLater := errors.New("GKE API emulator stopped"), errors.New("kube-scheduler: exited")
	errCh <- later
	cpErr <- cpLater
	if got := <-errCh; !errors.Is(got, later) {
		t.Errorf("errCh gave %v, want %v", got, later)
	}
	if got := <-cpErr; !errors.Is(got, cpLater) {
		t.Errorf("the control plane's channel gave %v, want %v", got, cpLater)
	}
}
