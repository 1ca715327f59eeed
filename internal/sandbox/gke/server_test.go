package gke

import (
	"context"
	"encoding/base64"
	"errors"
	"net"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	container "cloud.google.com/go/container/apiv1"
	"cloud.google.com/go/container/apiv1/containerpb"
	"google.golang.org/api/option"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

const (
	project  = "sandbox"
	location = "us-central1-a"
	clusterN = "olap"
	parent   = "projects/sandbox/locations/us-central1-a/clusters/olap"
)

// defaultPool is the sandbox default world's pool: 3 n2-standard-8, 2 raw-block Local SSDs, 100 GiB boot disk.
func defaultPool() *containerpb.NodePool {
	return &containerpb.NodePool{
		Name:             "pool-a",
		InitialNodeCount: 3,
		Config: &containerpb.NodeConfig{
			MachineType:             "n2-standard-8",
			DiskSizeGb:              100,
			LocalNvmeSsdBlockConfig: &containerpb.LocalNvmeSsdBlockConfig{LocalSsdCount: 2},
		},
	}
}

type env struct {
	s    *Server
	kube *fake.Clientset
	c    *container.ClusterManagerClient
}

func start(t *testing.T, mod func(*Options)) *env {
	t.Helper()
	kube := fake.NewClientset()
	// The API server gives every new object a UID; the fake tracker does not.
	kube.PrependReactor("create", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if o, ok := a.(k8stesting.CreateAction).GetObject().(metav1.Object); ok && o.GetUID() == "" && a.GetSubresource() == "" {
			o.SetUID(types.UID(randHex(16)))
		}
		return false, nil, nil
	})
	o := Options{
		Kube: kube, Endpoint: "127.0.0.1:6443", CACertPEM: []byte("-----BEGIN CERTIFICATE-----\nX\n-----END CERTIFICATE-----\n"),
		Clusters:       []ClusterSeed{{Project: project, Location: location, Name: clusterN, Pools: []*containerpb.NodePool{defaultPool()}}},
		OperationDelay: 5 * time.Millisecond, PollInterval: 5 * time.Millisecond,
		NodeDeleteTimeout: 2 * time.Second, DrainTimeout: time.Second,
	}
	if mod != nil {
		mod(&o)
	}
	s, err := New(o)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	ctx := t.Context()
	if err := s.Seed(ctx); err != nil {
		t.Fatalf("Seed: %v", err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = s.Serve(l) }()
	t.Cleanup(s.Stop)
	c, err := container.NewClusterManagerClient(ctx, option.WithEndpoint(l.Addr().String()), option.WithoutAuthentication(),
		option.WithGRPCDialOption(grpc.WithTransportCredentials(insecure.NewCredentials())))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return &env{s: s, kube: kube, c: c}
}

// wait polls the operation until DONE and returns it with every status seen.
func (e *env) wait(t *testing.T, op *containerpb.Operation) (*containerpb.Operation, []containerpb.Operation_Status) {
	t.Helper()
	seen := []containerpb.Operation_Status{op.Status}
	name := "projects/" + project + "/locations/" + op.Location + "/operations/" + op.Name
	var last *containerpb.Operation
	err := wait.PollUntilContextTimeout(t.Context(), 2*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		got, err := e.c.GetOperation(ctx, &containerpb.GetOperationRequest{Name: name})
		if err != nil {
			return false, err
		}
		if seen[len(seen)-1] != got.Status {
			seen = append(seen, got.Status)
		}
		last = got
		return got.Status == containerpb.Operation_DONE, nil
	})
	if err != nil {
		t.Fatalf("operation %s: %v (seen %v)", op.Name, err, seen)
	}
	return last, seen
}

func (e *env) mustDone(t *testing.T, op *containerpb.Operation, err error) *containerpb.Operation {
	t.Helper()
	if err != nil {
		t.Fatalf("call: %v", err)
	}
	done, _ := e.wait(t, op)
	if done.Error != nil {
		t.Fatalf("operation %s failed: %v", done.Name, done.Error)
	}
	return done
}

// ok returns mustDone bound to t, so a call's two results can be passed directly.
func (e *env) ok(t *testing.T) func(*containerpb.Operation, error) *containerpb.Operation {
	return func(op *containerpb.Operation, err error) *containerpb.Operation {
		t.Helper()
		return e.mustDone(t, op, err)
	}
}

func (e *env) poolNodes(t *testing.T, pool string) []corev1.Node {
	t.Helper()
	l, err := e.kube.CoreV1().Nodes().List(t.Context(), metav1.ListOptions{LabelSelector: LabelNodePool + "=" + pool})
	if err != nil {
		t.Fatal(err)
	}
	return l.Items
}

func names(nodes []corev1.Node) []string {
	var out []string
	for _, n := range nodes {
		out = append(out, n.Name)
	}
	slices.Sort(out)
	return out
}

func wantCode(t *testing.T, err error, code codes.Code, substr string) {
	t.Helper()
	if status.Code(err) != code {
		t.Fatalf("want %v, got %v", code, err)
	}
	if !strings.Contains(strings.ToLower(status.Convert(err).Message()), strings.ToLower(substr)) {
		t.Fatalf("message %q does not contain %q", status.Convert(err).Message(), substr)
	}
}

var nodeNameRE = regexp.MustCompile(`^gke-olap-pool-a-[0-9a-f]{8}-[a-z0-9]{4}$`)

func TestGetClusterAndSeededNodes(t *testing.T) {
	e := start(t, nil)
	ctx := t.Context()
	cl, err := e.c.GetCluster(ctx, &containerpb.GetClusterRequest{Name: parent})
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := base64.StdEncoding.DecodeString(cl.GetMasterAuth().GetClusterCaCertificate())
	if cl.Endpoint != "127.0.0.1:6443" || !strings.Contains(string(ca), "BEGIN CERTIFICATE") || cl.Status != containerpb.Cluster_RUNNING {
		t.Fatalf("cluster: endpoint %q ca %q status %v", cl.Endpoint, ca, cl.Status)
	}
	if len(cl.NodePools) != 1 || cl.NodePools[0].Name != "pool-a" {
		t.Fatalf("node pools %v", cl.NodePools)
	}
	// Deprecated fields address the same cluster.
	if _, err := e.c.GetCluster(ctx, &containerpb.GetClusterRequest{ProjectId: project, Zone: location, ClusterId: clusterN}); err != nil {
		t.Fatal(err)
	}
	_, err = e.c.GetCluster(ctx, &containerpb.GetClusterRequest{Name: "projects/sandbox/locations/us-central1-a/clusters/nope"})
	wantCode(t, err, codes.NotFound, "clusters/nope")
	_, err = e.c.GetCluster(ctx, &containerpb.GetClusterRequest{Name: "clusters/olap"})
	wantCode(t, err, codes.InvalidArgument, "projects/*/locations/*/clusters/*")

	nodes := e.poolNodes(t, "pool-a")
	if len(nodes) != 3 {
		t.Fatalf("want 3 nodes, got %d", len(nodes))
	}
	n := nodes[0]
	if !nodeNameRE.MatchString(n.Name) {
		t.Errorf("node name %q does not look like GKE's", n.Name)
	}
	for k, v := range map[string]string{
		LabelNodePool: "pool-a", LabelMachineFamily: "n2", "node.kubernetes.io/instance-type": "n2-standard-8",
		"topology.kubernetes.io/zone": "us-central1-a", "topology.kubernetes.io/region": "us-central1",
		"kubernetes.io/hostname": n.Name, "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64",
		LabelBootDisk: "pd-balanced", LabelLocalNVMeSSD: "true", "cloud.google.com/gke-max-pods-per-node": "110",
		"cloud.google.com/gke-provisioning": "standard",
	} {
		if n.Labels[k] != v {
			t.Errorf("label %s = %q, want %q", k, n.Labels[k], v)
		}
	}
	for k, v := range map[string]string{AnnotationKwokNode: "fake", AnnotationSSDCount: "2", AnnotationVG: "vg-ssd"} {
		if n.Annotations[k] != v {
			t.Errorf("annotation %s = %q, want %q", k, n.Annotations[k], v)
		}
	}
	if got := n.Status.Capacity.Cpu().Value(); got != 8 {
		t.Errorf("cpu capacity %d", got)
	}
	if got := n.Status.Capacity.Memory().Value(); got != 32<<30 {
		t.Errorf("memory capacity %d", got)
	}
	if got := n.Status.Capacity.Pods().Value(); got != 110 {
		t.Errorf("pods %d", got)
	}
	// The sizing guide's arithmetic (ephemeralStorage), as GKE's node sizing page shows a 100 GiB
	// boot disk: capacity 98831908Ki, allocatable 47060071478 (this gives 151 bytes more).
	if got := n.Status.Capacity.StorageEphemeral().Value(); got != 98831908<<10 {
		t.Errorf("ephemeral capacity %d", got)
	}
	if got := n.Status.Allocatable.StorageEphemeral().Value(); got != 47060071629 {
		t.Errorf("ephemeral allocatable %d, want 47060071629", got)
	}

	// Registered the way a kubelet registers: Ready, with its own InternalIP.
	ips := map[string]bool{}
	for _, n := range nodes {
		conds := map[corev1.NodeConditionType]corev1.ConditionStatus{}
		for _, c := range n.Status.Conditions {
			conds[c.Type] = c.Status
		}
		if conds[corev1.NodeReady] != corev1.ConditionTrue || conds[corev1.NodeDiskPressure] != corev1.ConditionFalse ||
			conds[corev1.NodeMemoryPressure] != corev1.ConditionFalse || n.Status.Phase != corev1.NodeRunning {
			t.Errorf("node %s: conditions %v phase %q", n.Name, conds, n.Status.Phase)
		}
		var internal, host string
		for _, a := range n.Status.Addresses {
			switch a.Type {
			case corev1.NodeInternalIP:
				internal = a.Address
			case corev1.NodeHostName:
				host = a.Address
			}
		}
		if !strings.HasPrefix(internal, "10.128.") || ips[internal] || host != n.Name {
			t.Errorf("node %s: InternalIP %q (seen before: %v), Hostname %q", n.Name, internal, ips[internal], host)
		}
		ips[internal] = true
	}
}

