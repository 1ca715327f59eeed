package acctest

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
)

// annThinPools is the sandbox's record of the thin pools on a node's volume group ("name=bytes",
// internal/sandbox/topolvm AnnThinPools): logical volumes the node's set-up carved from the group
// before lvmd starts. lvmd exits "Thin pool not found" when a thin class names one a node lacks.
const annThinPools = "sandbox.olapgke.io/thin-pools"

// ThinPools makes thin pools (name -> GiB) on every Local-SSD node of the sandbox, as an admin
// would with lvcreate --type thin-pool before lvmd loads a thin class, and takes them away when
// the test ends (an empty pool goes; TopoLVM's volumes keep theirs). Pools take space from the
// volume group: thick classes see the group less the pools. Nodes created later have none (use
// olapgke_volume_group_bootstrap's thin_pools for those).
func ThinPools(t *testing.T, kube kubernetes.Interface, gib map[string]int64) {
	t.Helper()
	ctx := t.Context()
	l, err := kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: "cloud.google.com/gke-local-nvme-ssd=true"})
	if err != nil {
		t.Fatalf("list Local-SSD nodes: %v", err)
	}
	var parts []string
	for _, n := range slices.Sorted(maps.Keys(gib)) {
		parts = append(parts, fmt.Sprintf("%s=%d", n, gib[n]<<30))
	}
	set := func(ctx context.Context, node string, v any) error {
		body, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]any{annThinPools: v}}})
		if err != nil {
			return err
		}
		_, err = kube.CoreV1().Nodes().Patch(ctx, node, types.MergePatchType, body, metav1.PatchOptions{})
		return err
	}
	for _, n := range l.Items {
		if err := set(ctx, n.Name, strings.Join(parts, ",")); err != nil {
			t.Fatalf("thin pools on %s: %v", n.Name, err)
		}
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		for _, n := range l.Items {
			if err := set(ctx, n.Name, nil); err != nil {
				t.Logf("remove thin pools of %s: %v", n.Name, err)
			}
		}
	})
}
