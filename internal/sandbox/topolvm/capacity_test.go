package topolvm

import (
	"encoding/json"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const gib = int64(1) << 30

func TestClassCapacity(t *testing.T) {
	t.Parallel()
	thick := DeviceClass{Name: "ssd", VolumeGroup: "vg", Default: true}
	spare50 := DeviceClass{Name: "ssd", VolumeGroup: "vg", Default: true, SpareGB: new(uint64(50))}
	thin := DeviceClass{Name: "thin", VolumeGroup: "vg", Type: TypeThin, SpareGB: new(uint64(0)), ThinPool: &ThinPool{Name: "pool", OverprovisionRatio: 5}}
	thin2 := DeviceClass{Name: "thin2", VolumeGroup: "vg", Type: TypeThin, ThinPool: &ThinPool{Name: "other", OverprovisionRatio: 2}}
	pools := map[string]int64{"pool": 750 * gib, "other": 365 * gib}
	tests := map[string]struct {
		dc      DeviceClass
		classes []DeviceClass
		vg      int64
		pools   map[string]int64
		vols    []volume
		want    int64
	}{
		"thick empty, default spare 10 GiB": {thick, []DeviceClass{thick}, 750 * gib, nil, nil, 740 * gib},
		"thick spare-gb 50":                 {spare50, []DeviceClass{spare50}, 750 * gib, nil, nil, 700 * gib},
		"thick with usage":                  {thick, []DeviceClass{thick}, 750 * gib, nil, []volume{{"n", "ssd", 100 * gib}, {"n", "ssd", 40 * gib}}, 600 * gib},
		"thick never negative":              {thick, []DeviceClass{thick}, 375 * gib, nil, []volume{{"n", "ssd", 370 * gib}}, 0},
		"vg smaller than spare":             {thick, []DeviceClass{thick}, 5 * gib, nil, nil, 0},
		"unknown class counts as thick":     {thick, []DeviceClass{thick}, 750 * gib, nil, []volume{{"n", "gone", 100 * gib}}, 640 * gib},
		"thin pools take thick space":       {thick, []DeviceClass{thick, thin}, 1500 * gib, pools, nil, 375 * gib},
		"thin overprovisioned":              {thin, []DeviceClass{thick, thin}, 1500 * gib, pools, nil, 3750 * gib},
		"thin usage only from its pool":     {thin, []DeviceClass{thick, thin, thin2}, 1500 * gib, pools, []volume{{"n", "thin", 1000 * gib}, {"n", "ssd", 500 * gib}, {"n", "thin2", 7 * gib}}, 2750 * gib},
		"thick ignores thin usage":          {thick, []DeviceClass{thick, thin}, 1500 * gib, pools, []volume{{"n", "thin", 1000 * gib}}, 375 * gib},
		"thin has no spare":                 {thin2, []DeviceClass{thin2}, 1500 * gib, pools, nil, 730 * gib},
		"thin never negative":               {thin, []DeviceClass{thin}, 1500 * gib, map[string]int64{"pool": 10 * gib}, []volume{{"n", "thin", 51 * gib}}, 0},
		"thin pool missing":                 {thin, []DeviceClass{thin}, 1500 * gib, map[string]int64{"other": gib}, nil, 0},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if got := classCapacity(tc.dc, tc.classes, tc.vg, tc.pools, tc.vols); got != tc.want {
				t.Errorf("classCapacity = %d (%d GiB), want %d (%d GiB)", got, got/gib, tc.want, tc.want/gib)
			}
		})
	}
	// A thin class whose pool is missing gets no capacity entry at all.
	got := nodeCapacities([]DeviceClass{thick, thin, thin2}, "vg", 1500*gib, map[string]int64{"other": 365 * gib}, nil)
	if _, ok := got["thin"]; ok || got["thin2"] != 730*gib || got["ssd"] != 1125*gib {
		t.Errorf("nodeCapacities = %v, want ssd and thin2 only", got)
	}
	if p, err := ParseThinPools(FormatThinPools(pools)); err != nil || len(p) != 2 || p["pool"] != 750*gib {
		t.Errorf("ParseThinPools(FormatThinPools) = %v, %v", p, err)
	}
	if _, err := ParseThinPools("pool=x"); err == nil {
		t.Error("ParseThinPools accepted a size that is not a number")
	}
}

