package deviceclass

import (
	"context"
	"fmt"
	"github.com/olapgke/terraform-provider-olapgke/internal/topolvm"
	"reflect"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/olapgke/terraform-provider-olapgke/internal/diagnostics"
	"github.com/olapgke/terraform-provider-olapgke/internal/lvmdconf"
)

// checkThinPool refuses a thin class whose pool is missing on a node where the volume-group
// bootstrap reports the class's volume group (topolvm.ThinPoolMissing): lvmd would exit "Thin
// pool not found" there at its next start, and restart_lvmd's roll would stall on the first
// such node with TopoLVM down on it. Plan and apply both call it before lvmd's configuration
// names the pool. Nodes without the bootstrap's report cannot be checked and are named in a
// warning. It reports whether the class may be written.
func checkThinPool(ctx context.Context, kube kubernetes.Interface, want lvmdconf.DeviceClass, diags *diag.Diagnostics) bool {
	if !want.IsThin() || want.ThinPool == nil {
		return true
	}
	list, err := kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: topolvm.LabelLocalNVMeSSD + "=true"})
	if err != nil {
		diags.Append(liveCheckFailed("The Local-SSD nodes could not be listed (thin pool check).", err))
		return false
	}
	nodes := make([]*corev1.Node, len(list.Items))
	for i := range list.Items {
		nodes[i] = &list.Items[i]
	}
	c := topolvm.ThinPoolMissing(nodes, want.VolumeGroup, want.ThinPool.Name)
	pool := want.VolumeGroup + "/" + want.ThinPool.Name
	if len(c.Missing) > 0 {
		diags.Append(diagnostics.AttributeError(path.Root("thin_pool").AtName("name"), "Thin Pool Not Found", diagnostics.Detail{
			Checked: "The thin pools the volume-group bootstrap reports on each Local-SSD node with volume group " +
				want.VolumeGroup + " (Node annotation " + topolvm.AnnBootstrapThinPools + ").",
			Found: fmt.Sprintf("Thin pool %s is missing on %d node(s): %s. lvmd exits \"Thin pool not found\" "+
				"at start on them, and TopoLVM stops there (restart_lvmd's roll stalls on the first).",
				pool, len(c.Missing), nodeList(c.Missing)),
			Do: fmt.Sprintf("Add the pool to olapgke_volume_group_bootstrap, e.g. thin_pools = { %s = 80 } "+
				"(percent of the group), and apply that first; or create it on each node: "+
				"lvcreate --type thin-pool -l 80%%VG -n %s %s.", want.ThinPool.Name, want.ThinPool.Name, want.VolumeGroup),
		}))
		return false
	}
	if len(c.Unverified) > 0 {
		diags.Append(diagnostics.AttributeWarning(path.Root("thin_pool").AtName("name"), "Thin Pool Not Verified", diagnostics.Detail{
			Checked: "Node annotations " + topolvm.AnnBootstrapVolumeGroup + " and " + topolvm.AnnBootstrapThinPools +
				" of the Local-SSD nodes (written by olapgke_volume_group_bootstrap).",
			Found: fmt.Sprintf("%d node(s) carry no report of volume group %s: %s. Whether thin pool %s "+
				"exists there is unknown; lvmd exits \"Thin pool not found\" where it does not.",
				len(c.Unverified), want.VolumeGroup, nodeList(c.Unverified), pool),
			Do: "Nothing, if the pool was made on those nodes; else create it there " +
				"(lvcreate --type thin-pool), or let olapgke_volume_group_bootstrap manage the group.",
		}))
	}
	return true
}

// nodeList names up to five nodes, then how many more.
func nodeList(names []string) string {
	if len(names) <= 5 {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:5], ", "), len(names)-5)
}

// entryChanged reports whether want differs from the lvmd entry in state (a new class: true), as
// ModifyPlan's lvmdChanged judges it.
func entryChanged(ctx context.Context, state *model, want lvmdconf.DeviceClass) bool {
	if state == nil {
		return true
	}
	prior, _ := state.expand(ctx)
	return !reflect.DeepEqual(prior, want)
}
