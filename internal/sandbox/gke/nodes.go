package gke

import (
	"context"
	"crypto/rand"
	"fmt"
	"hash/fnv"
	"maps"
	"net/netip"
	"strconv"
	"strings"

	"cloud.google.com/go/container/apiv1/containerpb"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"
)

// Node facts shared with the other sandbox components (see DESIGN.md).
const (
	LabelNodePool      = "cloud.google.com/gke-nodepool"
	LabelLocalNVMeSSD  = "cloud.google.com/gke-local-nvme-ssd"
	LabelEphemeralSSD  = "cloud.google.com/gke-ephemeral-storage-local-ssd"
	LabelMachineFamily = "cloud.google.com/machine-family"
	LabelBootDisk      = "cloud.google.com/gke-boot-disk"
	LabelSpot          = "cloud.google.com/gke-spot"
	LabelPreemptible   = "cloud.google.com/gke-preemptible"
	AnnotationKwokNode = "kwok.x-k8s.io/node"
	// AnnotationInstanceID is the Compute Engine instance ID GKE writes on every Node: a new VM
	// (a recreation, even under the same name) has a new one; a reboot keeps it.
	AnnotationInstanceID = "container.googleapis.com/instance_id"
	AnnotationSSDCount   = "sandbox.olapgke.io/local-nvme-ssd-count"
	AnnotationThinPools  = "sandbox.olapgke.io/thin-pools"
	AnnotationVG         = "sandbox.olapgke.io/volume-group"
	AnnotationPoolLabel  = "sandbox.olapgke.io/pool-labels" // user label keys the pool manages
)

// poolHash is the 8-hex part of GKE node names (GKE derives it per instance group).
func poolHash(k poolKey, salt string) string {
	h := fnv.New32a()
	_, _ = h.Write([]byte(k.String() + "|" + salt))
	return fmt.Sprintf("%08x", h.Sum32())
}

// nodePrefixCore is "<cluster>-<pool>" truncated like GKE instance names: GKE keeps instance
// names within 63 characters by truncating the cluster and pool names; here the cluster part is
// cut to 20 and the whole core to 36 characters so "gke-<core>-<8hex>-<4>" stays below 63.
func nodePrefixCore(clusterName, poolName string) string {
	c := clusterName
	if len(c) > 20 {
		c = strings.TrimRight(c[:20], "-")
	}
	core := c + "-" + poolName
	if len(core) > 36 {
		core = strings.TrimRight(core[:36], "-")
	}
	return core
}

const alnum = "abcdefghijklmnopqrstuvwxyz0123456789"

func randAlnum(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	for i := range b {
		b[i] = alnum[int(b[i])%len(alnum)]
	}
	return string(b)
}

// nodeName makes a GKE-like node name: gke-<cluster>-<pool>-<8 hex per zone>-<4 alnum>.
func nodeName(k poolKey, zone string) string {
	return "gke-" + nodePrefixCore(k.Cluster, k.Pool) + "-" + poolHash(k, zone) + "-" + randAlnum(4)
}

// localSSDCounts returns the raw-block and ephemeral Local SSD counts of a pool config.
func localSSDCounts(cfg *containerpb.NodeConfig) (raw, eph int32) {
	return cfg.GetLocalNvmeSsdBlockConfig().GetLocalSsdCount(), cfg.GetEphemeralStorageLocalSsdConfig().GetLocalSsdCount()
}

