package gke

import (
	"context"
	"errors"
	"fmt"
	"math"
	"regexp"
	"strings"
	"time"

	container "cloud.google.com/go/container/apiv1"
	"cloud.google.com/go/container/apiv1/containerpb"
	"golang.org/x/oauth2"
	"google.golang.org/api/option"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"k8s.io/apimachinery/pkg/util/wait"
)

// Options configure New.
type Options struct {
	// Endpoint overrides the GKE API endpoint (host:port); empty means container.googleapis.com.
	Endpoint string
	// Insecure dials Endpoint with plaintext gRPC and no authentication (local sandbox only; the
	// provider refuses it for non-loopback endpoints).
	Insecure bool
	// TokenSource authenticates requests (see TokenSource). Ignored when Insecure.
	TokenSource oauth2.TokenSource
	// PollInterval is how often GetOperation is polled while waiting, and the first wait before
	// a call GKE refused as busy is made again; default 2s.
	PollInterval time.Duration
	// BusyBackoffCap is the longest wait between two tries of a call GKE refused as busy (the
	// wait doubles from PollInterval); default 10s, terraform-plugin-sdk's retry cap.
	BusyBackoffCap time.Duration
	// UserAgent is appended to the client's user agent.
	UserAgent string
}

// Client implements API over the GKE ClusterManager gRPC client.
type Client struct {
	cm      *container.ClusterManagerClient
	poll    time.Duration
	busyCap time.Duration
}

var _ API = (*Client)(nil)

// New dials the GKE API. The connection is lazy: no request is made until the first call.
func New(ctx context.Context, o Options) (*Client, error) {
	var opts []option.ClientOption
	if o.Endpoint != "" {
		opts = append(opts, option.WithEndpoint(o.Endpoint))
	}
	if o.UserAgent != "" {
		opts = append(opts, option.WithUserAgent(o.UserAgent))
	}
	switch {
	case o.Insecure:
		opts = append(opts, option.WithoutAuthentication(),
			option.WithGRPCDialOption(grpc.WithTransportCredentials(insecure.NewCredentials())))
	case o.TokenSource != nil:
		opts = append(opts, option.WithTokenSource(o.TokenSource))
	}
	cm, err := container.NewClusterManagerClient(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("creating GKE ClusterManager client: %w", err)
	}
	poll := o.PollInterval
	if poll <= 0 {
		poll = 2 * time.Second
	}
	busyCap := o.BusyBackoffCap
	if busyCap <= 0 {
		busyCap = 10 * time.Second
	}
	return &Client{cm: cm, poll: poll, busyCap: max(busyCap, poll)}, nil
}

// Close closes the connection.
func (c *Client) Close() error { return c.cm.Close() }

func poolName(c ClusterRef, pool string) string { return c.Name() + "/nodePools/" + pool }

// GetCluster returns the cluster; a missing cluster is ErrNotFound.
func (c *Client) GetCluster(ctx context.Context, ref ClusterRef) (*containerpb.Cluster, error) {
	cl, err := c.cm.GetCluster(ctx, &containerpb.GetClusterRequest{Name: ref.Name()})
	if err != nil {
		return nil, mapErr("getting cluster "+ref.Name(), err)
	}
	return cl, nil
}

// GetNodePool returns one node pool; a missing pool or cluster is ErrNotFound.
func (c *Client) GetNodePool(ctx context.Context, ref ClusterRef, pool string) (*containerpb.NodePool, error) {
	np, err := c.cm.GetNodePool(ctx, &containerpb.GetNodePoolRequest{Name: poolName(ref, pool)})
	if err != nil {
		return nil, mapErr("getting node pool "+poolName(ref, pool), err)
	}
	return np, nil
}

// ListNodePools lists the cluster's node pools.
func (c *Client) ListNodePools(ctx context.Context, ref ClusterRef) ([]*containerpb.NodePool, error) {
	resp, err := c.cm.ListNodePools(ctx, &containerpb.ListNodePoolsRequest{Parent: ref.Name()})
	if err != nil {
		return nil, mapErr("listing node pools of "+ref.Name(), err)
	}
	return resp.GetNodePools(), nil
}

// CreateNodePool creates np and waits for the operation.
func (c *Client) CreateNodePool(ctx context.Context, ref ClusterRef, np *containerpb.NodePool) error {
	what := "creating node pool " + poolName(ref, np.GetName())
	op, err := c.whenIdle(ctx, func() (*containerpb.Operation, error) {
		return c.cm.CreateNodePool(ctx, &containerpb.CreateNodePoolRequest{Parent: ref.Name(), NodePool: np})
	})
	return c.finish(ctx, ref, what, op, err)
}

// UpdateNodePool applies req (req.Name must be the pool's resource name) and waits.
func (c *Client) UpdateNodePool(ctx context.Context, req *containerpb.UpdateNodePoolRequest) error {
	ref, err := refFromName(req.GetName())
	if err != nil {
		return err
	}
	op, err := c.whenIdle(ctx, func() (*containerpb.Operation, error) { return c.cm.UpdateNodePool(ctx, req) })
	return c.finish(ctx, ref, "updating node pool "+req.GetName(), op, err)
}

