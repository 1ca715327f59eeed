package gke

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"cloud.google.com/go/container/apiv1/containerpb"
	rpcstatus "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// opWork is the asynchronous part of an operation. It returns a detail line for the finished
// operation (may be empty) or an error; a gRPC status error keeps its code in Operation.Error.
type opWork func(ctx context.Context) (detail string, err error)

// running reports whether the operation has not finished yet. Call with s.mu held.
func (op *operation) running() bool { return op.pb.Status != containerpb.Operation_DONE }

// startOpLocked registers a PENDING operation targeting pool p, marks the pool busy and runs
// work in the background: after OperationDelay the operation is RUNNING, work runs, and after
// another OperationDelay it is DONE. finish runs under s.mu with the work's error before the
// operation is marked DONE, to settle the pool's status. Call with s.mu held.
func (s *Server) startOpLocked(k poolKey, p *pool, typ containerpb.Operation_Type, verb string,
	work opWork, finish func(err error)) *containerpb.Operation {
	op := s.newOpLocked(k.clusterKey, k.String(), typ, verb)
	p.busy = op
	return s.launchLocked(op, work, finish, func() {
		if p.busy == op {
			p.busy = nil
		}
	})
}

// newOpLocked registers a PENDING operation in cluster c targeting target (a cluster or node
// pool resource name). Call with s.mu held.
func (s *Server) newOpLocked(c clusterKey, target string, typ containerpb.Operation_Type, verb string) *operation {
	now := time.Now().UTC()
	name := fmt.Sprintf("operation-%d-%s", now.UnixMilli(), randHex(8))
	path := "projects/" + c.Project + "/locations/" + c.Location + "/operations/" + name
	op := &operation{verb: verb, cluster: c, pb: &containerpb.Operation{
		Name:          name,
		Zone:          c.Location,
		Location:      c.Location,
		OperationType: typ,
		Status:        containerpb.Operation_PENDING,
		SelfLink:      selfLink(path),
		TargetLink:    selfLink(target),
		StartTime:     now.Format(time.RFC3339Nano),
	}}
	key := c.Project + "/" + c.Location + "/" + name
	s.ops[key] = op
	s.opOrder = append(s.opOrder, key)
	return op
}

// launchLocked runs op's work in the background (see startOpLocked); release runs under s.mu
// when the operation ends, to clear the busy mark it set. Call with s.mu held.
func (s *Server) launchLocked(op *operation, work opWork, finish func(error), release func()) *containerpb.Operation {
	ret := proto.Clone(op.pb).(*containerpb.Operation)
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		s.runOp(op, work, finish, release)
	}()
	return ret
}

