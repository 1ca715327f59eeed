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

// startOpLocked registers a PENDING operation targeting pool p (or nil), marks the pool busy and
// runs work in the background: after OperationDelay the operation is RUNNING, work runs, and
// after another OperationDelay it is DONE. finish runs under s.mu with the work's error before
// the operation is marked DONE, to settle the pool's status. Call with s.mu held.
func (s *Server) startOpLocked(k poolKey, p *pool, typ containerpb.Operation_Type, verb string,
	work opWork, finish func(err error)) *containerpb.Operation {
	now := time.Now().UTC()
	name := fmt.Sprintf("operation-%d-%s", now.UnixMilli(), randHex(8))
	path := "projects/" + k.Project + "/locations/" + k.Location + "/operations/" + name
	op := &operation{verb: verb, pb: &containerpb.Operation{
		Name:          name,
		Zone:          k.Location,
		Location:      k.Location,
		OperationType: typ,
		Status:        containerpb.Operation_PENDING,
		SelfLink:      selfLink(path),
		TargetLink:    selfLink(k.String()),
		StartTime:     now.Format(time.RFC3339Nano),
	}}
	key := k.Project + "/" + k.Location + "/" + name
	s.ops[key] = op
	s.opOrder = append(s.opOrder, key)
	if p != nil {
		p.busy = op
	}
	ret := proto.Clone(op.pb).(*containerpb.Operation)
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		s.runOp(op, p, work, finish)
	}()
	return ret
}

func (s *Server) runOp(op *operation, p *pool, work opWork, finish func(error)) {
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
	if p != nil && p.busy == op {
		p.busy = nil
	}
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
