package provider

import (
	"context"
	"sort"

	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/datasource/schema"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/olapgke/terraform-provider-olapgke/internal/clients"
	"github.com/olapgke/terraform-provider-olapgke/internal/diagnostics"
	"github.com/olapgke/terraform-provider-olapgke/internal/gke"
)

var _ datasource.DataSourceWithConfigure = (*clusterDataSource)(nil)

// NewClusterDataSource is the olapgke_cluster data source: the provider's GKE cluster as GKE
// and its API server see it. It holds no secrets.
func NewClusterDataSource() datasource.DataSource { return &clusterDataSource{} }

type clusterDataSource struct{ clients *clients.Clients }

type clusterModel struct {
	ID                   types.String `tfsdk:"id"`
	Project              types.String `tfsdk:"project"`
	Location             types.String `tfsdk:"location"`
	Name                 types.String `tfsdk:"name"`
	Endpoint             types.String `tfsdk:"endpoint"`
	ClusterCACertificate types.String `tfsdk:"cluster_ca_certificate"`
	MasterVersion        types.String `tfsdk:"master_version"`
	Status               types.String `tfsdk:"status"`
	NodePools            types.List   `tfsdk:"node_pools"`
	KubernetesVersion    types.String `tfsdk:"kubernetes_version"`
}

func (d *clusterDataSource) Metadata(_ context.Context, req datasource.MetadataRequest, resp *datasource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_cluster"
}

func (d *clusterDataSource) Schema(_ context.Context, _ datasource.SchemaRequest, resp *datasource.SchemaResponse) {
	computed := func(desc string) schema.StringAttribute {
		return schema.StringAttribute{Computed: true, MarkdownDescription: desc}
	}
	resp.Schema = schema.Schema{
		MarkdownDescription: "The provider's GKE cluster (`project`, `location`, `cluster`) as the GKE API and its Kubernetes API server report it. " +
			"Reading it proves the provider's default connection path: GKE `GetCluster` for endpoint and CA, then the API server with a Google OAuth2 token. " +
			"Holds no secrets.",
		Attributes: map[string]schema.Attribute{
			"id":                     computed("`projects/P/locations/L/clusters/C`."),
			"project":                computed("Project (from the provider configuration)."),
			"location":               computed("Location (from the provider configuration)."),
			"name":                   computed("Cluster name (from the provider configuration)."),
			"endpoint":               computed("API server endpoint (host or host:port, no scheme) reported by GKE."),
			"cluster_ca_certificate": computed("Base64-encoded PEM CA certificate of the API server (public)."),
			"master_version":         computed("Control-plane version reported by GKE."),
			"status":                 computed("Cluster status reported by GKE, e.g. `RUNNING`."),
			"node_pools": schema.ListAttribute{
				Computed: true, ElementType: types.StringType,
				MarkdownDescription: "Names of the cluster's node pools, sorted.",
			},
			"kubernetes_version": computed("`gitVersion` reported by the API server's `/version` endpoint, reached the way every olapgke resource reaches it."),
		},
	}
}

func (d *clusterDataSource) Configure(_ context.Context, req datasource.ConfigureRequest, resp *datasource.ConfigureResponse) {
	if c := clients.FromProviderData(req.ProviderData, &resp.Diagnostics); c != nil {
		d.clients = c
	}
}

func (d *clusterDataSource) Read(ctx context.Context, _ datasource.ReadRequest, resp *datasource.ReadResponse) {
	c := d.clients
	if c == nil {
		resp.Diagnostics.Append(diagnostics.ProviderBug("Provider Not Configured", "olapgke_cluster was read before the provider was configured.", nil))
		return
	}
	if c.Deferred() {
		resp.Diagnostics.Append(diagnostics.Error("Cluster Not Known Yet", diagnostics.Detail{
			Checked: "The provider configuration.",
			Found:   "Some of it is only known after apply, so the cluster cannot be read during this plan.",
			Do:      "Read the cluster from a configuration or workspace where it already exists, or apply the cluster in its own configuration first, then plan again.",
		}))
		return
	}
	ref := gke.ClusterRef{Project: c.Project, Location: c.Location, Cluster: c.Cluster}
	g, err := c.GKE(ctx)
	if err != nil {
		resp.Diagnostics.Append(diagnostics.Error("GKE Client Unavailable", diagnostics.Detail{
			Checked: "The GKE API client built from the provider configuration.",
			Found:   "It could not be created.",
			Do:      "Check credentials/access_token (or Application Default Credentials) and container_endpoint.",
			Err:     err,
		}))
		return
	}
	cluster, err := g.GetCluster(ctx, ref)
	if err != nil {
		detail := diagnostics.Detail{Checked: "GKE GetCluster " + ref.Name() + ".", Found: "The call failed.", Do: "Check project, location, cluster and the credentials' permissions (container.clusters.get).", Err: err}
		if gke.IsNotFound(err) {
			detail.Found = "GKE has no such cluster."
			detail.Do = "Check project, location and cluster in the provider configuration."
		}
		resp.Diagnostics.Append(diagnostics.Error("Cluster Not Readable", detail))
		return
	}
	pools := make([]string, 0, len(cluster.GetNodePools()))
	for _, np := range cluster.GetNodePools() {
		pools = append(pools, np.GetName())
	}
	sort.Strings(pools)

	version, err := serverVersion(ctx, c)
	if err != nil {
		resp.Diagnostics.Append(diagnostics.Error("Kubernetes API Server Not Reachable", diagnostics.Detail{
			Checked: "The API server of " + ref.Name() + " at the endpoint GKE reports (" + cluster.GetEndpoint() + "), or the kubernetes block if set.",
			Found:   "GET /version failed.",
			Do:      "Check that the endpoint is reachable from this runner (private clusters need network access) and that the identity may use the cluster (roles/container.clusterViewer or RBAC).",
			Err:     err,
		}))
		return
	}

	state := clusterModel{
		ID:                   types.StringValue(ref.Name()),
		Project:              types.StringValue(ref.Project),
		Location:             types.StringValue(ref.Location),
		Name:                 types.StringValue(ref.Cluster),
		Endpoint:             types.StringValue(cluster.GetEndpoint()),
		ClusterCACertificate: types.StringValue(cluster.GetMasterAuth().GetClusterCaCertificate()),
		MasterVersion:        types.StringValue(cluster.GetCurrentMasterVersion()),
		Status:               types.StringValue(cluster.GetStatus().String()),
		KubernetesVersion:    types.StringValue(version),
	}
	list, diags := types.ListValueFrom(ctx, types.StringType, pools)
	resp.Diagnostics.Append(diags...)
	state.NodePools = list
	resp.Diagnostics.Append(resp.State.Set(ctx, &state)...)
}

// serverVersion asks the API server for /version through the provider's Kubernetes client.
func serverVersion(ctx context.Context, c *clients.Clients) (string, error) {
	kc, err := c.Kube(ctx)
	if err != nil {
		return "", err
	}
	info, err := kc.Discovery().ServerVersion()
	if err != nil {
		return "", err
	}
	return info.GitVersion, nil
}
