package nodepool

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-timeouts/resource/timeouts"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-go/tftypes"
)

// TestTimeoutsBlockReadsStateOfTheAttribute: timeouts became a block (0.x; it was an attribute,
// `timeouts = { ... }`). Terraform stores both as the same object, so state written by the
// attribute schema decodes under the block schema with its values. This is what makes the change
// state-compatible (no schema version, no upgrader).
func TestTimeoutsBlockReadsStateOfTheAttribute(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var sr resource.SchemaResponse
	(&nodePoolResource{}).Schema(ctx, resource.SchemaRequest{}, &sr)
	if _, ok := sr.Schema.Attributes["timeouts"]; ok {
		t.Fatal("timeouts is still an attribute; it must be a block like on every other resource")
	}
	block, ok := sr.Schema.Blocks["timeouts"]
	if !ok {
		t.Fatal("no timeouts block")
	}
	opts := timeouts.Opts{Create: true, Read: true, Update: true, Delete: true}
	old := timeouts.Attributes(ctx, opts).GetType().TerraformType(ctx)
	if got := block.Type().TerraformType(ctx); !got.Equal(old) {
		t.Fatalf("block type %s differs from the attribute's %s: old state would not decode", got, old)
	}

	// The timeouts part of a state file written by the attribute schema.
	raw := []byte(`{"create":"45m","read":null,"update":"2h","delete":null}`)
	v, err := tftypes.ValueFromJSONWithOpts(raw, old, tftypes.ValueFromJSONOpts{})
	if err != nil {
		t.Fatal(err)
	}
	full := sr.Schema.Type().TerraformType(ctx).(tftypes.Object)
	vals := map[string]tftypes.Value{}
	for name, typ := range full.AttributeTypes {
		vals[name] = tftypes.NewValue(typ, nil)
	}
	vals["timeouts"] = v
	state := tfsdk.State{Schema: sr.Schema, Raw: tftypes.NewValue(full, vals)}
	var got timeouts.Value
	if d := state.GetAttribute(ctx, path.Root("timeouts"), &got); d.HasError() {
		t.Fatalf("old state does not decode: %v", d)
	}
	create, d1 := got.Create(ctx, time.Minute)
	update, d2 := got.Update(ctx, time.Minute)
	del, d3 := got.Delete(ctx, time.Minute)
	d1.Append(d2...)
	d1.Append(d3...)
	if d1.HasError() || create != 45*time.Minute || update != 2*time.Hour || del != time.Minute {
		t.Errorf("decoded create=%v update=%v delete=%v (%v), want 45m, 2h and the default 1m", create, update, del, d1)
	}
}

// TestTimeoutsDocumentDefaults: each timeouts field's description states the default the CRUD
// code uses.
func TestTimeoutsDocumentDefaults(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var sr resource.SchemaResponse
	(&nodePoolResource{}).Schema(ctx, resource.SchemaRequest{}, &sr)
	attrs := sr.Schema.Blocks["timeouts"].GetNestedObject().GetAttributes()
	for name, want := range map[string]string{"create": "Default `30m`.", "read": "Default `5m`.", "update": "Default `1h`.", "delete": "Default `30m`."} {
		if got := attrs[name].GetDescription(); !strings.Contains(got, want) {
			t.Errorf("timeouts.%s description %q lacks %q", name, got, want)
		}
	}
	for d, want := range map[time.Duration]string{30 * time.Minute: "30m", time.Hour: "1h", 90 * time.Minute: "1h30m", 90 * time.Second: "1m30s", 10 * time.Second: "10s"} {
		if got := shortDuration(d); got != want {
			t.Errorf("shortDuration(%v) = %q, want %q", d, got, want)
		}
	}
}