func (s *Server) runOp(op *operation, work opWork, finish func(error), release func()) {
	ctx := s.ctx
	var detail string
	err := s.pace(ctx)
	if err == nil {
		s.mu.Lock()
		op.pb.Status = containerpb.Operation_RUNNING
		s.mu.Unlock()
		detail, err = work(ctx)
	}
	if err == nil {
		err = s.pace(ctx)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if finish != nil {
		finish(err)
	}
	release()
	op.pb.Detail = detail
	op.pb.Status = containerpb.Operation_DONE
	op.pb.EndTime = time.Now().UTC().Format(time.RFC3339Nano)
	if err != nil {
		st, ok := status.FromError(err)
		if !ok || st.Code() == codes.Unknown {
			c := codes.Internal
			if errors.Is(err, context.Canceled) {
				c = codes.Aborted
			}
			st = status.New(c, err.Error())
		}
		op.pb.Error = &rpcstatus.Status{Code: int32(st.Code()), Message: st.Message()}
		op.pb.StatusMessage = st.Message()
		s.log.Warn("operation failed", "operation", op.pb.Name, "type", op.pb.OperationType.String(), "target", op.pb.TargetLink, "error", st.Message())
	} else {
		s.log.Info("operation done", "operation", op.pb.Name, "type", op.pb.OperationType.String(), "target", op.pb.TargetLink, "detail", detail)
	}
}

// pace waits OperationDelay: this is deliberate operation pacing (GKE operations take time), not
// a wait for a condition.
func (s *Server) pace(ctx context.Context) error {
	t := time.NewTimer(s.o.OperationDelay)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// busyErrLocked reports FailedPrecondition when another operation runs on the pool, in GKE's words.
func busyErrLocked(p *pool) error {
	if p.busy == nil {
		return nil
	}
	return status.Errorf(codes.FailedPrecondition,
		"Operation %s is currently %s node pool %s. Please wait and try again once it is done.",
		p.busy.pb.Name, p.busy.verb, p.key.Pool)
}

// clusterBusyErrLocked reports FailedPrecondition while a cluster-wide operation (a control plane
// upgrade, a cluster update) runs: GKE then refuses every mutating node pool call on the cluster,
// in these words (hashicorp/terraform-provider-google#3650 and #1643: "googleapi: Error 400:
// Operation operation-1596064640049-1b03e177 is currently upgrading cluster REDACTED. Please wait
// and try again once it is done., failedPrecondition").
func clusterBusyErrLocked(c *cluster) error {
	if c.busy == nil {
		return nil
	}
	return status.Errorf(codes.FailedPrecondition,
		"Operation %s is currently %s cluster %s. Please wait and try again once it is done.",
		c.busy.pb.Name, c.busy.verb, c.key.Cluster)
}

// runningOpsLocked counts the operations of cluster c that have not finished.
func (s *Server) runningOpsLocked(c *cluster) int {
	n := 0
	for _, op := range s.ops {
		if op.cluster == c.key && op.running() {
			n++
		}
	}
	return n
}

// quotaErrLocked reports ResourceExhausted when starting one more operation in cluster c would
// exceed the concurrent operations quota, in GKE's words (hashicorp/terraform-provider-google
// #15579 and #15205: "googleapi: Error 429: Too many operations: cluster "clustername" hits the
// concurrent operations quota 5, please try again later.").
func (s *Server) quotaErrLocked(c *cluster) error {
	if n := s.runningOpsLocked(c); n >= s.quota {
		return status.Errorf(codes.ResourceExhausted,
			"Too many operations: cluster %q hits the concurrent operations quota %d, please try again later.", c.key.Cluster, s.quota)
	}
	return nil
}

// refused logs a call refused because the cluster or pool is busy (tests read the sandbox log to
// tell that a client waited) and returns err.
func (s *Server) refused(rpc, target string, err error) error {
	st := status.Convert(err)
	s.log.Info("call refused", "rpc", rpc, "target", target, "code", st.Code().String(), "message", st.Message())
	return err
}

// admitPoolOpLocked is what GKE checks before it starts an operation on pool p of cluster c (p
// nil: a pool being created): the concurrent operations quota, then a cluster-wide operation, then
// an operation on the pool. The emulator checks the quota first so that a test holding it with a
// cluster-wide operation sees RESOURCE_EXHAUSTED; GKE does not document its order.
func (s *Server) admitPoolOpLocked(c *cluster, p *pool) error {
	if err := s.quotaErrLocked(c); err != nil {
		return err
	}
	if err := clusterBusyErrLocked(c); err != nil {
		return err
	}
	if p != nil {
		return busyErrLocked(p)
	}
	return nil
}

// GetOperation returns an operation by projects/P/locations/L/operations/NAME (or the deprecated fields).
func (s *Server) GetOperation(_ context.Context, req *containerpb.GetOperationRequest) (*containerpb.Operation, error) {
	project, loc, name, err := parseOperation(req.GetName(), req.GetProjectId(), req.GetZone(), req.GetOperationId())
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.faultLocked("GetOperation"); err != nil {
		return nil, err
	}
	op, ok := s.ops[project+"/"+loc+"/"+name]
	if !ok {
		return nil, status.Errorf(codes.NotFound, "Not found: projects/%s/locations/%s/operations/%s.", project, loc, name)
	}
	return proto.Clone(op.pb).(*containerpb.Operation), nil
}

// ListOperations lists operations of a project in a location ("-" for all), oldest first.
func (s *Server) ListOperations(_ context.Context, req *containerpb.ListOperationsRequest) (*containerpb.ListOperationsResponse, error) {
	project, loc, err := parseLocation(req.GetParent(), req.GetProjectId(), req.GetZone())
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	out := &containerpb.ListOperationsResponse{}
	for _, key := range s.opOrder {
		op := s.ops[key]
		if strings.HasPrefix(key, project+"/") && (loc == "-" || op.pb.Location == loc) {
			out.Operations = append(out.Operations, proto.Clone(op.pb).(*containerpb.Operation))
		}
	}
	sort.SliceStable(out.Operations, func(i, j int) bool { return out.Operations[i].StartTime < out.Operations[j].StartTime })
	return out, nil
}
