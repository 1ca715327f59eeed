package gke

import (
	"testing"

	"cloud.google.com/go/container/apiv1/containerpb"
	"google.golang.org/grpc/codes"
)

// The clusters' master version follows the sandbox's Kubernetes minor; node pools may run up to
// two minors older (GKE's version skew policy), never newer, and a node version change recreates
// the VMs at the new version.
func TestVersionsFollowTheSandboxMinor(t *testing.T) {
	e := start(t, func(o *Options) { o.KubernetesVersion = "1.36" })
	ctx := t.Context()
	cl, err := e.c.GetCluster(ctx, &containerpb.GetClusterRequest{Name: parent})
	if err != nil || cl.CurrentMasterVersion != "1.36.2-gke.1000" || cl.CurrentNodeVersion != "1.36.2-gke.1000" {
		t.Fatalf("cluster versions %q/%q (%v), want 1.36.2-gke.1000", cl.GetCurrentMasterVersion(), cl.GetCurrentNodeVersion(), err)
	}
	pool := func(name, version string) *containerpb.CreateNodePoolRequest {
		return &containerpb.CreateNodePoolRequest{Parent: parent, NodePool: &containerpb.NodePool{Name: name, InitialNodeCount: 1, Version: version,
			Config: &containerpb.NodeConfig{MachineType: "n2-standard-8"}}}
	}
	e.ok(t)(e.c.CreateNodePool(ctx, pool("older", "1.34")))
	np, _ := e.c.GetNodePool(ctx, &containerpb.GetNodePoolRequest{Name: parent + "/nodePools/older"})
	if np.GetVersion() != "1.34.2-gke.1000" {
		t.Errorf("pool version %q, want 1.34.2-gke.1000", np.GetVersion())
	}
	nodes := e.poolNodes(t, "older")
	if len(nodes) != 1 || nodes[0].Status.NodeInfo.KubeletVersion != "v1.34.2-gke.1000" {
		t.Errorf("nodes of the 1.34 pool: %+v", nodes)
	}
	_, err = e.c.CreateNodePool(ctx, pool("newer", "1.37"))
	wantCode(t, err, codes.InvalidArgument, "no newer than the master version")
	_, err = e.c.CreateNodePool(ctx, pool("ancient", "1.33"))
	wantCode(t, err, codes.InvalidArgument, "at most two minor versions older")

	e.ok(t)(e.c.UpdateNodePool(ctx, &containerpb.UpdateNodePoolRequest{Name: parent + "/nodePools/older", NodeVersion: "-"}))
	np, _ = e.c.GetNodePool(ctx, &containerpb.GetNodePoolRequest{Name: parent + "/nodePools/older"})
	after := e.poolNodes(t, "older")
	if np.GetVersion() != "1.36.2-gke.1000" || len(after) != 1 || after[0].Name == nodes[0].Name || after[0].Status.NodeInfo.KubeletVersion != "v1.36.2-gke.1000" {
		t.Errorf("after the upgrade: pool %q, nodes %+v (before %s)", np.GetVersion(), after, nodes[0].Name)
	}
}
