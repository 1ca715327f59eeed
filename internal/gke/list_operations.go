package gke

import (
	"context"

	"cloud.google.com/go/container/apiv1/containerpb"
)

// OperationLister lists the GKE operations of a cluster's location. *Client implements it; it is
// a separate interface so API's fakes need not.
type OperationLister interface {
	ListOperations(ctx context.Context, c ClusterRef) ([]*containerpb.Operation, error)
}

var _ OperationLister = (*Client)(nil)

// ListOperations lists the operations of the cluster's project and location
// (projects/P/locations/L), every cluster's: callers filter by target link.
func (c *Client) ListOperations(ctx context.Context, ref ClusterRef) ([]*containerpb.Operation, error) {
	parent := "projects/" + ref.Project + "/locations/" + ref.Location
	resp, err := c.cm.ListOperations(ctx, &containerpb.ListOperationsRequest{Parent: parent})
	if err != nil {
		return nil, mapErr("listing operations of "+parent, err)
	}
	return resp.GetOperations(), nil
}