// buildNode is the Node object GKE's VM would register for pool np in zone.
func (s *Server) buildNode(name, zone string, c *containerpb.Cluster, np *containerpb.NodePool) *corev1.Node {
	cfg := np.Config
	mt, _ := lookupMachineType(cfg.MachineType)
	raw, eph := localSSDCounts(cfg)
	labels := map[string]string{
		LabelNodePool:                              np.Name,
		LabelMachineFamily:                         mt.Family,
		LabelBootDisk:                              cfg.DiskType,
		"cloud.google.com/gke-os-distribution":     strings.ToLower(strings.Split(cfg.ImageType, "_")[0]),
		"cloud.google.com/gke-container-runtime":   "containerd",
		"cloud.google.com/gke-provisioning":        provisioning(cfg),
		"node.kubernetes.io/instance-type":         cfg.MachineType,
		"beta.kubernetes.io/instance-type":         cfg.MachineType,
		"topology.kubernetes.io/zone":              zone,
		"topology.kubernetes.io/region":            regionOf(zone),
		"failure-domain.beta.kubernetes.io/zone":   zone,
		"failure-domain.beta.kubernetes.io/region": regionOf(zone),
		"kubernetes.io/hostname":                   name,
		"kubernetes.io/os":                         "linux",
		"kubernetes.io/arch":                       "amd64",
		"beta.kubernetes.io/os":                    "linux",
		"beta.kubernetes.io/arch":                  "amd64",
	}
	labels["cloud.google.com/gke-max-pods-per-node"] = strconv.FormatInt(np.GetMaxPodsConstraint().GetMaxPodsPerNode(), 10)
	labels["cloud.google.com/gke-cpu-scaling-level"] = strconv.FormatInt(mt.VCPUs, 10)
	if raw > 0 {
		labels[LabelLocalNVMeSSD] = "true"
	}
	if eph > 0 {
		labels[LabelEphemeralSSD] = "true"
	}
	if cfg.Spot {
		labels[LabelSpot] = "true"
	}
	if cfg.Preemptible {
		labels[LabelPreemptible] = "true"
	}
	maps.Copy(labels, cfg.Labels)

	fsBytes, ephAllocatable := ephemeralStorage(int64(cfg.DiskSizeGb)*gib, eph)
	mem := mt.MemoryMB << 20
	maxPods := np.GetMaxPodsConstraint().GetMaxPodsPerNode()
	if maxPods == 0 {
		maxPods = 110
	}
	capacity := corev1.ResourceList{
		corev1.ResourceCPU:              *resource.NewQuantity(mt.VCPUs, resource.DecimalSI),
		corev1.ResourceMemory:           *resource.NewQuantity(mem, resource.BinarySI),
		corev1.ResourcePods:             *resource.NewQuantity(maxPods, resource.DecimalSI),
		corev1.ResourceEphemeralStorage: *resource.NewQuantity(fsBytes, resource.BinarySI),
	}
	allocatable := corev1.ResourceList{
		corev1.ResourceCPU:              *resource.NewMilliQuantity(mt.VCPUs*1000-cpuReservedMilli(mt.VCPUs), resource.DecimalSI),
		corev1.ResourceMemory:           *resource.NewQuantity(mem-memoryReservedBytes(mem), resource.BinarySI),
		corev1.ResourcePods:             *resource.NewQuantity(maxPods, resource.DecimalSI),
		corev1.ResourceEphemeralStorage: *resource.NewQuantity(ephAllocatable, resource.BinarySI),
	}
	keys := make([]string, 0, len(cfg.Labels))
	for k := range cfg.Labels {
		keys = append(keys, k)
	}
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:   name,
			Labels: labels,
			Annotations: map[string]string{
				AnnotationKwokNode:             "fake",
				AnnotationSSDCount:             strconv.Itoa(int(raw)),
				AnnotationVG:                   s.o.VolumeGroup,
				AnnotationPoolLabel:            strings.Join(sortedStrings(keys), ","),
				AnnotationInstanceID:           randDigits(19),
				"node.alpha.kubernetes.io/ttl": "0",
			},
		},
		Spec: corev1.NodeSpec{
			ProviderID: "gce://" + projectOfSelfLink(c.SelfLink) + "/" + zone + "/" + name,
			Taints:     toKubeTaints(cfg.Taints),
		},
		// What a kubelet registers (kubelet's initialNode runs its status setters first): the
		// node comes up Ready, so KWOK's node-initialize stage has nothing left to do and only
		// keeps the node alive (lease, heartbeats). One write per node instead of two matters
		// with hundreds of seeded nodes.
		Status: corev1.NodeStatus{
			Capacity:    capacity,
			Allocatable: allocatable,
			Phase:       corev1.NodeRunning,
			Conditions:  registeredConditions(metav1.Now()),
			Addresses: []corev1.NodeAddress{
				{Type: corev1.NodeInternalIP, Address: s.nextNodeIP()},
				{Type: corev1.NodeHostName, Address: name},
			},
			DaemonEndpoints: corev1.NodeDaemonEndpoints{KubeletEndpoint: corev1.DaemonEndpoint{Port: 10250}},
			NodeInfo: corev1.NodeSystemInfo{
				KubeletVersion:          "v" + np.Version,
				OperatingSystem:         "linux",
				Architecture:            "amd64",
				ContainerRuntimeVersion: "containerd://2.0.4",
				OSImage:                 "Container-Optimized OS from Google",
				KernelVersion:           "6.6.72+",
				MachineID:               randHex(16),
				SystemUUID:              randHex(16),
				BootID:                  randHex(16),
			},
		},
	}
	if raw > 0 && s.o.ThinPools != "" {
		n.Annotations[AnnotationThinPools] = s.o.ThinPools
	}
	if s.o.RegisterNode != nil {
		s.o.RegisterNode(n)
	}
	return n
}

