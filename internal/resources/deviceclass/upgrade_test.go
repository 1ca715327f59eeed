package deviceclass_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/olapgke/terraform-provider-olapgke/internal/acctest"
)

// A version 0 state (volumes[*].stateful_set, before the rename to statefulset) of a thin class
// with its StorageClass, used by two PVCs: an ordinal of a StatefulSet and a lone PVC.
const deviceClassStateV0 = `{
  "id": "topolvm-system/topolvm-lvmd-0/ssd-thin", "name": "ssd-thin", "volume_group": "vg-ssd", "default": false,
  "spare_gb": 10, "type": "thin", "thin_pool": {"name": "pool0", "overprovision_ratio": 5},
  "lvcreate_options": ["--type=raid1"], "stripe": null, "stripe_size": null,
  "lvmd_config_map": {"namespace": "topolvm-system", "name": "topolvm-lvmd-0", "key": "lvmd.yaml"},
  "storage_class": {"name": "topolvm-ssd-thin", "fs_type": "xfs", "reclaim_policy": "Delete", "allow_volume_expansion": true,
    "is_default": false, "volume_binding_mode": "WaitForFirstConsumer", "labels": null, "annotations": {"team": "olap"}},
  "restart_lvmd": false, "force_destroy": false,
  "capacity": {"n-a-1": 1099511627776, "n-a-2": 549755813888},
  "volumes": [
    {"namespace": "olap", "pvc": "cache-historical-0", "pv": "pv-0", "node": "n-a-1", "storage_class": "topolvm-ssd-thin",
     "stateful_set": "olap/historical", "ordinal": 0},
    {"namespace": "olap", "pvc": "scratch", "pv": "", "node": "", "storage_class": "topolvm-ssd-thin",
     "stateful_set": "", "ordinal": -1}
  ]
}`

func TestUnitDeviceClass_UpgradeStateV0(t *testing.T) {
	got := acctest.UpgradeState(t, "olapgke_topolvm_device_class", 0, deviceClassStateV0)
	want := []any{
		map[string]any{"namespace": "olap", "pvc": "cache-historical-0", "pv": "pv-0", "node": "n-a-1",
			"storage_class": "topolvm-ssd-thin", "statefulset": "olap/historical", "ordinal": 0.0},
		map[string]any{"namespace": "olap", "pvc": "scratch", "pv": "", "node": "",
			"storage_class": "topolvm-ssd-thin", "statefulset": "", "ordinal": -1.0},
	}
	if d := cmp.Diff(want, got["volumes"]); d != "" {
		t.Errorf("volumes (-want +got):\n%s", d)
	}
	if got["id"] != "topolvm-system/topolvm-lvmd-0/ssd-thin" || got["spare_gb"] != 10.0 ||
		got["thin_pool"].(map[string]any)["overprovision_ratio"] != 5.0 ||
		got["capacity"].(map[string]any)["n-a-2"] != 549755813888.0 ||
		got["storage_class"].(map[string]any)["annotations"].(map[string]any)["team"] != "olap" {
		t.Errorf("upgraded state = %v, want the version 0 values kept", got)
	}
}

// A version 0 state with no volumes (null, as after import before a refresh, or empty) upgrades
// with volumes kept as they were.
func TestUnitDeviceClass_UpgradeStateV0NoVolumes(t *testing.T) {
	for name, volumes := range map[string]string{"null": "null", "empty": "[]"} {
		t.Run(name, func(t *testing.T) {
			got := acctest.UpgradeState(t, "olapgke_topolvm_device_class", 0, `{
  "id": "topolvm-system/topolvm-lvmd-0/ssd", "name": "ssd", "volume_group": "vg-ssd", "default": true,
  "spare_gb": null, "type": "thick", "thin_pool": null, "lvcreate_options": null, "stripe": null, "stripe_size": null,
  "lvmd_config_map": {"namespace": "topolvm-system", "name": "topolvm-lvmd-0", "key": "lvmd.yaml"},
  "storage_class": null, "restart_lvmd": false, "force_destroy": false, "capacity": null,
  "volumes": `+volumes+`}`)
			switch v, ok := got["volumes"]; {
			case !ok:
				t.Error("volumes missing from the upgraded state")
			case volumes == "null" && v != nil:
				t.Errorf("volumes = %v, want null", v)
			case volumes == "[]" && (v == nil || len(v.([]any)) != 0):
				t.Errorf("volumes = %#v, want an empty list", v)
			}
			if got["name"] != "ssd" || got["default"] != true {
				t.Errorf("upgraded state = %v, want the version 0 values kept", got)
			}
		})
	}
}