func TestNodeVolumeGroup(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		ann   map[string]string
		vg    string
		bytes int64
	}{
		"no annotation":   {nil, "", 0},
		"zero":            {map[string]string{AnnSSDCount: "0"}, "", 0},
		"garbage":         {map[string]string{AnnSSDCount: "two"}, "", 0},
		"two, default vg": {map[string]string{AnnSSDCount: "2"}, "vg-ssd", 750 * gib},
		"custom vg":       {map[string]string{AnnSSDCount: "4", AnnVolumeGroup: "vg-x"}, "vg-x", 1500 * gib},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			vg, b := nodeVolumeGroup(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Annotations: tc.ann}})
			if vg != tc.vg || b != tc.bytes {
				t.Errorf("nodeVolumeGroup = %q, %d; want %q, %d", vg, b, tc.vg, tc.bytes)
			}
		})
	}
}

func TestRoundUpGiB(t *testing.T) {
	t.Parallel()
	for in, want := range map[int64]int64{0: gib, 1: gib, gib: gib, gib + 1: 2 * gib, 10 * gib: 10 * gib} {
		if got := roundUpGiB(in); got != want {
			t.Errorf("roundUpGiB(%d) = %d, want %d", in, got, want)
		}
	}
}

func TestParseLVMDConfig(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		yaml    string
		wantErr string
		check   func(t *testing.T, c []DeviceClass)
	}{
		"full": {
			yaml: `socket-name: /run/topolvm/lvmd.sock
device-classes:
- name: ssd
  volume-group: vg-ssd
  default: true
  spare-gb: 20
- name: thin
  volume-group: vg-ssd
  type: thin
  thin-pool:
    name: pool0
    overprovision-ratio: 2.5
lvcreate-option-classes:
- name: raid1
  options: ["--type=raid1"]
`,
			check: func(t *testing.T, c []DeviceClass) {
				if len(c) != 2 || *c[0].SpareGB != 20 || !c[0].Default || c[1].ThinPool.Name != "pool0" || c[1].ThinPool.OverprovisionRatio != 2.5 || !c[1].IsThin() {
					t.Errorf("parsed %+v", c)
				}
			},
		},
		// lvmd v0.41.0's messages (TestValidateIsLvmds in topolvmreal/fakelvmd runs lvmd's own
		// function on the same cases).
		"no classes":        {yaml: "socket-name: x\n", wantErr: "should have at least one device-class"},
		"no default":        {yaml: "device-classes:\n- {name: a, volume-group: v}\n", check: func(t *testing.T, c []DeviceClass) {}},
		"two defaults":      {yaml: "device-classes:\n- {name: a, volume-group: v, default: true}\n- {name: b, volume-group: w, default: true}\n", wantErr: "should not have multiple default device-class"},
		"duplicate":         {yaml: "device-classes:\n- {name: a, volume-group: v, default: true}\n- {name: a, volume-group: w}\n", wantErr: "duplicate device-class name: a"},
		"duplicate vg":      {yaml: "device-classes:\n- {name: a, volume-group: v, default: true}\n- {name: b, volume-group: v}\n", wantErr: "duplicate volumegroup/thinpool name: b, v"},
		"duplicate pool":    {yaml: "device-classes:\n- {name: a, volume-group: v, type: thin, thin-pool: {name: p, overprovision-ratio: 2}}\n- {name: b, volume-group: v, type: thin, thin-pool: {name: p, overprovision-ratio: 3}}\n", wantErr: "duplicate volumegroup/thinpool name: b, v/p"},
		"name rule":         {yaml: "device-classes:\n- {name: -a, volume-group: v}\n", wantErr: "device-class name should consist of alphanumeric characters"},
		"name too long":     {yaml: "device-classes:\n- {name: " + strings.Repeat("a", 64) + ", volume-group: v}\n", wantErr: "device-class name is too long"},
		"stripe size":       {yaml: "device-classes:\n- {name: a, volume-group: v, stripe-size: 4x}\n", wantErr: `stripe-size format is "Size[k|UNIT]": a`},
		"thin without pool": {yaml: "device-classes:\n- {name: a, volume-group: v, default: true, type: thin}\n", wantErr: "device class type is thin but thinpool config is empty: a"},
		"ratio below one":   {yaml: "device-classes:\n- {name: a, volume-group: v, default: true, type: thin, thin-pool: {name: p, overprovision-ratio: 0.5}}\n", wantErr: "overprovision ratio for thin pool p in device class a should be 1.0 or more"},
		"bad type":          {yaml: "device-classes:\n- {name: a, volume-group: v, default: true, type: raid}\n", wantErr: "target 'type' of device-class can be one of 'thick' or 'thin'"},
		"no vg":             {yaml: "device-classes:\n- {name: a, default: true}\n", wantErr: "volume group name should not be empty: a"},
		"not yaml":          {yaml: "device-classes: [", wantErr: "parse lvmd config"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			c, err := ParseLVMDConfig(tc.yaml)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want it to contain %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, c)
		})
	}
}

