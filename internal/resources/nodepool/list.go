package nodepool

import (
	"context"
	"fmt"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/list"
	lschema "github.com/hashicorp/terraform-plugin-framework/list/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/olapgke/terraform-provider-olapgke/internal/clients"
	"github.com/olapgke/terraform-provider-olapgke/internal/diagnostics"
	"github.com/olapgke/terraform-provider-olapgke/internal/gke"
	"github.com/olapgke/terraform-provider-olapgke/internal/gkerules"
)

var _ list.ListResourceWithConfigure = (*nodePoolList)(nil)

// nodePoolList is olapgke_local_ssd_node_pool as a list resource (`terraform query`): the
// cluster's node pools with raw-block Local SSDs (local_nvme_ssd_block_config, or a "-lssd"
// machine type's fixed count), each with how many StatefulSet ordinals keep PVs on its nodes.
type nodePoolList struct{ c *clients.Clients }

// NewLocalSSDNodePoolList returns the olapgke_local_ssd_node_pool list resource.
func NewLocalSSDNodePoolList() list.ListResource { return &nodePoolList{} }

type nodePoolListConfig struct {
	Project  types.String `tfsdk:"project"`
	Location types.String `tfsdk:"location"`
	Cluster  types.String `tfsdk:"cluster"`
}

func (l *nodePoolList) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + TypeSuffix
}

func (l *nodePoolList) Configure(_ context.Context, req resource.ConfigureRequest, resp *resource.ConfigureResponse) {
	if c := clients.FromProviderData(req.ProviderData, &resp.Diagnostics); c != nil {
		l.c = c
	}
}

func (l *nodePoolList) ListResourceConfigSchema(_ context.Context, _ list.ListResourceSchemaRequest, resp *list.ListResourceSchemaResponse) {
	resp.Schema = lschema.Schema{
		MarkdownDescription: "Lists the cluster's node pools with raw-block Local SSDs (`local_nvme_ssd_block_config`, or a " +
			"`-lssd` machine type's fixed count) for `terraform query -generate-config-out`. Each result's name says how many " +
			"StatefulSet ordinals keep PVs on the pool's nodes (what destroying or recreating it would lose); with " +
			"`include_resource = true` it carries the `olapgke_local_ssd_node_pool` an import writes.",
		Attributes: map[string]lschema.Attribute{
			"project":  lschema.StringAttribute{Optional: true, MarkdownDescription: "GCP project (default: the provider's)."},
			"location": lschema.StringAttribute{Optional: true, MarkdownDescription: "The cluster's region or zone (default: the provider's)."},
			"cluster":  lschema.StringAttribute{Optional: true, MarkdownDescription: "The cluster (default: the provider's)."},
		},
	}
}

func (l *nodePoolList) List(ctx context.Context, req list.ListRequest, stream *list.ListResultsStream) {
	var cfg nodePoolListConfig
	if d := req.Config.Get(ctx, &cfg); d.HasError() {
		stream.Results = list.ListResultsStreamDiagnostics(d)
		return
	}
	ref := gke.ClusterRef{Project: orDefault(cfg.Project, l.c.Project), Location: orDefault(cfg.Location, l.c.Location), Cluster: orDefault(cfg.Cluster, l.c.Cluster)}
	var diags diag.Diagnostics
	r := &nodePoolResource{c: l.c}
	api := r.api(ctx, &diags)
	if api == nil {
		stream.Results = list.ListResultsStreamDiagnostics(diags)
		return
	}
	pools, err := api.ListNodePools(ctx, ref)
	if err != nil {
		diags.Append(apiError("Node Pools Not Listed", "ListNodePools", ref.Project+"/"+ref.Location+"/"+ref.Cluster, "", err))
		stream.Results = list.ListResultsStreamDiagnostics(diags)
		return
	}
	kc, err := l.c.Kube(ctx)
	if err != nil {
		stream.Results = list.ListResultsStreamDiagnostics(diag.Diagnostics{diagnostics.KubeClientUnavailable("The provider's Kubernetes connection, for the PVs on each pool.", err)})
		return
	}
	stream.Results = func(push func(list.ListResult) bool) {
		n := int64(0)
		for _, p := range pools {
			cfg := p.GetConfig()
			ssds := gkerules.EffectiveLocalSSDCount(cfg.GetMachineType(), int64(cfg.GetLocalNvmeSsdBlockConfig().GetLocalSsdCount()),
				int64(cfg.GetEphemeralStorageLocalSsdConfig().GetLocalSsdCount()))
			if ssds == 0 {
				continue
			}
			if req.Limit > 0 && n >= req.Limit {
				return
			}
			n++
			pinned := "ordinals' PVs not read"
			if cs, err := readClusterState(ctx, kc, p.GetName(), true); err == nil {
				v := gkerules.Guard(gkerules.GuardInput{Kind: gkerules.LossDestroy, Nodes: cs.Nodes, PVs: cs.PVs, PVCs: cs.PVCs, Pods: cs.Pods, StatefulSets: cs.StatefulSets})
				pinned = fmt.Sprintf("%d PV(s) pinned", len(v.AtRisk))
				if o := v.Ordinals(); o != "" {
					pinned += ": " + o
				}
			}
			name := fmt.Sprintf("%s (%s, %d Local SSD(s), %s)", p.GetName(), p.GetConfig().GetMachineType(), ssds, pinned)
			id := strings.Join([]string{ref.Project, ref.Location, ref.Cluster, p.GetName()}, "/")
			if !push(identitySpec.ListResult(ctx, r, req, id, name)) {
				return
			}
		}
	}
}

func orDefault(v types.String, def string) string {
	if v.IsNull() || v.IsUnknown() || v.ValueString() == "" {
		return def
	}
	return v.ValueString()
}
