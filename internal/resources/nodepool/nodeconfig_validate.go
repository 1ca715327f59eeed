package nodepool

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	apiresource "k8s.io/apimachinery/pkg/api/resource"

	"github.com/olapgke/terraform-provider-olapgke/internal/diagnostics"
	"github.com/olapgke/terraform-provider-olapgke/internal/gkerules"
)

var namePrefixRE = regexp.MustCompile(`^[a-z][-a-z0-9]*$`)

// durationBetween accepts a Go duration ("100ms", "2m") within [min, max] (max empty: no bound),
// the format GKE's kubelet_config takes for cpu_cfs_quota_period and the image GC ages.
type durationBetween struct{ min, max string }

func (v durationBetween) Description(context.Context) string {
	if v.max == "" {
		return "a duration of at least " + v.min
	}
	return fmt.Sprintf("a duration between %s and %s", v.min, v.max)
}
func (v durationBetween) MarkdownDescription(ctx context.Context) string { return v.Description(ctx) }

func (v durationBetween) ValidateString(ctx context.Context, req validator.StringRequest, resp *validator.StringResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	s := req.ConfigValue.ValueString()
	d, err := time.ParseDuration(s)
	lo, _ := time.ParseDuration(v.min)
	hi, herr := time.ParseDuration(v.max)
	if err == nil && d >= lo && (herr != nil || d <= hi) {
		return
	}
	resp.Diagnostics.Append(diagnostics.AttributeError(req.Path, "Invalid Duration", diagnostics.Detail{
		Checked: fmt.Sprintf("%s = %q against GKE's kubelet_config rules.", req.Path, s),
		Found:   fmt.Sprintf("It is not %s.", v.Description(ctx)),
		Do:      "Write a duration such as \"100ms\" or \"2m\" within the bounds.",
	}))
}

// logSizeValidator accepts GKE's container_log_max_size: a positive quantity with a binary
// suffix (Ki, Mi, Gi), at most 500Mi.
type logSizeValidator struct{}

var logSizeRE = regexp.MustCompile(`^[1-9][0-9]*(Ki|Mi|Gi)$`)

func (logSizeValidator) Description(context.Context) string {
	return "a quantity such as 50Mi, at most 500Mi"
}
func (v logSizeValidator) MarkdownDescription(ctx context.Context) string { return v.Description(ctx) }

func (v logSizeValidator) ValidateString(ctx context.Context, req validator.StringRequest, resp *validator.StringResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	s := req.ConfigValue.ValueString()
	if logSizeRE.MatchString(s) {
		if q, err := apiresource.ParseQuantity(s); err == nil && q.Cmp(apiresource.MustParse("500Mi")) <= 0 {
			return
		}
	}
	resp.Diagnostics.Append(diagnostics.AttributeError(req.Path, "Invalid Log Size", diagnostics.Detail{
		Checked: fmt.Sprintf("%s = %q against GKE's kubelet_config rules.", req.Path, s),
		Found:   "It is not " + v.Description(ctx) + ".",
		Do:      "Write a positive size with a Ki, Mi or Gi suffix, e.g. \"100Mi\".",
	}))
}

