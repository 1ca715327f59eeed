// Package durations is the string validator of every duration attribute of olapgke's resources
// ("10m", "90s"), so they all refuse bad values with the same diagnostic.
// terraform-plugin-framework-validators has no duration validator.
package durations

import (
	"context"
	"fmt"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/schema/validator"

	"github.com/olapgke/terraform-provider-olapgke/internal/diagnostics"
)

// Positive accepts a Go duration above zero.
func Positive() validator.String { return durationValidator{} }

// AtLeastZero accepts a Go duration of zero or more.
func AtLeastZero() validator.String { return durationValidator{allowZero: true} }

type durationValidator struct{ allowZero bool }

func (v durationValidator) Description(context.Context) string {
	if v.allowZero {
		return "a duration such as 10s or 1m (0s allowed)"
	}
	return "a positive duration such as 90s or 10m"
}

func (v durationValidator) MarkdownDescription(ctx context.Context) string { return v.Description(ctx) }

func (v durationValidator) ValidateString(_ context.Context, req validator.StringRequest, resp *validator.StringResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	d, err := time.ParseDuration(req.ConfigValue.ValueString())
	if err == nil && (d > 0 || v.allowZero && d == 0) {
		return
	}
	found, do := "It is not a positive Go duration.", "Use a value such as 90s, 10m or 1h30m."
	if v.allowZero {
		found, do = "It is not a Go duration of zero or more.", "Use a value such as 10s, 1m or 0s."
	}
	resp.Diagnostics.Append(diagnostics.AttributeError(req.Path, "Invalid Duration", diagnostics.Detail{
		Checked: fmt.Sprintf("The value %q.", req.ConfigValue.ValueString()),
		Found:   found,
		Do:      do,
		Err:     err,
	}))
}
