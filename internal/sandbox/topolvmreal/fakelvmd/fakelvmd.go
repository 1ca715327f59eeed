// Package fakelvmd is an in-memory lvmd: TopoLVM's lvmd gRPC API (pkg/lvmd/proto VGService and
// LVService) over volume groups that exist only in memory. It answers as lvmd v0.41.0 does
// (internal/lvmd vgservice.go, lvservice.go): the same free-space arithmetic (spare-gb taken off
// what GetFreeBytes and Watch report, not off what CreateLV checks), the same status codes
// (NotFound for an unknown device class or volume, ResourceExhausted when the pool is short) and
// a Watch stream that sends the metrics once at start and again after every change.
//
// What lvmd gets from LVM is faked: a volume group is a name and a size, and a logical volume is a
// name, a size and tags. Thin pools follow the sandbox's one thin-pool rule, shared with the
// simulator (package topolvm, config.go) so that both modes publish the same capacity:
//   - each thin class's pool spans its volume group less the class's spare-gb, sized again at
//     every lvmd start (a spare-gb change takes effect at the restart that loads it);
//   - pools do not take space from the thick classes or from each other.
//
// Real LVM differs, and GKE with it: a thin pool is a logical volume carved from the group
// (lvcreate --type thin-pool) by whoever prepares the node, before lvmd starts, which exits with
// "thin pool not found" otherwise (lvmd v0.41.0 internal/lvmd/command/lvm.go FindThinPool,
// called from vgservice.go). TopoLVM creates neither groups nor pools.
package fakelvmd

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"sync"

	"github.com/topolvm/topolvm/pkg/lvmd/proto"
	lvmdtypes "github.com/topolvm/topolvm/pkg/lvmd/types"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// defaultSpareGB is lvmd's default spare-gb (internal/lvmd/device_class_manager.go).
const defaultSpareGB = 10

// VolumeGroup is a volume group present on the node before lvmd starts (TopoLVM never creates
// one).
type VolumeGroup struct {
	Name string
	Size uint64 // bytes
}

type logicalVolume struct {
	name  string
	size  uint64
	tags  []string
	minor uint32
	pool  string // thin pool name; "" for a thick volume
}

type volumeGroup struct {
	size uint64
	lvs  map[string]*logicalVolume
}

// thinPoolSize is the data size of thin class dc's pool on vg: the group less the class's spare
// (the package comment's thin-pool rule).
func thinPoolSize(vg *volumeGroup, dc *lvmdtypes.DeviceClass) uint64 {
	if sp := spare(dc); vg.size > sp {
		return vg.size - sp
	}
	return 0
}

// used is what the group's thick volumes take (thin pools take nothing: the package comment).
func (vg *volumeGroup) used() uint64 {
	var n uint64
	for _, lv := range vg.lvs {
		if lv.pool == "" {
			n += lv.size
		}
	}
	return n
}

func (vg *volumeGroup) free() uint64 {
	if u := vg.used(); u < vg.size {
		return vg.size - u
	}
	return 0
}

// virtual is the sum of the thin volumes' sizes in pool.
func (vg *volumeGroup) virtual(pool string) uint64 {
	var n uint64
	for _, lv := range vg.lvs {
		if lv.pool == pool {
			n += lv.size
		}
	}
	return n
}

// LVM is a node's disks as LVM sees them: its volume groups and logical volumes. It
// outlives an lvmd (a restarted lvmd finds the volumes it created) and goes with the node.
type LVM struct {
	mu        sync.Mutex
	vgs       map[string]*volumeGroup
	nextMinor uint32
}

// NewLVM is a node whose volume groups exist (created by the node's set-up, as on GKE by a
// DaemonSet or a startup script) and are empty.
func NewLVM(vgs ...VolumeGroup) *LVM {
	l := &LVM{vgs: map[string]*volumeGroup{}}
	for _, vg := range vgs {
		l.vgs[vg.Name] = &volumeGroup{size: vg.Size, lvs: map[string]*logicalVolume{}}
	}
	return l
}

