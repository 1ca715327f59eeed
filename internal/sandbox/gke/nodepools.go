package gke

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"cloud.google.com/go/container/apiv1/containerpb"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// poolRequest is what every node pool RPC request carries to name its pool: name, or the
// deprecated project/zone/cluster/node pool fields.
type poolRequest interface {
	GetName() string
	GetProjectId() string
	GetZone() string
	GetClusterId() string
	GetNodePoolId() string
}

func poolKeyOf(req poolRequest) (poolKey, error) {
	return parsePool(req.GetName(), deprecated{req.GetProjectId(), req.GetZone(), req.GetClusterId(), req.GetNodePoolId()})
}

// idlePoolLocked is the start of every mutating node pool RPC: a fault injected for rpc, the
// pool (NotFound), room in the concurrent operations quota (ResourceExhausted) and no
// cluster-wide operation nor one on the pool running (FailedPrecondition), as GKE.
func (s *Server) idlePoolLocked(rpc string, k poolKey) (*cluster, *pool, error) {
	if err := s.faultLocked(rpc); err != nil {
		return nil, nil, err
	}
	c, p, err := s.poolLocked(k)
	if err != nil {
		return nil, nil, err
	}
	if err := s.admitPoolOpLocked(c, p); err != nil {
		return nil, nil, s.refused(rpc, k.String(), err)
	}
	return c, p, nil
}

func clonePool(np *containerpb.NodePool) *containerpb.NodePool {
	return proto.Clone(np).(*containerpb.NodePool)
}

func cloneCluster(c *containerpb.Cluster) *containerpb.Cluster {
	return proto.Clone(c).(*containerpb.Cluster)
}

// settle returns an operation finish function that puts the pool back to RUNNING, or to
// failStatus with the error as status message.
func settle(p *pool, failStatus containerpb.NodePool_Status) func(error) {
	return func(err error) {
		if err != nil {
			p.np.Status = failStatus
			p.np.StatusMessage = status.Convert(err).Message()
			return
		}
		p.np.Status = containerpb.NodePool_RUNNING
		p.np.StatusMessage = ""
	}
}

// GetNodePool returns one node pool.
func (s *Server) GetNodePool(_ context.Context, req *containerpb.GetNodePoolRequest) (*containerpb.NodePool, error) {
	k, err := poolKeyOf(req)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.faultLocked("GetNodePool"); err != nil {
		return nil, err
	}
	_, p, err := s.poolLocked(k)
	if err != nil {
		return nil, err
	}
	return clonePool(p.np), nil
}

// ListNodePools lists a cluster's node pools in creation order.
func (s *Server) ListNodePools(_ context.Context, req *containerpb.ListNodePoolsRequest) (*containerpb.ListNodePoolsResponse, error) {
	k, err := parseCluster(req.GetParent(), deprecated{Project: req.GetProjectId(), Zone: req.GetZone(), Cluster: req.GetClusterId()})
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.faultLocked("ListNodePools"); err != nil {
		return nil, err
	}
	c, err := s.clusterLocked(k)
	if err != nil {
		return nil, err
	}
	out := &containerpb.ListNodePoolsResponse{}
	for _, name := range c.order {
		out.NodePools = append(out.NodePools, clonePool(c.pools[name].np))
	}
	return out, nil
}

