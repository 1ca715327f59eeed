package gke

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"cloud.google.com/go/container/apiv1/containerpb"
	"google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	grpcstatus "google.golang.org/grpc/status"
)

// fakeGKE is a real gRPC ClusterManager server with scripted answers: operations stay RUNNING
// for a number of GetOperation polls, then finish with an optional error.
type fakeGKE struct {
	containerpb.UnimplementedClusterManagerServer

	mu        sync.Mutex
	busy      int   // SetNodePoolSize calls refused as busy before one is accepted
	refusal   error // how they are refused (default: GKE's "incompatible operation")
	sizeCalls int
	sizeAt    []time.Time // when each SetNodePoolSize call arrived
	onRefuse  func(n int) // called after the n-th busy refusal
	onPoll    func(n int) // called after the n-th GetOperation
	pollsLeft map[string]int
	opErr     map[string]*status.Status
	polled    []string
}

func (f *fakeGKE) GetCluster(_ context.Context, r *containerpb.GetClusterRequest) (*containerpb.Cluster, error) {
	if r.GetName() != "projects/p/locations/l/clusters/c" {
		return nil, grpcstatus.Errorf(codes.NotFound, "cluster %q not found", r.GetName())
	}
	return &containerpb.Cluster{Name: "c", Endpoint: "127.0.0.1:6443"}, nil
}

func (f *fakeGKE) startOp(name string, polls int, err *status.Status) *containerpb.Operation {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.pollsLeft[name] = polls
	f.opErr[name] = err
	return &containerpb.Operation{Name: name, Location: "l", Status: containerpb.Operation_RUNNING}
}

func (f *fakeGKE) CreateNodePool(_ context.Context, r *containerpb.CreateNodePoolRequest) (*containerpb.Operation, error) {
	switch r.GetNodePool().GetName() {
	case "slow":
		return f.startOp("op-slow", 1000, nil), nil
	case "bad":
		return f.startOp("op-bad", 1, &status.Status{Code: int32(codes.ResourceExhausted), Message: "Insufficient regional quota to satisfy request: resource \"SSD_TOTAL_GB\""}), nil
	}
	return f.startOp("op-create", 2, nil), nil
}

func (f *fakeGKE) SetNodePoolSize(_ context.Context, r *containerpb.SetNodePoolSizeRequest) (*containerpb.Operation, error) {
	f.mu.Lock()
	f.sizeCalls++
	f.sizeAt = append(f.sizeAt, time.Now())
	refuse, n, hook, refusal := f.sizeCalls <= f.busy, f.sizeCalls, f.onRefuse, f.refusal
	f.mu.Unlock()
	if refuse {
		if hook != nil {
			hook(n)
		}
		if refusal != nil {
			return nil, refusal
		}
		return nil, grpcstatus.Errorf(codes.FailedPrecondition, "Cluster is running incompatible operation operation-123.")
	}
	if r.GetNodeCount() < 0 {
		return nil, grpcstatus.Errorf(codes.InvalidArgument, "node_count must be >= 0")
	}
	return f.startOp("op-size", 1, nil), nil
}

func (f *fakeGKE) DeleteNodePool(_ context.Context, r *containerpb.DeleteNodePoolRequest) (*containerpb.Operation, error) {
	return nil, grpcstatus.Errorf(codes.NotFound, "node pool %q not found", r.GetName())
}

func (f *fakeGKE) GetOperation(_ context.Context, r *containerpb.GetOperationRequest) (*containerpb.Operation, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.polled = append(f.polled, r.GetName())
	if f.onPoll != nil {
		f.onPoll(len(f.polled))
	}
	id := r.GetName()[strings.LastIndex(r.GetName(), "/")+1:]
	left, ok := f.pollsLeft[id]
	if !ok {
		return nil, grpcstatus.Errorf(codes.NotFound, "operation %q not found", r.GetName())
	}
	if left > 1 {
		f.pollsLeft[id] = left - 1
		return &containerpb.Operation{Name: id, Status: containerpb.Operation_RUNNING}, nil
	}
	return &containerpb.Operation{Name: id, Status: containerpb.Operation_DONE, Error: f.opErr[id]}, nil
}