// CreateVolumeGroup is vgcreate on the node's disks: it adds vg (empty) unless a volume group of
// that name exists, and reports whether it did.
func (l *LVM) CreateVolumeGroup(vg VolumeGroup) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.vgs[vg.Name]; ok {
		return false
	}
	l.vgs[vg.Name] = &volumeGroup{size: vg.Size, lvs: map[string]*logicalVolume{}}
	return true
}

// Server is one node's lvmd. It implements proto.VGServiceServer and proto.LVServiceServer.
type Server struct {
	proto.UnimplementedVGServiceServer
	proto.UnimplementedLVServiceServer

	classes []*lvmdtypes.DeviceClass
	options map[string][]string // lvcreate-option-classes by name

	lvm *LVM
	// mu is lvm.mu: one lock for the disks and this lvmd's watchers.
	mu        *sync.Mutex
	vgs       map[string]*volumeGroup
	watchers  map[int]chan struct{}
	nextWatch int
}

// ErrVolumeGroupMissing is returned by New when a configured volume group is not on the node:
// lvmd exits at start then (and its container restarts).
var ErrVolumeGroupMissing = errors.New("volume group not found")

// New starts an lvmd over the node's disks with lvmd.yaml's device classes and lvcreate-option
// classes. It fails, as lvmd does at start, when the classes are invalid or name a volume group
// the node does not have. A thin class's pool is sized as the package comment says.
func New(classes []*lvmdtypes.DeviceClass, optionClasses []*lvmdtypes.LvcreateOptionClass, lvm *LVM) (*Server, error) {
	if err := validate(classes); err != nil {
		return nil, err
	}
	s := &Server{
		classes:  classes,
		options:  map[string][]string{},
		lvm:      lvm,
		mu:       &lvm.mu,
		vgs:      lvm.vgs,
		watchers: map[int]chan struct{}{},
	}
	for _, oc := range optionClasses {
		s.options[oc.Name] = oc.Options
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, dc := range classes {
		if _, ok := s.vgs[dc.VolumeGroup]; !ok {
			return nil, fmt.Errorf("device class %s: %w: %s", dc.Name, ErrVolumeGroupMissing, dc.VolumeGroup)
		}
	}
	return s, nil
}

// validate is the part of lvmd's ValidateDeviceClasses that the fake depends on.
func validate(classes []*lvmdtypes.DeviceClass) error {
	if len(classes) == 0 {
		return errors.New("should have at least one device-class")
	}
	names := map[string]bool{}
	defaults := 0
	for _, dc := range classes {
		if dc.Name == "" {
			return errors.New("device-class name should not be empty")
		}
		if names[dc.Name] {
			return fmt.Errorf("duplicate device-class name: %s", dc.Name)
		}
		names[dc.Name] = true
		if dc.VolumeGroup == "" {
			return fmt.Errorf("volume group name should not be empty: %s", dc.Name)
		}
		if dc.Default {
			defaults++
		}
		switch dc.Type {
		case "", lvmdtypes.TypeThick:
		case lvmdtypes.TypeThin:
			if dc.ThinPoolConfig == nil || dc.ThinPoolConfig.Name == "" {
				return fmt.Errorf("thinpool name should not be empty: %s", dc.Name)
			}
			if dc.ThinPoolConfig.OverprovisionRatio < 1.0 {
				return fmt.Errorf("overprovision ratio for %s should be greater than or equal to 1.0", dc.Name)
			}
		default:
			return fmt.Errorf("unknown device-class type %q: %s", dc.Type, dc.Name)
		}
	}
	if defaults != 1 {
		return errors.New("should have only one default device-class")
	}
	return nil
}

func spare(dc *lvmdtypes.DeviceClass) uint64 {
	if dc.SpareGB == nil {
		return defaultSpareGB << 30
	}
	return *dc.SpareGB << 30
}

// deviceClass is lvmd's DeviceClassManager.DeviceClass: "" is the default class.
func (s *Server) deviceClass(name string) (*lvmdtypes.DeviceClass, error) {
	for _, dc := range s.classes {
		if (name == "" && dc.Default) || (name != "" && dc.Name == name) {
			return dc, nil
		}
	}
	return nil, status.Errorf(codes.NotFound, "device-class not found: %s", name)
}

// poolFree is what CreateLV and ResizeLV compare a request with: the volume group's free bytes
// for a thick class, the thin pool's free bytes with overprovisioning for a thin one.
func (s *Server) poolFree(dc *lvmdtypes.DeviceClass) uint64 {
	vg := s.vgs[dc.VolumeGroup]
	if dc.Type != lvmdtypes.TypeThin {
		return vg.free()
	}
	virtualSize := uint64(math.Floor(dc.ThinPoolConfig.OverprovisionRatio * float64(thinPoolSize(vg, dc))))
	if v := vg.virtual(dc.ThinPoolConfig.Name); v < virtualSize {
		return virtualSize - v
	}
	return 0
}

func poolName(dc *lvmdtypes.DeviceClass) string {
	if dc.Type == lvmdtypes.TypeThin {
		return dc.ThinPoolConfig.Name
	}
	return ""
}

// CreateLV implements proto.LVServiceServer.
func (s *Server) CreateLV(_ context.Context, req *proto.CreateLVRequest) (*proto.CreateLVResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	dc, err := s.deviceClass(req.GetDeviceClass())
	if err != nil {
		return nil, err
	}
	if req.GetLvcreateOptionClass() != "" {
		if _, ok := s.options[req.GetLvcreateOptionClass()]; !ok {
			return nil, status.Errorf(codes.Internal, "unsupported lvcreate-option-class target: %s", req.GetLvcreateOptionClass())
		}
	}
	vg := s.vgs[dc.VolumeGroup]
	if _, ok := vg.lvs[req.GetName()]; ok {
		return nil, status.Errorf(codes.Internal, "logical volume %s already exists", req.GetName())
	}
	requested := uint64(req.GetSizeBytes())
	if free := s.poolFree(dc); free < requested {
		return nil, status.Errorf(codes.ResourceExhausted, "no enough space left on VG: free=%d, requested=%d", free, requested)
	}
	s.lvm.nextMinor++
	lv := &logicalVolume{name: req.GetName(), size: requested, tags: slices.Clone(req.GetTags()), minor: s.lvm.nextMinor, pool: poolName(dc)}
	vg.lvs[lv.name] = lv
	s.notifyLocked()
	return &proto.CreateLVResponse{Volume: toProto(dc.VolumeGroup, lv)}, nil
}

// RemoveLV implements proto.LVServiceServer.
func (s *Server) RemoveLV(_ context.Context, req *proto.RemoveLVRequest) (*proto.Empty, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	dc, err := s.deviceClass(req.GetDeviceClass())
	if err != nil {
		return nil, err
	}
	vg := s.vgs[dc.VolumeGroup]
	if _, ok := vg.lvs[req.GetName()]; !ok {
		return nil, status.Errorf(codes.NotFound, "not found: %s", req.GetDeviceClass())
	}
	delete(vg.lvs, req.GetName())
	s.notifyLocked()
	return &proto.Empty{}, nil
}

// ResizeLV implements proto.LVServiceServer: volumes only grow.
func (s *Server) ResizeLV(_ context.Context, req *proto.ResizeLVRequest) (*proto.ResizeLVResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	dc, err := s.deviceClass(req.GetDeviceClass())
	if err != nil {
		return nil, err
	}
	lv, ok := s.vgs[dc.VolumeGroup].lvs[req.GetName()]
	if !ok {
		return nil, status.Errorf(codes.NotFound, "logical volume %s is not found", req.GetName())
	}
	requested := uint64(req.GetSizeBytes())
	if requested <= lv.size {
		return &proto.ResizeLVResponse{SizeBytes: int64(lv.size)}, nil
	}
	if free := s.poolFree(dc); free < requested-lv.size {
		return nil, status.Errorf(codes.ResourceExhausted, "no enough space left on VG: free=%d, requested=%d", free, requested-lv.size)
	}
	lv.size = requested
	s.notifyLocked()
	return &proto.ResizeLVResponse{SizeBytes: int64(lv.size)}, nil
}

// CreateLVSnapshot implements proto.LVServiceServer: not faked.
func (s *Server) CreateLVSnapshot(context.Context, *proto.CreateLVSnapshotRequest) (*proto.CreateLVSnapshotResponse, error) {
	return nil, status.Error(codes.Unimplemented, "fake lvmd: snapshots are not implemented")
}

// GetLVList implements proto.VGServiceServer.
func (s *Server) GetLVList(_ context.Context, req *proto.GetLVListRequest) (*proto.GetLVListResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	dc, err := s.deviceClass(req.GetDeviceClass())
	if err != nil {
		return nil, err
	}
	vg := s.vgs[dc.VolumeGroup]
	names := make([]string, 0, len(vg.lvs))
	for n, lv := range vg.lvs {
		// lvmd lists the pool's volumes; a thick class does not see thin volumes.
		if dc.Type != lvmdtypes.TypeThin && lv.pool != "" || dc.Type == lvmdtypes.TypeThin && lv.pool != dc.ThinPoolConfig.Name {
			continue
		}
		names = append(names, n)
	}
	sort.Strings(names)
	res := &proto.GetLVListResponse{Volumes: make([]*proto.LogicalVolume, 0, len(names))}
	for _, n := range names {
		res.Volumes = append(res.Volumes, toProto(dc.VolumeGroup, vg.lvs[n]))
	}
	return res, nil
}

// GetFreeBytes implements proto.VGServiceServer: the pool's free bytes less spare-gb.
func (s *Server) GetFreeBytes(_ context.Context, req *proto.GetFreeBytesRequest) (*proto.GetFreeBytesResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	dc, err := s.deviceClass(req.GetDeviceClass())
	if err != nil {
		return nil, err
	}
	free, sp := s.poolFree(dc), spare(dc)
	if free < sp {
		free = 0
	} else {
		free -= sp
	}
	return &proto.GetFreeBytesResponse{FreeBytes: free}, nil
}

// Watch implements proto.VGServiceServer: the metrics at start, then after each change.
func (s *Server) Watch(_ *proto.Empty, stream proto.VGService_WatchServer) error {
	ch := make(chan struct{}, 1)
	s.mu.Lock()
	id := s.nextWatch
	s.nextWatch++
	s.watchers[id] = ch
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.watchers, id)
		s.mu.Unlock()
	}()
	for {
		if err := stream.Send(s.Metrics()); err != nil {
			return err
		}
		select {
		case <-stream.Context().Done():
			return stream.Context().Err()
		case <-ch:
		}
	}
}

