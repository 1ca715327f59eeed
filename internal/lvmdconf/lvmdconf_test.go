package lvmdconf

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"
)

const chartConfig = `socket-name: /run/topolvm/lvmd.sock
lvcreate-option-classes:
  - name: raid1
    options: ["--type=raid1"]
future-top-level: {a: 1}
device-classes:
  - name: ssd
    volume-group: vg-ssd
    default: true
    spare-gb: 10
    owner-note: kept
  - name: hdd
    volume-group: vg-hdd
    x-custom: [1, 2]
`

func ptr[T any](v T) *T { return &v }

func reparse(t *testing.T, s string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := yaml.Unmarshal([]byte(s), &m); err != nil {
		t.Fatalf("output is not YAML: %v\n%s", err, s)
	}
	return m
}

func TestMergePreservesForeignEntriesAndKeys(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		edit func(*Config) error
		want string // device-classes of the result, YAML
	}{
		"append new class": {
			edit: func(c *Config) error {
				return c.Set(DeviceClass{Name: "thin1", VolumeGroup: "vg-ssd", Type: TypeThin, ThinPool: &ThinPool{Name: "pool0", OverprovisionRatio: 5}})
			},
			want: `
- {name: ssd, volume-group: vg-ssd, default: true, spare-gb: 10, owner-note: kept}
- {name: hdd, volume-group: vg-hdd, x-custom: [1, 2]}
- {name: thin1, volume-group: vg-ssd, type: thin, thin-pool: {name: pool0, overprovision-ratio: 5}}
`,
		},
		"update adopted class keeps unknown fields, drops cleared known ones": {
			edit: func(c *Config) error {
				return c.Set(DeviceClass{Name: "ssd", VolumeGroup: "vg-ssd", Default: true, StripeSize: "64k", Stripe: ptr(uint(2))})
			},
			want: `
- {name: ssd, volume-group: vg-ssd, default: true, stripe: 2, stripe-size: 64k, owner-note: kept}
- {name: hdd, volume-group: vg-hdd, x-custom: [1, 2]}
`,
		},
		"rename keeps position and unknown fields": {
			edit: func(c *Config) error {
				return c.Rename("hdd", DeviceClass{Name: "disk", VolumeGroup: "vg-hdd", SpareGB: ptr(uint64(0))})
			},
			want: `
- {name: ssd, volume-group: vg-ssd, default: true, spare-gb: 10, owner-note: kept}
- {name: disk, volume-group: vg-hdd, spare-gb: 0, x-custom: [1, 2]}
`,
		},
		"remove one class": {
			edit: func(c *Config) error { _, err := c.Remove("hdd"); return err },
			want: `
- {name: ssd, volume-group: vg-ssd, default: true, spare-gb: 10, owner-note: kept}
`,
		},
		"remove missing class is a no-op": {
			edit: func(c *Config) error { _, err := c.Remove("nope"); return err },
			want: `
- {name: ssd, volume-group: vg-ssd, default: true, spare-gb: 10, owner-note: kept}
- {name: hdd, volume-group: vg-hdd, x-custom: [1, 2]}
`,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			c, err := Parse(chartConfig)
			if err != nil {
				t.Fatal(err)
			}
			if err := tc.edit(c); err != nil {
				t.Fatal(err)
			}
			out, err := c.Marshal()
			if err != nil {
				t.Fatal(err)
			}
			got := reparse(t, out)
			orig := reparse(t, chartConfig)
			for _, k := range []string{"socket-name", "lvcreate-option-classes", "future-top-level"} {
				if diff := cmp.Diff(orig[k], got[k]); diff != "" {
					t.Errorf("top-level key %s changed (-want +got):\n%s", k, diff)
				}
			}
			var want []any
			if err := yaml.Unmarshal([]byte(tc.want), &want); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, got["device-classes"]); diff != "" {
				t.Errorf("device-classes (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParse(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		text    string
		want    []DeviceClass
		wantErr string
	}{
		"empty document": {text: "", want: []DeviceClass{}},
		"typed fields": {
			text: "device-classes:\n- name: t\n  volume-group: vg\n  type: thin\n  spare-gb: 0\n  lvcreate-options: [--mirrors=1]\n  thin-pool: {name: p, overprovision-ratio: 2.5}\n",
			want: []DeviceClass{{Name: "t", VolumeGroup: "vg", Type: TypeThin, SpareGB: ptr(uint64(0)), LVCreateOptions: []string{"--mirrors=1"}, ThinPool: &ThinPool{Name: "p", OverprovisionRatio: 2.5}}},
		},
		"not a mapping":      {text: "- a\n- b\n", wantErr: "not a YAML mapping"},
		"classes not a list": {text: "device-classes: {a: 1}\n", wantErr: "not a list"},
		"entry not a map":    {text: "device-classes: [x]\n", wantErr: "not a mapping"},
		"negative spare":     {text: "device-classes:\n- name: a\n  volume-group: v\n  spare-gb: -1\n", wantErr: "device-classes[0]"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			c, err := Parse(tc.text)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got, err := c.Classes()
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestValidateClass(t *testing.T) {
	t.Parallel()
	thin := func(r float64) *ThinPool { return &ThinPool{Name: "pool0", OverprovisionRatio: r} }
	tests := map[string]struct {
		dc      DeviceClass
		wantErr string // "" = valid
	}{
		"minimal thick":           {dc: DeviceClass{Name: "ssd", VolumeGroup: "vg-ssd"}},
		"dots and underscores":    {dc: DeviceClass{Name: "a_b.c-1", VolumeGroup: "vg_1.x+y"}},
		"thin ok":                 {dc: DeviceClass{Name: "t", VolumeGroup: "vg", Type: TypeThin, ThinPool: thin(1.5)}},
		"stripe sizes":            {dc: DeviceClass{Name: "s", VolumeGroup: "vg", Stripe: ptr(uint(2)), StripeSize: "64k"}},
		"stripe size bare number": {dc: DeviceClass{Name: "s", VolumeGroup: "vg", StripeSize: "4096"}},
		"stripe size upper unit":  {dc: DeviceClass{Name: "s", VolumeGroup: "vg", StripeSize: "4M"}},
		"empty name":              {dc: DeviceClass{VolumeGroup: "vg"}, wantErr: "name is empty"},
		"name leading dash":       {dc: DeviceClass{Name: "-a", VolumeGroup: "vg"}, wantErr: "start and end with an alphanumeric"},
		"name with slash":         {dc: DeviceClass{Name: "a/b", VolumeGroup: "vg"}, wantErr: "alphanumeric characters"},
		"name too long":           {dc: DeviceClass{Name: strings.Repeat("a", 64), VolumeGroup: "vg"}, wantErr: "at most 63"},
		"vg empty":                {dc: DeviceClass{Name: "a"}, wantErr: "volume group name is empty"},
		"vg leading dash":         {dc: DeviceClass{Name: "a", VolumeGroup: "-vg"}, wantErr: "not a valid LVM name"},
		"vg dotdot":               {dc: DeviceClass{Name: "a", VolumeGroup: ".."}, wantErr: "not a valid LVM name"},
		"thin without pool":       {dc: DeviceClass{Name: "t", VolumeGroup: "vg", Type: TypeThin}, wantErr: "no thin-pool"},
		"thick with pool":         {dc: DeviceClass{Name: "t", VolumeGroup: "vg", ThinPool: thin(2)}, wantErr: "used only with type thin"},
		"ratio exactly one":       {dc: DeviceClass{Name: "t", VolumeGroup: "vg", Type: TypeThin, ThinPool: thin(1)}, wantErr: "greater than 1"},
		"ratio below one":         {dc: DeviceClass{Name: "t", VolumeGroup: "vg", Type: TypeThin, ThinPool: thin(0.5)}, wantErr: "greater than 1"},
		"unknown type":            {dc: DeviceClass{Name: "t", VolumeGroup: "vg", Type: "raid"}, wantErr: "thick and thin"},
		"stripe zero":             {dc: DeviceClass{Name: "s", VolumeGroup: "vg", Stripe: ptr(uint(0))}, wantErr: "at least 1"},
		"stripe size gib":         {dc: DeviceClass{Name: "s", VolumeGroup: "vg", StripeSize: "4gib"}, wantErr: "lvcreate size syntax"},
		"stripe size unit only":   {dc: DeviceClass{Name: "s", VolumeGroup: "vg", StripeSize: "k"}, wantErr: "lvcreate size syntax"},
		"stripe size decimal":     {dc: DeviceClass{Name: "s", VolumeGroup: "vg", StripeSize: "1.5m"}, wantErr: "lvcreate size syntax"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			errs := ValidateClass(tc.dc)
			if tc.wantErr == "" {
				if len(errs) != 0 {
					t.Fatalf("want valid, got %v", errs)
				}
				return
			}
			for _, err := range errs {
				if strings.Contains(err.Error(), tc.wantErr) {
					return
				}
			}
			t.Fatalf("errors %v do not mention %q", errs, tc.wantErr)
		})
	}
}

func TestConflicts(t *testing.T) {
	t.Parallel()
	thin := func(name, vg, pool string) DeviceClass {
		return DeviceClass{Name: name, VolumeGroup: vg, Type: TypeThin, ThinPool: &ThinPool{Name: pool, OverprovisionRatio: 2}}
	}
	tests := map[string]struct {
		classes []DeviceClass
		want    []string // substrings, one per expected error
	}{
		"one default":                {classes: []DeviceClass{{Name: "a", VolumeGroup: "v1", Default: true}, {Name: "b", VolumeGroup: "v2"}}},
		"thick and thin share a vg":  {classes: []DeviceClass{{Name: "a", VolumeGroup: "v", Default: true}, thin("t1", "v", "p0"), thin("t2", "v", "p1")}},
		"same pool name, other vg":   {classes: []DeviceClass{thin("t1", "v1", "p0"), {Name: "d", VolumeGroup: "x", Default: true}, thin("t2", "v2", "p0")}},
		"no default":                 {classes: []DeviceClass{{Name: "a", VolumeGroup: "v"}}, want: []string{"no device-class is marked default"}},
		"two defaults":               {classes: []DeviceClass{{Name: "a", VolumeGroup: "v1", Default: true}, {Name: "b", VolumeGroup: "v2", Default: true}}, want: []string{"2 device-classes are marked default (a, b)"}},
		"duplicate name":             {classes: []DeviceClass{{Name: "a", VolumeGroup: "v1", Default: true}, {Name: "a", VolumeGroup: "v2"}}, want: []string{`"a" appears twice`}},
		"two thick classes on a vg":  {classes: []DeviceClass{{Name: "a", VolumeGroup: "v", Default: true}, {Name: "b", VolumeGroup: "v"}}, want: []string{`"a" and "b" both use volume group "v"`}},
		"two thin classes on a pool": {classes: []DeviceClass{{Name: "a", VolumeGroup: "v", Default: true}, thin("t1", "v", "p"), thin("t2", "v", "p")}, want: []string{`both use thin pool "v/p"`}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			errs := Conflicts(tc.classes)
			if len(errs) != len(tc.want) {
				t.Fatalf("got %d errors %v, want %d", len(errs), errs, len(tc.want))
			}
			for i, w := range tc.want {
				if !strings.Contains(errs[i].Error(), w) {
					t.Errorf("error %d = %q, want containing %q", i, errs[i], w)
				}
			}
		})
	}
}

func TestValidateNeedsAClass(t *testing.T) {
	t.Parallel()
	if err := Validate(nil); err == nil || !strings.Contains(err.Error(), "at least one") {
		t.Fatalf("Validate(nil) = %v", err)
	}
	if err := Validate([]DeviceClass{{Name: "ssd", VolumeGroup: "vg-ssd", Default: true}}); err != nil {
		t.Fatalf("default world: %v", err)
	}
}
