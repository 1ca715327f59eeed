package fakelvmd

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/topolvm/topolvm/pkg/lvmd/proto"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

const gib = uint64(1) << 30

const twoClasses = `
socket-name: /run/topolvm/lvmd.sock
device-classes:
- name: ssd
  volume-group: vg-ssd
  default: true
- name: thin
  volume-group: vg-ssd
  spare-gb: 0
  type: thin
  thin-pool:
    name: pool0
    overprovision-ratio: 2.0
`

func mustServer(t *testing.T, doc string, vgs ...VolumeGroup) *Server {
	t.Helper()
	c, err := ParseConfig(doc)
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(c.DeviceClasses, c.LvcreateOptionClasses, NewLVM(vgs...))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestThickAccounting(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := mustServer(t, "device-classes: [{name: ssd, volume-group: vg-ssd, default: true}]", VolumeGroup{Name: "vg-ssd", Size: 750 * gib})

	free, err := s.GetFreeBytes(ctx, &proto.GetFreeBytesRequest{DeviceClass: "ssd"})
	if err != nil || free.FreeBytes != 740*gib {
		t.Fatalf("GetFreeBytes = %v, %v; want 740 GiB (750 less the default 10 spare)", free, err)
	}
	if _, err := s.CreateLV(ctx, &proto.CreateLVRequest{Name: "a", DeviceClass: "", SizeBytes: int64(700 * gib), Tags: []string{"t"}}); err != nil {
		t.Fatal(err)
	}
	// lvmd checks CreateLV against the group's free bytes, not less spare: 50 GiB still fits.
	if _, err := s.CreateLV(ctx, &proto.CreateLVRequest{Name: "b", DeviceClass: "ssd", SizeBytes: int64(50 * gib)}); err != nil {
		t.Fatal(err)
	}
	_, err = s.CreateLV(ctx, &proto.CreateLVRequest{Name: "c", DeviceClass: "ssd", SizeBytes: 1})
	if status.Code(err) != codes.ResourceExhausted {
		t.Fatalf("CreateLV on a full group: %v, want ResourceExhausted", err)
	}
	if m := s.Metrics(); m.FreeBytes != 0 || m.Items[0].SizeBytes != 750*gib {
		t.Fatalf("Metrics = %v, want free 0 of 750 GiB", m)
	}
	list, err := s.GetLVList(ctx, &proto.GetLVListRequest{DeviceClass: "ssd"})
	if err != nil || len(list.Volumes) != 2 || list.Volumes[0].Name != "a" || list.Volumes[0].Tags[0] != "t" {
		t.Fatalf("GetLVList = %v, %v", list, err)
	}
	if _, err := s.RemoveLV(ctx, &proto.RemoveLVRequest{Name: "a", DeviceClass: "ssd"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.RemoveLV(ctx, &proto.RemoveLVRequest{Name: "a", DeviceClass: "ssd"}); status.Code(err) != codes.NotFound {
		t.Fatalf("second RemoveLV: %v, want NotFound (TopoLVM's finalizer treats it as done)", err)
	}
	if r, err := s.ResizeLV(ctx, &proto.ResizeLVRequest{Name: "b", DeviceClass: "ssd", SizeBytes: int64(100 * gib)}); err != nil || r.SizeBytes != int64(100*gib) {
		t.Fatalf("ResizeLV = %v, %v", r, err)
	}
	if _, err := s.GetFreeBytes(ctx, &proto.GetFreeBytesRequest{DeviceClass: "nvme"}); status.Code(err) != codes.NotFound {
		t.Fatalf("unknown class: %v, want NotFound", err)
	}
}

// newThinLVM is a node with a 375 GiB group vg-ssd holding thin pool pool0 of poolGiB.
func newThinLVM(t *testing.T, poolGiB uint64) *LVM {
	t.Helper()
	lvm := NewLVM(VolumeGroup{Name: "vg-ssd", Size: 375 * gib})
	if err := lvm.CreateThinPool("vg-ssd", "pool0", poolGiB*gib); err != nil {
		t.Fatal(err)
	}
	return lvm
}

func TestThinPoolOverprovision(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c, _ := ParseConfig(twoClasses)
	s, err := New(c.DeviceClasses, nil, newThinLVM(t, 300))
	if err != nil {
		t.Fatal(err)
	}
	// The pool's 300 GiB x2 virtual; thin free bytes carry no spare in Watch, and the class's
	// spare-gb is 0 for GetFreeBytes.
	free, err := s.GetFreeBytes(ctx, &proto.GetFreeBytesRequest{DeviceClass: "thin"})
	if err != nil || free.FreeBytes != 600*gib {
		t.Fatalf("thin GetFreeBytes = %v, %v; want 600 GiB", free, err)
	}
	if _, err := s.CreateLV(ctx, &proto.CreateLVRequest{Name: "t1", DeviceClass: "thin", SizeBytes: int64(500 * gib)}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateLV(ctx, &proto.CreateLVRequest{Name: "t2", DeviceClass: "thin", SizeBytes: int64(101 * gib)}); status.Code(err) != codes.ResourceExhausted {
		t.Fatalf("CreateLV past the overprovisioned size: %v, want ResourceExhausted", err)
	}
	thin := thinItem(t, s, "thin")
	if thin.ThinPool.OverprovisionBytes != 100*gib || thin.ThinPool.SizeBytes != 300*gib {
		t.Fatalf("thin metrics = %v", thin)
	}
	// The pool is a logical volume of the group: the thick class sees the group less the pool
	// and its spare (375 - 300 - 10).
	if m := s.Metrics(); m.FreeBytes != 65*gib {
		t.Fatalf("default (thick) free = %d, want 65 GiB", m.FreeBytes)
	}
	if l, _ := s.GetLVList(ctx, &proto.GetLVListRequest{DeviceClass: "ssd"}); len(l.Volumes) != 0 {
		t.Fatalf("thick list shows thin volumes or the pool: %v", l.Volumes)
	}
	if l, _ := s.GetLVList(ctx, &proto.GetLVListRequest{DeviceClass: "thin"}); len(l.Volumes) != 1 || l.Volumes[0].Name != "t1" {
		t.Fatalf("thin list = %v, want t1 alone (not the pool)", l.Volumes)
	}
}

func thinItem(t *testing.T, s *Server, class string) *proto.WatchItem {
	t.Helper()
	for _, it := range s.Metrics().Items {
		if it.DeviceClass == class && it.ThinPool != nil {
			return it
		}
	}
	t.Fatalf("no thin metrics for %s", class)
	return nil
}

// TestThinPoolsAreCarvedFromTheGroup: a pool takes group space that thick volumes and other
// pools compete for, as lvcreate --type thin-pool does.
func TestThinPoolsAreCarvedFromTheGroup(t *testing.T) {
	t.Parallel()
	lvm := NewLVM(VolumeGroup{Name: "vg-ssd", Size: 750 * gib})
	if err := lvm.CreateThinPool("vg-ssd", "pool-fast", 500*gib); err != nil {
		t.Fatal(err)
	}
	if err := lvm.CreateThinPool("vg-ssd", "pool-bulk", 251*gib); err == nil {
		t.Fatal("a second pool larger than the group's free space was created")
	}
	if err := lvm.CreateThinPool("vg-ssd", "pool-fast", gib); !errors.Is(err, ErrThinPoolExists) {
		t.Fatalf("same name again: %v, want ErrThinPoolExists", err)
	}
	if err := lvm.CreateThinPool("vg-other", "p", gib); !errors.Is(err, ErrVolumeGroupMissing) {
		t.Fatalf("pool on a missing group: %v, want ErrVolumeGroupMissing", err)
	}
	if err := lvm.CreateThinPool("vg-ssd", "pool-bulk", 250*gib); err != nil {
		t.Fatal(err)
	}
	if got := lvm.ThinPools("vg-ssd"); len(got) != 2 || got["pool-fast"] != 500*gib || got["pool-bulk"] != 250*gib {
		t.Fatalf("ThinPools = %v", got)
	}
	c, _ := ParseConfig(`device-classes:
- {name: ssd, volume-group: vg-ssd, default: true, spare-gb: 0}
- {name: fast, volume-group: vg-ssd, type: thin, thin-pool: {name: pool-fast, overprovision-ratio: 2}}
- {name: bulk, volume-group: vg-ssd, type: thin, thin-pool: {name: pool-bulk, overprovision-ratio: 4.5}}
`)
	s, err := New(c.DeviceClasses, nil, lvm)
	if err != nil {
		t.Fatal(err)
	}
	if got := thinItem(t, s, "fast").ThinPool.OverprovisionBytes; got != 1000*gib {
		t.Fatalf("fast = %d, want 2 x 500 GiB", got)
	}
	if got := thinItem(t, s, "bulk").ThinPool.OverprovisionBytes; got != uint64(4.5*250)*gib {
		t.Fatalf("bulk = %d, want 4.5 x 250 GiB", got)
	}
	if _, err := s.CreateLV(context.Background(), &proto.CreateLVRequest{Name: "a", DeviceClass: "ssd", SizeBytes: 1}); status.Code(err) != codes.ResourceExhausted {
		t.Fatalf("thick volume on a group the pools fill: %v, want ResourceExhausted", err)
	}
}

// TestThinPoolMissingFailsAtStart: lvmd exits "Thin pool not found" when a thin class's pool is
// not in its group, also when a thick volume of that name is (FindPool lists pools only).
func TestThinPoolMissingFailsAtStart(t *testing.T) {
	t.Parallel()
	c, _ := ParseConfig(twoClasses)
	lvm := NewLVM(VolumeGroup{Name: "vg-ssd", Size: 375 * gib})
	if _, err := New(c.DeviceClasses, nil, lvm); !errors.Is(err, ErrThinPoolMissing) {
		t.Fatalf("New without pool0 = %v, want ErrThinPoolMissing", err)
	}
	thick, _ := ParseConfig("device-classes: [{name: ssd, volume-group: vg-ssd, default: true}]")
	s, err := New(thick.DeviceClasses, nil, lvm)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateLV(context.Background(), &proto.CreateLVRequest{Name: "pool0", SizeBytes: int64(gib)}); err != nil {
		t.Fatal(err)
	}
	if _, err := New(c.DeviceClasses, nil, lvm); !errors.Is(err, ErrThinPoolMissing) {
		t.Fatalf("New with a thick LV named pool0 = %v, want ErrThinPoolMissing", err)
	}
	// Made afterwards (the bootstrap's next pass), the pool is found at lvmd's next start.
	lvm2 := NewLVM(VolumeGroup{Name: "vg-ssd", Size: 375 * gib})
	if _, err := New(c.DeviceClasses, nil, lvm2); !errors.Is(err, ErrThinPoolMissing) {
		t.Fatal(err)
	}
	if err := lvm2.CreateThinPool("vg-ssd", "pool0", 100*gib); err != nil {
		t.Fatal(err)
	}
	if _, err := New(c.DeviceClasses, nil, lvm2); err != nil {
		t.Fatalf("New after the pool was created: %v", err)
	}
}

// TestOvercommittedPoolFills: thin volumes promised 2x the pool; writing them fills the pool, the
// data percent Watch reports follows, and the write that does not fit fails.
func TestOvercommittedPoolFills(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c, _ := ParseConfig(twoClasses)
	lvm := newThinLVM(t, 100)
	s, err := New(c.DeviceClasses, nil, lvm)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"a", "b"} {
		if _, err := s.CreateLV(ctx, &proto.CreateLVRequest{Name: n, DeviceClass: "thin", SizeBytes: int64(100 * gib)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := lvm.SetWritten("vg-ssd", "a", 60*gib); err != nil {
		t.Fatal(err)
	}
	if got := thinItem(t, s, "thin").ThinPool.DataPercent; got != 60 {
		t.Fatalf("data percent = %g, want 60", got)
	}
	err = lvm.SetWritten("vg-ssd", "b", 50*gib)
	if !errors.Is(err, ErrThinPoolFull) {
		t.Fatalf("writing past the pool: %v, want ErrThinPoolFull", err)
	}
	if got := thinItem(t, s, "thin").ThinPool.DataPercent; got != 100 {
		t.Fatalf("data percent of a full pool = %g, want 100", got)
	}
	// Overwriting within what a volume holds needs no new pool data.
	if err := lvm.SetWritten("vg-ssd", "a", 10*gib); err != nil {
		t.Fatal(err)
	}
	if err := lvm.SetWritten("vg-ssd", "b", 50*gib); err != nil {
		t.Fatalf("after a's data shrank: %v", err)
	}
	if err := lvm.SetWritten("vg-ssd", "pool0", gib); err == nil {
		t.Fatal("SetWritten accepted the pool itself")
	}
}

// TestValidateIsLvmds: New refuses exactly what lvmd v0.41.0's ValidateDeviceClasses refuses
// (internal/lvmd/device_class_manager.go), with its messages, including what the sandbox's
// earlier check got wrong: no default is accepted, a volume group is used by one thick class.
func TestValidateIsLvmds(t *testing.T) {
	t.Parallel()
	lvm := NewLVM(VolumeGroup{Name: "vg-ssd", Size: 375 * gib}, VolumeGroup{Name: "vg-b", Size: 375 * gib})
	if err := lvm.CreateThinPool("vg-ssd", "pool0", 100*gib); err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("a", 64)
	for name, tc := range map[string]struct{ doc, err string }{
		"no default":      {"device-classes: [{name: ssd, volume-group: vg-ssd}]", ""},
		"thick and thin":  {twoClasses, ""},
		"none":            {"device-classes: []", "should have at least one device-class"},
		"two defaults":    {"device-classes: [{name: a, volume-group: vg-ssd, default: true}, {name: b, volume-group: vg-b, default: true}]", "should not have multiple default device-class"},
		"duplicate vg":    {"device-classes: [{name: a, volume-group: vg-ssd}, {name: b, volume-group: vg-ssd}]", "duplicate volumegroup/thinpool name: b, vg-ssd"},
		"duplicate pool":  {"device-classes: [{name: a, volume-group: vg-ssd, type: thin, thin-pool: {name: pool0, overprovision-ratio: 2}}, {name: b, volume-group: vg-ssd, type: thin, thin-pool: {name: pool0, overprovision-ratio: 3}}]", "duplicate volumegroup/thinpool name: b, vg-ssd/pool0"},
		"duplicate name":  {"device-classes: [{name: a, volume-group: vg-ssd}, {name: a, volume-group: vg-b}]", "duplicate device-class name: a"},
		"name too long":   {"device-classes: [{name: " + long + ", volume-group: vg-ssd}]", "device-class name is too long: " + long},
		"name rule":       {"device-classes: [{name: -ssd, volume-group: vg-ssd}]", "device-class name should consist of alphanumeric characters, '-', '_' or '.', and should start and end with an alphanumeric character: -ssd"},
		"thin no pool":    {"device-classes: [{name: a, volume-group: vg-ssd, type: thin}]", "device class type is thin but thinpool config is empty: a"},
		"ratio below 1":   {"device-classes: [{name: a, volume-group: vg-ssd, type: thin, thin-pool: {name: pool0, overprovision-ratio: 0.5}}]", "overprovision ratio for thin pool pool0 in device class a should be 1.0 or more"},
		"bad type":        {"device-classes: [{name: a, volume-group: vg-ssd, type: raid}]", "target 'type' of device-class can be one of 'thick' or 'thin' or empty to default to 'thick'"},
		"bad stripe size": {"device-classes: [{name: a, volume-group: vg-ssd, stripe-size: 4x}]", `stripe-size format is "Size[k|UNIT]": a`},
		"no volume group": {"device-classes: [{name: a}]", "volume group name should not be empty: a"},
	} {
		c, err := ParseConfig(tc.doc)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		_, err = New(c.DeviceClasses, nil, lvm)
		if got := fmt.Sprint(err); tc.err == "" && err != nil || tc.err != "" && got != tc.err {
			t.Errorf("%s: New = %v, want %q", name, err, tc.err)
		}
	}
}

func TestMissingVolumeGroupFailsAtStart(t *testing.T) {
	t.Parallel()
	c, err := ParseConfig("device-classes: [{name: ssd, volume-group: vg-other, default: true}]")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := New(c.DeviceClasses, nil, NewLVM(VolumeGroup{Name: "vg-ssd", Size: gib})); !errors.Is(err, ErrVolumeGroupMissing) {
		t.Fatalf("New = %v, want ErrVolumeGroupMissing", err)
	}
}

func TestVolumesOutliveLvmd(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c, _ := ParseConfig("device-classes: [{name: ssd, volume-group: vg-ssd, default: true}]")
	lvm := NewLVM(VolumeGroup{Name: "vg-ssd", Size: 375 * gib})
	first, err := New(c.DeviceClasses, nil, lvm)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := first.CreateLV(ctx, &proto.CreateLVRequest{Name: "a", SizeBytes: int64(gib)}); err != nil {
		t.Fatal(err)
	}
	restarted, err := New(c.DeviceClasses, nil, lvm)
	if err != nil {
		t.Fatal(err)
	}
	if l, err := restarted.GetLVList(ctx, &proto.GetLVListRequest{}); err != nil || len(l.Volumes) != 1 {
		t.Fatalf("after restart GetLVList = %v, %v; want the volume created before", l, err)
	}
}

// TestRemoveThinPool: only an empty pool goes (lvremove of a pool would take its volumes).
func TestRemoveThinPool(t *testing.T) {
	t.Parallel()
	c, _ := ParseConfig(twoClasses)
	lvm := newThinLVM(t, 100)
	s, err := New(c.DeviceClasses, nil, lvm)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateLV(context.Background(), &proto.CreateLVRequest{Name: "a", DeviceClass: "thin", SizeBytes: int64(gib)}); err != nil {
		t.Fatal(err)
	}
	if err := lvm.RemoveThinPool("vg-ssd", "pool0"); err == nil {
		t.Fatal("a pool holding a thin volume was removed")
	}
	if _, err := s.RemoveLV(context.Background(), &proto.RemoveLVRequest{Name: "a", DeviceClass: "thin"}); err != nil {
		t.Fatal(err)
	}
	if err := lvm.RemoveThinPool("vg-ssd", "pool0"); err != nil {
		t.Fatal(err)
	}
	if m := s.Metrics(); m.FreeBytes != 365*gib {
		t.Fatalf("thick free after the pool went = %d, want 365 GiB", m.FreeBytes)
	}
}