func startFake(t *testing.T) (*fakeGKE, *Client) {
	t.Helper()
	return startFakeWith(t, Options{})
}

// startFakeWith serves a fake GKE and returns a client made with o (endpoint, insecure and a 5ms
// poll interval filled in unless set).
func startFakeWith(t *testing.T, o Options) (*fakeGKE, *Client) {
	t.Helper()
	f := &fakeGKE{pollsLeft: map[string]int{}, opErr: map[string]*status.Status{}}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	containerpb.RegisterClusterManagerServer(srv, f)
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)

	o.Endpoint, o.Insecure = lis.Addr().String(), true
	if o.PollInterval == 0 {
		o.PollInterval = 5 * time.Millisecond
	}
	c, err := New(t.Context(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return f, c
}

var ref = ClusterRef{Project: "p", Location: "l", Cluster: "c"}

func TestGetClusterAndNotFound(t *testing.T) {
	_, c := startFake(t)
	cl, err := c.GetCluster(t.Context(), ref)
	if err != nil || cl.GetEndpoint() != "127.0.0.1:6443" {
		t.Fatalf("GetCluster = %v, %v", cl, err)
	}
	_, err = c.GetCluster(t.Context(), ClusterRef{Project: "p", Location: "l", Cluster: "missing"})
	if !IsNotFound(err) || !strings.Contains(err.Error(), "clusters/missing") {
		t.Fatalf("GetCluster(missing) error = %v, want ErrNotFound naming the cluster", err)
	}
	if err := c.DeleteNodePool(t.Context(), ref, "gone"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("DeleteNodePool(gone) error = %v, want ErrNotFound", err)
	}
}

func TestOperationWaiterPollsUntilDone(t *testing.T) {
	f, c := startFake(t)
	if err := c.CreateNodePool(t.Context(), ref, &containerpb.NodePool{Name: "pool-b"}); err != nil {
		t.Fatal(err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	want := "projects/p/locations/l/operations/op-create"
	if len(f.polled) != 2 || f.polled[0] != want || f.polled[1] != want {
		t.Fatalf("polled %v, want two polls of %s", f.polled, want)
	}
}

func TestOperationErrorSurfaced(t *testing.T) {
	_, c := startFake(t)
	err := c.CreateNodePool(t.Context(), ref, &containerpb.NodePool{Name: "bad"})
	var opErr *OperationError
	if !errors.As(err, &opErr) || opErr.Code != codes.ResourceExhausted || !strings.Contains(err.Error(), "SSD_TOTAL_GB") {
		t.Fatalf("error = %v, want OperationError with the quota message", err)
	}
	if IsNotFound(err) {
		t.Fatalf("quota error must not match ErrNotFound")
	}
}

func TestOperationWaiterHonoursContext(t *testing.T) {
	f, c := startFake(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	f.onPoll = func(n int) {
		if n == 3 {
			cancel() // the caller gives up while the operation is still RUNNING
		}
	}
	start := time.Now()
	err := c.CreateNodePool(ctx, ref, &containerpb.NodePool{Name: "slow"})
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "RUNNING") {
		t.Fatalf("error = %v, want deadline exceeded with the last status", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("waiter ignored the context for %s", d)
	}
}

func TestRefFromName(t *testing.T) {
	t.Parallel()
	got, err := refFromName("projects/p/locations/l/clusters/c/nodePools/n")
	if err != nil || got != ref {
		t.Fatalf("refFromName = %v, %v", got, err)
	}
	if _, err := refFromName("pools/n"); err == nil {
		t.Fatal("want error for a malformed name")
	}
}

func TestTokenSourceChoices(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	if _, err := TokenSource(ctx, Auth{Credentials: "{}", AccessToken: "x"}); err == nil {
		t.Fatal("want error for both credentials and token")
	}
	ts, err := TokenSource(ctx, Auth{AccessToken: "tok-123"})
	if err != nil {
		t.Fatal(err)
	}
	if tok, err := ts.Token(); err != nil || tok.AccessToken != "tok-123" {
		t.Fatalf("static token = %v, %v", tok, err)
	}
	secret := `{"type":"evil","private_key":"SECRET-KEY"}`
	_, err = TokenSource(ctx, Auth{Credentials: secret})
	if err == nil || !strings.Contains(err.Error(), `"evil"`) || strings.Contains(err.Error(), "SECRET-KEY") {
		t.Fatalf("unsupported type error = %v", err)
	}
	_, err = TokenSource(ctx, Auth{Credentials: `{"type": "service_account", SECRET`})
	if err == nil || strings.Contains(err.Error(), "SECRET") {
		t.Fatalf("bad JSON error = %v (must not echo the document)", err)
	}
	_, err = TokenSource(ctx, Auth{Credentials: "/does/not/exist.json"})
	if err == nil || strings.Contains(err.Error(), "/does/not") {
		t.Fatalf("missing file error = %v (must not echo the value)", err)
	}
}

func TestMutationRetriedWhileClusterBusy(t *testing.T) {
	f, c := startFake(t)
	f.busy = 3
	if err := c.SetNodePoolSize(t.Context(), ref, "pool-a", 3); err != nil {
		t.Fatal(err)
	}
	if f.sizeCalls != 4 {
		t.Fatalf("SetNodePoolSize called %d times, want 4 (3 refused as busy)", f.sizeCalls)
	}
	// Other errors are not retried.
	f.sizeCalls, f.busy = 0, 0
	err := c.SetNodePoolSize(t.Context(), ref, "pool-a", -1)
	if err == nil || !strings.Contains(err.Error(), "node_count must be >= 0") || f.sizeCalls != 1 {
		t.Fatalf("error = %v after %d calls, want the InvalidArgument message after 1 call", err, f.sizeCalls)
	}
	// A cluster that stays busy gives up with the context and says why.
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	f.sizeCalls, f.busy = 0, 1<<30
	f.onRefuse = func(n int) {
		if n == 3 {
			cancel() // the caller gives up while the cluster is still busy
		}
	}
	err = c.SetNodePoolSize(ctx, ref, "pool-a", 3)
	if err == nil || !strings.Contains(err.Error(), "incompatible operation") {
		t.Fatalf("error = %v, want the busy message", err)
	}
}

// TestMutationWaitsOutBusyAnswers: every GKE answer that means "another operation is running"
// (on the cluster or pool, FAILED_PRECONDITION) or "the concurrent operations quota is used up"
// (RESOURCE_EXHAUSTED) is waited out, with waits that double from the poll interval; the same
// codes for other causes are not.
func TestMutationWaitsOutBusyAnswers(t *testing.T) {
	retried := map[string]error{
		"incompatible operation": grpcstatus.Error(codes.FailedPrecondition, "Cluster is running incompatible operation operation-1718024305921-fd4f65ea-7da5-4d36-a166-f619a83fb205."),
		"cluster upgrade":        grpcstatus.Error(codes.FailedPrecondition, "Operation operation-1596064640049-1b03e177 is currently upgrading cluster c. Please wait and try again once it is done."),
		"node pool deletion":     grpcstatus.Error(codes.FailedPrecondition, "Operation operation-1 is currently deleting a node pool for cluster c. Please wait and try again once it is done."),
		"emulator pool resize":   grpcstatus.Error(codes.FailedPrecondition, "Operation operation-1796145843413-4d8c7537 is currently resizing node pool pool-a. Please wait and try again once it is done."),
		"concurrent ops quota":   grpcstatus.Error(codes.ResourceExhausted, `Too many operations: cluster "c" hits the concurrent operations quota 5, please try again later.`),
	}
	for name, refusal := range retried {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f, c := startFake(t)
			f.busy, f.refusal = 3, refusal
			if err := c.SetNodePoolSize(t.Context(), ref, "pool-a", 3); err != nil {
				t.Fatal(err)
			}
			f.mu.Lock()
			defer f.mu.Unlock()
			if f.sizeCalls != 4 {
				t.Fatalf("SetNodePoolSize called %d times, want 4 (3 refused)", f.sizeCalls)
			}
			// Timers never fire early: the i-th wait is at least PollInterval * 2^i.
			for i := 1; i < len(f.sizeAt); i++ {
				if gap, least := f.sizeAt[i].Sub(f.sizeAt[i-1]), 5*time.Millisecond<<(i-1); gap < least {
					t.Errorf("wait %d was %s, want at least %s (exponential backoff)", i, gap, least)
				}
			}
		})
	}
	notRetried := map[string]error{
		"regional quota":     grpcstatus.Error(codes.ResourceExhausted, `Insufficient regional quota to satisfy request: resource "SSD_TOTAL_GB": request requires '750.0' and is short '350.0'.`),
		"other precondition": grpcstatus.Error(codes.FailedPrecondition, "Node pool pool-a is not in a state that allows this change."),
		"invalid argument":   grpcstatus.Error(codes.InvalidArgument, "Auto_upgrade cannot be false when release_channel REGULAR is set."),
	}
	for name, refusal := range notRetried {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f, c := startFake(t)
			f.busy, f.refusal = 3, refusal
			err := c.SetNodePoolSize(t.Context(), ref, "pool-a", 3)
			if st, _ := grpcstatus.FromError(err); st.Code() != grpcstatus.Code(refusal) || !strings.Contains(err.Error(), grpcstatus.Convert(refusal).Message()) {
				t.Fatalf("error = %v, want GKE's answer %v", err, refusal)
			}
			f.mu.Lock()
			defer f.mu.Unlock()
			if f.sizeCalls != 1 {
				t.Fatalf("SetNodePoolSize called %d times, want 1 (not retried)", f.sizeCalls)
			}
		})
	}
}