func TestMergeLVMDConfigKeepsOtherFields(t *testing.T) {
	t.Parallel()
	in := "socket-name: /custom.sock\nlvcreate-option-classes:\n- name: raid1\n  options: [\"--type=raid1\"]\ndevice-classes:\n- {name: old, volume-group: v, default: true}\n"
	out, err := mergeLVMDConfig(in, []DeviceClass{{Name: "ssd", VolumeGroup: "vg-ssd", Default: true, SpareGB: new(uint64(0))}})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"socket-name: /custom.sock", "--type=raid1", "name: ssd", "volume-group: vg-ssd", "spare-gb: 0"} {
		if !strings.Contains(out, want) {
			t.Errorf("merged config lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "name: old") {
		t.Errorf("merged config still has the old class:\n%s", out)
	}
	c, err := ParseLVMDConfig(out)
	if err != nil || len(c) != 1 || c[0].Name != "ssd" {
		t.Errorf("re-parse: %v %+v", err, c)
	}
}

func TestNodeMetaPatch(t *testing.T) {
	t.Parallel()
	node := func(labels, anns map[string]string, fins ...string) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: labels, Annotations: anns, Finalizers: fins}}
	}
	done := node(map[string]string{TopologyKey: "n1"}, map[string]string{CapacityAnnPrefix + "ssd": "5", DefaultCapacityKey: "5", "other": "x"}, "x", NodeFinalizer)
	tests := map[string]struct {
		n      *corev1.Node
		hasVG  bool
		free   map[string]int64
		hasDef bool
		want   string
	}{
		"fresh node": {node(nil, nil), true, map[string]int64{"ssd": 5}, true,
			`{"metadata":{"annotations":{"capacity.topolvm.io/00default":"5","capacity.topolvm.io/ssd":"5"},"finalizers":["topolvm.io/node"],"labels":{"topology.topolvm.io/node":"n1"}}}`},
		"up to date":           {done, true, map[string]int64{"ssd": 5}, true, `null`},
		"capacity changed":     {done, true, map[string]int64{"ssd": 7}, true, `{"metadata":{"annotations":{"capacity.topolvm.io/00default":"7","capacity.topolvm.io/ssd":"7"}}}`},
		"default class gone":   {done, true, map[string]int64{"ssd": 5}, false, `{"metadata":{"annotations":{"capacity.topolvm.io/00default":null}}}`},
		"class removed":        {done, true, map[string]int64{"hdd": 1}, false, `{"metadata":{"annotations":{"capacity.topolvm.io/00default":null,"capacity.topolvm.io/hdd":"1","capacity.topolvm.io/ssd":null}}}`},
		"no volume group":      {done, false, map[string]int64{}, true, `{"metadata":{"annotations":{"capacity.topolvm.io/00default":null,"capacity.topolvm.io/ssd":null}}}`},
		"plain node untouched": {node(nil, map[string]string{"other": "x"}), false, map[string]int64{}, true, `null`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got, err := json.Marshal(nodeMetaPatch(tc.n, tc.hasVG, tc.free, "ssd", tc.hasDef))
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Errorf("patch\n got %s\nwant %s", got, tc.want)
			}
		})
	}
}
