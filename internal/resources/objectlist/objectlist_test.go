package objectlist

import (
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/listplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringdefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
)

func nested(extra map[string]schema.Attribute) schema.ListNestedAttribute {
	attrs := map[string]schema.Attribute{
		"name":  schema.StringAttribute{Computed: true, Description: "Pod name."},
		"wave":  schema.Int64Attribute{Computed: true, MarkdownDescription: "0: not acted on."},
		"ready": schema.BoolAttribute{Computed: true},
		"volumes": schema.ListNestedAttribute{Computed: true, NestedObject: schema.NestedAttributeObject{
			Attributes: map[string]schema.Attribute{"pvc": schema.StringAttribute{Computed: true, Description: "PVC name."}}}},
	}
	for k, v := range extra {
		attrs[k] = v
	}
	return schema.ListNestedAttribute{Computed: true, MarkdownDescription: "Per-ordinal plan.",
		PlanModifiers: []planmodifier.List{listplanmodifier.UseStateForUnknown()},
		NestedObject:  schema.NestedAttributeObject{Attributes: attrs}}
}

// The list keeps the Terraform type, flags and plan modifiers of the nested attribute it replaces,
// and says what each field is.
func TestFromNestedKeepsTypeAndDocs(t *testing.T) {
	t.Parallel()
	n := nested(nil)
	l := FromNested(n)
	if !l.GetType().Equal(n.GetType()) {
		t.Fatalf("type %s, want %s", l.GetType(), n.GetType())
	}
	if !l.Computed || l.Optional || l.Required || len(l.PlanModifiers) != 1 {
		t.Errorf("flags or plan modifiers not kept: %+v", l)
	}
	// A Markdown list nested under the attribute's item in the generated docs.
	want := "Per-ordinal plan. Each entry:\n" +
		"  - `name` (String) Pod name.\n" +
		"  - `ready` (Boolean)\n" +
		"  - `volumes` (List of Object) Each entry:\n" +
		"    - `pvc` (String) PVC name.\n" +
		"  - `wave` (Number) 0: not acted on."
	if l.MarkdownDescription != want {
		t.Errorf("description\n got: %s\nwant: %s", l.MarkdownDescription, want)
	}
}

// What a ListAttribute's elements cannot carry is refused, not dropped.
func TestFromNestedRefusesWhatElementsCannotCarry(t *testing.T) {
	t.Parallel()
	for name, a := range map[string]schema.Attribute{
		"plan modifier":   schema.StringAttribute{Computed: true, PlanModifiers: []planmodifier.String{stringplanmodifier.UseStateForUnknown()}},
		"default":         schema.StringAttribute{Computed: true, Optional: true, Default: stringdefault.StaticString("x")},
		"optional":        schema.StringAttribute{Optional: true},
		"nested modifier": schema.ListNestedAttribute{Computed: true, NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{"x": schema.StringAttribute{Computed: true, PlanModifiers: []planmodifier.String{stringplanmodifier.UseStateForUnknown()}}}}},
		"unknown kind":    schema.MapNestedAttribute{Computed: true},
	} {
		t.Run(name, func(t *testing.T) {
			defer func() {
				if r := recover(); r == nil || !strings.Contains(r.(string), "objectlist: nested attribute") {
					t.Errorf("FromNested did not refuse it: %v", r)
				}
			}()
			FromNested(nested(map[string]schema.Attribute{"extra": a}))
		})
	}
}
