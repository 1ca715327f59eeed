// Package gke emulates the GKE ClusterManager gRPC API (cloud.google.com/go/container v1) for
// the sandbox: clusters seeded at start, node pools that become Node objects in the sandbox API
// server, and GKE-style operations (PENDING -> RUNNING -> DONE, failures reported in the
// operation's Error). Only client-go and the container API types are imported so the package
// builds and tests quickly.
//
// Known differences from GKE, on purpose:
//   - A pool's current per-zone size is kept in initial_node_count (as k8s-config-connector's
//     mockcontainer does); real GKE keeps it in the managed instance groups.
//   - There is one Kubernetes version (Version); node_version values are accepted but never
//     trigger an upgrade.
//   - Node names follow GKE's shape; the truncation lengths are an approximation.
//   - Mutations are serialised per node pool, and refused cluster-wide while a cluster operation
//     runs (StartClusterOperation); GKE has more incompatible pairs (a node pool creation blocks
//     some cluster updates) that the emulator does not refuse.
//   - The concurrent operations quota counts per cluster (Options.ConcurrentOperations, default
//     DefaultConcurrentOperations); GKE's observed limit is 5 and also counts per project.
package gke

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"cloud.google.com/go/container/apiv1/containerpb"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
)

// ClusterSeed is a cluster that exists when the emulator starts, with its node pools.
type ClusterSeed struct {
	Project, Location, Name string
	// ReleaseChannel is UNSPECIFIED (no channel), RAPID, REGULAR, STABLE or EXTENDED; empty
	// means REGULAR, GKE's default for new clusters.
	ReleaseChannel string
	Pools          []*containerpb.NodePool
}

// Options configure the emulator.
type Options struct {
	Kube      kubernetes.Interface // client of the sandbox API server (system:masters)
	Endpoint  string               // API server "127.0.0.1:PORT" returned by GetCluster (.Endpoint, no scheme)
	CACertPEM []byte               // returned base64-encoded in GetCluster .MasterAuth.ClusterCaCertificate
	Clusters  []ClusterSeed
	// OperationDelay paces PENDING->RUNNING->DONE (default 50ms).
	OperationDelay time.Duration
	// VolumeGroup is the value of the node annotation sandbox.olapgke.io/volume-group (default "vg-ssd").
	VolumeGroup string
	// ThinPools is the thin pools the node's set-up carves from that volume group on every node
	// with raw-block Local SSDs, "name=bytes,..." (the node annotation
	// sandbox.olapgke.io/thin-pools; up reads $OLAPGKE_SANDBOX_THIN_POOLS): as a startup script
	// or custom image would, before lvmd starts. Empty: none (the volume-group bootstrap's
	// THIN_POOLS makes them, as on GKE).
	ThinPools string
	// KubernetesVersion is the minor ("1.35") the clusters' control plane runs, as the sandbox's
	// API server emulates it; default 1.37 (Version).
	KubernetesVersion string
	// NodeDeleteTimeout bounds the wait for a deleted Node object to disappear (finalizers such as
	// topolvm.io/node are removed by other sandbox components). Default 2m.
	NodeDeleteTimeout time.Duration
	// DrainTimeout bounds the eviction of Pods from a node before it is deleted, as GKE drains
	// before removing a VM; Pods still there afterwards are deleted. Default 30s.
	DrainTimeout time.Duration
	// PollInterval is how often waits re-check the API server. Default 100ms.
	PollInterval time.Duration
	Logger       *slog.Logger
	// RegisterNode, when set, completes each new Node object before it is created, as node
	// agents do when a VM registers (the sandbox's TopoLVM simulator adds its topology label,
	// finalizer and capacity annotations). It must not change the node's name.
	RegisterNode func(*corev1.Node)
	// ConcurrentOperations is the concurrent operations quota per cluster (default
	// DefaultConcurrentOperations); SetOperationQuota changes it at run time.
	ConcurrentOperations int
}

// DefaultConcurrentOperations is the default quota of concurrent operations per cluster: more
// than any test starts at once, so only tests that lower it (SetOperationQuota) meet it.
const DefaultConcurrentOperations = 100

