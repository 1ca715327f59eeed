package nodepool

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strings"
	"time"

	"cloud.google.com/go/container/apiv1/containerpb"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/olapgke/terraform-provider-olapgke/internal/diagnostics"
	"github.com/olapgke/terraform-provider-olapgke/internal/gke"
)

// readActivity records GKE's activity for the pool: the operations in flight on it or its
// cluster and the auto-upgrade GKE has pending. Both change outside Terraform, so they are read
// on every refresh and apply; a failed read records none and warns.
func (r *nodePoolResource) readActivity(ctx context.Context, got *containerpb.NodePool, m *model, diags *diag.Diagnostics) {
	m.Operations = types.ListValueMust(types.ObjectType{AttrTypes: operationAttrTypes}, nil)
	m.PendingUpgrade = types.StringValue("")
	if r.c == nil || r.c.Deferred() {
		return
	}
	api, err := r.c.GKE(ctx)
	if err != nil {
		return
	}
	ref := m.ref()
	ops, err := r.activeOperations(ctx, api, ref, got.GetName())
	if err == nil {
		m.Operations = operationsValue(ops, ref.Name(), got.GetName(), diags)
		var cl *containerpb.Cluster
		if cl, err = api.GetCluster(ctx, ref); err == nil {
			m.PendingUpgrade = types.StringValue(pendingUpgrade(got, cl.GetCurrentMasterVersion()))
		}
	}
	if err != nil {
		diags.Append(diagnostics.Warning("GKE Activity Not Read", diagnostics.Detail{
			Checked: "GKE operations and the pending auto-upgrade of node pool " + got.GetName() + ".",
			Found:   "GKE could not be read, so operations and pending_upgrade are empty.",
			Do:      "Refresh again once GKE answers.",
			Err:     err,
		}))
	}
}

// activeOperations lists the operations not DONE on the pool or its cluster.
func (r *nodePoolResource) activeOperations(ctx context.Context, api gke.API, ref gke.ClusterRef, pool string) ([]*containerpb.Operation, error) {
	l, ok := api.(gke.OperationLister)
	if !ok {
		return nil, nil
	}
	ops, err := l.ListOperations(ctx, ref)
	if err != nil {
		return nil, err
	}
	return poolOperations(ops, ref.Name(), pool), nil
}

// operationInProgress is the plan warning for an update planned while GKE runs operations on
// the pool or its cluster: the apply waits them out.
func operationInProgress(pool string, ops []*containerpb.Operation, clusterName string) diag.Diagnostic {
	lines := make([]string, 0, len(ops))
	for _, op := range ops {
		lines = append(lines, fmt.Sprintf("  - %s %s on the %s (%s since %s)", op.GetOperationType(), op.GetName(),
			strings.ReplaceAll(operationTarget(op.GetTargetLink(), clusterName, pool), "_", " "), op.GetStatus(), op.GetStartTime()))
	}
	return diagnostics.Warning("GKE Operation In Progress", diagnostics.Detail{
		Checked: "GKE operations on node pool " + pool + " and its cluster, because this plan updates the pool.",
		Found:   "GKE is running:\n" + strings.Join(lines, "\n"),
		Do: "Nothing, or wait for it to finish: GKE refuses node pool changes meanwhile, and apply waits until it accepts them (up to the update timeout). " +
			"An operation GKE started itself (auto-upgrade, auto-repair) may recreate nodes and lose Local SSD data outside Terraform.",
	})
}

// nameFromPrefix is a unique node pool name beginning with prefix (at most 31 characters), within
// GKE's 40: a timestamp and random hex, shortened for long prefixes as the google provider does.
func nameFromPrefix(prefix string, now time.Time) string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	suffix := now.UTC().Format("20060102150405") + hex.EncodeToString(b)[:4]
	if len(prefix)+len(suffix) > 40 {
		suffix = hex.EncodeToString(b)
	}
	return prefix + suffix
}