// registeredConditions are the conditions of a healthy node as its kubelet reports them (the
// same set and texts KWOK uses for its simulated kubelets).
func registeredConditions(now metav1.Time) []corev1.NodeCondition {
	c := func(t corev1.NodeConditionType, s corev1.ConditionStatus, reason, msg string) corev1.NodeCondition {
		return corev1.NodeCondition{Type: t, Status: s, Reason: reason, Message: msg, LastHeartbeatTime: now, LastTransitionTime: now}
	}
	return []corev1.NodeCondition{
		c(corev1.NodeReady, corev1.ConditionTrue, "KubeletReady", "kubelet is posting ready status"),
		c(corev1.NodeMemoryPressure, corev1.ConditionFalse, "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
		c(corev1.NodeDiskPressure, corev1.ConditionFalse, "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
		c(corev1.NodePIDPressure, corev1.ConditionFalse, "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
		c(corev1.NodeNetworkUnavailable, corev1.ConditionFalse, "RouteCreated", "RouteController created a route"),
	}
}

// nextNodeIP hands out node InternalIPs from 10.128.0.0/16 (GKE's default subnet starts at
// 10.128.0.0 in us-central1; one range for every region here), .2 upwards.
func (s *Server) nextNodeIP() string {
	n := s.ipSeq.Add(1) + 1
	return netip.AddrFrom4([4]byte{10, 128, byte(n >> 8), byte(n)}).String()
}

func projectOfSelfLink(link string) string {
	t := strings.Split(strings.TrimPrefix(link, apiBase), "/")
	if len(t) > 1 {
		return t[1]
	}
	return ""
}

func randDigits(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	for i := range b {
		b[i] = '0' + b[i]%10
	}
	if b[0] == '0' {
		b[0] = '1'
	}
	return string(b)
}

func sortedStrings(in []string) []string {
	out := append([]string(nil), in...)
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j] < out[j-1]; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

func toKubeTaints(ts []*containerpb.NodeTaint) []corev1.Taint {
	var out []corev1.Taint
	for _, t := range ts {
		out = append(out, corev1.Taint{Key: t.Key, Value: t.Value, Effect: kubeEffect(t.Effect)})
	}
	return out
}

func kubeEffect(e containerpb.NodeTaint_Effect) corev1.TaintEffect {
	switch e {
	case containerpb.NodeTaint_NO_SCHEDULE:
		return corev1.TaintEffectNoSchedule
	case containerpb.NodeTaint_PREFER_NO_SCHEDULE:
		return corev1.TaintEffectPreferNoSchedule
	case containerpb.NodeTaint_NO_EXECUTE:
		return corev1.TaintEffectNoExecute
	}
	return ""
}

// addNode creates one Node object for pool p in zone and records it in the pool. A name
// collision (AlreadyExists) picks a new suffix, as a new VM would get.
func (s *Server) addNode(ctx context.Context, p *pool, c *containerpb.Cluster, np *containerpb.NodePool, zone string) (string, error) {
	return s.addNodeWith(ctx, p, c, np, zone, nil)
}

// addNodeWith is addNode with mutate (if not nil) applied to the Node before it is created.
func (s *Server) addNodeWith(ctx context.Context, p *pool, c *containerpb.Cluster, np *containerpb.NodePool, zone string, mutate func(*corev1.Node)) (string, error) {
	for range 5 {
		name := nodeName(p.key, zone)
		n := s.buildNode(name, zone, c, np)
		if mutate != nil {
			mutate(n)
		}
		_, err := s.o.Kube.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			continue
		}
		if err != nil {
			return "", fmt.Errorf("create node %s: %w", name, err)
		}
		s.mu.Lock()
		p.nodes = append(p.nodes, nodeRec{Name: name, Zone: zone})
		s.mu.Unlock()
		return name, nil
	}
	return "", fmt.Errorf("create node in zone %s: could not find a free name", zone)
}

// removeNode cordons and drains a node the way GKE does before deleting a VM, deletes the Node
// object and waits (poll with timeout) until it is gone; finalizers such as topolvm.io/node are
// handled by other sandbox components. The node leaves the pool's record once deletion is issued.
func (s *Server) removeNode(ctx context.Context, p *pool, name string) error {
	nodes := s.o.Kube.CoreV1().Nodes()
	n, err := nodes.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		s.forgetNode(p, name)
		return nil
	}
	if err != nil {
		return fmt.Errorf("get node %s: %w", name, err)
	}
	uid := n.UID
	if err := s.cordon(ctx, name); err != nil {
		return err
	}
	if err := s.drain(ctx, name); err != nil {
		return err
	}
	err = nodes.Delete(ctx, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("delete node %s: %w", name, err)
	}
	s.forgetNode(p, name)
	err = wait.PollUntilContextTimeout(ctx, s.o.PollInterval, s.o.NodeDeleteTimeout, true, func(ctx context.Context) (bool, error) {
		cur, err := nodes.Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		if err != nil {
			return false, nil //nolint:nilerr // transient read errors: keep polling until the timeout
		}
		return cur.UID != uid, nil
	})
	if err != nil {
		return fmt.Errorf("node %s was deleted but still exists after %s (finalizers %v): %w",
			name, s.o.NodeDeleteTimeout, s.finalizers(ctx, name), err)
	}
	return nil
}

func (s *Server) finalizers(ctx context.Context, name string) []string {
	n, err := s.o.Kube.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil
	}
	return n.Finalizers
}

