package identity

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-go/tftypes"
)

// spec is shaped like the node pool's and the device class's: optional scope attributes, one
// of them inside a nested state object, then the required name.
var spec = Spec{Resource: "thing", Attrs: []Attr{
	{Name: "scope", State: path.Root("where").AtName("scope"), Optional: true, Description: "the scope."},
	{Name: "zone", State: path.Root("zone"), Optional: true, Description: "the zone."},
	{Name: "name", State: path.Root("name"), Description: "the name."},
}}

var stateSchema = schema.Schema{Attributes: map[string]schema.Attribute{
	"where": schema.SingleNestedAttribute{Computed: true, Attributes: map[string]schema.Attribute{
		"scope": schema.StringAttribute{Computed: true},
	}},
	"zone":  schema.StringAttribute{Computed: true},
	"name":  schema.StringAttribute{Computed: true},
	"other": schema.StringAttribute{Computed: true},
}}

// state is a resource state with the given values (nil: null state; "?" unknown).
func state(t *testing.T, scope, zone, name string) *tfsdk.State {
	t.Helper()
	ctx := context.Background()
	st := &tfsdk.State{Schema: stateSchema, Raw: tftypes.NewValue(stateSchema.Type().TerraformType(ctx), nil)}
	str := func(v string) types.String {
		if v == "?" {
			return types.StringUnknown()
		}
		return types.StringValue(v)
	}
	where := types.ObjectValueMust(map[string]attr.Type{"scope": types.StringType}, map[string]attr.Value{"scope": str(scope)})
	for p, v := range map[string]attr.Value{"where": where, "zone": str(zone), "name": str(name), "other": types.StringValue("x")} {
		if d := st.SetAttribute(ctx, path.Root(p), v); d.HasError() {
			t.Fatal(d)
		}
	}
	return st
}

func nullState() *tfsdk.State {
	return &tfsdk.State{Schema: stateSchema, Raw: tftypes.NewValue(stateSchema.Type().TerraformType(context.Background()), nil)}
}

func newIdentity(t *testing.T, vals map[string]string) *tfsdk.ResourceIdentity {
	t.Helper()
	ctx := context.Background()
	s := spec.Schema()
	id := &tfsdk.ResourceIdentity{Schema: s, Raw: tftypes.NewValue(s.Type().TerraformType(ctx), nil)}
	for k, v := range vals {
		if d := id.SetAttribute(ctx, path.Root(k), types.StringValue(v)); d.HasError() {
			t.Fatal(d)
		}
	}
	return id
}

func identityValues(t *testing.T, id *tfsdk.ResourceIdentity) map[string]string {
	t.Helper()
	if id.Raw.IsNull() {
		return nil
	}
	out := map[string]string{}
	for _, a := range spec.Attrs {
		var v types.String
		if d := id.GetAttribute(context.Background(), path.Root(a.Name), &v); d.HasError() {
			t.Fatal(d)
		}
		out[a.Name] = v.ValueString()
	}
	return out
}

func TestSchema(t *testing.T) {
	t.Parallel()
	got := spec.Schema()
	if len(got.Attributes) != 3 {
		t.Fatalf("attributes: %v", got.Attributes)
	}
	if d := got.ValidateImplementation(context.Background()); d.HasError() {
		t.Fatalf("identity schema invalid: %v", d)
	}
}

func TestWrite(t *testing.T) {
	t.Parallel()
	full := map[string]string{"scope": "s", "zone": "z", "name": "n"}
	cases := map[string]struct {
		states []*tfsdk.State
		want   map[string]string
	}{
		"new state":                              {[]*tfsdk.State{state(t, "s", "z", "n"), state(t, "p", "q", "r")}, full},
		"resource removed: the prior state":      {[]*tfsdk.State{nullState(), state(t, "s", "z", "n")}, full},
		"new state with an unknown: the next":    {[]*tfsdk.State{state(t, "s", "?", "n"), state(t, "s", "z", "n")}, full},
		"new state with an empty name: the next": {[]*tfsdk.State{state(t, "s", "z", ""), state(t, "s", "z", "n")}, full},
		"nothing known: no identity":             {[]*tfsdk.State{nullState(), nil, state(t, "?", "z", "n")}, nil},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			id := newIdentity(t, nil)
			var diags diag.Diagnostics
			spec.Write(context.Background(), id, &diags, tc.states...)
			if diags.HasError() {
				t.Fatal(diags)
			}
			if d := cmp.Diff(tc.want, identityValues(t, id)); d != "" {
				t.Errorf("identity (-want +got):\n%s", d)
			}
		})
	}
	var diags diag.Diagnostics
	spec.Write(context.Background(), nil, &diags, state(t, "s", "z", "n")) // no identity schema: nothing to write
	if diags.HasError() {
		t.Fatal(diags)
	}
}

func TestImportID(t *testing.T) {
	t.Parallel()
	cases := map[string]struct {
		id       string
		identity map[string]string
		want     string
		summary  string
	}{
		"import ID as given":            {id: "a/b/c", identity: map[string]string{"name": "ignored"}, want: "a/b/c"},
		"every attribute":               {identity: map[string]string{"scope": "s", "zone": "z", "name": "n"}, want: "s/z/n"},
		"no optional attribute":         {identity: map[string]string{"name": "n"}, want: "n"},
		"some optional attributes":      {identity: map[string]string{"zone": "z", "name": "n"}, summary: "Incomplete Import Identity"},
		"no name":                       {identity: map[string]string{"scope": "s", "zone": "z"}, summary: "Incomplete Import Identity"},
		"a slash in a value":            {identity: map[string]string{"scope": "s", "zone": "z", "name": "n/m"}, summary: "Invalid Import Identity"},
		"an empty value":                {identity: map[string]string{"scope": "", "zone": "z", "name": "n"}, summary: "Invalid Import Identity"},
		"neither ID nor identity given": {identity: nil, summary: "Incomplete Import Identity"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			req := resource.ImportStateRequest{ID: tc.id, Identity: newIdentity(t, tc.identity)}
			var diags diag.Diagnostics
			got := spec.ImportID(context.Background(), req, &diags)
			var summary string
			if diags.HasError() {
				summary = diags.Errors()[0].Summary()
			}
			if got != tc.want || summary != tc.summary {
				t.Errorf("ImportID = %q, error %q; want %q, error %q (%v)", got, summary, tc.want, tc.summary, diags)
			}
		})
	}
}
