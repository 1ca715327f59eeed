package objectlist

import (
	"context"
	"fmt"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/provider"
	"github.com/hashicorp/terraform-plugin-framework/providerserver"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"github.com/hashicorp/terraform-plugin-go/tftypes"
)

// benchOrdinals is a per-ordinal list shaped as olapgke_statefulset's ordinals: a dozen fields,
// one of them a list of volumes.
func benchOrdinals() schema.ListNestedAttribute {
	fields := map[string]schema.Attribute{
		"volumes": schema.ListNestedAttribute{Computed: true, NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
			"claim": schema.StringAttribute{Computed: true}, "pvc": schema.StringAttribute{Computed: true},
			"pv": schema.StringAttribute{Computed: true}, "pinned_node": schema.StringAttribute{Computed: true},
		}}},
		"ordinal": schema.Int64Attribute{Computed: true}, "wave": schema.Int64Attribute{Computed: true},
		"schedulable": schema.BoolAttribute{Computed: true}, "blocked": schema.BoolAttribute{Computed: true},
	}
	for _, n := range []string{"name", "pod", "node", "action", "reason", "pvcs_after"} {
		fields[n] = schema.StringAttribute{Computed: true}
	}
	return schema.ListNestedAttribute{Computed: true, NestedObject: schema.NestedAttributeObject{Attributes: fields}}
}

// benchSchema has as many top-level attributes as olapgke_statefulset (the framework's lookup of
// every value starts there) and the ordinals as the nested list or as FromNested makes it.
func benchSchema(converted bool) schema.Schema {
	attrs := map[string]schema.Attribute{"id": schema.StringAttribute{Computed: true}, "manifest": schema.StringAttribute{Required: true}}
	for i := range 14 {
		attrs[fmt.Sprintf("attr_%d", i)] = schema.StringAttribute{Computed: true}
	}
	if converted {
		attrs["ordinals"] = FromNested(benchOrdinals())
	} else {
		attrs["ordinals"] = benchOrdinals()
	}
	return schema.Schema{Attributes: attrs}
}

type benchProvider struct{ converted bool }

func (benchProvider) Metadata(_ context.Context, _ provider.MetadataRequest, resp *provider.MetadataResponse) {
	resp.TypeName = "bench"
}
func (benchProvider) Schema(context.Context, provider.SchemaRequest, *provider.SchemaResponse) {}
func (benchProvider) Configure(context.Context, provider.ConfigureRequest, *provider.ConfigureResponse) {
}
func (benchProvider) DataSources(context.Context) []func() datasource.DataSource { return nil }
func (p benchProvider) Resources(context.Context) []func() resource.Resource {
	return []func() resource.Resource{func() resource.Resource { return benchResource(p) }}
}

type benchResource struct{ converted bool }

func (benchResource) Metadata(_ context.Context, _ resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = "bench_set"
}
func (r benchResource) Schema(_ context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	resp.Schema = benchSchema(r.converted)
}
func (benchResource) Create(context.Context, resource.CreateRequest, *resource.CreateResponse) {}
func (benchResource) Read(context.Context, resource.ReadRequest, *resource.ReadResponse)       {}
func (benchResource) Update(context.Context, resource.UpdateRequest, *resource.UpdateResponse) {}
func (benchResource) Delete(context.Context, resource.DeleteRequest, *resource.DeleteResponse) {}

