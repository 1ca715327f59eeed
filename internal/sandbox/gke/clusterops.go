package gke

import (
	"context"
	"fmt"
	"time"

	"cloud.google.com/go/container/apiv1/containerpb"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"k8s.io/apimachinery/pkg/util/wait"
)

// clusterOpVerbs are the cluster-wide operations StartClusterOperation can start, with the verb
// GKE's "Operation ... is currently <verb> cluster ..." message uses for them.
var clusterOpVerbs = map[containerpb.Operation_Type]string{
	containerpb.Operation_UPGRADE_MASTER: "upgrading",
	containerpb.Operation_UPDATE_CLUSTER: "updating",
}

// StartClusterOperation starts a cluster-wide operation of type typ (UPGRADE_MASTER or
// UPDATE_CLUSTER) that holds the cluster for d, as a control plane upgrade or a cluster update
// does (GKE starts the former on its own for release-channel clusters): the cluster is
// RECONCILING, every mutating node pool RPC on it fails with FAILED_PRECONDITION, and the
// operation counts toward the concurrent operations quota. For tests (the sandbox's control
// endpoint). It fails like a node pool RPC when the quota is used up or another operation holds
// the cluster or one of its pools.
func (s *Server) StartClusterOperation(project, location, clusterName string, typ containerpb.Operation_Type, d time.Duration) (*containerpb.Operation, error) {
	verb, ok := clusterOpVerbs[typ]
	if !ok {
		return nil, invalid("Invalid value for operation type %q: the emulator starts UPGRADE_MASTER or UPDATE_CLUSTER.", typ)
	}
	if d <= 0 {
		return nil, invalid("Invalid value for the operation's duration: %s. Must be positive.", d)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	c, err := s.clusterLocked(clusterKey{project, location, clusterName})
	if err != nil {
		return nil, err
	}
	if err := s.quotaErrLocked(c); err != nil {
		return nil, err
	}
	if err := clusterBusyErrLocked(c); err != nil {
		return nil, err
	}
	for _, name := range c.order {
		if err := busyErrLocked(c.pools[name]); err != nil {
			return nil, err
		}
	}
	op := s.newOpLocked(c.key, c.key.String(), typ, verb)
	c.busy = op
	c.pb.Status = containerpb.Cluster_RECONCILING
	// The operation's length is what the test asked for: a deliberate hold, not a wait for a
	// condition.
	work := func(ctx context.Context) (string, error) {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-t.C:
			return fmt.Sprintf("%s held cluster %s for %s", typ, c.key.Cluster, d), nil
		}
	}
	release := func() {
		if c.busy == op {
			c.busy = nil
			c.pb.Status = containerpb.Cluster_RUNNING
		}
	}
	s.log.Info("cluster operation started", "operation", op.pb.Name, "type", typ.String(), "cluster", c.key.String(), "duration", d)
	return s.launchLocked(op, work, nil, release), nil
}

// SetOperationQuota sets the concurrent operations quota per cluster (0: back to
// Options.ConcurrentOperations) and returns the quota now in force. Operations already running
// keep running; new ones are refused while as many run as the quota allows.
func (s *Server) SetOperationQuota(n int) (int, error) {
	if n < 0 {
		return 0, invalid("Invalid value for the concurrent operations quota: %d. Must be non-negative.", n)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if n == 0 {
		n = s.o.ConcurrentOperations
	}
	s.quota = n
	s.log.Info("concurrent operations quota set", "quota", n)
	return n, nil
}

// AwaitOperation polls op (every PollInterval) until it is DONE or ctx ends and returns its last
// state.
func (s *Server) AwaitOperation(ctx context.Context, op *containerpb.Operation) (*containerpb.Operation, error) {
	key := projectOfSelfLink(op.GetSelfLink()) + "/" + op.GetLocation() + "/" + op.GetName()
	var last *containerpb.Operation
	err := wait.PollUntilContextCancel(ctx, s.o.PollInterval, true, func(context.Context) (bool, error) {
		s.mu.Lock()
		defer s.mu.Unlock()
		cur, ok := s.ops[key]
		if !ok {
			return false, status.Errorf(codes.NotFound, "Not found: operation %s.", key)
		}
		last = proto.Clone(cur.pb).(*containerpb.Operation)
		return !cur.running(), nil
	})
	return last, err
}
