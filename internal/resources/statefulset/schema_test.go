package statefulset

import (
	"context"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/types"
)

func TestSchemasValid(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var rs resource.SchemaResponse
	NewStatefulSetResource().Schema(ctx, resource.SchemaRequest{}, &rs)
	if rs.Diagnostics.HasError() {
		t.Fatal(rs.Diagnostics)
	}
	if d := rs.Schema.ValidateImplementation(ctx); d.HasError() {
		t.Fatal(d)
	}
	var ds datasource.SchemaResponse
	NewOrdinalsDataSource().Schema(ctx, datasource.SchemaRequest{}, &ds)
	if d := ds.Schema.ValidateImplementation(ctx); d.HasError() {
		t.Fatal(d)
	}
	// The model's attribute types must match the schema (a mismatch only shows at runtime).
	if got := rs.Schema.Attributes["ordinals"].GetType(); !got.Equal(types.ListType{ElemType: ordinalType}) {
		t.Errorf("ordinals: schema type %s, model type %s", got, ordinalType)
	}
	if got := rs.Schema.Attributes["claim_resizes"].GetType(); !got.Equal(types.ListType{ElemType: claimResizeType}) {
		t.Errorf("claim_resizes: schema type %s, model type %s", got, claimResizeType)
	}
	if got := rs.Schema.Attributes["rollout"].GetType(); !got.Equal(types.ObjectType{AttrTypes: rolloutAttrTypes}) {
		t.Errorf("rollout: schema type %s, model type %v", got, rolloutAttrTypes)
	}
	if got := ds.Schema.Attributes["ordinals"].GetType(); !got.Equal(types.ListType{ElemType: dsOrdinalType}) {
		t.Errorf("data source ordinals: schema type %s, model type %s", got, dsOrdinalType)
	}
}