// validateNodeConfigFields checks the rules GKE documents between fields of nodeconfig.go and
// kubelet_config (node system configuration, reservations, Hyperdisk boot disks, Data Cache).
func validateNodeConfigFields(m *model) diag.Diagnostics {
	var diags diag.Diagnostics
	fail := func(p path.Path, summary, checked, found, do string) {
		diags.Append(diagnostics.AttributeError(p, summary, diagnostics.Detail{Checked: checked, Found: found, Do: do}))
	}
	if k := attrsOf(m.KubeletConfig); k != nil {
		hi, lo := k["image_gc_high_threshold_percent"], k["image_gc_low_threshold_percent"]
		if known(hi) && known(lo) && getI(k, "image_gc_low_threshold_percent") >= getI(k, "image_gc_high_threshold_percent") {
			fail(path.Root("kubelet_config").AtName("image_gc_low_threshold_percent"), "Invalid Image GC Thresholds",
				"kubelet_config's image GC thresholds (GKE: the low threshold must be below the high one).",
				fmt.Sprintf("image_gc_low_threshold_percent = %d is not below image_gc_high_threshold_percent = %d.", getI(k, "image_gc_low_threshold_percent"), getI(k, "image_gc_high_threshold_percent")),
				"Lower the low threshold or raise the high one.")
		}
		minAge, maxAge := getS(k, "image_minimum_gc_age"), getS(k, "image_maximum_gc_age")
		if lo, err1 := time.ParseDuration(minAge); err1 == nil {
			if hi, err2 := time.ParseDuration(maxAge); err2 == nil && hi != 0 && hi <= lo {
				fail(path.Root("kubelet_config").AtName("image_maximum_gc_age"), "Invalid Image GC Ages",
					"kubelet_config's image GC ages (GKE: the maximum age must exceed the minimum age).",
					fmt.Sprintf("image_maximum_gc_age = %q is not above image_minimum_gc_age = %q.", maxAge, minAge),
					"Raise image_maximum_gc_age, or leave it unset (no maximum).")
			}
		}
	}
	if r := attrsOf(m.ReservationAffinity); r != nil && known(r["consume_reservation_type"]) {
		typ, key := getS(r, "consume_reservation_type"), r["key"]
		vals, _ := r["values"].(types.Set)
		specific := typ == "SPECIFIC_RESERVATION"
		hasKey, hasVals := known(key), known(vals) && len(vals.Elements()) > 0
		switch {
		case specific && (!hasKey || !hasVals) && !key.IsUnknown() && !vals.IsUnknown():
			fail(path.Root("reservation_affinity"), "Incomplete Reservation Affinity",
				"reservation_affinity against GKE's rule for SPECIFIC_RESERVATION.",
				"SPECIFIC_RESERVATION needs both key and values.",
				`Set key = "compute.googleapis.com/reservation-name" and values to the reservation's name(s).`)
		case !specific && (hasKey || hasVals):
			fail(path.Root("reservation_affinity"), "Unexpected Reservation Key",
				"reservation_affinity against GKE's rules.",
				"key and values apply to SPECIFIC_RESERVATION only, not "+typ+".",
				"Remove key and values, or use SPECIFIC_RESERVATION.")
		}
	}
	if bd := attrsOf(m.BootDisk); bd != nil && known(bd["type"]) {
		if typ := getS(bd, "type"); !strings.HasPrefix(typ, "hyperdisk-") && (getI(bd, "provisioned_iops") > 0 || getI(bd, "provisioned_throughput") > 0) {
			fail(path.Root("boot_disk"), "Provisioned Performance Needs Hyperdisk",
				"boot_disk's provisioned_iops and provisioned_throughput.",
				"They are set, but the boot disk type is "+typ+"; GKE takes them for Hyperdisk boot disks only.",
				`Use type = "hyperdisk-balanced", or remove provisioned_iops and provisioned_throughput.`)
		}
	}
	dc := m.DataCacheCount
	if known(dc) && dc.ValueInt64() > 0 && known(m.MachineType) && !m.LocalNVMeSSDCount.IsUnknown() && !m.EphemeralLocalSSDCount.IsUnknown() {
		mt, raw, eph := m.MachineType.ValueString(), m.LocalNVMeSSDCount.ValueInt64(), m.EphemeralLocalSSDCount.ValueInt64()
		if ok, err := gkerules.CheckLocalSSD(mt, gkerules.EffectiveLocalSSDCount(mt, raw, eph), eph+dc.ValueInt64()); ok && err != nil {
			fail(path.Root("data_cache_count"), "Too Many Data Cache Local SSDs",
				fmt.Sprintf("data_cache_count = %d with %d raw-block and %d ephemeral Local SSD(s) against the Local SSDs machine type %s takes.", dc.ValueInt64(), raw, eph, mt),
				"Data Cache Local SSDs count with the others: "+err.Error()+".",
				"Lower data_cache_count, or pick a machine type with more Local SSDs.")
		}
	}
	return diags
}
