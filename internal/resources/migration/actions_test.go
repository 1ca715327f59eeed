package migration

import (
	"context"
	"maps"
	"slices"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/action"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
)

// Every action's schema is valid, and its gate block has exactly the attributes and blocks of
// olapgke_statefulset_migration's (one definition, converted).
func TestActionSchemas(t *testing.T) {
	ctx := context.Background()
	var rs resource.SchemaResponse
	(&migrationResource{}).Schema(ctx, resource.SchemaRequest{}, &rs)
	gate, ok := rs.Schema.Blocks["gate"].(schema.ListNestedBlock)
	if !ok {
		t.Fatal("the migration has no gate block")
	}
	for _, a := range []action.Action{NewMoveOrdinalsAction(), NewRestartOrdinalsAction(), NewEvacuateNodePoolAction()} {
		var md action.MetadataResponse
		a.Metadata(ctx, action.MetadataRequest{ProviderTypeName: "olapgke"}, &md)
		var resp action.SchemaResponse
		a.Schema(ctx, action.SchemaRequest{}, &resp)
		if resp.Diagnostics.HasError() {
			t.Fatalf("%s: %v", md.TypeName, resp.Diagnostics)
		}
		if d := resp.Schema.ValidateImplementation(ctx); d.HasError() {
			t.Errorf("%s: %v", md.TypeName, d)
		}
		for _, attr := range []string{"min_ready_seconds", "require_others_ready", "force_delete_on_unreachable_nodes", "ordinal_timeout", "unschedulable_timeout", "timeout"} {
			if _, ok := resp.Schema.Attributes[attr]; !ok {
				t.Errorf("%s lacks %s", md.TypeName, attr)
			}
		}
		b, ok := resp.Schema.Blocks["gate"]
		if md.TypeName == "olapgke_evacuate_node_pool" {
			if ok {
				t.Errorf("%s has gates; it moves several StatefulSets without them", md.TypeName)
			}
			continue
		}
		if !ok {
			t.Fatalf("%s has no gate block", md.TypeName)
		}
		got := b.GetNestedObject()
		if d := slices.Compare(slices.Sorted(maps.Keys(gate.NestedObject.Attributes)), slices.Sorted(maps.Keys(got.GetAttributes()))); d != 0 {
			t.Errorf("%s: gate attributes %v, the migration's %v", md.TypeName, slices.Sorted(maps.Keys(got.GetAttributes())), slices.Sorted(maps.Keys(gate.NestedObject.Attributes)))
		}
		if d := slices.Compare(slices.Sorted(maps.Keys(gate.NestedObject.Blocks)), slices.Sorted(maps.Keys(got.GetBlocks()))); d != 0 {
			t.Errorf("%s: gate blocks differ from the migration's", md.TypeName)
		}
	}
}
