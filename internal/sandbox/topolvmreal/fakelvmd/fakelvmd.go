// Package fakelvmd is an in-memory lvmd: TopoLVM's lvmd gRPC API (pkg/lvmd/proto VGService and
// LVService) over volume groups that exist only in memory. It answers as lvmd v0.41.0 does
// (internal/lvmd vgservice.go, lvservice.go, pool.go): the same free-space arithmetic (spare-gb
// taken off what GetFreeBytes and Watch report, not off what CreateLV checks), the same status
// codes (NotFound for an unknown device class or volume, ResourceExhausted when the pool is short)
// and a Watch stream that sends the metrics once at start and again after every change. New runs
// lvmd's own start-up checks (cmd/lvmd/app/root.go subMain): ValidateDeviceClasses itself (linked
// from TopoLVM's module), then "volume group not found" and "Thin pool not found".
//
// What lvmd gets from LVM is faked: a volume group is a name and a size, and a logical volume is a
// name, a size and tags. A thin pool is what it is in LVM: a logical volume carved from its
// group's space (lvcreate --type thin-pool) by whoever prepares the node (on GKE the
// volume-group bootstrap, with THIN_POOLS), before lvmd starts; TopoLVM creates neither groups
// nor pools. The pool's size bounds what its thin volumes can hold: SetWritten records the bytes
// written to a thin volume, the pool's data percent follows (Watch's ThinPoolItem, TopoLVM's
// topolvm_thinpool_data_percent metric), and a write beyond the pool's free data space fails as a
// write to a full pool does (ErrThinPoolFull; overprovisioning promised more than the pool holds).
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

	// Links TopoLVM's internal/lvmd, whose ValidateDeviceClasses New calls (validate.go).
	_ "github.com/topolvm/topolvm/pkg/lvmd"
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
	pool  string // thin pool name; "" for a thick volume or a pool
	// thinPool marks the pool itself (lv_layout pool: a logical volume of the group's space).
	thinPool bool
	written  uint64 // bytes written to a thin volume (SetWritten): the pool data it holds
}

type volumeGroup struct {
	size uint64
	lvs  map[string]*logicalVolume
}

// thinPool is the pool LV named name in vg, or nil.
func (vg *volumeGroup) thinPool(name string) *logicalVolume {
	if lv := vg.lvs[name]; lv != nil && lv.thinPool {
		return lv
	}
	return nil
}

// thinPoolSize is the data size of thin class dc's pool on vg (0 when it does not exist).
func thinPoolSize(vg *volumeGroup, dc *lvmdtypes.DeviceClass) uint64 {
	if p := vg.thinPool(dc.ThinPoolConfig.Name); p != nil {
		return p.size
	}
	return 0
}

// used is what the group's thick volumes and thin pools take (thin volumes take pool space).
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

// written is the data the thin volumes of pool hold.
func (vg *volumeGroup) written(pool string) uint64 {
	var n uint64
	for _, lv := range vg.lvs {
		if lv.pool == pool {
			n += lv.written
		}
	}
	return n
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
	server    *Server // the lvmd started last over these disks (its Watch sees disk changes)
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

// ErrThinPoolExists is returned by CreateThinPool for a name the group already has.
var ErrThinPoolExists = errors.New("logical volume already exists")

// CreateThinPool is `lvcreate --type thin-pool -L size -n name vg` on the node: a pool of size
// bytes carved from the group's free space (thick volumes and other pools compete for it). It
// fails when the group does not exist, the name is taken (ErrThinPoolExists) or the group lacks
// the space (lvcreate's "Volume group ... has insufficient free space").
func (l *LVM) CreateThinPool(vgName, name string, size uint64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	vg, ok := l.vgs[vgName]
	if !ok {
		return fmt.Errorf("%w: %s", ErrVolumeGroupMissing, vgName)
	}
	if _, ok := vg.lvs[name]; ok {
		return fmt.Errorf("%w: %s/%s", ErrThinPoolExists, vgName, name)
	}
	if free := vg.free(); free < size {
		return fmt.Errorf("volume group %q has insufficient free space (%d bytes): %d required", vgName, free, size)
	}
	vg.lvs[name] = &logicalVolume{name: name, size: size, thinPool: true}
	l.notify()
	return nil
}

// RemoveThinPool is `lvremove vg/name` of an empty thin pool: it fails while thin volumes use
// it (lvremove would take them with it; nobody who prepares a node does that to TopoLVM's
// volumes).
func (l *LVM) RemoveThinPool(vgName, name string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	vg, ok := l.vgs[vgName]
	if !ok || vg.thinPool(name) == nil {
		return fmt.Errorf("thin pool %s/%s not found", vgName, name)
	}
	for _, lv := range vg.lvs {
		if lv.pool == name {
			return fmt.Errorf("thin pool %s/%s holds thin volume %s", vgName, name, lv.name)
		}
	}
	delete(vg.lvs, name)
	l.notify()
	return nil
}

// ThinPools lists the thin pools of group vgName by name, with their sizes.
func (l *LVM) ThinPools(vgName string) map[string]uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := map[string]uint64{}
	if vg, ok := l.vgs[vgName]; ok {
		for n, lv := range vg.lvs {
			if lv.thinPool {
				out[n] = lv.size
			}
		}
	}
	return out
}

