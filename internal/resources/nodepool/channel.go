package nodepool

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/olapgke/terraform-provider-olapgke/internal/diagnostics"
	"github.com/olapgke/terraform-provider-olapgke/internal/gkerules"
)

// checkReleaseChannel refuses, at plan, management.auto_upgrade = false and auto_repair = false
// when the cluster is enrolled in a release channel: GKE refuses such a pool at apply
// (INVALID_ARGUMENT), after Terraform has started the run. The cluster is read (GetCluster) only
// when one of them is planned false, so an ordinary plan makes no extra GKE call.
func (r *nodePoolResource) checkReleaseChannel(ctx context.Context, plan *model) diag.Diagnostics {
	var diags diag.Diagnostics
	if r.c == nil || plan.Management.IsNull() || plan.Management.IsUnknown() ||
		plan.Project.IsUnknown() || plan.Location.IsUnknown() || plan.Cluster.IsUnknown() {
		return nil
	}
	var m managementModel
	if diags.Append(plan.Management.As(ctx, &m, objAs)...); diags.HasError() {
		return diags
	}
	rules := []struct {
		attr  string
		off   bool
		check func(string) error
	}{
		{"auto_upgrade", isFalse(m.AutoUpgrade), gkerules.AutoUpgradeAllowed},
		{"auto_repair", isFalse(m.AutoRepair), gkerules.AutoRepairAllowed},
	}
	var off []string
	for _, rule := range rules {
		if rule.off {
			off = append(off, "management."+rule.attr)
		}
	}
	if len(off) == 0 {
		return nil
	}
	ref := plan.ref()
	api, err := r.c.GKE(ctx)
	var channel string
	if err == nil {
		cl, gerr := api.GetCluster(ctx, ref)
		err = gerr
		channel = cl.GetReleaseChannel().GetChannel().String()
	}
	if err != nil {
		diags.Append(diagnostics.AttributeWarning(path.Root("management"), "Release Channel Not Checked", diagnostics.Detail{
			Checked: fmt.Sprintf("The release channel of cluster %s (GKE GetCluster), because %s is planned false.",
				ref.Name(), strings.Join(off, " and ")),
			Found: "The cluster could not be read. GKE refuses the setting at apply if the cluster is enrolled in a release channel.",
			Do:    "Plan again once GKE answers, or leave auto-upgrade and auto-repair on.",
			Err:   err,
		}))
		return diags
	}
	for _, rule := range rules {
		if !rule.off {
			continue
		}
		var rce *gkerules.ReleaseChannelError
		if !errors.As(rule.check(channel), &rce) {
			continue
		}
		diags.Append(releaseChannelDiag(ref.Name(), rule.attr, rce))
	}
	return diags
}

// isFalse reports whether a planned bool is known to be false.
func isFalse(b types.Bool) bool { return !b.IsUnknown() && !b.IsNull() && !b.ValueBool() }

// releaseChannelDiag is the attribute error for a management setting the cluster's release
// channel requires on. Every line fits Terraform's 80 columns (names longer than a line stay on
// their own).
func releaseChannelDiag(cluster, attr string, e *gkerules.ReleaseChannelError) diag.Diagnostic {
	what, title := "auto-upgrade", "Auto-Upgrade"
	if attr == "auto_repair" {
		what, title = "auto-repair", "Auto-Repair"
	}
	do := fmt.Sprintf("Remove %s = false from management (or set it to true).", attr)
	if attr == "auto_upgrade" {
		do += " To keep GKE from upgrading, and so recreating, the Local SSD nodes," +
			" add a maintenance exclusion to the cluster instead: scope \"no minor or node" +
			" upgrades\", which can last until the end of support of its minor version:\n" +
			gkerules.MaintenanceExclusionsURL + "\n" +
			"Or move the cluster to no release channel, where " + what + " can be off."
	} else {
		do += " Or move the cluster to no release channel, where " + what + " can be off."
	}
	return diagnostics.AttributeError(path.Root("management").AtName(attr), title+" Required By Release Channel", diagnostics.Detail{
		Checked: fmt.Sprintf("The release channel of cluster %s (GKE GetCluster), because management.%s is planned false.", cluster, attr),
		Found: fmt.Sprintf("The cluster is enrolled in the %s release channel. GKE keeps node %s on for every node pool of such a cluster and refuses %s = false at apply (INVALID_ARGUMENT).",
			e.Channel, what, attr),
		Do: do,
	})
}
