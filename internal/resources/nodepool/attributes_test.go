package nodepool

import (
	"context"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/olapgke/terraform-provider-olapgke/internal/gkerules"
)

// TestEveryAttributeIsClassified ties the schema to gkerules' effect table: every attribute of
// olapgke_local_ssd_node_pool (network_config field by field) has an entry saying what changing
// it does, and every entry is an attribute. An attribute added to the schema without an entry
// fails here; in a build that skipped this test it would replace the pool (EffectOf fails closed).
func TestEveryAttributeIsClassified(t *testing.T) {
	t.Parallel()
	var sr resource.SchemaResponse
	(&nodePoolResource{}).Schema(context.Background(), resource.SchemaRequest{}, &sr)
	var names []string
	for name, a := range sr.Schema.Attributes {
		names = append(names, name)
		if name == "network_config" {
			for field := range a.(schema.SingleNestedAttribute).Attributes {
				names = append(names, name+"."+field)
			}
		}
	}
	for name := range sr.Schema.Blocks {
		names = append(names, name)
	}
	sort.Strings(names)
	table := gkerules.Attributes()
	for _, name := range names {
		if _, ok := table[name]; !ok {
			t.Errorf("attribute %s has no entry in gkerules' effect table (internal/gkerules/changes.go): say whether changing it is no-effect, in-place, recreates-nodes or replace", name)
		}
	}
	for name := range table {
		if !slices.Contains(names, name) {
			t.Errorf("gkerules' effect table names %s, which the schema lacks", name)
		}
	}
	// The model compared by changes() is the schema's: one field per top-level attribute.
	var fields []string
	mt := reflect.TypeFor[model]()
	for i := range mt.NumField() {
		fields = append(fields, mt.Field(i).Tag.Get("tfsdk"))
	}
	for _, name := range names {
		if top, _, nested := strings.Cut(name, "."); !nested && !slices.Contains(fields, top) {
			t.Errorf("attribute %s has no field in the model", name)
		}
	}
}

// TestChangesComparesEveryClassifiedAttribute: a change to any attribute the table says reaches
// GKE (in place, recreating the nodes, or replacing the pool) is found by changes(), with the
// table's effect, and a replacing change also makes Terraform replace the pool (replacing()),
// whether or not the schema carries a RequiresReplace modifier.
func TestChangesComparesEveryClassifiedAttribute(t *testing.T) {
	t.Parallel()
	mt := reflect.TypeFor[model]()
	for i := range mt.NumField() {
		name := mt.Field(i).Tag.Get("tfsdk")
		e := gkerules.EffectOf(name)
		if e == gkerules.NoEffect || name == "network_config" || name == "boot_disk" || name == "local_nvme_ssd_count" {
			continue
		}
		state, plan := &model{}, &model{}
		// A known value on one side and null on the other is a change of any attribute type.
		switch mt.Field(i).Type {
		case reflect.TypeFor[types.String]():
			reflect.ValueOf(plan).Elem().Field(i).Set(reflect.ValueOf(types.StringValue("x")))
		case reflect.TypeFor[types.Int64]():
			reflect.ValueOf(plan).Elem().Field(i).Set(reflect.ValueOf(types.Int64Value(1)))
		case reflect.TypeFor[types.Bool]():
			reflect.ValueOf(plan).Elem().Field(i).Set(reflect.ValueOf(types.BoolValue(true)))
		case reflect.TypeFor[types.Float64]():
			reflect.ValueOf(plan).Elem().Field(i).Set(reflect.ValueOf(types.Float64Value(1)))
		case reflect.TypeFor[types.List]():
			reflect.ValueOf(plan).Elem().Field(i).Set(reflect.ValueOf(types.ListValueMust(types.StringType, []attr.Value{types.StringValue("x")})))
		case reflect.TypeFor[types.Set]():
			reflect.ValueOf(plan).Elem().Field(i).Set(reflect.ValueOf(types.SetValueMust(types.StringType, []attr.Value{types.StringValue("x")})))
		case reflect.TypeFor[types.Map]():
			reflect.ValueOf(plan).Elem().Field(i).Set(reflect.ValueOf(types.MapValueMust(types.StringType, map[string]attr.Value{"k": types.StringValue("x")})))
		case reflect.TypeFor[types.Object]():
			reflect.ValueOf(plan).Elem().Field(i).Set(reflect.ValueOf(types.ObjectValueMust(map[string]attr.Type{}, map[string]attr.Value{})))
		default:
			t.Errorf("%s: a field of type %s the test cannot change", name, mt.Field(i).Type)
			continue
		}
		nullAll(state)
		nullAllBut(plan, i)
		changed, worst := changes(state, plan)
		if !changed[name] || len(changed) != 1 || worst != e {
			t.Errorf("%s changed: changes() = %v (worst %s), want only %s (%s)", name, changed, worst, name, e)
			continue
		}
		rep := replacing(state, plan, changed)
		if want := e == gkerules.Replace; want != (len(rep) == 1 && rep[0].Equal(path.Root(name))) {
			t.Errorf("%s changed: replacing() = %v, want replace %v", name, rep, want)
		}
	}
}

// nullAll sets every attr.Value field of m to the null of its type.
func nullAll(m *model) { nullAllBut(m, -1) }

func nullAllBut(m *model, skip int) {
	v := reflect.ValueOf(m).Elem()
	for i := range v.NumField() {
		if i == skip {
			continue
		}
		switch f := v.Field(i); f.Type() {
		case reflect.TypeFor[types.String]():
			f.Set(reflect.ValueOf(types.StringNull()))
		case reflect.TypeFor[types.Int64]():
			f.Set(reflect.ValueOf(types.Int64Null()))
		case reflect.TypeFor[types.Bool]():
			f.Set(reflect.ValueOf(types.BoolNull()))
		case reflect.TypeFor[types.Float64]():
			f.Set(reflect.ValueOf(types.Float64Null()))
		case reflect.TypeFor[types.List]():
			f.Set(reflect.ValueOf(types.ListNull(types.StringType)))
		case reflect.TypeFor[types.Set]():
			f.Set(reflect.ValueOf(types.SetNull(types.StringType)))
		case reflect.TypeFor[types.Map]():
			f.Set(reflect.ValueOf(types.MapNull(types.StringType)))
		case reflect.TypeFor[types.Object]():
			f.Set(reflect.ValueOf(types.ObjectNull(map[string]attr.Type{})))
		}
	}
}