// TestBusyBackoffIsCapped: the waits stop doubling at BusyBackoffCap. Ten refusals take about
// 5ms + 9 x 10ms capped; uncapped they would take 5ms x (2^10 - 1), over five seconds.
func TestBusyBackoffIsCapped(t *testing.T) {
	f, c := startFakeWith(t, Options{BusyBackoffCap: 10 * time.Millisecond})
	f.busy = 10
	start := time.Now()
	if err := c.SetNodePoolSize(t.Context(), ref, "pool-a", 3); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 2500*time.Millisecond || f.sizeCalls != 11 {
		t.Fatalf("%d calls in %s, want 11 well under 2.5s (capped waits)", f.sizeCalls, d)
	}
}

// TestBusyUntilTheDeadline: a cluster that stays busy past the caller's deadline (the resource's
// timeout) ends the wait with the deadline and GKE's last answer, code included.
func TestBusyUntilTheDeadline(t *testing.T) {
	f, c := startFake(t)
	quota := `Too many operations: cluster "c" hits the concurrent operations quota 1, please try again later.`
	f.busy, f.refusal = 1<<30, grpcstatus.Error(codes.ResourceExhausted, quota)
	ctx, cancel := context.WithTimeout(t.Context(), 150*time.Millisecond)
	defer cancel()
	err := c.SetNodePoolSize(ctx, ref, "pool-a", 3)
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), quota) {
		t.Fatalf("error = %v, want the deadline and GKE's last answer", err)
	}
	var st interface{ GRPCStatus() *grpcstatus.Status }
	if !errors.As(err, &st) || st.GRPCStatus().Code() != codes.ResourceExhausted {
		t.Fatalf("error %v does not carry GKE's code ResourceExhausted", err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.sizeCalls < 2 {
		t.Fatalf("SetNodePoolSize called %d times before the deadline, want retries", f.sizeCalls)
	}
}
