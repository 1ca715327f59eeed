// Package gke is a narrow client over cloud.google.com/go/container: the calls olapgke needs,
// each mutating call waiting for its GKE operation (polled with an injected interval), and
// NotFound mapped to ErrNotFound.
package gke

import (
	"context"
	"errors"

	"cloud.google.com/go/container/apiv1/containerpb"
)

// ErrNotFound is returned (wrapped) when the cluster, node pool or operation does not exist.
var ErrNotFound = errors.New("not found")

// ClusterRef names a GKE cluster.
type ClusterRef struct{ Project, Location, Cluster string }

// Name is the API resource name projects/P/locations/L/clusters/C.
func (r ClusterRef) Name() string {
	return "projects/" + r.Project + "/locations/" + r.Location + "/clusters/" + r.Cluster
}

// API is what olapgke needs from GKE. Mutating calls return once the operation is DONE, or with
// the operation's error.
type API interface {
	GetCluster(ctx context.Context, c ClusterRef) (*containerpb.Cluster, error)
	GetNodePool(ctx context.Context, c ClusterRef, pool string) (*containerpb.NodePool, error)
	ListNodePools(ctx context.Context, c ClusterRef) ([]*containerpb.NodePool, error)
	CreateNodePool(ctx context.Context, c ClusterRef, np *containerpb.NodePool) error
	UpdateNodePool(ctx context.Context, req *containerpb.UpdateNodePoolRequest) error
	SetNodePoolSize(ctx context.Context, c ClusterRef, pool string, count int32) error
	SetNodePoolAutoscaling(ctx context.Context, c ClusterRef, pool string, a *containerpb.NodePoolAutoscaling) error
	SetNodePoolManagement(ctx context.Context, c ClusterRef, pool string, m *containerpb.NodeManagement) error
	DeleteNodePool(ctx context.Context, c ClusterRef, pool string) error
	Close() error
}
