package topolvm

import (
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// AnnBootstrapThinPools is the volume-group bootstrap's THIN_POOLS_ANNOTATION_KEY
// (examples/topolvm-gke/vg-bootstrap.sh): the thin pools of the node's volume group, "name,name",
// whoever made them, written with AnnBootstrapVolumeGroup.
const AnnBootstrapThinPools = "olapgke.io/thin-pools"

// ThinPoolCheck is ThinPoolMissing's answer for one thin pool.
type ThinPoolCheck struct {
	// Missing are the Local-SSD nodes whose volume group the bootstrap reports and whose thin
	// pools lack the pool: lvmd exits "Thin pool not found" at start there (topolvm v0.41.0
	// cmd/lvmd/app/root.go), and TopoLVM stops on the node.
	Missing []string
	// Unverified are the Local-SSD nodes without the bootstrap's report of the volume group
	// (made by other means, or not yet): nothing in the API says which pools they have.
	Unverified []string
}

// ThinPoolMissing judges whether thin pool pool of volume group vg exists on every node the
// volume-group bootstrap selects (label cloud.google.com/gke-local-nvme-ssd=true, not being
// deleted), from what the bootstrap wrote on each Node: AnnBootstrapVolumeGroup naming vg, and
// AnnBootstrapThinPools listing the pool. Names come back sorted. The device class's plan and
// apply both ask it before lvmd's configuration names the pool.
func ThinPoolMissing(nodes []*corev1.Node, vg, pool string) ThinPoolCheck {
	var c ThinPoolCheck
	for _, n := range nodes {
		if n.Labels[LabelLocalNVMeSSD] != "true" || n.DeletionTimestamp != nil {
			continue
		}
		if !strings.HasPrefix(n.Annotations[AnnBootstrapVolumeGroup], vg+" ") {
			c.Unverified = append(c.Unverified, n.Name)
			continue
		}
		if !slices.Contains(strings.Split(n.Annotations[AnnBootstrapThinPools], ","), pool) {
			c.Missing = append(c.Missing, n.Name)
		}
	}
	slices.Sort(c.Missing)
	slices.Sort(c.Unverified)
	return c
}
