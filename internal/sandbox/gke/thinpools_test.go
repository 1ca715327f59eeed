package gke

import (
	"testing"

	"cloud.google.com/go/container/apiv1/containerpb"
)

// TestNodeSetUpThinPools: with Options.ThinPools every node with raw-block Local SSDs carries the
// thin pools its set-up made (the annotation the sandbox's TopoLVM reads); nodes without Local
// SSDs do not.
func TestNodeSetUpThinPools(t *testing.T) {
	e := start(t, func(o *Options) { o.ThinPools = "pool0=107374182400" })
	ctx := t.Context()
	pool := func(name string, ssds int32) *containerpb.CreateNodePoolRequest {
		return &containerpb.CreateNodePoolRequest{Parent: parent, NodePool: &containerpb.NodePool{Name: name, InitialNodeCount: 1,
			Config: &containerpb.NodeConfig{MachineType: "n2-standard-8", EphemeralStorageLocalSsdConfig: nil,
				LocalNvmeSsdBlockConfig: &containerpb.LocalNvmeSsdBlockConfig{LocalSsdCount: ssds}}}}
	}
	e.ok(t)(e.c.CreateNodePool(ctx, pool("ssd", 2)))
	e.ok(t)(e.c.CreateNodePool(ctx, pool("plain", 0)))
	for name, want := range map[string]string{"ssd": "pool0=107374182400", "plain": ""} {
		nodes := e.poolNodes(t, name)
		if len(nodes) != 1 || nodes[0].Annotations[AnnotationThinPools] != want {
			t.Errorf("pool %s: nodes %v, want thin pools %q", name, nodes, want)
		}
	}
}