// SetNodePoolSize resizes a pool and waits.
func (c *Client) SetNodePoolSize(ctx context.Context, ref ClusterRef, pool string, count int32) error {
	name := poolName(ref, pool)
	op, err := c.whenIdle(ctx, func() (*containerpb.Operation, error) {
		return c.cm.SetNodePoolSize(ctx, &containerpb.SetNodePoolSizeRequest{Name: name, NodeCount: count})
	})
	return c.finish(ctx, ref, fmt.Sprintf("resizing node pool %s to %d", name, count), op, err)
}

// SetNodePoolAutoscaling sets autoscaling and waits.
func (c *Client) SetNodePoolAutoscaling(ctx context.Context, ref ClusterRef, pool string, a *containerpb.NodePoolAutoscaling) error {
	name := poolName(ref, pool)
	op, err := c.whenIdle(ctx, func() (*containerpb.Operation, error) {
		return c.cm.SetNodePoolAutoscaling(ctx, &containerpb.SetNodePoolAutoscalingRequest{Name: name, Autoscaling: a})
	})
	return c.finish(ctx, ref, "setting autoscaling of node pool "+name, op, err)
}

// SetNodePoolManagement sets auto-repair/auto-upgrade and waits.
func (c *Client) SetNodePoolManagement(ctx context.Context, ref ClusterRef, pool string, m *containerpb.NodeManagement) error {
	name := poolName(ref, pool)
	op, err := c.whenIdle(ctx, func() (*containerpb.Operation, error) {
		return c.cm.SetNodePoolManagement(ctx, &containerpb.SetNodePoolManagementRequest{Name: name, Management: m})
	})
	return c.finish(ctx, ref, "setting management of node pool "+name, op, err)
}

// DeleteNodePool deletes a pool and waits; a pool that is already gone is ErrNotFound.
func (c *Client) DeleteNodePool(ctx context.Context, ref ClusterRef, pool string) error {
	name := poolName(ref, pool)
	op, err := c.whenIdle(ctx, func() (*containerpb.Operation, error) {
		return c.cm.DeleteNodePool(ctx, &containerpb.DeleteNodePoolRequest{Name: name})
	})
	return c.finish(ctx, ref, "deleting node pool "+name, op, err)
}

// whenIdle runs a mutating call and, while GKE refuses it because the cluster is busy (see
// isBusy), calls again with exponential backoff: the first wait is PollInterval, each next one
// doubles (10% jitter) up to BusyBackoffCap, until ctx ends (the resource's timeout). The google
// provider waits these refusals out the same way: retryWhileIncompatibleOperation
// (hashicorp/terraform-provider-google, google/services/container/resource_container_node_pool.go)
// retries FAILED_PRECONDITION and 429 with terraform-plugin-sdk's retry.Retry, whose wait doubles
// from 500ms up to 10s (helper/retry StateChangeConf). Unlike it, only GKE's texts for an
// operation in progress and for the concurrent operations quota are retried: another
// FAILED_PRECONDITION or RESOURCE_EXHAUSTED (a regional quota) does not go away by waiting, and
// GKE mutations are not retried blindly (DESIGN.md). Other errors return at once.
func (c *Client) whenIdle(ctx context.Context, call func() (*containerpb.Operation, error)) (*containerpb.Operation, error) {
	var op *containerpb.Operation
	var callErr, busyErr error
	tries, start := 0, time.Now()
	// wait.ExponentialBackoffWithContext would stop at the cap (Backoff.Step ends the steps
	// there); the delay function keeps waiting the capped time until ctx ends.
	backoff := wait.Backoff{Duration: c.poll, Factor: 2, Jitter: 0.1, Steps: math.MaxInt32, Cap: c.busyCap}
	err := backoff.DelayFunc().Until(ctx, true, true, func(ctx context.Context) (bool, error) {
		tries++
		op, callErr = call()
		switch {
		case callErr != nil && isBusy(callErr):
			busyErr = callErr
			return false, nil
		case callErr != nil && ctx.Err() != nil:
			return false, ctx.Err() // the deadline cut the call short; report the wait below
		}
		return true, nil
	})
	if err != nil {
		if busyErr != nil {
			return nil, fmt.Errorf("%w after %d tries in %s while GKE refused the call as busy; its last answer: %w",
				err, tries, time.Since(start).Round(time.Second), busyErr)
		}
		return nil, err
	}
	return op, callErr
}

// busyTexts are GKE's words for "another operation is running" (FAILED_PRECONDITION):
//   - "Cluster is running incompatible operation operation-1718024305921-fd4f65ea-...."
//     (rancher/gke-operator#509);
//   - "Operation operation-1596064640049-1b03e177 is currently upgrading cluster C. Please wait
//     and try again once it is done." (hashicorp/terraform-provider-google#3650, #1643), "... is
//     currently deleting a node pool for cluster C. ..." (#10366), "... is currently creating a
//     node pool for cluster C. ..." (prometheus/test-infra#84), "... is currently operating on
//     cluster C" (GoogleCloudPlatform/kubernetes-engine-samples#119); the sandbox's emulator
//     says "... is currently resizing node pool P. Please wait ...".
var busyTexts = regexp.MustCompile(`(?i)incompatible operation|^operation \S+ is currently `)

