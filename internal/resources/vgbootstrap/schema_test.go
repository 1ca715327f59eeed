package vgbootstrap

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework-timeouts/resource/timeouts"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/defaults"
)

// TestSchemaDocumentsDefaults: every attribute with a default says it in its description, as the
// timeouts block's fields do; the docs are generated from these strings.
func TestSchemaDocumentsDefaults(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var sr resource.SchemaResponse
	(&bootstrapResource{}).Schema(ctx, resource.SchemaRequest{}, &sr)
	checked := 0
	for name, a := range sr.Schema.Attributes {
		var def string
		switch a := a.(type) {
		case schema.StringAttribute:
			if a.Default == nil {
				continue
			}
			var r defaults.StringResponse
			a.Default.DefaultString(ctx, defaults.StringRequest{}, &r)
			def = r.PlanValue.ValueString()
		case schema.BoolAttribute:
			if a.Default == nil {
				continue
			}
			var r defaults.BoolResponse
			a.Default.DefaultBool(ctx, defaults.BoolRequest{}, &r)
			def = fmt.Sprint(r.PlanValue.ValueBool())
		case schema.Int64Attribute:
			if a.Default == nil {
				continue
			}
			var r defaults.Int64Response
			a.Default.DefaultInt64(ctx, defaults.Int64Request{}, &r)
			def = fmt.Sprint(r.PlanValue.ValueInt64())
		default:
			continue
		}
		checked++
		if want := "Default `" + def + "`."; !strings.Contains(a.GetMarkdownDescription(), want) {
			t.Errorf("%s: description %q lacks %q", name, a.GetMarkdownDescription(), want)
		}
	}
	if checked < 5 {
		t.Errorf("checked %d attributes with defaults, want the 5 (namespace, create_namespace, volume_group, lvm_mode, recheck_seconds) at least", checked)
	}

	// timeouts is a block (it was an attribute before 0.x's change), of the same type, so state
	// written by the attribute schema still decodes.
	if _, ok := sr.Schema.Attributes["timeouts"]; ok {
		t.Fatal("timeouts is an attribute; it must be a block like on every other resource")
	}
	block, ok := sr.Schema.Blocks["timeouts"]
	if !ok {
		t.Fatal("no timeouts block")
	}
	old := timeouts.Attributes(ctx, timeouts.Opts{Create: true, Update: true, Delete: true}).GetType()
	if got := block.Type(); !got.Equal(old) {
		t.Fatalf("timeouts block type %s differs from the attribute's %s: old state would not decode", got, old)
	}
	for name, f := range block.GetNestedObject().GetAttributes() {
		if !strings.Contains(f.GetDescription(), "Default `10m`.") {
			t.Errorf("timeouts.%s description %q lacks the default 10m", name, f.GetDescription())
		}
	}
}