func (s *Server) notifyLocked() {
	for _, ch := range s.watchers {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

// Metrics is what Watch sends, computed as lvmd's vgService.send does: per device class the
// volume group's free bytes less spare (thick) or the thin pool's usage (thin); FreeBytes is the
// default class's.
func (s *Server) Metrics() *proto.WatchResponse {
	s.mu.Lock()
	defer s.mu.Unlock()
	res := &proto.WatchResponse{}
	for _, dc := range s.classes {
		vg := s.vgs[dc.VolumeGroup]
		vgFree := vg.free()
		if dc.Type == lvmdtypes.TypeThin {
			opb := s.poolFree(dc)
			if dc.Default {
				res.FreeBytes = opb
			}
			res.Items = append(res.Items, &proto.WatchItem{
				DeviceClass: dc.Name, FreeBytes: vgFree, SizeBytes: vg.size,
				// No data is ever written to a fake volume: data and metadata percent stay 0.
				ThinPool: &proto.ThinPoolItem{OverprovisionBytes: opb, SizeBytes: thinPoolSize(vg, dc)},
			})
			continue
		}
		if sp := spare(dc); vgFree < sp {
			vgFree = 0
		} else {
			vgFree -= sp
		}
		if dc.Default {
			res.FreeBytes = vgFree
		}
		res.Items = append(res.Items, &proto.WatchItem{DeviceClass: dc.Name, FreeBytes: vgFree, SizeBytes: vg.size})
	}
	return res
}

func toProto(vgName string, lv *logicalVolume) *proto.LogicalVolume {
	attr := "-wi-a-----"
	if lv.pool != "" {
		attr = "Vwi-a-tz--"
	}
	return &proto.LogicalVolume{
		Name: lv.name, SizeBytes: int64(lv.size), Tags: slices.Clone(lv.tags),
		DevMajor: 253, DevMinor: lv.minor,
		Path: "/dev/" + vgName + "/" + lv.name, Attr: attr,
	}
}
