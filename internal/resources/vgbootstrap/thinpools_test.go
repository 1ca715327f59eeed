package vgbootstrap

import (
	"context"
	"maps"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	appsv1 "k8s.io/api/apps/v1"
)

// TestThinPoolsReachTheScript: thin_pools becomes the script's THIN_POOLS ("name:percent",
// sorted) on the DaemonSet and reads back from it; none is an empty THIN_POOLS and a null
// attribute.
func TestThinPoolsReachTheScript(t *testing.T) {
	t.Parallel()
	for name, pools := range map[string]map[string]int64{"two": {"pool1": 10, "pool0": 80}, "none": {}} {
		objs, err := manifests(options{Namespace: "s", Image: "i", VolumeGroup: "vg-ssd", LVMMode: "auto", RecheckSeconds: 60, ThinPools: pools})
		if err != nil {
			t.Fatal(err)
		}
		for _, obj := range objs {
			ds, ok := obj.(*appsv1.DaemonSet)
			if !ok {
				continue
			}
			env := ""
			for _, e := range ds.Spec.Template.Spec.Containers[0].Env {
				if e.Name == "THIN_POOLS" {
					env = e.Value
				}
			}
			if want := map[string]string{"two": "pool0:80,pool1:10", "none": ""}[name]; env != want {
				t.Errorf("%s: THIN_POOLS = %q, want %q", name, env, want)
			}
			if got := thinPoolsFromDaemonSet(ds); !maps.Equal(got, pools) {
				t.Errorf("%s: read back %v, want %v", name, got, pools)
			}
		}
	}
	if v := thinPoolsValue(map[string]int64{}, types.MapNull(types.Int64Type)); !v.IsNull() {
		t.Errorf("no pools, attribute unset: %v, want null", v)
	}
	if v := thinPoolsValue(map[string]int64{"p": 5}, types.MapNull(types.Int64Type)); len(v.Elements()) != 1 {
		t.Errorf("a pool added outside Terraform: %v, want it in state (drift)", v)
	}
}

func TestThinPoolsValidator(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		pools map[string]int64
		want  string
	}{
		"one":          {map[string]int64{"pool0": 80}, ""},
		"all of it":    {map[string]int64{"a": 60, "b": 40}, ""},
		"too much":     {map[string]int64{"a": 60, "b": 41}, "Thin Pools Exceed The Volume Group"},
		"zero":         {map[string]int64{"a": 0}, "Invalid Thin Pool Size"},
		"over 100":     {map[string]int64{"a": 101}, "Invalid Thin Pool Size"},
		"bad lvm name": {map[string]int64{"-a": 10}, "Invalid Thin Pool Name"},
	} {
		vals := map[string]attr.Value{}
		for k, v := range tc.pools {
			vals[k] = types.Int64Value(v)
		}
		resp := &validator.MapResponse{}
		thinPoolsValidator{}.ValidateMap(context.Background(), validator.MapRequest{Path: path.Root("thin_pools"), ConfigValue: types.MapValueMust(types.Int64Type, vals)}, resp)
		got := ""
		if resp.Diagnostics.HasError() {
			got = resp.Diagnostics.Errors()[0].Summary()
		}
		if got != tc.want {
			t.Errorf("%s: %q, want %q", name, got, tc.want)
		}
	}
}