// CreateNodePool validates and defaults the pool, then creates its nodes in an operation.
func (s *Server) CreateNodePool(_ context.Context, req *containerpb.CreateNodePoolRequest) (*containerpb.Operation, error) {
	k, err := parseCluster(req.GetParent(), deprecated{Project: req.GetProjectId(), Zone: req.GetZone(), Cluster: req.GetClusterId()})
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.faultLocked("CreateNodePool"); err != nil {
		return nil, err
	}
	c, err := s.clusterLocked(k)
	if err != nil {
		return nil, err
	}
	var np *containerpb.NodePool
	if req.GetNodePool() != nil {
		np = clonePool(req.GetNodePool())
	}
	if err := s.admitPool(c, np, false); err != nil {
		return nil, err
	}
	if err := s.quotaLocked(c, np); err != nil {
		return nil, err
	}
	if err := s.admitPoolOpLocked(c, nil); err != nil {
		return nil, s.refused("CreateNodePool", poolKey{k, np.Name}.String(), err)
	}
	pk := poolKey{k, np.Name}
	p := &pool{key: pk, np: np}
	c.pools[np.Name] = p
	c.order = append(c.order, np.Name)
	snap, cpb := clonePool(np), cloneCluster(c.pb)
	work := func(ctx context.Context) (string, error) {
		var names []string
		for _, zone := range snap.Locations {
			for range snap.InitialNodeCount {
				name, err := s.addNode(ctx, p, cpb, snap, zone)
				if err != nil {
					return "", status.Errorf(codes.Internal, "Failed to create node in zone %s for node pool %s: %v", zone, pk, err)
				}
				names = append(names, name)
			}
		}
		return "created nodes: " + strings.Join(names, ", "), nil
	}
	return s.startOpLocked(pk, p, containerpb.Operation_CREATE_NODE_POOL, "creating", work, settle(p, containerpb.NodePool_ERROR)), nil
}

// DeleteNodePool drains and deletes the pool's nodes, then forgets the pool.
func (s *Server) DeleteNodePool(_ context.Context, req *containerpb.DeleteNodePoolRequest) (*containerpb.Operation, error) {
	k, err := poolKeyOf(req)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	c, p, err := s.idlePoolLocked("DeleteNodePool", k)
	if err != nil {
		return nil, err
	}
	p.np.Status = containerpb.NodePool_STOPPING
	nodes := slices.Clone(p.nodes)
	work := func(ctx context.Context) (string, error) {
		var names []string
		for _, n := range nodes {
			if err := s.removeNode(ctx, p, n.Name); err != nil {
				return "", status.Errorf(codes.Internal, "Failed to delete node %s of node pool %s: %v", n.Name, k, err)
			}
			names = append(names, n.Name)
		}
		return "deleted nodes: " + strings.Join(names, ", "), nil
	}
	finish := func(err error) {
		if err != nil {
			settle(p, containerpb.NodePool_ERROR)(err)
			return
		}
		delete(c.pools, k.Pool)
		c.order = slices.DeleteFunc(c.order, func(n string) bool { return n == k.Pool })
	}
	return s.startOpLocked(k, p, containerpb.Operation_DELETE_NODE_POOL, "deleting", work, finish), nil
}

// resizeWork returns work that brings every zone of the pool to perZone nodes: growing adds
// nodes, shrinking removes the newest nodes of the zone first. Zones no longer in zones lose
// all their nodes.
func (s *Server) resizeWork(p *pool, cpb *containerpb.Cluster, snap *containerpb.NodePool, perZone int32) opWork {
	return func(ctx context.Context) (string, error) {
		s.mu.Lock()
		nodes := slices.Clone(p.nodes)
		s.mu.Unlock()
		var added, removed []string
		byZone := map[string][]string{}
		for _, n := range nodes {
			byZone[n.Zone] = append(byZone[n.Zone], n.Name)
		}
		for zone, names := range byZone {
			if !slices.Contains(snap.Locations, zone) {
				for i := len(names) - 1; i >= 0; i-- {
					if err := s.removeNode(ctx, p, names[i]); err != nil {
						return "", status.Errorf(codes.Internal, "Failed to delete node %s of node pool %s: %v", names[i], p.key, err)
					}
					removed = append(removed, names[i])
				}
			}
		}
		for _, zone := range snap.Locations {
			names := byZone[zone]
			for i := len(names) - 1; i >= int(perZone); i-- {
				if err := s.removeNode(ctx, p, names[i]); err != nil {
					return "", status.Errorf(codes.Internal, "Failed to delete node %s of node pool %s: %v", names[i], p.key, err)
				}
				removed = append(removed, names[i])
			}
			for i := len(names); i < int(perZone); i++ {
				name, err := s.addNode(ctx, p, cpb, snap, zone)
				if err != nil {
					return "", status.Errorf(codes.Internal, "Failed to create node in zone %s for node pool %s: %v", zone, p.key, err)
				}
				added = append(added, name)
			}
		}
		return resizeDetail(added, removed), nil
	}
}

