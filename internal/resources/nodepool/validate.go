package nodepool

import (
	"context"
	"fmt"

	"github.com/hashicorp/terraform-plugin-framework-validators/resourcevalidator"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"

	"github.com/olapgke/terraform-provider-olapgke/internal/diagnostics"
	"github.com/olapgke/terraform-provider-olapgke/internal/gkerules"
	"github.com/olapgke/terraform-provider-olapgke/internal/stsutil"
)

func (r *nodePoolResource) ConfigValidators(context.Context) []resource.ConfigValidator {
	return []resource.ConfigValidator{
		resourcevalidator.ExactlyOneOf(path.MatchRoot("node_count"), path.MatchRoot("autoscaling")),
		resourcevalidator.ExactlyOneOf(path.MatchRoot("name"), path.MatchRoot("name_prefix")),
	}
}

// ValidateConfig applies the gkerules checks that need only the configuration: the node pool
// name, Local SSD counts for the machine family and the boot disk. Machine types the rules do not
// know are left to GKE, whose error is shown at apply.
func (r *nodePoolResource) ValidateConfig(ctx context.Context, req resource.ValidateConfigRequest, resp *resource.ValidateConfigResponse) {
	var m model
	resp.Diagnostics.Append(req.Config.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	if !m.Name.IsNull() && !m.Name.IsUnknown() {
		if err := gkerules.CheckNodePoolName(m.Name.ValueString()); err != nil {
			resp.Diagnostics.Append(diagnostics.AttributeError(path.Root("name"), "Invalid Node Pool Name", diagnostics.Detail{
				Checked: "The node pool name against GKE's naming rules.",
				Found:   err.Error() + ".",
				Do:      "Choose a name of 1-40 lowercase letters, digits and hyphens that starts with a letter and does not end with a hyphen.",
			}))
		}
	}
	resp.Diagnostics.Append(validateNodeConfigFields(&m)...)
	if m.StorageStartupTaint.ValueBool() {
		var ts []taintModel
		if !m.Taints.IsNull() && !m.Taints.IsUnknown() {
			resp.Diagnostics.Append(m.Taints.ElementsAs(ctx, &ts, false)...)
		}
		for _, t := range ts {
			if t.Key.ValueString() == stsutil.TaintStorageNotReady {
				resp.Diagnostics.Append(diagnostics.AttributeError(path.Root("taints"), "Startup Taint Set Twice", diagnostics.Detail{
					Checked: "taints against storage_startup_taint = true.",
					Found:   "taints lists " + stsutil.TaintStorageNotReady + ", which storage_startup_taint already adds.",
					Do:      "Remove that entry from taints.",
				}))
			}
		}
	}
	if m.MachineType.IsUnknown() || m.MachineType.IsNull() {
		return
	}
	mt := m.MachineType.ValueString()
	if !m.LocalNVMeSSDCount.IsUnknown() && !m.EphemeralLocalSSDCount.IsUnknown() {
		raw, eph := m.LocalNVMeSSDCount.ValueInt64(), m.EphemeralLocalSSDCount.ValueInt64()
		if known, err := gkerules.CheckLocalSSD(mt, raw, eph); known && err != nil {
			resp.Diagnostics.Append(diagnostics.AttributeError(path.Root("local_nvme_ssd_count"), "Invalid Local SSD Count", diagnostics.Detail{
				Checked: fmt.Sprintf("local_nvme_ssd_count = %d and ephemeral_storage_local_ssd_count = %d against the Local SSD counts machine type %s accepts (Google's table: https://cloud.google.com/compute/docs/disks/local-ssd#choose_number_local_ssds).", raw, eph, mt),
				Found:   err.Error() + ".",
				Do:      "Pick one of the accepted counts, or a machine type that takes the count you need. GKE would refuse this at apply.",
			}))
		}
	}
	if !m.BootDisk.IsNull() && !m.BootDisk.IsUnknown() {
		var bd bootDiskModel
		resp.Diagnostics.Append(m.BootDisk.As(ctx, &bd, objAs)...)
		if bd.Type.IsUnknown() || bd.SizeGB.IsUnknown() {
			return
		}
		size := int64(gkerules.DefaultBootDiskGiB)
		if !bd.SizeGB.IsNull() {
			size = bd.SizeGB.ValueInt64()
		}
		if err := gkerules.CheckBootDisk(mt, bd.Type.ValueString(), size); err != nil {
			resp.Diagnostics.Append(diagnostics.AttributeError(path.Root("boot_disk"), "Invalid Boot Disk", diagnostics.Detail{
				Checked: fmt.Sprintf("boot_disk (type %q, %d GiB) for machine type %s.", bd.Type.ValueString(), size, mt),
				Found:   err.Error() + ".",
				Do:      "Change the boot disk type or size. GKE would refuse this at apply.",
			}))
		}
	}
}