// Version is the Kubernetes version the emulated clusters and node pools report by default
// (Options.KubernetesVersion picks another minor).
const Version = "1.37.2-gke.1000"

// GKEVersion is the GKE version string of a Kubernetes minor ("1.35" -> "1.35.2-gke.1000"; the
// sandbox's patch and GKE build of every minor are the same).
func GKEVersion(minor string) string {
	if minor == "" {
		return Version
	}
	return minor + ".2-gke.1000"
}

// Server is the emulator. Create it with New.
type Server struct {
	containerpb.UnimplementedClusterManagerServer

	o      Options
	master string // the clusters' master version (GKEVersion of Options.KubernetesVersion)
	log    *slog.Logger
	ctx    context.Context // cancelled by Stop; bounds operation work
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu       sync.Mutex
	clusters map[clusterKey]*cluster
	ops      map[string]*operation // key: project/location/name
	opOrder  []string
	faults   map[string][]error // see InjectFault
	quota    int                // concurrent operations per cluster, see SetOperationQuota
	regional map[string]float64 // regional quota limits by metric, see SetRegionalQuota (quota.go)

	gmu  sync.Mutex
	grpc *grpc.Server

	ipSeq atomic.Uint32 // node InternalIPs handed out so far

	disk diskShims // the kubelet eviction shims of nodes whose disk was set (SetDisk)

	kubelets notReadyKubelets // the kubelets the sandbox plays for not-ready nodes (SetKubelet)
}

type cluster struct {
	key   clusterKey
	pb    *containerpb.Cluster
	pools map[string]*pool
	order []string // pool creation order
	// busy is the cluster-wide operation running (UPGRADE_MASTER, UPDATE_CLUSTER), if any.
	busy *operation
}

type pool struct {
	key  poolKey
	np   *containerpb.NodePool
	busy *operation
	// nodes in creation order; the newest are last.
	nodes []nodeRec
}

type nodeRec struct{ Name, Zone string }

type operation struct {
	pb      *containerpb.Operation
	verb    string     // "creating", "deleting", ... for the concurrent-operation message
	cluster clusterKey // the cluster it runs in: it counts toward that cluster's quota
}

