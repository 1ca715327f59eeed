package deviceclass_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8stypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/olapgke/terraform-provider-olapgke/internal/acctest"
)

// TestAccTopoLVMDeviceClass_ThinPoolNotFound: a thin class whose pool the volume-group bootstrap
// does not report on a node with the class's volume group is refused at plan, naming the node;
// the near miss, the pool reported there, plans (other nodes, with no report, only warn).
func TestAccTopoLVMDeviceClass_ThinPoolNotFound(t *testing.T) {
	env := acctest.Sandbox(t)
	kube := env.Kube
	node := firstNode(t, kube)
	report := func(pools any) {
		t.Helper()
		setAnnotations(t, kube, node, map[string]any{
			"olapgke.io/volume-group": "vg-ssd created 2026-12-01T00:00:00Z on /dev/nvme0n1,/dev/nvme0n2",
			"olapgke.io/thin-pools":   pools,
		})
	}
	t.Cleanup(func() {
		setAnnotations(t, kube, node, map[string]any{"olapgke.io/volume-group": nil, "olapgke.io/thin-pools": nil})
	})
	cfg := `
resource "olapgke_topolvm_device_class" "t" {
  name         = "tp-check"
  volume_group = "vg-ssd"
  type         = "thin"
  thin_pool    = { name = "pool-tp", overprovision_ratio = 2 }
}
`
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				PreConfig:   func() { report("other") },
				Config:      cfg,
				PlanOnly:    true,
				ExpectError: wrapped(fmt.Sprintf(`Thin Pool Not Found.*Thin pool vg-ssd/pool-tp is missing on 1 node\(s\): %s\..*thin_pools = \{ pool-tp = 80 \}`, node)),
			},
			{
				PreConfig:          func() { report("other,pool-tp") },
				Config:             cfg,
				PlanOnly:           true,
				ExpectNonEmptyPlan: true,
			},
		},
	})
}

func setAnnotations(t *testing.T, kube kubernetes.Interface, node string, ann map[string]any) {
	t.Helper()
	body, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": ann}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kube.CoreV1().Nodes().Patch(context.Background(), node, k8stypes.MergePatchType, body, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
}
