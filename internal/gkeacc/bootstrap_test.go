package gkeacc

import (
	"fmt"
	"os"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// EnvBootstrapImage is the volume-group bootstrap's image (built from examples/topolvm-gke/
// Dockerfile). When set, TestAccGKE_VolumeGroupBootstrap installs the bootstrap itself.
const EnvBootstrapImage = "OLAPGKE_GKE_VG_BOOTSTRAP_IMAGE"

// TestAccGKE_VolumeGroupBootstrap: olapgke_volume_group_bootstrap on a real cluster. A pool
// created with the start-up taint gets its volume group from the bootstrap the resource
// installs (apply waits for the node), TopoLVM publishes capacity and the taint goes. It needs
// OLAPGKE_GKE_VG_BOOTSTRAP_IMAGE and a cluster without another bootstrap installed (the
// bootstrap is one per cluster: its ClusterRole is shared), and skips otherwise.
func TestAccGKE_VolumeGroupBootstrap(t *testing.T) {
	c := setup(t)
	image := os.Getenv(EnvBootstrapImage)
	if image == "" {
		t.Skip(EnvBootstrapImage + " is not set: the image of examples/topolvm-gke/Dockerfile the test installs")
	}
	ds, err := c.kube.AppsV1().DaemonSets("").List(t.Context(), metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=olapgke-vg-bootstrap"})
	if err != nil {
		t.Fatal(err)
	}
	if len(ds.Items) > 0 {
		t.Skipf("a volume-group bootstrap is installed already (%s/%s): this test installs its own, one per cluster", ds.Items[0].Namespace, ds.Items[0].Name)
	}
	cfg := c.poolHCL("a", false, "") + fmt.Sprintf(`
resource "olapgke_volume_group_bootstrap" "this" {
  namespace  = %q
  image      = %q
  depends_on = [olapgke_local_ssd_node_pool.a]
}
`, c.ns+"-vgb", image)
	tf := c.terraform(cfg, nil)
	c.apply(tf, cfg)
	c.waitStorageReady(c.pool("a"))
}
