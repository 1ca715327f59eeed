package vgbootstrap

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	appsv1 "k8s.io/api/apps/v1"

	"github.com/olapgke/terraform-provider-olapgke/internal/diagnostics"
	"github.com/olapgke/terraform-provider-olapgke/internal/lvmdconf"
)

// formatThinPools is the script's THIN_POOLS: "name:percent" entries, names sorted.
func formatThinPools(pools map[string]int64) string {
	parts := make([]string, 0, len(pools))
	for _, n := range slices.Sorted(maps.Keys(pools)) {
		parts = append(parts, n+":"+strconv.FormatInt(pools[n], 10))
	}
	return strings.Join(parts, ",")
}

// parseThinPools reads THIN_POOLS back; entries that are not name:percent are skipped.
func parseThinPools(v string) map[string]int64 {
	out := map[string]int64{}
	for _, e := range strings.Split(v, ",") {
		name, pct, ok := strings.Cut(strings.TrimSpace(e), ":")
		n, err := strconv.ParseInt(pct, 10, 64)
		if ok && name != "" && err == nil {
			out[name] = n
		}
	}
	return out
}

// thinPoolsFromDaemonSet is the THIN_POOLS the live DaemonSet's container runs the script with.
func thinPoolsFromDaemonSet(ds *appsv1.DaemonSet) map[string]int64 {
	for _, c := range ds.Spec.Template.Spec.Containers {
		if c.Name != containerName {
			continue
		}
		for _, e := range c.Env {
			if e.Name == "THIN_POOLS" {
				return parseThinPools(e.Value)
			}
		}
	}
	return map[string]int64{}
}

// thinPoolsValue is the thin_pools attribute for pools: null when there are none and the prior
// value was null (the attribute unset), a map otherwise.
func thinPoolsValue(pools map[string]int64, prior types.Map) types.Map {
	if len(pools) == 0 && prior.IsNull() {
		return types.MapNull(types.Int64Type)
	}
	vals := map[string]attr.Value{}
	for k, v := range pools {
		vals[k] = types.Int64Value(v)
	}
	return types.MapValueMust(types.Int64Type, vals)
}

// thinPoolsOf is the thin_pools attribute as a map (empty when null or unknown; unknown
// elements are left out).
func thinPoolsOf(m types.Map) map[string]int64 {
	out := map[string]int64{}
	for k, v := range m.Elements() {
		if n, ok := v.(types.Int64); ok && !n.IsNull() && !n.IsUnknown() {
			out[k] = n.ValueInt64()
		}
	}
	return out
}

// thinPoolsValidator checks thin_pools: pool names by LVM's naming rules, each share of the
// volume group 1-100 percent, the shares together at most 100 (lvcreate -l N%VG of the later
// pools would fail on a group the earlier ones filled).
type thinPoolsValidator struct{}

func (thinPoolsValidator) Description(context.Context) string {
	return "thin pool names (LVM names) to percents of the volume group (1-100, at most 100 together)"
}
func (v thinPoolsValidator) MarkdownDescription(ctx context.Context) string {
	return v.Description(ctx)
}

func (thinPoolsValidator) ValidateMap(ctx context.Context, req validator.MapRequest, resp *validator.MapResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	total := int64(0)
	for name, v := range req.ConfigValue.Elements() {
		p := req.Path.AtMapKey(name)
		if err := lvmdconf.ValidateVolumeGroup(name); err != nil {
			resp.Diagnostics.Append(diagnostics.AttributeError(p, "Invalid Thin Pool Name", diagnostics.Detail{
				Checked: "The thin pool name " + strconv.Quote(name) + " against LVM's naming rules.",
				Found:   strings.Replace(err.Error(), "volume group", "thin pool", 1) + ".",
				Do:      "Use the thin_pool.name of the thin olapgke_topolvm_device_class, e.g. pool0.",
			}))
		}
		n, ok := v.(types.Int64)
		if !ok || n.IsUnknown() {
			continue
		}
		if n.IsNull() || n.ValueInt64() < 1 || n.ValueInt64() > 100 {
			resp.Diagnostics.Append(diagnostics.AttributeError(p, "Invalid Thin Pool Size", diagnostics.Detail{
				Checked: "The size of thin pool " + name + ", a percent of the volume group.",
				Found:   fmt.Sprintf("It is %s; it must be 1 to 100.", n.String()),
				Do:      "Give the share of the volume group the pool takes, e.g. 80.",
			}))
			continue
		}
		total += n.ValueInt64()
	}
	if total > 100 {
		resp.Diagnostics.Append(diagnostics.AttributeError(req.Path, "Thin Pools Exceed The Volume Group", diagnostics.Detail{
			Checked: "The sizes of the thin pools together, percents of the volume group.",
			Found:   fmt.Sprintf("They add up to %d%%; lvcreate refuses a pool the group has no room for.", total),
			Do:      "Make the shares add up to 100 or less (thick classes use what is left).",
		}))
	}
}
