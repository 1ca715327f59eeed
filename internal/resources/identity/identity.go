// Package identity is the resource identity of every olapgke resource (Terraform 1.12+ and
// OpenTofu 1.12+: `import { to = ..., identity = {...} }`, identities in state and in
// `terraform query`): each identity attribute is a string the resource already keeps in state,
// and the identity's attributes joined with "/" are the resource's import ID, so an import by
// identity goes through the same parsing and checks as `terraform import`.
//
// Older CLIs ignore identities, but the framework still requires one after every Create, Read
// and Update of a resource that has an identity schema (even a Read that removes the resource,
// and with a CLI that sent none): Write derives it from the state every time.
package identity

import (
	"context"
	"fmt"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/identityschema"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/olapgke/terraform-provider-olapgke/internal/diagnostics"
)

// Attr is one identity attribute: its name in the identity and the string state attribute it
// mirrors.
type Attr struct {
	Name        string
	State       path.Path
	Description string
	// Optional attributes may be left out of an import block, all of them or none: the import
	// ID is then the required attributes alone (the provider's or the chart's defaults fill the
	// rest, as with a short `terraform import` ID).
	Optional bool
}

// Spec is a resource's identity: its attributes in import-ID order.
type Spec struct {
	// Resource is the resource type name after the provider prefix's underscore, for messages.
	Resource string
	Attrs    []Attr
}

// Schema is the identity schema: every attribute a string, required for import unless Optional.
func (s Spec) Schema() identityschema.Schema {
	attrs := make(map[string]identityschema.Attribute, len(s.Attrs))
	for _, a := range s.Attrs {
		attrs[a.Name] = identityschema.StringAttribute{
			RequiredForImport: !a.Optional, OptionalForImport: a.Optional, Description: a.Description,
		}
	}
	return identityschema.Schema{Attributes: attrs}
}

// IdentitySchema answers the framework's request (resource.ResourceWithIdentity).
func (s Spec) IdentitySchema(resp *resource.IdentitySchemaResponse) {
	resp.IdentitySchema = s.Schema()
}

// Write sets id from the first of states whose identity attributes are all known: after Create
// and Update the new state (on a failed create that saved nothing, none is), after Read the new
// state or, when Read removed the resource, the prior one. Call it deferred with pointers, so it
// sees the states as the method left them:
//
//	defer spec.Write(ctx, resp.Identity, &resp.Diagnostics, &resp.State, &req.State)
func (s Spec) Write(ctx context.Context, id *tfsdk.ResourceIdentity, diags *diag.Diagnostics, states ...*tfsdk.State) {
	if id == nil {
		return // the resource has no identity schema (never for a resource using Spec)
	}
	for _, st := range states {
		vals, ok := s.values(ctx, st)
		if !ok {
			continue
		}
		for i, a := range s.Attrs {
			diags.Append(id.SetAttribute(ctx, path.Root(a.Name), vals[i])...)
		}
		return
	}
}

// values reads the identity's attributes from st; false when st is null or one is not known.
func (s Spec) values(ctx context.Context, st *tfsdk.State) ([]types.String, bool) {
	if st == nil || st.Raw.IsNull() || !st.Raw.IsKnown() {
		return nil, false
	}
	out := make([]types.String, len(s.Attrs))
	for i, a := range s.Attrs {
		if d := st.GetAttribute(ctx, a.State, &out[i]); d.HasError() || out[i].IsNull() || out[i].IsUnknown() || out[i].ValueString() == "" {
			return nil, false
		}
	}
	return out, true
}

// ImportID is the import ID req stands for: req.ID as given, or the identity's attribute values
// joined with "/" (the optional ones only when all are given). An identity with an empty value,
// a "/" in one, or some of the optional attributes but not all, is an error.
func (s Spec) ImportID(ctx context.Context, req resource.ImportStateRequest, diags *diag.Diagnostics) string {
	if req.ID != "" || req.Identity == nil {
		return req.ID
	}
	var parts, given, missing []string
	var optional int
	for _, a := range s.Attrs {
		var v types.String
		if d := req.Identity.GetAttribute(ctx, path.Root(a.Name), &v); d.HasError() {
			diags.Append(d...)
			return ""
		}
		if a.Optional {
			optional++
		}
		switch {
		case v.IsNull() || v.IsUnknown():
			if !a.Optional {
				missing = append(missing, a.Name)
			}
			continue
		case v.ValueString() == "" || strings.Contains(v.ValueString(), "/"):
			diags.Append(diagnostics.AttributeError(path.Root(a.Name), "Invalid Import Identity", diagnostics.Detail{
				Checked: fmt.Sprintf("The identity's %s of the olapgke_%s to import.", a.Name, s.Resource),
				Found:   fmt.Sprintf("%q, which is empty or holds a \"/\".", v.ValueString()),
				Do:      "Give the " + a.Name + " as the API names it: " + a.Description,
			}))
			return ""
		}
		if a.Optional {
			given = append(given, a.Name)
		}
		parts = append(parts, v.ValueString())
	}
	if len(missing) > 0 || (len(given) > 0 && len(given) < optional) {
		diags.Append(diagnostics.Error("Incomplete Import Identity", diagnostics.Detail{
			Checked: fmt.Sprintf("The identity of the olapgke_%s to import: %s.", s.Resource, s.names()),
			Found:   s.incomplete(missing, given),
			Do:      "Give " + s.requirement() + ".",
		}))
		return ""
	}
	return strings.Join(parts, "/")
}

func (s Spec) names() string {
	var n []string
	for _, a := range s.Attrs {
		if a.Optional {
			n = append(n, a.Name+" (optional)")
		} else {
			n = append(n, a.Name)
		}
	}
	return strings.Join(n, ", ")
}

func (s Spec) incomplete(missing, given []string) string {
	if len(missing) > 0 {
		return "It has no " + strings.Join(missing, ", ") + "."
	}
	return "It gives " + strings.Join(given, ", ") + " but not every optional attribute."
}

func (s Spec) requirement() string {
	var req, opt []string
	for _, a := range s.Attrs {
		if a.Optional {
			opt = append(opt, a.Name)
		} else {
			req = append(req, a.Name)
		}
	}
	if len(opt) == 0 {
		return strings.Join(req, ", ")
	}
	return strings.Join(req, ", ") + ", and either all of " + strings.Join(opt, ", ") + " or none (the defaults)"
}
