package gke

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"cloud.google.com/go/container/apiv1/containerpb"
	"google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"

	"github.com/olapgke/terraform-provider-olapgke/internal/faultproxy"
)

// TestOperationWaiterRidesOutTransientPollErrors puts the fault proxy between the client and
// the fake GKE and fails GetOperation polls with the codes GKE uses for transient trouble
// (Unavailable, DeadlineExceeded, and ResourceExhausted for the per-minute read-request
// quota): the operation keeps running server side, so the waiter must poll again, not report
// the create as failed (found by internal/reliability's lifecycle suite).
func TestOperationWaiterRidesOutTransientPollErrors(t *testing.T) {
	for _, code := range []codes.Code{codes.Unavailable, codes.ResourceExhausted, codes.DeadlineExceeded} {
		t.Run(code.String(), func(t *testing.T) {
			f := &fakeGKE{pollsLeft: map[string]int{}, opErr: map[string]*status.Status{}}
			lis, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			srv := grpc.NewServer()
			containerpb.RegisterClusterManagerServer(srv, f)
			go func() { _ = srv.Serve(lis) }()
			defer srv.Stop()
			upstream := lis.Addr().String()
			p, err := faultproxy.NewGRPC(upstream, faultproxy.GRPCConfig{
				Seed: 1, MaxFaults: 2, Rates: map[codes.Code]float64{code: 1},
				Eligible: func(m string) bool { return strings.HasSuffix(m, "/GetOperation") },
			})
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			c, err := New(t.Context(), Options{Endpoint: p.Addr, Insecure: true, PollInterval: 5 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = c.Close() }()
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			defer cancel()
			if err := c.CreateNodePool(ctx, ref, &containerpb.NodePool{Name: "pool-b"}); err != nil {
				t.Fatalf("CreateNodePool with two %s polls: %v", code, err)
			}
			if got := len(p.Events()); got != 2 {
				t.Errorf("faults injected = %d, want 2 (the test would prove nothing)", got)
			}
		})
	}
}