func TestRegisterNodeHookCompletesNewNodes(t *testing.T) {
	var seen atomic.Int32
	e := start(t, func(o *Options) {
		o.RegisterNode = func(n *corev1.Node) {
			seen.Add(1)
			n.Labels["example.com/registered"] = n.Name
		}
	})
	nodes := e.poolNodes(t, "pool-a")
	if len(nodes) != 3 || seen.Load() != 3 {
		t.Fatalf("%d nodes, hook called %d times", len(nodes), seen.Load())
	}
	for _, n := range nodes {
		if n.Labels["example.com/registered"] != n.Name {
			t.Errorf("node %s created without the hook's label: %v", n.Name, n.Labels)
		}
	}
}

func TestCreateGetListDeletePool(t *testing.T) {
	e := start(t, func(o *Options) { o.OperationDelay = 30 * time.Millisecond })
	ctx := t.Context()
	op, err := e.c.CreateNodePool(ctx, &containerpb.CreateNodePoolRequest{Parent: parent, NodePool: &containerpb.NodePool{
		Name: "pool-b", InitialNodeCount: 2,
		Config: &containerpb.NodeConfig{
			MachineType: "c3-standard-8-lssd", LocalNvmeSsdBlockConfig: &containerpb.LocalNvmeSsdBlockConfig{},
			Labels: map[string]string{"team": "olap"},
			Taints: []*containerpb.NodeTaint{{Key: "dedicated", Value: "olap", Effect: containerpb.NodeTaint_NO_SCHEDULE}},
			Spot:   true,
		},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if op.Status != containerpb.Operation_PENDING || op.OperationType != containerpb.Operation_CREATE_NODE_POOL ||
		!strings.HasSuffix(op.TargetLink, parent+"/nodePools/pool-b") || op.StartTime == "" || op.EndTime != "" {
		t.Fatalf("create op: %v", op)
	}
	// While the operation runs, a second mutation on the pool is refused.
	_, err = e.c.SetNodePoolSize(ctx, &containerpb.SetNodePoolSizeRequest{Name: parent + "/nodePools/pool-b", NodeCount: 1})
	wantCode(t, err, codes.FailedPrecondition, "please wait")
	done, seen := e.wait(t, op)
	if !slices.Equal(seen, []containerpb.Operation_Status{containerpb.Operation_PENDING, containerpb.Operation_RUNNING, containerpb.Operation_DONE}) {
		t.Errorf("statuses seen %v", seen)
	}
	if done.Error != nil || done.EndTime == "" || !strings.Contains(done.SelfLink, "/operations/"+op.Name) {
		t.Fatalf("done op: %v", done)
	}
	np, err := e.c.GetNodePool(ctx, &containerpb.GetNodePoolRequest{Name: parent + "/nodePools/pool-b"})
	if err != nil {
		t.Fatal(err)
	}
	if np.Status != containerpb.NodePool_RUNNING || np.Config.DiskSizeGb != 100 || np.Config.DiskType != "pd-balanced" ||
		np.Config.ImageType != "COS_CONTAINERD" || np.Config.ServiceAccount != "default" || np.Version != Version ||
		np.UpgradeSettings.GetStrategy() != containerpb.NodePoolUpdateStrategy_SURGE || np.UpgradeSettings.MaxSurge != 1 ||
		!np.Management.AutoRepair || np.PodIpv4CidrSize != 24 || len(np.InstanceGroupUrls) != 1 || np.SelfLink == "" {
		t.Errorf("defaults not filled: %v", np)
	}
	if got := np.Config.LocalNvmeSsdBlockConfig.LocalSsdCount; got != 2 {
		t.Errorf("c3-standard-8-lssd local SSD count filled as %d, want 2", got)
	}
	nodes := e.poolNodes(t, "pool-b")
	if len(nodes) != 2 {
		t.Fatalf("want 2 nodes, got %d", len(nodes))
	}
	n := nodes[0]
	if n.Labels["team"] != "olap" || n.Labels[LabelSpot] != "true" || n.Labels[LabelMachineFamily] != "c3" || n.Annotations[AnnotationSSDCount] != "2" {
		t.Errorf("labels %v annotations %v", n.Labels, n.Annotations)
	}
	if len(n.Spec.Taints) != 1 || n.Spec.Taints[0].Effect != corev1.TaintEffectNoSchedule || n.Spec.Taints[0].Key != "dedicated" {
		t.Errorf("taints %v", n.Spec.Taints)
	}

	list, err := e.c.ListNodePools(ctx, &containerpb.ListNodePoolsRequest{ProjectId: project, Zone: location, ClusterId: clusterN})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.NodePools) != 2 || list.NodePools[0].Name != "pool-a" || list.NodePools[1].Name != "pool-b" {
		t.Fatalf("list %v", list.NodePools)
	}
	ops, err := e.c.ListOperations(ctx, &containerpb.ListOperationsRequest{Parent: "projects/sandbox/locations/-"})
	if err != nil || len(ops.Operations) != 1 {
		t.Fatalf("ListOperations: %v %v", ops, err)
	}

	dop, err := e.c.DeleteNodePool(ctx, &containerpb.DeleteNodePoolRequest{ProjectId: project, Zone: location, ClusterId: clusterN, NodePoolId: "pool-b"})
	done = e.mustDone(t, dop, err)
	if done.OperationType != containerpb.Operation_DELETE_NODE_POOL || !strings.Contains(done.Detail, n.Name) {
		t.Errorf("delete op %v", done)
	}
	if got := e.poolNodes(t, "pool-b"); len(got) != 0 {
		t.Errorf("nodes left: %v", names(got))
	}
	_, err = e.c.GetNodePool(ctx, &containerpb.GetNodePoolRequest{Name: parent + "/nodePools/pool-b"})
	wantCode(t, err, codes.NotFound, "nodePools/pool-b")
	if got := e.poolNodes(t, "pool-a"); len(got) != 3 {
		t.Errorf("pool-a touched: %v", names(got))
	}
}

func TestCreateValidation(t *testing.T) {
	e := start(t, nil)
	cfg := func(mt string, raw int32) *containerpb.NodeConfig {
		c := &containerpb.NodeConfig{MachineType: mt}
		if raw > 0 {
			c.LocalNvmeSsdBlockConfig = &containerpb.LocalNvmeSsdBlockConfig{LocalSsdCount: raw}
		}
		return c
	}
	cases := map[string]struct {
		parent string
		np     *containerpb.NodePool
		code   codes.Code
		msg    string
	}{
		"unknown machine type":      {np: &containerpb.NodePool{Name: "p1", Config: cfg("n2-standard-7", 0)}, code: codes.InvalidArgument, msg: "machine type \"n2-standard-7\""},
		"unknown family":            {np: &containerpb.NodePool{Name: "p1", Config: cfg("m3-megamem-64", 0)}, code: codes.InvalidArgument, msg: "machine_type"},
		"n2 32 vCPU with 1 SSD":     {np: &containerpb.NodePool{Name: "p1", Config: cfg("n2-standard-32", 1)}, code: codes.InvalidArgument, msg: "[4 8 16 24]"},
		"n2d 64 vCPU with 2 SSD":    {np: &containerpb.NodePool{Name: "p1", Config: cfg("n2d-standard-64", 2)}, code: codes.InvalidArgument, msg: "Local SSD"},
		"e2 with SSD":               {np: &containerpb.NodePool{Name: "p1", Config: cfg("e2-standard-8", 1)}, code: codes.InvalidArgument, msg: "does not support Local SSD"},
		"lssd wrong count":          {np: &containerpb.NodePool{Name: "p1", Config: cfg("c3d-standard-30-lssd", 4)}, code: codes.InvalidArgument, msg: "exactly 2"},
		"tiny boot disk":            {np: &containerpb.NodePool{Name: "p1", Config: &containerpb.NodeConfig{MachineType: "n2-standard-8", DiskSizeGb: 9}}, code: codes.InvalidArgument, msg: "at least 10 GB"},
		"bad disk type":             {np: &containerpb.NodePool{Name: "p1", Config: &containerpb.NodeConfig{MachineType: "n2-standard-8", DiskType: "pd-fast"}}, code: codes.InvalidArgument, msg: "disk_type"},
		"bad image":                 {np: &containerpb.NodePool{Name: "p1", Config: &containerpb.NodeConfig{MachineType: "n2-standard-8", ImageType: "WINDOWS_LTSC"}}, code: codes.InvalidArgument, msg: "image_type"},
		"uppercase name":            {np: &containerpb.NodePool{Name: "Pool", Config: cfg("n2-standard-8", 0)}, code: codes.InvalidArgument, msg: "RFC1035"},
		"name over 40":              {np: &containerpb.NodePool{Name: strings.Repeat("a", 41), Config: cfg("n2-standard-8", 0)}, code: codes.InvalidArgument, msg: "1-40"},
		"duplicate":                 {np: &containerpb.NodePool{Name: "pool-a", Config: cfg("n2-standard-8", 0)}, code: codes.AlreadyExists, msg: "nodePools/pool-a"},
		"zone outside region":       {np: &containerpb.NodePool{Name: "p1", Locations: []string{"europe-west1-b"}, Config: cfg("n2-standard-8", 0)}, code: codes.InvalidArgument, msg: "region"},
		"autoscaling min above max": {np: &containerpb.NodePool{Name: "p1", Config: cfg("n2-standard-8", 0), Autoscaling: &containerpb.NodePoolAutoscaling{Enabled: true, MinNodeCount: 5, MaxNodeCount: 2}}, code: codes.InvalidArgument, msg: "min 5, max 2"},
		"missing cluster":           {parent: "projects/sandbox/locations/us-central1-a/clusters/other", np: &containerpb.NodePool{Name: "p1", Config: cfg("n2-standard-8", 0)}, code: codes.NotFound, msg: "clusters/other"},
		"no node pool":              {code: codes.InvalidArgument, msg: "node_pool must be set"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p := parent
			if tc.parent != "" {
				p = tc.parent
			}
			_, err := e.c.CreateNodePool(t.Context(), &containerpb.CreateNodePoolRequest{Parent: p, NodePool: tc.np})
			wantCode(t, err, tc.code, tc.msg)
		})
	}
	list, err := e.c.ListNodePools(t.Context(), &containerpb.ListNodePoolsRequest{Parent: parent})
	if err != nil || len(list.NodePools) != 1 {
		t.Fatalf("rejected pools must not be stored: %v %v", list, err)
	}
}

func TestResizeGrowsAndShrinksNewestFirst(t *testing.T) {
	e := start(t, nil)
	ctx := t.Context()
	before := names(e.poolNodes(t, "pool-a"))
	e.ok(t)(e.c.SetNodePoolSize(ctx, &containerpb.SetNodePoolSizeRequest{Name: parent + "/nodePools/pool-a", NodeCount: 5}))
	grown := names(e.poolNodes(t, "pool-a"))
	if len(grown) != 5 {
		t.Fatalf("want 5 nodes, got %v", grown)
	}
	var added []string
	for _, n := range grown {
		if !slices.Contains(before, n) {
			added = append(added, n)
		}
	}
	// Deprecated fields, shrink to 3: the two newest nodes go, and the operation says which.
	done := e.ok(t)(e.c.SetNodePoolSize(ctx, &containerpb.SetNodePoolSizeRequest{
		ProjectId: project, Zone: location, ClusterId: clusterN, NodePoolId: "pool-a", NodeCount: 3}))
	if got := names(e.poolNodes(t, "pool-a")); !slices.Equal(got, before) {
		t.Fatalf("after shrink %v, want the original %v", got, before)
	}
	for _, n := range added {
		if !strings.Contains(done.Detail, n) {
			t.Errorf("detail %q does not report removed node %s", done.Detail, n)
		}
	}
	np, _ := e.c.GetNodePool(ctx, &containerpb.GetNodePoolRequest{Name: parent + "/nodePools/pool-a"})
	if np.InitialNodeCount != 3 {
		t.Errorf("node count %d", np.InitialNodeCount)
	}
	_, err := e.c.SetNodePoolSize(ctx, &containerpb.SetNodePoolSizeRequest{Name: parent + "/nodePools/pool-a", NodeCount: -1})
	wantCode(t, err, codes.InvalidArgument, "non-negative")
}

func TestAutoscalingClampsAndManagement(t *testing.T) {
	e := start(t, nil)
	ctx := t.Context()
	pn := parent + "/nodePools/pool-a"
	done := e.ok(t)(e.c.SetNodePoolAutoscaling(ctx, &containerpb.SetNodePoolAutoscalingRequest{Name: pn,
		Autoscaling: &containerpb.NodePoolAutoscaling{Enabled: true, MinNodeCount: 4, MaxNodeCount: 6}}))
	if got := len(e.poolNodes(t, "pool-a")); got != 4 {
		t.Fatalf("autoscaling min 4: %d nodes", got)
	}
	if !strings.Contains(done.Detail, "added nodes") {
		t.Errorf("detail %q", done.Detail)
	}
	e.ok(t)(e.c.SetNodePoolSize(ctx, &containerpb.SetNodePoolSizeRequest{Name: pn, NodeCount: 9}))
	if got := len(e.poolNodes(t, "pool-a")); got != 6 {
		t.Fatalf("size 9 clamped to max 6: %d nodes", got)
	}
	_, err := e.c.SetNodePoolAutoscaling(ctx, &containerpb.SetNodePoolAutoscalingRequest{Name: pn,
		Autoscaling: &containerpb.NodePoolAutoscaling{Enabled: true, MinNodeCount: 1, MaxNodeCount: 2, TotalMaxNodeCount: 3}})
	wantCode(t, err, codes.InvalidArgument, "cannot be combined")

	_, err = e.c.SetNodePoolManagement(ctx, &containerpb.SetNodePoolManagementRequest{Name: pn,
		Management: &containerpb.NodeManagement{AutoRepair: false, AutoUpgrade: true}})
	wantCode(t, err, codes.InvalidArgument, "Auto_repair cannot be false when release_channel REGULAR is set.")
	e.ok(t)(e.c.SetNodePoolManagement(ctx, &containerpb.SetNodePoolManagementRequest{Name: pn,
		Management: &containerpb.NodeManagement{AutoRepair: true, AutoUpgrade: true}}))
	np, _ := e.c.GetNodePool(ctx, &containerpb.GetNodePoolRequest{Name: pn})
	if !np.Management.AutoRepair || !np.Management.AutoUpgrade || np.Autoscaling.GetMaxNodeCount() != 6 {
		t.Errorf("management %v autoscaling %v", np.Management, np.Autoscaling)
	}
}

func TestUpdateRecreatesNodesOnMachineChange(t *testing.T) {
	e := start(t, nil)
	ctx := t.Context()
	pn := parent + "/nodePools/pool-a"
	before := names(e.poolNodes(t, "pool-a"))
	done := e.ok(t)(e.c.UpdateNodePool(ctx, &containerpb.UpdateNodePoolRequest{Name: pn,
		MachineType: "n2-standard-16", DiskSizeGb: 200, NodeVersion: "-", ImageType: "COS_CONTAINERD"}))
	if done.OperationType != containerpb.Operation_UPGRADE_NODES {
		t.Errorf("op type %v", done.OperationType)
	}
	after := e.poolNodes(t, "pool-a")
	if len(after) != 3 {
		t.Fatalf("want 3 nodes, got %v", names(after))
	}
	for _, n := range after {
		if slices.Contains(before, n.Name) {
			t.Errorf("node %s survived a machine type change", n.Name)
		}
		if !nodeNameRE.MatchString(n.Name) || n.Labels["node.kubernetes.io/instance-type"] != "n2-standard-16" ||
			n.Status.Capacity.StorageEphemeral().Value() != 200<<30-6025692<<10 || n.Annotations[AnnotationSSDCount] != "2" {
			t.Errorf("node %s: labels %v capacity %v", n.Name, n.Labels, n.Status.Capacity)
		}
	}
	for _, b := range before {
		if !strings.Contains(done.Detail, b+" -> ") {
			t.Errorf("detail %q does not report %s", done.Detail, b)
		}
	}
	np, _ := e.c.GetNodePool(ctx, &containerpb.GetNodePoolRequest{Name: pn})
	if np.Config.MachineType != "n2-standard-16" || np.Config.DiskSizeGb != 200 || np.Config.BootDisk.GetSizeGb() != 200 || np.Status != containerpb.NodePool_RUNNING {
		t.Errorf("pool after update: %v", np)
	}

	// A machine type that cannot carry the pool's 2 Local SSDs is refused synchronously.
	_, err := e.c.UpdateNodePool(ctx, &containerpb.UpdateNodePoolRequest{Name: pn, MachineType: "e2-standard-16"})
	wantCode(t, err, codes.InvalidArgument, "does not support Local SSD")
	_, err = e.c.UpdateNodePool(ctx, &containerpb.UpdateNodePoolRequest{Name: pn, DiskSizeGb: 5})
	wantCode(t, err, codes.InvalidArgument, "at least 10 GB")
	_, err = e.c.UpdateNodePool(ctx, &containerpb.UpdateNodePoolRequest{Name: pn, Etag: "stale", Labels: &containerpb.NodeLabels{}})
	wantCode(t, err, codes.Aborted, "etag")
}

func TestUpdateLabelsAndTaintsInPlace(t *testing.T) {
	e := start(t, func(o *Options) {
		o.Clusters[0].Pools[0].Config.Labels = map[string]string{"old": "1", "keep": "a"}
		o.Clusters[0].Pools[0].Config.Taints = []*containerpb.NodeTaint{{Key: "gone", Value: "x", Effect: containerpb.NodeTaint_NO_EXECUTE}}
	})
	ctx := t.Context()
	before := e.poolNodes(t, "pool-a")
	// Someone else's taint and label on one node must survive the update.
	n0 := before[0].DeepCopy()
	n0.Spec.Taints = append(n0.Spec.Taints, corev1.Taint{Key: "node.kubernetes.io/not-ready", Effect: corev1.TaintEffectNoSchedule})
	n0.Labels["topology.topolvm.io/node"] = n0.Name
	if _, err := e.kube.CoreV1().Nodes().Update(ctx, n0, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	done := e.ok(t)(e.c.UpdateNodePool(ctx, &containerpb.UpdateNodePoolRequest{Name: parent + "/nodePools/pool-a",
		Labels: &containerpb.NodeLabels{Labels: map[string]string{"keep": "b", "new": "2"}},
		Taints: &containerpb.NodeTaints{Taints: []*containerpb.NodeTaint{{Key: "dedicated", Value: "olap", Effect: containerpb.NodeTaint_NO_SCHEDULE}}},
	}))
	if !strings.Contains(done.Detail, "in place") {
		t.Errorf("detail %q", done.Detail)
	}
	after := e.poolNodes(t, "pool-a")
	if !slices.Equal(names(after), names(before)) {
		t.Fatalf("label/taint update renamed nodes: %v -> %v", names(before), names(after))
	}
	for _, n := range after {
		if _, ok := n.Labels["old"]; ok || n.Labels["keep"] != "b" || n.Labels["new"] != "2" || n.Labels[LabelNodePool] != "pool-a" {
			t.Errorf("node %s labels %v", n.Name, n.Labels)
		}
		var keys []string
		for _, tn := range n.Spec.Taints {
			keys = append(keys, tn.Key)
		}
		slices.Sort(keys)
		want := []string{"dedicated"}
		if n.Name == n0.Name {
			want = []string{"dedicated", "node.kubernetes.io/not-ready"}
			if n.Labels["topology.topolvm.io/node"] != n.Name {
				t.Errorf("foreign label lost on %s", n.Name)
			}
		}
		if !slices.Equal(keys, want) {
			t.Errorf("node %s taints %v, want %v", n.Name, keys, want)
		}
	}
}

func TestOperationFailureIsReportedInOperation(t *testing.T) {
	e := start(t, func(o *Options) { o.NodeDeleteTimeout = 100 * time.Millisecond })
	ctx := t.Context()
	// The API server accepts the delete but the node never goes (a finalizer nobody removes).
	e.kube.PrependReactor("delete", "nodes", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, nil
	})
	op, err := e.c.SetNodePoolSize(ctx, &containerpb.SetNodePoolSizeRequest{Name: parent + "/nodePools/pool-a", NodeCount: 2})
	if err != nil {
		t.Fatal(err)
	}
	done, _ := e.wait(t, op)
	if done.Error == nil || done.Error.Code != int32(codes.Internal) || !strings.Contains(done.StatusMessage, "still exists") {
		t.Fatalf("want a failed operation, got error %v message %q", done.Error, done.StatusMessage)
	}
	np, _ := e.c.GetNodePool(ctx, &containerpb.GetNodePoolRequest{Name: parent + "/nodePools/pool-a"})
	if np.Status != containerpb.NodePool_RUNNING_WITH_ERROR || np.StatusMessage == "" {
		t.Errorf("pool status %v %q", np.Status, np.StatusMessage)
	}
}

func TestInjectFault(t *testing.T) {
	e := start(t, nil)
	e.s.InjectFault("GetNodePool", status.Error(codes.Unavailable, "injected"))
	req := &containerpb.GetNodePoolRequest{Name: parent + "/nodePools/pool-a"}
	_, err := e.s.GetNodePool(t.Context(), req)
	wantCode(t, err, codes.Unavailable, "injected")
	if _, err := e.s.GetNodePool(t.Context(), req); err != nil {
		t.Fatalf("fault must fire once: %v", err)
	}
}

func TestNewRejectsBadSeeds(t *testing.T) {
	kube := fake.NewClientset()
	bad := defaultPool()
	bad.Config.MachineType = "n2-standard-3"
	_, err := New(Options{Kube: kube, Clusters: []ClusterSeed{{Project: project, Location: location, Name: clusterN, Pools: []*containerpb.NodePool{bad}}}})
	if status.Code(errors.Unwrap(err)) != codes.InvalidArgument {
		t.Fatalf("want InvalidArgument, got %v", err)
	}
	if _, err := New(Options{}); err == nil {
		t.Fatal("New without Kube must fail")
	}
}

func TestRegionalClusterSpreadsNodesOverZones(t *testing.T) {
	e := start(t, func(o *Options) {
		o.Clusters = append(o.Clusters, ClusterSeed{Project: project, Location: "europe-west4", Name: "reg",
			Pools: []*containerpb.NodePool{{Name: "p", InitialNodeCount: 2, Config: &containerpb.NodeConfig{MachineType: "n2d-standard-16"}}}})
	})
	nodes := e.poolNodes(t, "p")
	zones := map[string]int{}
	for _, n := range nodes {
		zones[n.Labels["topology.kubernetes.io/zone"]]++
		if n.Labels["topology.kubernetes.io/region"] != "europe-west4" || n.Labels[LabelLocalNVMeSSD] != "" || n.Annotations[AnnotationSSDCount] != "0" {
			t.Errorf("node %s labels %v", n.Name, n.Labels)
		}
	}
	if len(nodes) != 6 || len(zones) != 3 {
		t.Fatalf("want 2 nodes in each of 3 zones, got %v", zones)
	}
	cls, err := e.c.ListClusters(t.Context(), &containerpb.ListClustersRequest{Parent: "projects/sandbox/locations/-"})
	if err != nil || len(cls.Clusters) != 2 {
		t.Fatalf("ListClusters: %v %v", cls, err)
	}
}

func TestDeleteDrainsNodesFirst(t *testing.T) {
	e := start(t, func(o *Options) { o.DrainTimeout = 150 * time.Millisecond })
	ctx := t.Context()
	node := e.poolNodes(t, "pool-a")[0].Name
	ctrl := true
	for _, p := range []*corev1.Pod{
		{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"}, Spec: corev1.PodSpec{NodeName: node}},
		{ObjectMeta: metav1.ObjectMeta{Name: "pdb-blocked", Namespace: "default"}, Spec: corev1.PodSpec{NodeName: node}},
		{ObjectMeta: metav1.ObjectMeta{Name: "ds", Namespace: "kube-system", OwnerReferences: []metav1.OwnerReference{
			{Kind: "DaemonSet", Name: "x", APIVersion: "apps/v1", UID: "u", Controller: &ctrl}}}, Spec: corev1.PodSpec{NodeName: node}},
	} {
		if _, err := e.kube.CoreV1().Pods(p.Namespace).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	var evicted []string
	// Stand-in for the API server's eviction subresource: a PDB refuses "pdb-blocked" with 429.
	e.kube.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "eviction" {
			return false, nil, nil
		}
		ev := a.(k8stesting.CreateAction).GetObject().(*policyv1.Eviction)
		evicted = append(evicted, ev.Name)
		if ev.Name == "pdb-blocked" {
			return true, nil, apierrors.NewTooManyRequests("Cannot evict pod as it would violate the pod's disruption budget.", 1)
		}
		return true, nil, e.kube.Tracker().Delete(corev1.SchemeGroupVersion.WithResource("pods"), ev.Namespace, ev.Name)
	})
	e.ok(t)(e.c.DeleteNodePool(ctx, &containerpb.DeleteNodePoolRequest{Name: parent + "/nodePools/pool-a"}))
	pods, err := e.kube.CoreV1().Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(pods.Items) != 1 || pods.Items[0].Name != "ds" {
		t.Errorf("pods left %v, want only the DaemonSet pod", pods.Items)
	}
	if !slices.Contains(evicted, "web") || !slices.Contains(evicted, "pdb-blocked") || slices.Contains(evicted, "ds") {
		t.Errorf("evictions %v", evicted)
	}
}

func TestSeedLargeAndEmptyPools(t *testing.T) {
	e := start(t, func(o *Options) {
		o.Clusters[0].Pools = append(o.Clusters[0].Pools,
			&containerpb.NodePool{Name: "big", InitialNodeCount: 120, Config: &containerpb.NodeConfig{MachineType: "e2-standard-4"}},
			&containerpb.NodePool{Name: "empty", InitialNodeCount: 0, Config: &containerpb.NodeConfig{MachineType: "e2-standard-4"}})
	})
	big := names(e.poolNodes(t, "big"))
	if len(big) != 120 || len(slices.Compact(slices.Clone(big))) != 120 {
		t.Fatalf("big pool: %d nodes (%d unique)", len(big), len(slices.Compact(slices.Clone(big))))
	}
	if got := e.poolNodes(t, "empty"); len(got) != 0 {
		t.Fatalf("empty pool has %d nodes", len(got))
	}
	np, err := e.c.GetNodePool(t.Context(), &containerpb.GetNodePoolRequest{Name: parent + "/nodePools/empty"})
	if err != nil || np.InitialNodeCount != 0 {
		t.Fatalf("empty pool: %v %v", np, err)
	}
}

func TestUpdateLocationsAddsAndRemovesZones(t *testing.T) {
	e := start(t, func(o *Options) {
		o.Clusters = []ClusterSeed{{Project: project, Location: "europe-west4", Name: "reg",
			Pools: []*containerpb.NodePool{{Name: "p", InitialNodeCount: 1, Config: &containerpb.NodeConfig{MachineType: "n2-standard-4"}}}}}
	})
	pn := "projects/sandbox/locations/europe-west4/clusters/reg/nodePools/p"
	zones := func() map[string]int {
		out := map[string]int{}
		for _, n := range e.poolNodes(t, "p") {
			out[n.Labels["topology.kubernetes.io/zone"]]++
		}
		return out
	}
	before := zones()
	done := e.ok(t)(e.c.UpdateNodePool(t.Context(), &containerpb.UpdateNodePoolRequest{Name: pn, Locations: []string{"europe-west4-a", "europe-west4-b"}}))
	after := zones()
	if len(before) != 3 || len(after) != 2 || after["europe-west4-c"] != 0 || !strings.Contains(done.Detail, "removed nodes") {
		t.Fatalf("zones before %v after %v detail %q", before, after, done.Detail)
	}
	_, err := e.c.UpdateNodePool(t.Context(), &containerpb.UpdateNodePoolRequest{Name: pn, Locations: []string{"us-east1-b"}})
	wantCode(t, err, codes.InvalidArgument, "region")
}

// TestReleaseChannelRequiresAutoUpgrade: a cluster on a release channel refuses node
// auto-upgrade off, in GKE's words and with INVALID_ARGUMENT, when a pool is created and when its
// management is set; a cluster without a channel accepts it.
func TestReleaseChannelRequiresAutoUpgrade(t *testing.T) {
	e := start(t, func(o *Options) {
		o.Clusters = append(o.Clusters,
			ClusterSeed{Project: project, Location: location, Name: "static", ReleaseChannel: "UNSPECIFIED"},
			ClusterSeed{Project: project, Location: location, Name: "fast", ReleaseChannel: "RAPID"})
	})
	ctx := t.Context()
	off := &containerpb.NodeManagement{AutoUpgrade: false, AutoRepair: true}
	newPool := func() *containerpb.NodePool {
		return &containerpb.NodePool{Name: "manual", InitialNodeCount: 1, Management: off,
			Config: &containerpb.NodeConfig{MachineType: "n2-standard-8"}}
	}
	cl, err := e.c.GetCluster(ctx, &containerpb.GetClusterRequest{Name: parent})
	if err != nil || cl.GetReleaseChannel().GetChannel() != containerpb.ReleaseChannel_REGULAR {
		t.Fatalf("seeded cluster's release channel: %v %v", cl.GetReleaseChannel(), err)
	}
	const want = "Auto_upgrade cannot be false when release_channel REGULAR is set."
	_, err = e.c.CreateNodePool(ctx, &containerpb.CreateNodePoolRequest{Parent: parent, NodePool: newPool()})
	wantCode(t, err, codes.InvalidArgument, want)
	if msg := status.Convert(err).Message(); msg != want {
		t.Errorf("message %q, want exactly %q", msg, want)
	}
	_, err = e.c.SetNodePoolManagement(ctx, &containerpb.SetNodePoolManagementRequest{Name: parent + "/nodePools/pool-a", Management: off})
	wantCode(t, err, codes.InvalidArgument, want)
	np, _ := e.c.GetNodePool(ctx, &containerpb.GetNodePoolRequest{Name: parent + "/nodePools/pool-a"})
	if !np.GetManagement().GetAutoUpgrade() {
		t.Errorf("refused management was stored: %v", np.GetManagement())
	}
	_, err = e.c.CreateNodePool(ctx, &containerpb.CreateNodePoolRequest{Parent: "projects/sandbox/locations/us-central1-a/clusters/fast", NodePool: newPool()})
	wantCode(t, err, codes.InvalidArgument, "Auto_upgrade cannot be false when release_channel RAPID is set.")

	static := "projects/sandbox/locations/us-central1-a/clusters/static"
	e.ok(t)(e.c.CreateNodePool(ctx, &containerpb.CreateNodePoolRequest{Parent: static, NodePool: newPool()}))
	e.ok(t)(e.c.SetNodePoolManagement(ctx, &containerpb.SetNodePoolManagementRequest{Name: static + "/nodePools/manual",
		Management: &containerpb.NodeManagement{AutoUpgrade: false, AutoRepair: false}}))
	np, _ = e.c.GetNodePool(ctx, &containerpb.GetNodePoolRequest{Name: static + "/nodePools/manual"})
	if np.GetManagement().GetAutoUpgrade() || np.GetManagement().GetAutoRepair() {
		t.Errorf("management on the cluster without a channel: %v", np.GetManagement())
	}

	_, err = New(Options{Kube: fake.NewClientset(), Clusters: []ClusterSeed{{Project: project, Location: location, Name: "x", ReleaseChannel: "BETA"}}})
	if err == nil || !strings.Contains(err.Error(), `"BETA"`) {
		t.Errorf("seed with an unknown release channel: %v", err)
	}
}

// mutatingPoolRPCs calls every mutating node pool RPC once against pool-a (CreateNodePool: a
// new pool) and returns their errors by name.
func (e *env) mutatingPoolRPCs(t *testing.T) map[string]error {
	t.Helper()
	ctx := t.Context()
	pn := parent + "/nodePools/pool-a"
	errs := map[string]error{}
	_, errs["CreateNodePool"] = e.c.CreateNodePool(ctx, &containerpb.CreateNodePoolRequest{Parent: parent,
		NodePool: &containerpb.NodePool{Name: "pool-x", Config: &containerpb.NodeConfig{MachineType: "n2-standard-8"}}})
	_, errs["DeleteNodePool"] = e.c.DeleteNodePool(ctx, &containerpb.DeleteNodePoolRequest{Name: pn})
	_, errs["SetNodePoolSize"] = e.c.SetNodePoolSize(ctx, &containerpb.SetNodePoolSizeRequest{Name: pn, NodeCount: 4})
	_, errs["SetNodePoolAutoscaling"] = e.c.SetNodePoolAutoscaling(ctx, &containerpb.SetNodePoolAutoscalingRequest{Name: pn,
		Autoscaling: &containerpb.NodePoolAutoscaling{Enabled: true, MinNodeCount: 1, MaxNodeCount: 5}})
	_, errs["SetNodePoolManagement"] = e.c.SetNodePoolManagement(ctx, &containerpb.SetNodePoolManagementRequest{Name: pn,
		Management: &containerpb.NodeManagement{AutoUpgrade: true, AutoRepair: true}})
	_, errs["UpdateNodePool"] = e.c.UpdateNodePool(ctx, &containerpb.UpdateNodePoolRequest{Name: pn,
		Labels: &containerpb.NodeLabels{Labels: map[string]string{"a": "b"}}})
	return errs
}

// TestClusterOperationBlocksNodePoolRPCs: while a cluster-wide operation runs, every mutating
// node pool RPC fails with FAILED_PRECONDITION in GKE's words; the operation is listed, the
// cluster is RECONCILING, and once it is done the RPCs go through.
func TestClusterOperationBlocksNodePoolRPCs(t *testing.T) {
	e := start(t, nil)
	ctx := t.Context()
	_, err := e.s.StartClusterOperation(project, location, clusterN, containerpb.Operation_SET_LABELS, time.Second)
	wantCode(t, err, codes.InvalidArgument, "UPGRADE_MASTER or UPDATE_CLUSTER")
	_, err = e.s.StartClusterOperation(project, location, "nope", containerpb.Operation_UPGRADE_MASTER, time.Second)
	wantCode(t, err, codes.NotFound, "clusters/nope")

	op, err := e.s.StartClusterOperation(project, location, clusterN, containerpb.Operation_UPGRADE_MASTER, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	want := "Operation " + op.Name + " is currently upgrading cluster olap. Please wait and try again once it is done."
	for rpc, err := range e.mutatingPoolRPCs(t) {
		if status.Code(err) != codes.FailedPrecondition || status.Convert(err).Message() != want {
			t.Errorf("%s during UPGRADE_MASTER: %v, want FailedPrecondition %q", rpc, err, want)
		}
	}
	_, err = e.s.StartClusterOperation(project, location, clusterN, containerpb.Operation_UPDATE_CLUSTER, time.Second)
	wantCode(t, err, codes.FailedPrecondition, want)
	cl, _ := e.c.GetCluster(ctx, &containerpb.GetClusterRequest{Name: parent})
	if cl.GetStatus() != containerpb.Cluster_RECONCILING {
		t.Errorf("cluster status during the upgrade: %v", cl.GetStatus())
	}
	ops, err := e.c.ListOperations(ctx, &containerpb.ListOperationsRequest{Parent: "projects/sandbox/locations/" + location})
	if err != nil || len(ops.Operations) != 1 || ops.Operations[0].OperationType != containerpb.Operation_UPGRADE_MASTER ||
		!strings.HasSuffix(ops.Operations[0].TargetLink, parent) {
		t.Fatalf("ListOperations: %v %v", ops, err)
	}

	done, err := e.s.AwaitOperation(ctx, op)
	if err != nil || done.Status != containerpb.Operation_DONE || done.Error != nil {
		t.Fatalf("cluster operation: %v %v", done, err)
	}
	cl, _ = e.c.GetCluster(ctx, &containerpb.GetClusterRequest{Name: parent})
	if cl.GetStatus() != containerpb.Cluster_RUNNING {
		t.Errorf("cluster status after the upgrade: %v", cl.GetStatus())
	}
	e.ok(t)(e.c.UpdateNodePool(ctx, &containerpb.UpdateNodePoolRequest{Name: parent + "/nodePools/pool-a",
		Labels: &containerpb.NodeLabels{Labels: map[string]string{"a": "b"}}}))

	// An operation on a pool keeps a cluster-wide one from starting.
	op, err = e.c.SetNodePoolSize(ctx, &containerpb.SetNodePoolSizeRequest{Name: parent + "/nodePools/pool-a", NodeCount: 4})
	if err != nil {
		t.Fatal(err)
	}
	_, err = e.s.StartClusterOperation(project, location, clusterN, containerpb.Operation_UPDATE_CLUSTER, time.Second)
	wantCode(t, err, codes.FailedPrecondition, "Operation "+op.Name+" is currently resizing node pool pool-a.")
	e.wait(t, op)
}

// TestConcurrentOperationsQuota: with the quota used up, mutating node pool RPCs and cluster
// operations fail with RESOURCE_EXHAUSTED in GKE's words, before the busy checks.
func TestConcurrentOperationsQuota(t *testing.T) {
	e := start(t, func(o *Options) { o.OperationDelay = 200 * time.Millisecond })
	ctx := t.Context()
	if _, err := e.s.SetOperationQuota(-1); status.Code(err) != codes.InvalidArgument {
		t.Fatalf("negative quota: %v", err)
	}
	if n, err := e.s.SetOperationQuota(1); err != nil || n != 1 {
		t.Fatalf("SetOperationQuota(1) = %d, %v", n, err)
	}
	op, err := e.s.StartClusterOperation(project, location, clusterN, containerpb.Operation_UPDATE_CLUSTER, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	want := `Too many operations: cluster "olap" hits the concurrent operations quota 1, please try again later.`
	for rpc, err := range e.mutatingPoolRPCs(t) {
		if status.Code(err) != codes.ResourceExhausted || status.Convert(err).Message() != want {
			t.Errorf("%s at the quota: %v, want ResourceExhausted %q", rpc, err, want)
		}
	}
	_, err = e.s.StartClusterOperation(project, location, clusterN, containerpb.Operation_UPGRADE_MASTER, time.Second)
	wantCode(t, err, codes.ResourceExhausted, want)
	// With room in the quota, the cluster operation is what refuses.
	if _, err := e.s.SetOperationQuota(2); err != nil {
		t.Fatal(err)
	}
	_, err = e.c.SetNodePoolSize(ctx, &containerpb.SetNodePoolSizeRequest{Name: parent + "/nodePools/pool-a", NodeCount: 4})
	wantCode(t, err, codes.FailedPrecondition, "is currently updating cluster olap")
	if _, err := e.s.AwaitOperation(ctx, op); err != nil {
		t.Fatal(err)
	}

	// Node pool operations count too: one running on pool-a takes the only slot.
	if _, err := e.s.SetOperationQuota(1); err != nil {
		t.Fatal(err)
	}
	op, err = e.c.SetNodePoolSize(ctx, &containerpb.SetNodePoolSizeRequest{Name: parent + "/nodePools/pool-a", NodeCount: 2})
	if err != nil {
		t.Fatal(err)
	}
	_, err = e.c.CreateNodePool(ctx, &containerpb.CreateNodePoolRequest{Parent: parent,
		NodePool: &containerpb.NodePool{Name: "pool-b", Config: &containerpb.NodeConfig{MachineType: "n2-standard-8"}}})
	wantCode(t, err, codes.ResourceExhausted, "concurrent operations quota 1")
	e.wait(t, op)
	if n, err := e.s.SetOperationQuota(0); err != nil || n != DefaultConcurrentOperations {
		t.Fatalf("SetOperationQuota(0) = %d, %v; want the default %d", n, err, DefaultConcurrentOperations)
	}
	e.ok(t)(e.c.CreateNodePool(ctx, &containerpb.CreateNodePoolRequest{Parent: parent,
		NodePool: &containerpb.NodePool{Name: "pool-b", Config: &containerpb.NodeConfig{MachineType: "n2-standard-8"}}}))
}

// autoRepairOps lists the cluster's AUTO_REPAIR_NODES operations.
func (e *env) autoRepairOps(t *testing.T) []*containerpb.Operation {
	t.Helper()
	ops, err := e.c.ListOperations(t.Context(), &containerpb.ListOperationsRequest{Parent: "projects/sandbox/locations/-"})
	if err != nil {
		t.Fatal(err)
	}
	var out []*containerpb.Operation
	for _, op := range ops.Operations {
		if op.OperationType == containerpb.Operation_AUTO_REPAIR_NODES {
			out = append(out, op)
		}
	}
	return out
}

// TestRecreateNodeNewName: GKE replaces the node by a new one (new name and UID) in the same
// pool and zone, in an AUTO_REPAIR_NODES operation on the pool.
func TestRecreateNodeNewName(t *testing.T) {
	e := start(t, nil)
	ctx := t.Context()
	before := e.poolNodes(t, "pool-a")
	old := before[0]
	_, err := e.s.RecreateNode("gke-nope", RecreateNewName)
	wantCode(t, err, codes.NotFound, "gke-nope")
	_, err = e.s.RecreateNode(old.Name, "reboot")
	wantCode(t, err, codes.InvalidArgument, "new-name")

	op, err := e.s.RecreateNode(old.Name, RecreateNewName)
	if err != nil {
		t.Fatal(err)
	}
	// The repair holds the pool like any operation on it.
	_, err = e.c.SetNodePoolSize(ctx, &containerpb.SetNodePoolSizeRequest{Name: parent + "/nodePools/pool-a", NodeCount: 3})
	wantCode(t, err, codes.FailedPrecondition, "is currently repairing node pool pool-a")
	done, err := e.s.AwaitOperation(ctx, op)
	if err != nil || done.Error != nil {
		t.Fatalf("repair: %v %v", done, err)
	}
	after := e.poolNodes(t, "pool-a")
	if len(after) != 3 {
		t.Fatalf("pool-a has %v after the repair", names(after))
	}
	var fresh *corev1.Node
	for i, n := range after {
		if n.Name == old.Name || n.UID == old.UID {
			t.Fatalf("node %s still there", old.Name)
		}
		if !slices.Contains(names(before), n.Name) {
			fresh = &after[i]
		}
	}
	if fresh == nil || fresh.Labels["topology.kubernetes.io/zone"] != old.Labels["topology.kubernetes.io/zone"] || !nodeNameRE.MatchString(fresh.Name) {
		t.Fatalf("replacement %v", fresh)
	}
	if _, err := time.Parse(time.RFC3339, fresh.Annotations[AnnotationRecreatedAt]); err != nil {
		t.Errorf("replacement's %s: %v", AnnotationRecreatedAt, err)
	}
	repairs := e.autoRepairOps(t)
	if len(repairs) != 1 || repairs[0].Status != containerpb.Operation_DONE || !strings.HasSuffix(repairs[0].TargetLink, parent+"/nodePools/pool-a") ||
		!strings.Contains(repairs[0].Detail, old.Name+" as "+fresh.Name) {
		t.Errorf("AUTO_REPAIR_NODES operations: %v", repairs)
	}
}

// TestRecreateNodeSameName: GKE recreates the VM under the same name: the Node object (UID) is
// kept, drained, and comes back with a new boot ID and instance ID, schedulable again.
func TestRecreateNodeSameName(t *testing.T) {
	e := start(t, nil)
	ctx := t.Context()
	old := e.poolNodes(t, "pool-a")[0]
	if old.UID == "" || old.Status.NodeInfo.BootID == "" {
		t.Fatalf("seeded node without UID or boot ID: %q %q", old.UID, old.Status.NodeInfo.BootID)
	}
	// Stand-in for the eviction subresource (the fake clientset has none).
	e.kube.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "eviction" {
			return false, nil, nil
		}
		ev := a.(k8stesting.CreateAction).GetObject().(*policyv1.Eviction)
		return true, nil, e.kube.Tracker().Delete(corev1.SchemeGroupVersion.WithResource("pods"), ev.Namespace, ev.Name)
	})
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "hist-0", Namespace: "default"}, Spec: corev1.PodSpec{NodeName: old.Name}}
	if _, err := e.kube.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// A cluster-wide operation holds the repair back.
	cop, err := e.s.StartClusterOperation(project, location, clusterN, containerpb.Operation_UPGRADE_MASTER, 200*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	_, err = e.s.RecreateNode(old.Name, RecreateSameName)
	wantCode(t, err, codes.FailedPrecondition, "is currently upgrading cluster olap")
	if _, err := e.s.AwaitOperation(ctx, cop); err != nil {
		t.Fatal(err)
	}

	op, err := e.s.RecreateNode(old.Name, RecreateSameName)
	if err != nil {
		t.Fatal(err)
	}
	done, err := e.s.AwaitOperation(ctx, op)
	if err != nil || done.Error != nil || done.OperationType != containerpb.Operation_AUTO_REPAIR_NODES {
		t.Fatalf("repair: %v %v", done, err)
	}
	n, err := e.kube.CoreV1().Nodes().Get(ctx, old.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if n.UID != old.UID {
		t.Errorf("UID %s -> %s: the Node object must be kept", old.UID, n.UID)
	}
	if b := n.Status.NodeInfo.BootID; b == "" || b == old.Status.NodeInfo.BootID {
		t.Errorf("boot ID %q -> %q: must change", old.Status.NodeInfo.BootID, b)
	}
	if id := n.Annotations[AnnotationInstanceID]; id == "" || id == old.Annotations[AnnotationInstanceID] {
		t.Errorf("instance ID %q -> %q: a recreated VM is a new instance", old.Annotations[AnnotationInstanceID], id)
	}
	if u := n.Status.NodeInfo.SystemUUID; u == "" || u == old.Status.NodeInfo.SystemUUID {
		t.Errorf("system UUID %q -> %q: a recreated VM is a new machine", old.Status.NodeInfo.SystemUUID, u)
	}
	if m := n.Status.NodeInfo.MachineID; m == "" || m == old.Status.NodeInfo.MachineID {
		t.Errorf("machine ID %q -> %q: a recreated VM is a new machine", old.Status.NodeInfo.MachineID, m)
	}
	if _, err := time.Parse(time.RFC3339, n.Annotations[AnnotationRecreatedAt]); err != nil {
		t.Errorf("%s: %v", AnnotationRecreatedAt, err)
	}
	if n.Spec.Unschedulable || n.Labels[LabelNodePool] != "pool-a" {
		t.Errorf("node after the repair: unschedulable %v, labels %v", n.Spec.Unschedulable, n.Labels)
	}
	if _, err := e.kube.CoreV1().Pods("default").Get(ctx, "hist-0", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("pod on the repaired node: %v, want it drained", err)
	}
	if got := names(e.poolNodes(t, "pool-a")); len(got) != 3 || !slices.Contains(got, old.Name) {
		t.Errorf("pool-a after the repair: %v", got)
	}
	if !strings.Contains(done.Detail, old.Status.NodeInfo.BootID+" -> "+n.Status.NodeInfo.BootID) {
		t.Errorf("detail %q", done.Detail)
	}
	if len(e.autoRepairOps(t)) != 1 {
		t.Errorf("want one AUTO_REPAIR_NODES operation listed")
	}
}

// The google_container_node_pool parity fields: CreateNodePool stores them, GetNodePool returns
// them, UpdateNodePool recreates the nodes for node system changes (kubelet, Linux, metadata
// mode, gVNIC, image streaming, node network) and keeps them for tags, resource manager tags
// and the drain config; GKE's documented rules are refused synchronously.
func TestNodePoolParityFields(t *testing.T) {
	e := start(t, nil)
	ctx := t.Context()
	two, respect, private := int32(2), true, true
	tier := containerpb.NodeNetworkConfig_NetworkPerformanceConfig_TIER_1
	enc := containerpb.NodeConfig_EPHEMERAL_KEY_ENCRYPTION
	np := &containerpb.NodePool{Name: "parity", InitialNodeCount: 1,
		Config: &containerpb.NodeConfig{MachineType: "n2-standard-8",
			LocalNvmeSsdBlockConfig:        &containerpb.LocalNvmeSsdBlockConfig{LocalSsdCount: 2},
			EphemeralStorageLocalSsdConfig: &containerpb.EphemeralStorageLocalSsdConfig{DataCacheCount: 2},
			DiskType:                       "hyperdisk-balanced",
			BootDisk:                       &containerpb.BootDisk{DiskType: "hyperdisk-balanced", SizeGb: 100, ProvisionedIops: 3000, ProvisionedThroughput: 140},
			WorkloadMetadataConfig:         &containerpb.WorkloadMetadataConfig{Mode: containerpb.WorkloadMetadataConfig_GKE_METADATA},
			KubeletConfig:                  &containerpb.NodeKubeletConfig{CpuManagerPolicy: "static", PodPidsLimit: 4096, ImageGcHighThresholdPercent: 80, ImageGcLowThresholdPercent: 60},
			LinuxNodeConfig:                &containerpb.LinuxNodeConfig{Sysctls: map[string]string{"net.core.somaxconn": "4096"}, Hugepages: &containerpb.LinuxNodeConfig_HugepagesConfig{HugepageSize2M: &two}},
			Gvnic:                          &containerpb.VirtualNIC{Enabled: true},
			GcfsConfig:                     &containerpb.GcfsConfig{Enabled: true},
			Tags:                           []string{"olap"},
			Metadata:                       map[string]string{"team": "olap"},
			ResourceManagerTags:            &containerpb.ResourceManagerTags{Tags: map[string]string{"tagKeys/1": "tagValues/2"}},
			ShieldedInstanceConfig:         &containerpb.ShieldedInstanceConfig{EnableSecureBoot: true, EnableIntegrityMonitoring: true},
			ReservationAffinity:            &containerpb.ReservationAffinity{ConsumeReservationType: containerpb.ReservationAffinity_NO_RESERVATION},
			SecondaryBootDisks:             []*containerpb.SecondaryBootDisk{{DiskImage: "global/images/cache", Mode: containerpb.SecondaryBootDisk_CONTAINER_IMAGE_CACHE}},
			LocalSsdEncryptionMode:         &enc,
		},
		MaxPodsConstraint:  &containerpb.MaxPodsConstraint{MaxPodsPerNode: 64},
		NetworkConfig:      &containerpb.NodeNetworkConfig{PodRange: "pods-olap", EnablePrivateNodes: &private, NetworkPerformanceConfig: &containerpb.NodeNetworkConfig_NetworkPerformanceConfig{TotalEgressBandwidthTier: &tier}},
		NodeDrainConfig:    &containerpb.NodePool_NodeDrainConfig{RespectPdbDuringNodePoolDeletion: &respect},
		PlacementPolicy:    &containerpb.NodePool_PlacementPolicy{Type: containerpb.NodePool_PlacementPolicy_COMPACT},
		QueuedProvisioning: &containerpb.NodePool_QueuedProvisioning{Enabled: false},
	}
	e.ok(t)(e.c.CreateNodePool(ctx, &containerpb.CreateNodePoolRequest{Parent: parent, NodePool: np}))
	pn := parent + "/nodePools/parity"
	got, err := e.c.GetNodePool(ctx, &containerpb.GetNodePoolRequest{Name: pn})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []proto.Message{np.Config.WorkloadMetadataConfig, np.Config.KubeletConfig, np.Config.LinuxNodeConfig, np.Config.Gvnic,
		np.Config.GcfsConfig, np.Config.ResourceManagerTags, np.Config.ShieldedInstanceConfig, np.Config.ReservationAffinity,
		np.Config.EphemeralStorageLocalSsdConfig, np.Config.BootDisk, np.MaxPodsConstraint, np.NodeDrainConfig, np.PlacementPolicy} {
		found := false
		for _, g := range []proto.Message{got.Config.WorkloadMetadataConfig, got.Config.KubeletConfig, got.Config.LinuxNodeConfig, got.Config.Gvnic,
			got.Config.GcfsConfig, got.Config.ResourceManagerTags, got.Config.ShieldedInstanceConfig, got.Config.ReservationAffinity,
			got.Config.EphemeralStorageLocalSsdConfig, got.Config.BootDisk, got.MaxPodsConstraint, got.NodeDrainConfig, got.PlacementPolicy} {
			found = found || proto.Equal(f, g)
		}
		if !found {
			t.Errorf("GetNodePool lost %T %v", f, f)
		}
	}
	if got.NetworkConfig.GetPodRange() != "pods-olap" || !got.NetworkConfig.GetEnablePrivateNodes() || got.Config.Metadata["team"] != "olap" ||
		!slices.Equal(got.Config.Tags, []string{"olap"}) || got.Config.GetLocalSsdEncryptionMode() != enc || len(got.Config.SecondaryBootDisks) != 1 {
		t.Errorf("GetNodePool: %v", got)
	}

	// In place: tags, resource manager tags, drain config keep the nodes.
	before := names(e.poolNodes(t, "parity"))
	no := false
	e.ok(t)(e.c.UpdateNodePool(ctx, &containerpb.UpdateNodePoolRequest{Name: pn, Tags: &containerpb.NetworkTags{Tags: []string{"olap", "db"}}}))
	e.ok(t)(e.c.UpdateNodePool(ctx, &containerpb.UpdateNodePoolRequest{Name: pn, ResourceManagerTags: &containerpb.ResourceManagerTags{Tags: map[string]string{"tagKeys/1": "tagValues/3"}}}))
	e.ok(t)(e.c.UpdateNodePool(ctx, &containerpb.UpdateNodePoolRequest{Name: pn, NodeDrainConfig: &containerpb.NodePool_NodeDrainConfig{RespectPdbDuringNodePoolDeletion: &no}}))
	if after := names(e.poolNodes(t, "parity")); !slices.Equal(before, after) {
		t.Errorf("in-place updates recreated nodes: %v -> %v", before, after)
	}
	got, _ = e.c.GetNodePool(ctx, &containerpb.GetNodePoolRequest{Name: pn})
	if !slices.Equal(got.Config.Tags, []string{"olap", "db"}) || got.Config.ResourceManagerTags.Tags["tagKeys/1"] != "tagValues/3" || got.NodeDrainConfig.GetRespectPdbDuringNodePoolDeletion() {
		t.Errorf("in-place updates not stored: %v", got)
	}

	// Node system changes recreate every node; each names its field in the detail.
	updates := map[string]*containerpb.UpdateNodePoolRequest{
		"kubelet_config":           {KubeletConfig: &containerpb.NodeKubeletConfig{CpuManagerPolicy: "none"}},
		"linux_node_config":        {LinuxNodeConfig: &containerpb.LinuxNodeConfig{CgroupMode: containerpb.LinuxNodeConfig_CGROUP_MODE_V2}},
		"workload_metadata_config": {WorkloadMetadataConfig: &containerpb.WorkloadMetadataConfig{Mode: containerpb.WorkloadMetadataConfig_GCE_METADATA}},
		"gvnic":                    {Gvnic: &containerpb.VirtualNIC{Enabled: false}},
		"gcfs_config":              {GcfsConfig: &containerpb.GcfsConfig{Enabled: false}},
		"enable_private_nodes":     {NodeNetworkConfig: &containerpb.NodeNetworkConfig{EnablePrivateNodes: &no}},
		"provisioned_iops":         {BootDisk: &containerpb.BootDisk{ProvisionedIops: 4000, ProvisionedThroughput: 140}},
	}
	for field, u := range updates {
		before := names(e.poolNodes(t, "parity"))
		u.Name = pn
		done := e.ok(t)(e.c.UpdateNodePool(ctx, u))
		after := names(e.poolNodes(t, "parity"))
		if len(after) != 1 || slices.Contains(before, after[0]) || !strings.Contains(done.Detail, field) {
			t.Errorf("%s: nodes %v -> %v, detail %q", field, before, after, done.Detail)
		}
	}
	got, _ = e.c.GetNodePool(ctx, &containerpb.GetNodePoolRequest{Name: pn})
	if got.Config.KubeletConfig.CpuManagerPolicy != "none" || got.Config.Gvnic.Enabled || got.NetworkConfig.GetEnablePrivateNodes() ||
		got.Config.BootDisk.ProvisionedIops != 4000 || got.Config.WorkloadMetadataConfig.Mode != containerpb.WorkloadMetadataConfig_GCE_METADATA {
		t.Errorf("recreating updates not stored: %v", got)
	}

	// GKE's documented rules.
	bad := map[string]struct {
		u   *containerpb.UpdateNodePoolRequest
		msg string
	}{
		"gc thresholds": {&containerpb.UpdateNodePoolRequest{KubeletConfig: &containerpb.NodeKubeletConfig{ImageGcHighThresholdPercent: 50, ImageGcLowThresholdPercent: 60}}, "lower than"},
		"cfs period":    {&containerpb.UpdateNodePoolRequest{KubeletConfig: &containerpb.NodeKubeletConfig{CpuCfsQuotaPeriod: "2s"}}, "between 1ms and 1s"},
		"pids":          {&containerpb.UpdateNodePoolRequest{KubeletConfig: &containerpb.NodeKubeletConfig{PodPidsLimit: 10}}, "1024"},
		"log files":     {&containerpb.UpdateNodePoolRequest{KubeletConfig: &containerpb.NodeKubeletConfig{ContainerLogMaxFiles: 20}}, "between 2 and 10"},
		"iops on pd":    {&containerpb.UpdateNodePoolRequest{BootDisk: &containerpb.BootDisk{DiskType: "pd-balanced", ProvisionedIops: 3000}}, "Hyperdisk"},
	}
	for name, tc := range bad {
		tc.u.Name = pn
		_, err := e.c.UpdateNodePool(ctx, tc.u)
		if err == nil || status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%s: want InvalidArgument %q, got %v", name, tc.msg, err)
		}
	}
	for name, p := range map[string]*containerpb.NodePool{
		"max pods":           {Name: "p2", Config: &containerpb.NodeConfig{MachineType: "n2-standard-8"}, MaxPodsConstraint: &containerpb.MaxPodsConstraint{MaxPodsPerNode: 300}},
		"specific no key":    {Name: "p2", Config: &containerpb.NodeConfig{MachineType: "n2-standard-8", ReservationAffinity: &containerpb.ReservationAffinity{ConsumeReservationType: containerpb.ReservationAffinity_SPECIFIC_RESERVATION}}},
		"data cache too big": {Name: "p2", Config: &containerpb.NodeConfig{MachineType: "n2-standard-8", LocalNvmeSsdBlockConfig: &containerpb.LocalNvmeSsdBlockConfig{LocalSsdCount: 2}, EphemeralStorageLocalSsdConfig: &containerpb.EphemeralStorageLocalSsdConfig{DataCacheCount: 1}}},
	} {
		_, err := e.c.CreateNodePool(ctx, &containerpb.CreateNodePoolRequest{Parent: parent, NodePool: p})
		if status.Code(err) != codes.InvalidArgument {
			t.Errorf("%s: want InvalidArgument, got %v", name, err)
		}
	}
}