// planRequest is an update of the manifest of a resource whose state holds n ordinals.
func planRequest(tb testing.TB, n int) *tfprotov6.PlanResourceChangeRequest {
	ctx := context.Background()
	typ := benchSchema(false).Type().TerraformType(ctx).(tftypes.Object)
	ordType := typ.AttributeTypes["ordinals"].(tftypes.List).ElementType.(tftypes.Object)
	volType := ordType.AttributeTypes["volumes"].(tftypes.List).ElementType.(tftypes.Object)
	ords := make([]tftypes.Value, n)
	for i := range ords {
		vol := tftypes.NewValue(volType, map[string]tftypes.Value{
			"claim": tftypes.NewValue(tftypes.String, "data"), "pvc": tftypes.NewValue(tftypes.String, fmt.Sprintf("data-olap-%d", i)),
			"pv": tftypes.NewValue(tftypes.String, fmt.Sprintf("pvc-%d", i)), "pinned_node": tftypes.NewValue(tftypes.String, fmt.Sprintf("node-%d", i)),
		})
		o := map[string]tftypes.Value{"volumes": tftypes.NewValue(ordType.AttributeTypes["volumes"], []tftypes.Value{vol}),
			"ordinal": tftypes.NewValue(tftypes.Number, i), "wave": tftypes.NewValue(tftypes.Number, 1),
			"schedulable": tftypes.NewValue(tftypes.Bool, true), "blocked": tftypes.NewValue(tftypes.Bool, false)}
		for _, f := range []string{"name", "pod", "node", "action", "reason", "pvcs_after"} {
			o[f] = tftypes.NewValue(tftypes.String, fmt.Sprintf("%s-%d", f, i))
		}
		ords[i] = tftypes.NewValue(ordType, o)
	}
	obj := func(manifest string, ordinals tftypes.Value) tftypes.Value {
		v := map[string]tftypes.Value{"id": tftypes.NewValue(tftypes.String, "ns/olap"), "manifest": tftypes.NewValue(tftypes.String, manifest),
			"ordinals": ordinals}
		for i := range 14 {
			v[fmt.Sprintf("attr_%d", i)] = tftypes.NewValue(tftypes.String, "x")
		}
		return tftypes.NewValue(typ, v)
	}
	dv := func(v tftypes.Value) *tfprotov6.DynamicValue {
		d, err := tfprotov6.NewDynamicValue(typ, v)
		if err != nil {
			tb.Fatal(err)
		}
		return &d
	}
	list := tftypes.NewValue(typ.AttributeTypes["ordinals"], ords)
	cfg := map[string]tftypes.Value{"manifest": tftypes.NewValue(tftypes.String, "v2"), "id": tftypes.NewValue(tftypes.String, nil),
		"ordinals": tftypes.NewValue(typ.AttributeTypes["ordinals"], nil)}
	for i := range 14 {
		cfg[fmt.Sprintf("attr_%d", i)] = tftypes.NewValue(tftypes.String, nil)
	}
	return &tfprotov6.PlanResourceChangeRequest{TypeName: "bench_set", PriorState: dv(obj("v1", list)),
		ProposedNewState: dv(obj("v2", list)), Config: dv(tftypes.NewValue(typ, cfg))}
}

func planOnce(tb testing.TB, srv tfprotov6.ProviderServer, req *tfprotov6.PlanResourceChangeRequest) *tfprotov6.PlanResourceChangeResponse {
	resp, err := srv.PlanResourceChange(context.Background(), req)
	if err != nil {
		tb.Fatal(err)
	}
	for _, d := range resp.Diagnostics {
		if d.Severity == tfprotov6.DiagnosticSeverityError {
			tb.Fatalf("%s: %s", d.Summary, d.Detail)
		}
	}
	return resp
}

func server(tb testing.TB, converted bool) tfprotov6.ProviderServer {
	srv, err := providerserver.NewProtocol6WithError(benchProvider{converted: converted})()
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := srv.GetProviderSchema(context.Background(), &tfprotov6.GetProviderSchemaRequest{}); err != nil {
		tb.Fatal(err)
	}
	return srv
}

// The framework plans the same values for both shapes: the conversion changes what a plan costs,
// not what it says.
func TestPlanSameForBothShapes(t *testing.T) {
	t.Parallel()
	req := planRequest(t, 20)
	a := planOnce(t, server(t, false), req)
	b := planOnce(t, server(t, true), req)
	typ := benchSchema(false).Type().TerraformType(context.Background())
	va, err := a.PlannedState.Unmarshal(typ)
	if err != nil {
		t.Fatal(err)
	}
	vb, err := b.PlannedState.Unmarshal(typ)
	if err != nil {
		t.Fatal(err)
	}
	if !va.Equal(vb) {
		t.Fatalf("planned states differ:\n%s\n%s", va, vb)
	}
	if va.Equal(mustUnmarshal(t, req.PriorState, typ)) {
		t.Fatal("the planned state is the prior state: the request plans no change")
	}
}

// BenchmarkPlanResourceChange is the framework's own cost of planning an update of a resource
// whose state holds 1,000 ordinals, with the ordinals as a nested attribute list and as the list
// of objects FromNested makes (make bench reports the ratio).
func BenchmarkPlanResourceChange(b *testing.B) {
	req := planRequest(b, 1000)
	for _, c := range []struct {
		name      string
		converted bool
	}{{"nested", false}, {"objectlist", true}} {
		srv := server(b, c.converted)
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				planOnce(b, srv, req)
			}
		})
	}
}

func mustUnmarshal(tb testing.TB, d *tfprotov6.DynamicValue, typ tftypes.Type) tftypes.Value {
	v, err := d.Unmarshal(typ)
	if err != nil {
		tb.Fatal(err)
	}
	return v
}