// quotaTexts are GKE's words at the concurrent operations quota (RESOURCE_EXHAUSTED, HTTP 429):
// "Too many operations: cluster "C" hits the concurrent operations quota 5, please try again
// later." (hashicorp/terraform-provider-google#15579, #15205).
var quotaTexts = regexp.MustCompile(`(?i)concurrent operations quota|^too many operations`)

// isBusy reports whether GKE refused a call only because other operations run: on the cluster
// or pool (FAILED_PRECONDITION), or as many as the concurrent operations quota allows
// (RESOURCE_EXHAUSTED).
func isBusy(err error) bool {
	st, ok := status.FromError(err)
	if !ok {
		return false
	}
	switch st.Code() {
	case codes.FailedPrecondition:
		return busyTexts.MatchString(st.Message())
	case codes.ResourceExhausted:
		return quotaTexts.MatchString(st.Message())
	}
	return false
}

func (c *Client) finish(ctx context.Context, ref ClusterRef, what string, op *containerpb.Operation, err error) error {
	if err != nil {
		return mapErr(what, err)
	}
	return c.WaitOperation(ctx, ref, op, what)
}

// WaitOperation polls GetOperation every PollInterval until op is DONE or ctx ends. A DONE
// operation with an error returns that error's message.
func (c *Client) WaitOperation(ctx context.Context, ref ClusterRef, op *containerpb.Operation, what string) error {
	name := operationName(ref, op)
	last := op
	err := wait.PollUntilContextCancel(ctx, c.poll, false, func(ctx context.Context) (bool, error) {
		if last.GetStatus() == containerpb.Operation_DONE {
			return true, nil
		}
		got, err := c.cm.GetOperation(ctx, &containerpb.GetOperationRequest{Name: name})
		if err != nil {
			switch status.Code(err) {
			case codes.Unavailable, codes.DeadlineExceeded, codes.ResourceExhausted:
				// Transient (ResourceExhausted here is the read-request rate quota, not the
				// operation's own outcome, which comes in op.Error): the operation keeps
				// running server side; poll again.
				return false, nil
			}
			return false, mapErr("getting operation "+name, err)
		}
		last = got
		return got.GetStatus() == containerpb.Operation_DONE, nil
	})
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("%s: gave up waiting for operation %s (last status %s): %w", what, name, last.GetStatus(), ctx.Err())
		}
		return fmt.Errorf("%s: %w", what, err)
	}
	return operationErr(what, name, last)
}

// OperationError is a GKE operation that finished with an error.
type OperationError struct {
	What, Operation string
	Code            codes.Code
	Message         string
}

func (e *OperationError) Error() string {
	return fmt.Sprintf("%s: operation %s failed (%s): %s", e.What, e.Operation, e.Code, e.Message)
}

// Is makes a failed operation whose code is NOT_FOUND match ErrNotFound.
func (e *OperationError) Is(target error) bool {
	return target == ErrNotFound && e.Code == codes.NotFound
}

func operationErr(what, name string, op *containerpb.Operation) error {
	if st := op.GetError(); st != nil && (st.GetCode() != 0 || st.GetMessage() != "") {
		return &OperationError{What: what, Operation: name, Code: codes.Code(st.GetCode()), Message: st.GetMessage()}
	}
	return nil
}

// operationName is projects/P/locations/L/operations/NAME for op.
func operationName(ref ClusterRef, op *containerpb.Operation) string {
	n := op.GetName()
	if strings.HasPrefix(n, "projects/") {
		return n
	}
	loc := op.GetLocation()
	if loc == "" {
		loc = ref.Location
	}
	return "projects/" + ref.Project + "/locations/" + loc + "/operations/" + n
}

// refFromName parses projects/P/locations/L/clusters/C[/nodePools/N].
func refFromName(name string) (ClusterRef, error) {
	p := strings.Split(name, "/")
	if len(p) < 6 || p[0] != "projects" || p[2] != "locations" || p[4] != "clusters" {
		return ClusterRef{}, fmt.Errorf("node pool name %q is not projects/P/locations/L/clusters/C/nodePools/N", name)
	}
	return ClusterRef{Project: p[1], Location: p[3], Cluster: p[5]}, nil
}

// mapErr wraps a gRPC error; NOT_FOUND also matches ErrNotFound.
func mapErr(what string, err error) error {
	if status.Code(err) == codes.NotFound {
		return fmt.Errorf("%s: %w: %w", what, ErrNotFound, err)
	}
	return fmt.Errorf("%s: %w", what, err)
}

// IsNotFound reports whether err is (or wraps) ErrNotFound.
func IsNotFound(err error) bool { return errors.Is(err, ErrNotFound) }
