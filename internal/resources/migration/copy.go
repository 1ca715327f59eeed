package migration

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/olapgke/terraform-provider-olapgke/internal/diagnostics"
)

// quantityValidator accepts a positive Kubernetes quantity (copy.bandwidth).
type quantityValidator struct{}

func (quantityValidator) Description(context.Context) string {
	return "a positive Kubernetes quantity such as 200Mi (bytes per second)"
}

func (v quantityValidator) MarkdownDescription(ctx context.Context) string { return v.Description(ctx) }

func (quantityValidator) ValidateString(_ context.Context, req validator.StringRequest, resp *validator.StringResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	q, err := resource.ParseQuantity(req.ConfigValue.ValueString())
	if err == nil && q.Sign() > 0 && q.Value() >= 1024 {
		return
	}
	resp.Diagnostics.Append(diagnostics.AttributeError(req.Path, "Invalid Bandwidth", diagnostics.Detail{
		Checked: fmt.Sprintf("The value %q.", req.ConfigValue.ValueString()),
		Found:   "It is not a Kubernetes quantity of at least 1Ki (bytes per second).",
		Do:      "Use a value such as 200Mi or 1Gi, or leave bandwidth out for an unbounded copy.",
	}))
}

// copyRefused is the plan's refusal of a warm move whose node-local claim templates allow only
// one Pod (ReadWriteOncePod): the source copier must mount the live claim next to the ordinal's
// Pod, which that access mode forbids. nil when the copy can run (or there is no copy block).
func copyRefused(plan resourceModel, ev *evaluation) diag.Diagnostic {
	if plan.Copy.IsNull() || plan.Copy.IsUnknown() || ev == nil || ev.plan == nil {
		return nil
	}
	set := ev.desired
	if set == nil && ev.snap != nil {
		set = ev.snap.Live
	}
	if set == nil {
		return nil
	}
	var refused []string
	for _, t := range set.Spec.VolumeClaimTemplates {
		if !slices.Contains(ev.plan.Claims, t.Name) {
			continue
		}
		if slices.Contains(t.Spec.AccessModes, corev1.ReadWriteOncePod) {
			refused = append(refused, t.Name)
		}
	}
	if len(refused) == 0 {
		return nil
	}
	return diagnostics.AttributeError(path.Root("copy"), "Warm Move Needs A Second Mount", diagnostics.Detail{
		Checked: fmt.Sprintf("The access modes of the node-local claim templates of StatefulSet %s/%s.", set.Namespace, set.Name),
		Found: fmt.Sprintf("Claim template(s) %s allow only one Pod (ReadWriteOncePod); the warm move's source copier "+
			"must mount the live claim next to the ordinal's Pod.", strings.Join(refused, ", ")),
		Do: "Use ReadWriteOnce for these claims, or remove the copy block: the moves are then cold (new, empty claims).",
	})
}