// New validates the seeds and builds the emulator. Node objects are created by Seed.
func New(o Options) (*Server, error) {
	if o.Kube == nil {
		return nil, errors.New("gke: Options.Kube is required")
	}
	if o.OperationDelay <= 0 {
		o.OperationDelay = 50 * time.Millisecond
	}
	if o.VolumeGroup == "" {
		o.VolumeGroup = "vg-ssd"
	}
	if o.NodeDeleteTimeout <= 0 {
		o.NodeDeleteTimeout = 2 * time.Minute
	}
	master := GKEVersion(o.KubernetesVersion)
	if !versionRE.MatchString(master) {
		return nil, fmt.Errorf("gke: Options.KubernetesVersion %q is not a Kubernetes minor like 1.35", o.KubernetesVersion)
	}
	if o.DrainTimeout <= 0 {
		o.DrainTimeout = 30 * time.Second
	}
	if o.PollInterval <= 0 {
		o.PollInterval = 100 * time.Millisecond
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.ConcurrentOperations <= 0 {
		o.ConcurrentOperations = DefaultConcurrentOperations
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Server{o: o, log: o.Logger.With("component", "gke"), ctx: ctx, cancel: cancel,
		clusters: map[clusterKey]*cluster{}, ops: map[string]*operation{}, faults: map[string][]error{},
		quota: o.ConcurrentOperations, master: master}
	for _, cs := range o.Clusters {
		k := clusterKey{cs.Project, cs.Location, cs.Name}
		if cs.Project == "" || cs.Location == "" || cs.Name == "" {
			cancel()
			return nil, fmt.Errorf("gke: cluster seed %q needs project, location and name", k)
		}
		if _, dup := s.clusters[k]; dup {
			cancel()
			return nil, fmt.Errorf("gke: cluster %s seeded twice", k)
		}
		ch, err := releaseChannel(cs.ReleaseChannel)
		if err != nil {
			cancel()
			return nil, fmt.Errorf("gke: cluster seed %s: %w", k, err)
		}
		c := s.newCluster(k, ch)
		s.clusters[k] = c
		for _, np := range cs.Pools {
			np = proto.Clone(np).(*containerpb.NodePool)
			if err := s.admitPool(c, np, true); err != nil {
				cancel()
				return nil, fmt.Errorf("gke: seed pool %q of %s: %w", np.GetName(), k, err)
			}
			np.Status = containerpb.NodePool_RUNNING
			c.pools[np.Name] = &pool{key: poolKey{k, np.Name}, np: np}
			c.order = append(c.order, np.Name)
		}
	}
	return s, nil
}

// releaseChannel parses a seed's release channel; empty is REGULAR.
func releaseChannel(name string) (containerpb.ReleaseChannel_Channel, error) {
	if name == "" {
		return containerpb.ReleaseChannel_REGULAR, nil
	}
	v, ok := containerpb.ReleaseChannel_Channel_value[name]
	if !ok {
		return 0, fmt.Errorf("release channel %q is not UNSPECIFIED, RAPID, REGULAR, STABLE or EXTENDED", name)
	}
	return containerpb.ReleaseChannel_Channel(v), nil
}

func (s *Server) newCluster(k clusterKey, channel containerpb.ReleaseChannel_Channel) *cluster {
	locs := []string{k.Location}
	if !isZone(k.Location) {
		locs = []string{k.Location + "-a", k.Location + "-b", k.Location + "-c"}
	}
	pb := &containerpb.Cluster{
		Name:                  k.Cluster,
		Location:              k.Location,
		Zone:                  k.Location,
		Locations:             locs,
		Endpoint:              s.o.Endpoint,
		MasterAuth:            &containerpb.MasterAuth{ClusterCaCertificate: base64.StdEncoding.EncodeToString(s.o.CACertPEM)},
		InitialClusterVersion: s.master,
		CurrentMasterVersion:  s.master,
		CurrentNodeVersion:    s.master,
		Status:                containerpb.Cluster_RUNNING,
		SelfLink:              selfLink(k.String()),
		Network:               "default",
		Subnetwork:            "default",
		ClusterIpv4Cidr:       "10.92.0.0/14",
		ServicesIpv4Cidr:      "10.96.0.0/20",
		LoggingService:        "logging.googleapis.com/kubernetes",
		MonitoringService:     "monitoring.googleapis.com/kubernetes",
		CreateTime:            time.Now().UTC().Format(time.RFC3339),
		Id:                    randHex(16),
		ReleaseChannel:        &containerpb.ReleaseChannel{Channel: channel},
	}
	return &cluster{key: k, pb: pb, pools: map[string]*pool{}}
}

// Seed creates the Node objects of the seeded node pools and returns once they exist.
func (s *Server) Seed(ctx context.Context) error {
	type job struct {
		p  *pool
		np *containerpb.NodePool
		c  *containerpb.Cluster
	}
	var jobs []job
	s.mu.Lock()
	keys := make([]clusterKey, 0, len(s.clusters))
	for k := range s.clusters {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i].String() < keys[j].String() })
	for _, k := range keys {
		c := s.clusters[k]
		for _, name := range c.order {
			p := c.pools[name]
			if len(p.nodes) == 0 {
				jobs = append(jobs, job{p, proto.Clone(p.np).(*containerpb.NodePool), c.pb})
			}
		}
	}
	s.mu.Unlock()
	// Nodes are created by a few workers in parallel: large seeded worlds (hundreds of nodes)
	// must be ready in seconds.
	type item struct {
		j    job
		zone string
	}
	work := make(chan item)
	errs := make(chan error, seedWorkers)
	var wg sync.WaitGroup
	for range seedWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for it := range work {
				if _, err := s.addNode(ctx, it.j.p, it.j.c, it.j.np, it.zone); err != nil {
					errs <- fmt.Errorf("gke: seed node pool %s: %w", it.j.p.key, err)
					return
				}
			}
		}()
	}
	var err error
