// Package nodepool is the olapgke_local_ssd_node_pool resource: a GKE node pool with raw-block
// Local SSDs, with plan-time Local SSD / boot disk checks, the ephemeral-storage arithmetic and a
// data-loss guard. Pure rules live in internal/gkerules; this package adapts them to Terraform.
package nodepool

import (
	"context"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/olapgke/terraform-provider-olapgke/internal/clients"
	"github.com/olapgke/terraform-provider-olapgke/internal/diagnostics"
	"github.com/olapgke/terraform-provider-olapgke/internal/gke"
)

// TypeSuffix is the resource type name after the provider prefix.
const TypeSuffix = "_local_ssd_node_pool"

var (
	_ resource.Resource                   = (*nodePoolResource)(nil)
	_ resource.ResourceWithConfigure      = (*nodePoolResource)(nil)
	_ resource.ResourceWithImportState    = (*nodePoolResource)(nil)
	_ resource.ResourceWithModifyPlan     = (*nodePoolResource)(nil)
	_ resource.ResourceWithValidateConfig = (*nodePoolResource)(nil)
)

type nodePoolResource struct {
	c *clients.Clients
}

// NewLocalSSDNodePoolResource returns the olapgke_local_ssd_node_pool resource.
func NewLocalSSDNodePoolResource() resource.Resource { return &nodePoolResource{} }

func (r *nodePoolResource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + TypeSuffix
}

func (r *nodePoolResource) Configure(_ context.Context, req resource.ConfigureRequest, resp *resource.ConfigureResponse) {
	if c := clients.FromProviderData(req.ProviderData, &resp.Diagnostics); c != nil {
		r.c = c
	}
}

// ImportState accepts project/location/cluster/name, the API name
// projects/P/locations/L/clusters/C/nodePools/N, or a bare name (provider defaults).
func (r *nodePoolResource) ImportState(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse) {
	if req.ID = identitySpec.ImportID(ctx, req, &resp.Diagnostics); resp.Diagnostics.HasError() {
		return // an import by identity goes on with the ID it stands for (identitySpec)
	}
	ref, name, ok := parseImportID(req.ID, r.c)
	if !ok {
		resp.Diagnostics.Append(diagnostics.Error("Invalid Import ID", diagnostics.Detail{
			Checked: "The import ID " + `"` + req.ID + `".`,
			Found:   "It is neither project/location/cluster/name, projects/P/locations/L/clusters/C/nodePools/N, nor a bare node pool name with project, location and cluster set on the provider.",
			Do:      "Import with the full form, e.g. `terraform import olapgke_local_ssd_node_pool.x sandbox/us-central1-a/olap/pool-a`.",
		}))
		return
	}
	for attr, v := range map[string]string{"project": ref.Project, "location": ref.Location, "cluster": ref.Cluster, "name": name} {
		resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root(attr), types.StringValue(v))...)
	}
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("deletion_protection"), types.BoolValue(true))...)
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("allow_local_data_loss"), types.BoolValue(false))...)
}

func parseImportID(id string, c *clients.Clients) (gke.ClusterRef, string, bool) {
	p := strings.Split(id, "/")
	switch {
	case len(p) == 8 && p[0] == "projects" && p[2] == "locations" && p[4] == "clusters" && p[6] == "nodePools":
		return gke.ClusterRef{Project: p[1], Location: p[3], Cluster: p[5]}, p[7], nonEmpty(p[1], p[3], p[5], p[7])
	case len(p) == 4:
		return gke.ClusterRef{Project: p[0], Location: p[1], Cluster: p[2]}, p[3], nonEmpty(p...)
	case len(p) == 1 && c != nil:
		return gke.ClusterRef{Project: c.Project, Location: c.Location, Cluster: c.Cluster}, p[0], nonEmpty(c.Project, c.Location, c.Cluster, p[0])
	}
	return gke.ClusterRef{}, "", false
}

func nonEmpty(s ...string) bool {
	for _, v := range s {
		if v == "" {
			return false
		}
	}
	return true
}

func poolID(ref gke.ClusterRef, name string) string { return ref.Name() + "/nodePools/" + name }

// ref is the cluster a model points at.
func (m *model) ref() gke.ClusterRef {
	return gke.ClusterRef{Project: m.Project.ValueString(), Location: m.Location.ValueString(), Cluster: m.Cluster.ValueString()}
}
