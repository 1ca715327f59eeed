// Package vgbootstrap is the olapgke_volume_group_bootstrap resource: it installs the
// volume-group bootstrap DaemonSet of examples/topolvm-gke (the one copy of the script and the
// manifest, embedded) with server-side apply, and waits until every Local-SSD node has its volume
// group or the bootstrap said why not. The per-node verdict is topolvm.BootstrapProgress.
package vgbootstrap

import (
	"context"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"

	"github.com/olapgke/terraform-provider-olapgke/internal/clients"
	"github.com/olapgke/terraform-provider-olapgke/internal/diagnostics"
	"github.com/olapgke/terraform-provider-olapgke/internal/lvmdconf"
)

// TypeSuffix is the resource type name after the provider prefix.
const TypeSuffix = "_volume_group_bootstrap"

var (
	_ resource.Resource                = (*bootstrapResource)(nil)
	_ resource.ResourceWithConfigure   = (*bootstrapResource)(nil)
	_ resource.ResourceWithImportState = (*bootstrapResource)(nil)
)

type bootstrapResource struct {
	c *clients.Clients
}

// NewVolumeGroupBootstrapResource returns the olapgke_volume_group_bootstrap resource.
func NewVolumeGroupBootstrapResource() resource.Resource { return &bootstrapResource{} }

func (r *bootstrapResource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + TypeSuffix
}

func (r *bootstrapResource) Configure(_ context.Context, req resource.ConfigureRequest, resp *resource.ConfigureResponse) {
	if c := clients.FromProviderData(req.ProviderData, &resp.Diagnostics); c != nil {
		r.c = c
	}
}

// ImportState takes the namespace (or <namespace>/vg-bootstrap); Read fills the rest.
func (r *bootstrapResource) ImportState(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse) {
	if req.ID = identitySpec.ImportID(ctx, req, &resp.Diagnostics); resp.Diagnostics.HasError() {
		return // an import by identity goes on with the ID it stands for (identitySpec)
	}
	ns := strings.TrimSuffix(req.ID, "/"+DaemonSetName)
	if !dns1123Label.MatchString(ns) {
		resp.Diagnostics.Append(diagnostics.Error("Invalid Import ID", diagnostics.Detail{
			Checked: `The import ID "` + req.ID + `".`,
			Found:   "It is neither a namespace nor <namespace>/" + DaemonSetName + ".",
			Do:      "Import with e.g. `terraform import olapgke_volume_group_bootstrap.this olapgke-system`.",
		}))
		return
	}
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("namespace"), ns)...)
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("id"), ns+"/"+DaemonSetName)...)
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("wait_for_nodes"), true)...)
}

// volumeGroupValidator applies LVM's naming rules (lvmdconf.ValidateVolumeGroup, the check the
// device-class resource makes).
type volumeGroupValidator struct{}

func (volumeGroupValidator) Description(context.Context) string {
	return "an LVM volume group name"
}
func (v volumeGroupValidator) MarkdownDescription(ctx context.Context) string {
	return v.Description(ctx)
}
func (volumeGroupValidator) ValidateString(_ context.Context, req validator.StringRequest, resp *validator.StringResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	if err := lvmdconf.ValidateVolumeGroup(req.ConfigValue.ValueString()); err != nil {
		resp.Diagnostics.Append(diagnostics.AttributeError(req.Path, "Invalid Volume Group Name", diagnostics.Detail{
			Checked: "volume_group against LVM's rules for volume group names.",
			Found:   err.Error() + ".",
			Do:      "Use the volume_group of the olapgke_topolvm_device_class resources that use these nodes (default vg-ssd).",
		}))
	}
}
