package fakelvmd

import (
	"context"
	"errors"
	"fmt"
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

func TestThinPoolOverprovision(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := mustServer(t, twoClasses, VolumeGroup{Name: "vg-ssd", Size: 375 * gib})
	// The pool takes the group less the thin class's spare (0): 375 GiB, x2 virtual.
	free, err := s.GetFreeBytes(ctx, &proto.GetFreeBytesRequest{DeviceClass: "thin"})
	if err != nil || free.FreeBytes != 750*gib {
		t.Fatalf("thin GetFreeBytes = %v, %v; want 750 GiB", free, err)
	}
	if _, err := s.CreateLV(ctx, &proto.CreateLVRequest{Name: "t1", DeviceClass: "thin", SizeBytes: int64(600 * gib)}); err != nil {
		t.Fatal(err)
	}
	m := s.Metrics()
	var thin *proto.WatchItem
	for _, it := range m.Items {
		if it.DeviceClass == "thin" {
			thin = it
		}
	}
	if thin == nil || thin.ThinPool.OverprovisionBytes != 150*gib || thin.ThinPool.SizeBytes != 375*gib {
		t.Fatalf("thin metrics = %v", thin)
	}
	// The pool takes nothing from the thick class on the same group (the sandbox's thin-pool
	// rule, shared with the simulator): it still sees the group less its spare (10 GiB).
	if m.FreeBytes != 365*gib {
		t.Fatalf("default (thick) free = %d, want 365 GiB", m.FreeBytes)
	}
	if l, _ := s.GetLVList(ctx, &proto.GetLVListRequest{DeviceClass: "ssd"}); len(l.Volumes) != 0 {
		t.Fatalf("thick list shows thin volumes: %v", l.Volumes)
	}
}

// TestThinPoolsFollowTheSandboxRule: two thin classes on one group each see a pool of the group
// less their own spare, and a spare-gb change takes effect when lvmd starts again on the same
// disks, as the simulator publishes it.
func TestThinPoolsFollowTheSandboxRule(t *testing.T) {
	t.Parallel()
	conf := func(spare int) string {
		return fmt.Sprintf(`device-classes:
- {name: ssd, volume-group: vg-ssd, default: true}
- {name: fast, volume-group: vg-ssd, type: thin, spare-gb: %d, thin-pool: {name: pool-fast, overprovision-ratio: 2}}
- {name: bulk, volume-group: vg-ssd, type: thin, thin-pool: {name: pool-bulk, overprovision-ratio: 4.5}}
`, spare)
	}
	lvm := NewLVM(VolumeGroup{Name: "vg-ssd", Size: 750 * gib})
	start := func(spare int) *Server {
		c, err := ParseConfig(conf(spare))
		if err != nil {
			t.Fatal(err)
		}
		s, err := New(c.DeviceClasses, nil, lvm)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	// free is what Watch reports (topolvm-node's capacity annotation).
	free := func(s *Server, class string) uint64 {
		for _, it := range s.Metrics().Items {
			if it.DeviceClass == class {
				return it.ThinPool.OverprovisionBytes
			}
		}
		t.Fatalf("no metrics for %s", class)
		return 0
	}
	s := start(10)
	if got, want := free(s, "fast"), 2*740*gib; got != want {
		t.Fatalf("fast = %d, want %d", got, want)
	}
	if got, want := free(s, "bulk"), uint64(4.5*740)*gib; got != want {
		t.Fatalf("bulk = %d, want %d (a second pool finds the group as the first did)", got, want)
	}
	s = start(50)
	if got, want := free(s, "fast"), 2*700*gib; got != want {
		t.Fatalf("fast after spare-gb 50 and a restart = %d, want %d", got, want)
	}
	if got, want := free(s, "bulk"), uint64(4.5*740)*gib; got != want {
		t.Fatalf("bulk after the restart = %d, want %d", got, want)
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