func (s *Server) forgetNode(p *pool, name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, r := range p.nodes {
		if r.Name == name {
			p.nodes = append(p.nodes[:i:i], p.nodes[i+1:]...)
			return
		}
	}
}

func (s *Server) cordon(ctx context.Context, name string) error {
	patch := []byte(`{"spec":{"unschedulable":true}}`)
	_, err := s.o.Kube.CoreV1().Nodes().Patch(ctx, name, types.StrategicMergePatchType, patch, metav1.PatchOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("cordon node %s: %w", name, err)
	}
	return nil
}

// drain evicts the node's Pods (except DaemonSet Pods and mirror Pods, as kubectl drain and GKE
// do) and waits until they are gone, retrying evictions refused by a PodDisruptionBudget; when
// DrainTimeout passes, the Pods still there are deleted with a zero grace period, as GKE
// force-deletes after its drain timeout.
func (s *Server) drain(ctx context.Context, name string) error {
	pods := s.o.Kube.CoreV1().Pods(metav1.NamespaceAll)
	sel := fields.OneTermEqualSelector("spec.nodeName", name).String()
	list := func(ctx context.Context) ([]corev1.Pod, error) {
		l, err := pods.List(ctx, metav1.ListOptions{FieldSelector: sel})
		if err != nil {
			return nil, fmt.Errorf("list pods on node %s: %w", name, err)
		}
		var out []corev1.Pod
		for _, p := range l.Items {
			if p.Spec.NodeName == name && !isDaemonOrMirror(&p) {
				out = append(out, p)
			}
		}
		return out, nil
	}
	// The requests use the operation's ctx, not the poll's: near the drain deadline client-go's
	// rate limiter refuses a request whose wait "would exceed context deadline", an error that is
	// not the timeout and would fail the drain instead of leading to the force delete below.
	err := wait.PollUntilContextTimeout(ctx, s.o.PollInterval, s.o.DrainTimeout, true, func(context.Context) (bool, error) {
		left, err := list(ctx)
		if err != nil {
			return false, err
		}
		for _, p := range left {
			if p.DeletionTimestamp != nil {
				continue // evicted, terminating
			}
			ev := &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace}}
			err := s.o.Kube.CoreV1().Pods(p.Namespace).EvictV1(ctx, ev)
			if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsTooManyRequests(err) {
				return false, fmt.Errorf("evict pod %s/%s from node %s: %w", p.Namespace, p.Name, name, err)
			}
		}
		return len(left) == 0, nil
	})
	if err == nil || ctx.Err() != nil || !wait.Interrupted(err) {
		return err
	}
	left, lerr := list(ctx)
	if lerr != nil {
		return lerr
	}
	zero := int64(0)
	for _, p := range left {
		s.log.Warn("drain timeout: force-deleting pod", "node", name, "pod", p.Namespace+"/"+p.Name, "timeout", s.o.DrainTimeout)
		err := s.o.Kube.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete pod %s/%s after drain timeout on node %s: %w", p.Namespace, p.Name, name, err)
		}
	}
	return nil
}