func resizeDetail(added, removed []string) string {
	var parts []string
	if len(added) > 0 {
		parts = append(parts, "added nodes: "+strings.Join(added, ", "))
	}
	if len(removed) > 0 {
		parts = append(parts, "removed nodes: "+strings.Join(removed, ", "))
	}
	if len(parts) == 0 {
		return "no node changes"
	}
	return strings.Join(parts, "; ")
}

// SetNodePoolSize sets the per-zone node count (clamped into the autoscaling limits when
// autoscaling is on). The emulator records the size in initial_node_count, as mockcontainer
// does; real GKE keeps the size in the instance groups.
func (s *Server) SetNodePoolSize(_ context.Context, req *containerpb.SetNodePoolSizeRequest) (*containerpb.Operation, error) {
	k, err := poolKeyOf(req)
	if err != nil {
		return nil, err
	}
	if req.GetNodeCount() < 0 {
		return nil, invalid("Invalid value for field \"node_count\": %d. Must be non-negative.", req.GetNodeCount())
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	c, p, err := s.idlePoolLocked("SetNodePoolSize", k)
	if err != nil {
		return nil, err
	}
	n := clampCount(req.GetNodeCount(), p.np.Autoscaling, len(p.np.Locations))
	p.np.InitialNodeCount = n
	p.np.Status = containerpb.NodePool_RECONCILING
	p.np.Etag = randHex(16)
	work := s.resizeWork(p, cloneCluster(c.pb), clonePool(p.np), n)
	return s.startOpLocked(k, p, containerpb.Operation_SET_NODE_POOL_SIZE, "resizing", work, settle(p, containerpb.NodePool_RUNNING_WITH_ERROR)), nil
}

// SetNodePoolAutoscaling stores the autoscaling settings and clamps the node count into them.
func (s *Server) SetNodePoolAutoscaling(_ context.Context, req *containerpb.SetNodePoolAutoscalingRequest) (*containerpb.Operation, error) {
	k, err := poolKeyOf(req)
	if err != nil {
		return nil, err
	}
	if req.GetAutoscaling() == nil {
		return nil, invalid("Invalid request: autoscaling must be set.")
	}
	if err := checkAutoscaling(req.GetAutoscaling()); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	c, p, err := s.idlePoolLocked("SetNodePoolAutoscaling", k)
	if err != nil {
		return nil, err
	}
	a := proto.Clone(req.GetAutoscaling()).(*containerpb.NodePoolAutoscaling)
	if a.Enabled && a.LocationPolicy == containerpb.NodePoolAutoscaling_LOCATION_POLICY_UNSPECIFIED {
		a.LocationPolicy = containerpb.NodePoolAutoscaling_BALANCED
	}
	if !a.Enabled {
		a = &containerpb.NodePoolAutoscaling{}
	}
	p.np.Autoscaling = a
	n := clampCount(p.np.InitialNodeCount, a, len(p.np.Locations))
	p.np.InitialNodeCount = n
	p.np.Status = containerpb.NodePool_RECONCILING
	p.np.Etag = randHex(16)
	work := s.resizeWork(p, cloneCluster(c.pb), clonePool(p.np), n)
	return s.startOpLocked(k, p, containerpb.Operation_UPDATE_CLUSTER, "updating autoscaling of", work, settle(p, containerpb.NodePool_RUNNING_WITH_ERROR)), nil
}

// SetNodePoolManagement stores auto-repair / auto-upgrade settings.
func (s *Server) SetNodePoolManagement(_ context.Context, req *containerpb.SetNodePoolManagementRequest) (*containerpb.Operation, error) {
	k, err := poolKeyOf(req)
	if err != nil {
		return nil, err
	}
	if req.GetManagement() == nil {
		return nil, invalid("Invalid request: management must be set.")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	c, p, err := s.idlePoolLocked("SetNodePoolManagement", k)
	if err != nil {
		return nil, err
	}
	if err := autoUpgradeErr(c, req.GetManagement()); err != nil {
		return nil, err
	}
	m := proto.Clone(req.GetManagement()).(*containerpb.NodeManagement)
	m.UpgradeOptions = p.np.GetManagement().GetUpgradeOptions()
	p.np.Management = m
	p.np.Etag = randHex(16)
	work := func(context.Context) (string, error) { return "", nil }
	return s.startOpLocked(k, p, containerpb.Operation_SET_NODE_POOL_MANAGEMENT, "updating management of", work, nil), nil
}

// UpdateNodePool applies an update. Labels, taints, tags, resource labels, resource manager tags
// and the node drain config change in place; machine type, boot disk (type, size, provisioned
// IOPS and throughput), image type, kubelet and Linux node config, workload metadata mode, gVNIC,
// image streaming (gcfs) and node network (private nodes, bandwidth tier) changes recreate every
// node (new names),
// one at a time per the upgrade strategy (SURGE with max_surge >= 1: new node first; otherwise
// old node first; BLUE_GREEN: all new nodes, then all old ones); location changes add or remove
// the nodes of the zones concerned. Fields the request cannot carry (Local SSD counts, spot,
// ...) are immutable, as in GKE.
func (s *Server) UpdateNodePool(_ context.Context, req *containerpb.UpdateNodePoolRequest) (*containerpb.Operation, error) {
	k, err := poolKeyOf(req)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	c, p, err := s.idlePoolLocked("UpdateNodePool", k)
	if err != nil {
		return nil, err
	}
	if req.GetEtag() != "" && req.GetEtag() != p.np.Etag {
		return nil, status.Errorf(codes.Aborted, "Node pool %s was modified concurrently: etag %q does not match the current etag %q. Get the node pool again and retry.", k, req.GetEtag(), p.np.Etag)
	}
	np := clonePool(p.np)
	oldCfg := clonePool(p.np).Config
	cfg := np.Config
	var recreate []string
	if v := req.GetMachineType(); v != "" && v != cfg.MachineType {
		cfg.MachineType = v
		recreate = append(recreate, "machine_type")
	}
	if v := req.GetDiskType(); v != "" && v != cfg.DiskType {
		cfg.DiskType = v
		recreate = append(recreate, "disk_type")
	}
	if v := req.GetDiskSizeGb(); v != 0 && int32(v) != cfg.DiskSizeGb {
		if v < minBootDiskGB {
			return nil, invalid("Invalid value for field \"disk_size_gb\": %d. Disk size must be at least %d GB.", v, minBootDiskGB)
		}
		cfg.DiskSizeGb = int32(v)
		recreate = append(recreate, "disk_size_gb")
	}
	iops, tput := cfg.GetBootDisk().GetProvisionedIops(), cfg.GetBootDisk().GetProvisionedThroughput()
	if b := req.GetBootDisk(); b != nil {
		if b.DiskType != "" && b.DiskType != cfg.DiskType {
			cfg.DiskType = b.DiskType
			recreate = append(recreate, "boot_disk.disk_type")
		}
		if b.SizeGb != 0 && int32(b.SizeGb) != cfg.DiskSizeGb {
			if b.SizeGb < minBootDiskGB {
				return nil, invalid("Invalid value for field \"boot_disk.size_gb\": %d. Disk size must be at least %d GB.", b.SizeGb, minBootDiskGB)
			}
			cfg.DiskSizeGb = int32(b.SizeGb)
			recreate = append(recreate, "boot_disk.size_gb")
		}
		if b.ProvisionedIops != iops || b.ProvisionedThroughput != tput {
			iops, tput = b.ProvisionedIops, b.ProvisionedThroughput
			recreate = append(recreate, "boot_disk.provisioned_iops/throughput")
		}
	}
	cfg.BootDisk = &containerpb.BootDisk{DiskType: cfg.DiskType, SizeGb: int64(cfg.DiskSizeGb), ProvisionedIops: iops, ProvisionedThroughput: tput}
	if v := strings.ToUpper(req.GetImageType()); v != "" && v != cfg.ImageType {
		cfg.ImageType = v
		recreate = append(recreate, "image_type")
	}
	if v := req.GetNodeVersion(); v != "" {
		want := c.pb.CurrentMasterVersion // "-" and "latest": the master's version
		if v != "-" && v != "latest" {
			var err error
			if want, err = nodeVersion(v, c.pb.CurrentMasterVersion); err != nil {
				return nil, err
			}
		}
		if want != np.Version {
			np.Version = want // a node upgrade (or downgrade): GKE recreates the VMs
			recreate = append(recreate, "node_version")
		}
	}
	if req.GetLabels() != nil {
		cfg.Labels = maps.Clone(req.GetLabels().GetLabels())
	}
	if req.GetTaints() != nil {
		cfg.Taints = req.GetTaints().GetTaints()
	}
	if req.GetResourceLabels() != nil {
		prov := cfg.ResourceLabels["goog-gke-node-pool-provisioning-model"]
		cfg.ResourceLabels = maps.Clone(req.GetResourceLabels().GetLabels())
		if cfg.ResourceLabels == nil {
			cfg.ResourceLabels = map[string]string{}
		}
		cfg.ResourceLabels["goog-gke-node-pool-provisioning-model"] = prov
	}
	if req.GetTags() != nil {
		cfg.Tags = req.GetTags().GetTags()
	}
	if req.GetResourceManagerTags() != nil {
		cfg.ResourceManagerTags = proto.Clone(req.GetResourceManagerTags()).(*containerpb.ResourceManagerTags)
	}
	if req.GetNodeDrainConfig() != nil {
		np.NodeDrainConfig = proto.Clone(req.GetNodeDrainConfig()).(*containerpb.NodePool_NodeDrainConfig)
	}
	// Node system configuration, the metadata server mode, gVNIC, image streaming and the node
	// network settings are applied by recreating the nodes, as GKE does with the pool's upgrade
	// strategy.
	system := func(field string, changed bool) {
		if changed {
			recreate = append(recreate, field)
		}
	}
	if k := req.GetKubeletConfig(); k != nil {
		system("kubelet_config", !proto.Equal(k, cfg.KubeletConfig))
		cfg.KubeletConfig = k
	}
	if l := req.GetLinuxNodeConfig(); l != nil {
		system("linux_node_config", !proto.Equal(l, cfg.LinuxNodeConfig))
		cfg.LinuxNodeConfig = l
	}
	if w := req.GetWorkloadMetadataConfig(); w != nil {
		system("workload_metadata_config", w.GetMode() != cfg.GetWorkloadMetadataConfig().GetMode())
		cfg.WorkloadMetadataConfig = w
	}
	if g := req.GetGvnic(); g != nil {
		system("gvnic", g.GetEnabled() != cfg.GetGvnic().GetEnabled())
		cfg.Gvnic = g
	}
	if g := req.GetGcfsConfig(); g != nil {
		system("gcfs_config", g.GetEnabled() != cfg.GetGcfsConfig().GetEnabled())
		cfg.GcfsConfig = g
	}
	if n := req.GetNodeNetworkConfig(); n != nil {
		if np.NetworkConfig == nil {
			np.NetworkConfig = &containerpb.NodeNetworkConfig{}
		}
		if n.EnablePrivateNodes != nil {
			system("node_network_config.enable_private_nodes", n.GetEnablePrivateNodes() != np.NetworkConfig.GetEnablePrivateNodes())
			np.NetworkConfig.EnablePrivateNodes = n.EnablePrivateNodes
		}
		if p := n.GetNetworkPerformanceConfig(); p != nil {
			system("node_network_config.network_performance_config", !proto.Equal(p, np.NetworkConfig.GetNetworkPerformanceConfig()))
			np.NetworkConfig.NetworkPerformanceConfig = p
		}
	}
	if req.GetLoggingConfig() != nil {
		cfg.LoggingConfig = req.GetLoggingConfig()
	}
	if req.GetUpgradeSettings() != nil {
		u := proto.Clone(req.GetUpgradeSettings()).(*containerpb.NodePool_UpgradeSettings)
		if u.Strategy == nil {
			u.Strategy = np.UpgradeSettings.Strategy
		}
		if u.GetStrategy() == containerpb.NodePoolUpdateStrategy_SURGE && u.MaxSurge == 0 && u.MaxUnavailable == 0 {
			return nil, invalid("Invalid value for field \"upgrade_settings\": max_surge and max_unavailable cannot both be 0.")
		}
		np.UpgradeSettings = u
	}
	if locs := req.GetLocations(); len(locs) > 0 {
		for _, z := range locs {
			if !isZone(z) || regionOf(z) != regionOf(k.Location) {
				return nil, invalid("Invalid value for field \"locations\": zone %q is not in the cluster's region %q.", z, regionOf(k.Location))
			}
		}
		np.Locations = slices.Clone(locs)
	}
	if err := validateConfig(cfg); err != nil {
		return nil, err
	}
	fillFixedLocalSSD(cfg)
	labelsTaints := !maps.Equal(oldCfg.Labels, cfg.Labels) || !taintsEqual(oldCfg.Taints, cfg.Taints)
	np.Status = containerpb.NodePool_RECONCILING
	np.StatusMessage = ""
	np.Etag = randHex(16)
	p.np = np
	snap, cpb := clonePool(np), cloneCluster(c.pb)
	work := func(ctx context.Context) (string, error) {
		var details []string
		s.mu.Lock()
		nodes := slices.Clone(p.nodes)
		s.mu.Unlock()
		if labelsTaints && len(recreate) == 0 {
			for _, n := range nodes {
				if err := s.applyLabelsTaints(ctx, n.Name, oldCfg, snap.Config); err != nil {
					return "", status.Errorf(codes.Internal, "Failed to update labels and taints of node %s: %v", n.Name, err)
				}
			}
			details = append(details, fmt.Sprintf("updated labels/taints of %d node(s) in place", len(nodes)))
		}
		if len(recreate) > 0 {
			d, err := s.recreateNodes(ctx, p, cpb, snap, nodes)
			if err != nil {
				return "", err
			}
			details = append(details, "recreated nodes ("+strings.Join(recreate, ", ")+" changed): "+d)
		}
		d, err := s.resizeWork(p, cpb, snap, snap.InitialNodeCount)(ctx)
		if err != nil {
			return "", err
		}
		if d != "no node changes" {
			details = append(details, d)
		}
		return strings.Join(details, "; "), nil
	}
	return s.startOpLocked(k, p, containerpb.Operation_UPGRADE_NODES, "upgrading", work, settle(p, containerpb.NodePool_RUNNING_WITH_ERROR)), nil
}

func taintsEqual(a, b []*containerpb.NodeTaint) bool {
	return slices.EqualFunc(a, b, func(x, y *containerpb.NodeTaint) bool { return proto.Equal(x, y) })
}

// recreateNodes replaces every node with a new one built from snap, as GKE recreates VMs.
func (s *Server) recreateNodes(ctx context.Context, p *pool, cpb *containerpb.Cluster, snap *containerpb.NodePool, nodes []nodeRec) (string, error) {
	var pairs []string
	add := func(zone string) (string, error) {
		name, err := s.addNode(ctx, p, cpb, snap, zone)
		if err != nil {
			return "", status.Errorf(codes.Internal, "Failed to create replacement node in zone %s for node pool %s: %v", zone, p.key, err)
		}
		return name, nil
	}
	del := func(name string) error {
		if err := s.removeNode(ctx, p, name); err != nil {
			return status.Errorf(codes.Internal, "Failed to delete node %s of node pool %s: %v", name, p.key, err)
		}
		return nil
	}
	us := snap.GetUpgradeSettings()
	if us.GetStrategy() == containerpb.NodePoolUpdateStrategy_BLUE_GREEN {
		var created []string
		for _, n := range nodes {
			name, err := add(n.Zone)
			if err != nil {
				return "", err
			}
			created = append(created, name)
		}
		for i, n := range nodes {
			if err := del(n.Name); err != nil {
				return "", err
			}
			pairs = append(pairs, n.Name+" -> "+created[i])
		}
		return strings.Join(pairs, ", "), nil
	}
	surge := us.GetMaxSurge() >= 1
	for _, n := range nodes {
		var name string
		var err error
		if surge {
			if name, err = add(n.Zone); err != nil {
				return "", err
			}
			if err = del(n.Name); err != nil {
				return "", err
			}
		} else {
			if err = del(n.Name); err != nil {
				return "", err
			}
			if name, err = add(n.Zone); err != nil {
				return "", err
			}
		}
		pairs = append(pairs, n.Name+" -> "+name)
	}
	return strings.Join(pairs, ", "), nil
}
