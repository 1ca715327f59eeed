package nodepool

import (
	"context"
	"testing"

	"cloud.google.com/go/container/apiv1/containerpb"
	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"google.golang.org/protobuf/testing/protocmp"

	"github.com/olapgke/terraform-provider-olapgke/internal/stsutil"
)

func taintList(t *testing.T, keys ...string) types.List {
	t.Helper()
	et := types.ObjectType{AttrTypes: taintAttrTypes}
	if keys == nil {
		return types.ListNull(et)
	}
	vals := make([]attr.Value, 0, len(keys))
	for _, k := range keys {
		vals = append(vals, types.ObjectValueMust(taintAttrTypes, map[string]attr.Value{
			"key": types.StringValue(k), "value": types.StringValue("v"), "effect": types.StringValue("NO_SCHEDULE")}))
	}
	return types.ListValueMust(et, vals)
}

func gkeTaint(key, value string) *containerpb.NodeTaint {
	return &containerpb.NodeTaint{Key: key, Value: value, Effect: containerpb.NodeTaint_NO_SCHEDULE}
}

// expand sends the startup taint with the user's taints when storage_startup_taint is true, once.
func TestExpandStartupTaint(t *testing.T) {
	t.Parallel()
	startup := gkeTaint(stsutil.TaintStorageNotReady, "true")
	for name, tc := range map[string]struct {
		taints types.List
		on     types.Bool
		want   []*containerpb.NodeTaint
	}{
		"off":              {taintList(t, "dedicated"), types.BoolValue(false), []*containerpb.NodeTaint{gkeTaint("dedicated", "v")}},
		"on":               {taintList(t, "dedicated"), types.BoolValue(true), []*containerpb.NodeTaint{gkeTaint("dedicated", "v"), startup}},
		"on, no taints":    {taintList(t), types.BoolValue(true), []*containerpb.NodeTaint{startup}},
		"on, user has key": {taintList(t, stsutil.TaintStorageNotReady), types.BoolValue(true), []*containerpb.NodeTaint{gkeTaint(stsutil.TaintStorageNotReady, "v")}},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			m := &model{MachineType: types.StringValue("n2-standard-8"), Taints: tc.taints, StorageStartupTaint: tc.on}
			np, diags := expand(context.Background(), m)
			if diags.HasError() {
				t.Fatal(diags)
			}
			if d := cmp.Diff(tc.want, np.GetConfig().GetTaints(), protocmp.Transform()); d != "" {
				t.Errorf("taints sent to GKE (-want +got):\n%s", d)
			}
		})
	}
}

// flatten hides the startup taint from taints when storage_startup_taint is (or, on import,
// turns out to be) true, and leaves a user's own entry alone when it is false.
func TestFlattenStartupTaint(t *testing.T) {
	t.Parallel()
	startup := gkeTaint(stsutil.TaintStorageNotReady, "true")
	userStartup := types.ListValueMust(types.ObjectType{AttrTypes: taintAttrTypes}, []attr.Value{types.ObjectValueMust(taintAttrTypes, map[string]attr.Value{
		"key": types.StringValue(stsutil.TaintStorageNotReady), "value": types.StringValue("true"), "effect": types.StringValue("NO_SCHEDULE")})})
	for name, tc := range map[string]struct {
		gke        []*containerpb.NodeTaint
		prior      types.Bool
		priorList  types.List
		wantOn     types.Bool
		wantTaints types.List
	}{
		"on":                  {[]*containerpb.NodeTaint{gkeTaint("dedicated", "v"), startup}, types.BoolValue(true), taintList(t, "dedicated"), types.BoolValue(true), taintList(t, "dedicated")},
		"on, only startup":    {[]*containerpb.NodeTaint{startup}, types.BoolValue(true), taintList(t), types.BoolValue(true), taintList(t)},
		"on, removed by hand": {[]*containerpb.NodeTaint{gkeTaint("dedicated", "v")}, types.BoolValue(true), taintList(t, "dedicated"), types.BoolValue(false), taintList(t, "dedicated")},
		"off, user lists it":  {[]*containerpb.NodeTaint{startup}, types.BoolValue(false), userStartup, types.BoolValue(false), userStartup},
		"import, present":     {[]*containerpb.NodeTaint{gkeTaint("dedicated", "v"), startup}, types.BoolNull(), taintList(t), types.BoolValue(true), taintList(t, "dedicated")},
		"import, absent":      {[]*containerpb.NodeTaint{gkeTaint("dedicated", "v")}, types.BoolNull(), taintList(t), types.BoolValue(false), taintList(t, "dedicated")},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var diags diag.Diagnostics
			m := &model{Taints: tc.priorList, StorageStartupTaint: tc.prior}
			np := &containerpb.NodePool{Name: "p", Config: &containerpb.NodeConfig{MachineType: "n2-standard-8", Taints: tc.gke},
				UpgradeSettings: &containerpb.NodePool_UpgradeSettings{MaxSurge: 1}}
			flatten(context.Background(), np, m, &diags)
			if diags.HasError() {
				t.Fatal(diags)
			}
			if !m.StorageStartupTaint.Equal(tc.wantOn) {
				t.Errorf("storage_startup_taint = %v, want %v", m.StorageStartupTaint, tc.wantOn)
			}
			if !m.Taints.Equal(tc.wantTaints) {
				t.Errorf("taints = %v, want %v", m.Taints, tc.wantTaints)
			}
		})
	}
}