func isDaemonOrMirror(p *corev1.Pod) bool {
	if _, ok := p.Annotations[corev1.MirrorPodAnnotationKey]; ok {
		return true
	}
	for _, o := range p.OwnerReferences {
		if o.Kind == "DaemonSet" && o.Controller != nil && *o.Controller {
			return true
		}
	}
	return false
}

// applyLabelsTaints updates a node in place after a pool label/taint change: user labels the
// pool set before and no longer has are removed; the pool's old taints are replaced by the new
// ones; labels and taints that others own are left alone.
func (s *Server) applyLabelsTaints(ctx context.Context, name string, oldCfg, newCfg *containerpb.NodeConfig) error {
	nodes := s.o.Kube.CoreV1().Nodes()
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n, err := nodes.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		n = n.DeepCopy()
		if n.Labels == nil {
			n.Labels = map[string]string{}
		}
		for k := range oldCfg.Labels {
			if _, keep := newCfg.Labels[k]; !keep {
				delete(n.Labels, k)
			}
		}
		maps.Copy(n.Labels, newCfg.Labels)
		keys := make([]string, 0, len(newCfg.Labels))
		for k := range newCfg.Labels {
			keys = append(keys, k)
		}
		if n.Annotations == nil {
			n.Annotations = map[string]string{}
		}
		n.Annotations[AnnotationPoolLabel] = strings.Join(sortedStrings(keys), ",")
		old := toKubeTaints(oldCfg.Taints)
		var taints []corev1.Taint
		for _, t := range n.Spec.Taints {
			owned := false
			for _, o := range old {
				if o.Key == t.Key && o.Effect == t.Effect {
					owned = true
				}
			}
			if !owned {
				taints = append(taints, t)
			}
		}
		n.Spec.Taints = append(taints, toKubeTaints(newCfg.Taints)...)
		_, err = nodes.Update(ctx, n, metav1.UpdateOptions{})
		return err
	})
}

// provisioning is the value of the node label cloud.google.com/gke-provisioning.
func provisioning(cfg *containerpb.NodeConfig) string {
	switch {
	case cfg.Spot:
		return "spot"
	case cfg.Preemptible:
		return "preemptible"
	}
	return "standard"
}