feed:
	for _, j := range jobs {
		for _, zone := range j.np.Locations {
			for range j.np.InitialNodeCount {
				select {
				case work <- item{j, zone}:
				case err = <-errs:
					break feed
				case <-ctx.Done():
					err = ctx.Err()
					break feed
				}
			}
		}
	}
	close(work)
	wg.Wait()
	if err == nil {
		select {
		case err = <-errs:
		default:
		}
	}
	return err
}

const seedWorkers = 8

// Serve serves the plaintext gRPC ClusterManager API on l until Stop.
func (s *Server) Serve(l net.Listener) error {
	s.gmu.Lock()
	if s.grpc == nil {
		s.grpc = grpc.NewServer()
		containerpb.RegisterClusterManagerServer(s.grpc, s)
	}
	g := s.grpc
	s.gmu.Unlock()
	return g.Serve(l)
}

// Stop stops serving, cancels running operations and waits for their goroutines.
func (s *Server) Stop() {
	s.gmu.Lock()
	if s.grpc != nil {
		s.grpc.Stop()
	}
	s.gmu.Unlock()
	s.cancel()
	s.wg.Wait()
}

// InjectFault makes the next calls of an RPC method (e.g. "CreateNodePool") fail: each queued
// error is returned once, in order, before any other work. For reliability tests.
func (s *Server) InjectFault(method string, errs ...error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults[method] = append(s.faults[method], errs...)
}

// faultLocked pops an injected fault for method. Call with s.mu held.
func (s *Server) faultLocked(method string) error {
	q := s.faults[method]
	if len(q) == 0 {
		return nil
	}
	s.faults[method] = q[1:]
	return q[0]
}

func (s *Server) clusterLocked(k clusterKey) (*cluster, error) {
	c, ok := s.clusters[k]
	if !ok {
		return nil, status.Errorf(codes.NotFound, "Not found: %s.", k)
	}
	return c, nil
}

func (s *Server) poolLocked(k poolKey) (*cluster, *pool, error) {
	c, err := s.clusterLocked(k.clusterKey)
	if err != nil {
		return nil, nil, err
	}
	p, ok := c.pools[k.Pool]
	if !ok {
		return nil, nil, status.Errorf(codes.NotFound, "Not found: %s.", k)
	}
	return c, p, nil
}

// clusterView is the cluster as GetCluster returns it, with current node pools.
func (s *Server) clusterView(c *cluster) *containerpb.Cluster {
	out := proto.Clone(c.pb).(*containerpb.Cluster)
	var n int32
	for _, name := range c.order {
		p := c.pools[name]
		out.NodePools = append(out.NodePools, proto.Clone(p.np).(*containerpb.NodePool))
		n += int32(len(p.nodes))
	}
	out.CurrentNodeCount = n //nolint:staticcheck // deprecated but still returned by GKE
	return out
}

// GetCluster returns a seeded cluster with the sandbox API server endpoint and CA.
func (s *Server) GetCluster(_ context.Context, req *containerpb.GetClusterRequest) (*containerpb.Cluster, error) {
	k, err := parseCluster(req.GetName(), deprecated{Project: req.GetProjectId(), Zone: req.GetZone(), Cluster: req.GetClusterId()})
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.faultLocked("GetCluster"); err != nil {
		return nil, err
	}
	c, err := s.clusterLocked(k)
	if err != nil {
		return nil, err
	}
	return s.clusterView(c), nil
}

// ListClusters lists the clusters of a project in a location ("-" for all locations).
func (s *Server) ListClusters(_ context.Context, req *containerpb.ListClustersRequest) (*containerpb.ListClustersResponse, error) {
	project, loc, err := parseLocation(req.GetParent(), req.GetProjectId(), req.GetZone())
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	out := &containerpb.ListClustersResponse{}
	for k, c := range s.clusters {
		if k.Project == project && (loc == "-" || loc == k.Location) {
			out.Clusters = append(out.Clusters, s.clusterView(c))
		}
	}
	sort.Slice(out.Clusters, func(i, j int) bool { return out.Clusters[i].SelfLink < out.Clusters[j].SelfLink })
	return out, nil
}

func randHex(n int) string {
	b := make([]byte, (n+1)/2)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)[:n]
}