// ErrThinPoolFull is a write that the thin volume's pool has no data space left for: on a node,
// the pool goes out of data space (lv_attr health 'D', command.ErrThinPoolOutOfDataSpace in
// lvmd v0.41.0 internal/lvmd/command/lvm_lv_attr.go) and the write fails or queues.
var ErrThinPoolFull = errors.New("thin pool is out of data space")

// SetWritten sets how many bytes the application wrote to thin volume lv (at most its size): the
// data its pool holds for it. A write that would take the pool past its size fails with
// ErrThinPoolFull and leaves what was written; data percent reaches 100 then.
func (l *LVM) SetWritten(vgName, lv string, bytes uint64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	vg, ok := l.vgs[vgName]
	if !ok {
		return fmt.Errorf("%w: %s", ErrVolumeGroupMissing, vgName)
	}
	v, ok := vg.lvs[lv]
	if !ok || v.pool == "" {
		return fmt.Errorf("no thin volume %s in volume group %s", lv, vgName)
	}
	bytes = min(bytes, v.size)
	pool := vg.thinPool(v.pool)
	if pool == nil {
		return fmt.Errorf("thin volume %s: pool %s not found", lv, v.pool)
	}
	if others := vg.written(v.pool) - v.written; others+bytes > pool.size {
		v.written = pool.size - others
		l.notify()
		return fmt.Errorf("%w: %s/%s holds %d of %d bytes; %d more requested for %s", ErrThinPoolFull,
			vgName, v.pool, pool.size, pool.size, others+bytes-pool.size, lv)
	}
	v.written = bytes
	l.notify()
	return nil
}

// notify wakes the Watch streams of the lvmd serving these disks (l.mu held).
func (l *LVM) notify() {
	if l.server != nil {
		l.server.notifyLocked()
	}
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

// ErrThinPoolMissing is returned by New when a thin class's pool is not a thin pool of its
// volume group: lvmd logs "Thin pool not found:" and exits (cmd/lvmd/app/root.go; FindPool's
// command.ErrNotFound).
var ErrThinPoolMissing = errors.New("Thin pool not found")

// New starts an lvmd over the node's disks with lvmd.yaml's device classes and lvcreate-option
// classes. It fails as lvmd's start does (cmd/lvmd/app/root.go subMain, in its order): the
// classes fail ValidateDeviceClasses, a class names a volume group the node does not have, or a
// thin class names a pool its group does not have.
func New(classes []*lvmdtypes.DeviceClass, optionClasses []*lvmdtypes.LvcreateOptionClass, lvm *LVM) (*Server, error) {
	if err := validateDeviceClasses(classes); err != nil {
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
		vg, ok := s.vgs[dc.VolumeGroup]
		if !ok {
			return nil, fmt.Errorf("device class %s: %w: %s", dc.Name, ErrVolumeGroupMissing, dc.VolumeGroup)
		}
		if dc.Type == lvmdtypes.TypeThin && vg.thinPool(dc.ThinPoolConfig.Name) == nil {
			return nil, fmt.Errorf("device class %s: %w: %s/%s", dc.Name, ErrThinPoolMissing, dc.VolumeGroup, dc.ThinPoolConfig.Name)
		}
	}
	lvm.server = s
	return s, nil
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
	if lv, ok := vg.lvs[req.GetName()]; !ok || lv.thinPool {
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
	if !ok || lv.thinPool {
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
		if lv.thinPool || dc.Type != lvmdtypes.TypeThin && lv.pool != "" || dc.Type == lvmdtypes.TypeThin && lv.pool != dc.ThinPoolConfig.Name {
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
			size := thinPoolSize(vg, dc)
			var data float64
			if size > 0 {
				data = 100 * float64(vg.written(dc.ThinPoolConfig.Name)) / float64(size)
			}
			res.Items = append(res.Items, &proto.WatchItem{
				DeviceClass: dc.Name, FreeBytes: vgFree, SizeBytes: vg.size,
				// Metadata is not modelled: its percent stays 0.
				ThinPool: &proto.ThinPoolItem{OverprovisionBytes: opb, SizeBytes: size, DataPercent: data},
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
