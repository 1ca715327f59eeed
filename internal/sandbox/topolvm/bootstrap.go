package topolvm

import (
	corev1 "k8s.io/api/core/v1"
)

// The volume-group bootstrap (examples/topolvm-gke/vg-bootstrap.sh, shipped as the DaemonSet of
// vg-bootstrap.yaml). On GKE, TopoLVM never creates a volume group: lvmd only checks for it. The
// script runs in a privileged Pod on every node labelled cloud.google.com/gke-local-nvme-ssd=true
// and, on each pass: finds the raw-block Local SSDs (/dev/disk/by-id/google-local-nvme-ssd-N),
// creates the volume group (VG_NAME, default vg-ssd, tagged olapgke_vg_bootstrap) from the empty
// ones when it does not exist (also after GKE recreated the VM with empty disks), never touches a
// device holding anything else, and only once the volume group exists removes the startup taint
// olapgke.io/storage-not-ready from its Node and annotates the Node
// "olapgke.io/volume-group: <vg> created <time> on <devices>". A node without an empty Local SSD
// keeps the taint. Node pools set the taint (olapgke_local_ssd_node_pool storage_startup_taint),
// so GKE puts it on every Node it registers for the pool, also for a recreated VM.
//
// The sandbox copies the effect, not the mechanism (it runs no DaemonSet controller and no Pods
// with disks): RunBootstrap (bootstrapctl.go), while a DaemonSet labelled
// BootstrapLabel=BootstrapName exists in any namespace, does one pass of the script on every
// Local-SSD node in one JSON patch; the node's volume group then counts as present. A node that carries the startup taint and was never bootstrapped has no
// volume group (nodeVolumeGroup: no capacity, no topology label, provisioning fails there), as on
// GKE before the bootstrap ran. Nodes registered without the taint get their volume group at once
// (the sandbox's default), so worlds and tests without the taint are unchanged.

// Names the bootstrap and the node pools use. They mirror the provider's stsutil /
// planner.TaintStorageNotReady (the sandbox is a separate Go module and cannot import it) and
// the script's defaults.
const (
	StartupTaintKey         = "olapgke.io/storage-not-ready"
	AnnBootstrapVolumeGroup = "olapgke.io/volume-group"
	// AnnBootstrapThinPools is the script's THIN_POOLS_ANNOTATION_KEY: the group's thin pools,
	// "name,name" (topolvm.AnnBootstrapThinPools).
	AnnBootstrapThinPools = "olapgke.io/thin-pools"
	LabelLocalNVMeSSD     = "cloud.google.com/gke-local-nvme-ssd"
	BootstrapLabel        = "app.kubernetes.io/name"
	BootstrapName         = "olapgke-vg-bootstrap"
)

// hasStartupTaint reports whether n carries the startup taint (any value or effect).
func hasStartupTaint(n *corev1.Node) bool {
	return startupTaintIndex(n) >= 0
}

func startupTaintIndex(n *corev1.Node) int {
	for i, t := range n.Spec.Taints {
		if t.Key == StartupTaintKey {
			return i
		}
	}
	return -1
}

// volumeGroupCreated reports whether the node's volume group exists: the node registered without
// the startup taint (sandbox default), the bootstrap annotated it, or TopoLVM already runs there
// (topology label: lvmd found the volume group before, e.g. the pool's taints were updated in
// place and GKE put the taint back on a node that has its volume group).
// Local SSDs holding a foreign volume group (AnnForeignVolumeGroup) form no group of ours
// until the bootstrap adopted one of that name.
func volumeGroupCreated(n *corev1.Node) bool {
	if n.Annotations[AnnForeignVolumeGroup] != "" {
		return n.Annotations[AnnBootstrapVolumeGroup] != ""
	}
	if !hasStartupTaint(n) {
		return true
	}
	if n.Annotations[AnnBootstrapVolumeGroup] != "" {
		return true
	}
	_, registered := n.Labels[TopologyKey]
	return registered
}
