package gkerules

import "sort"

// Effect is what changing a node pool attribute does to the pool's VMs.
type Effect int

const (
	// NoEffect: provider-side only (deletion_protection, allow_local_data_loss, timeouts...).
	NoEffect Effect = iota
	// InPlace: GKE updates the pool without recreating VMs (labels, taints, size, autoscaling...).
	// A size decrease still deletes nodes; see Guard with LossShrink.
	InPlace
	// RecreatesNodes: GKE applies the change with an upgrade operation that recreates every VM
	// (Local SSD data is lost).
	RecreatesNodes
	// Replace: GKE cannot change it; the pool is deleted and created again.
	Replace
)

func (e Effect) String() string {
	return [...]string{"none", "in-place", "recreates-nodes", "replace"}[e]
}

// attributeEffects is THE classification of olapgke_local_ssd_node_pool attributes.
//
// Sources: the fields of google.container.v1.UpdateNodePoolRequest and the dedicated
// SetNodePoolSize / SetNodePoolAutoscaling / SetNodePoolManagement RPCs decide what can change
// at all (anything else in NodeConfig - Local SSD configs, spot, service account, OAuth scopes -
// has no update path, so the pool is replaced). The API's own field comments say machine_type,
// disk_type, disk_size_gb and boot_disk "initiate an upgrade operation that migrates the nodes";
// node_version and image_type are node upgrades, which recreate VMs with surge or blue-green
// (https://cloud.google.com/kubernetes-engine/docs/concepts/node-pool-upgrade-strategies); node
// system configuration (kubelet_config) is also applied by recreating nodes
// (https://cloud.google.com/kubernetes-engine/docs/how-to/node-system-config). Labels, taints and
// resource labels are updated on the existing nodes; a NoExecute taint added that way still
// evicts the Pods that do not tolerate it (NoExecuteTaintsAdded, LossEvict).
var attributeEffects = map[string]Effect{
	"name":                              Replace,
	"project":                           Replace,
	"location":                          Replace,
	"cluster":                           Replace,
	"local_nvme_ssd_count":              Replace,
	"ephemeral_storage_local_ssd_count": Replace,
	"spot":                              Replace,
	"service_account":                   Replace,
	"oauth_scopes":                      Replace,
	"machine_type":                      RecreatesNodes,
	"boot_disk":                         RecreatesNodes,
	"image_type":                        RecreatesNodes,
	"version":                           RecreatesNodes,
	"kubelet_config":                    RecreatesNodes,
	"node_locations":                    InPlace, // removed zones lose their nodes: see LossZones
	"node_count":                        InPlace, // a decrease deletes nodes GKE picks: see LossShrink
	"autoscaling":                       InPlace,
	"labels":                            InPlace,
	"taints":                            InPlace, // an added NoExecute taint evicts Pods: see LossEvict
	"resource_labels":                   InPlace,
	"management":                        InPlace,
	"upgrade_settings":                  InPlace,
}

// EffectOf returns the effect of changing one top-level attribute (NoEffect if unknown here).
func EffectOf(attribute string) Effect { return attributeEffects[attribute] }

// RequiresReplace lists the attributes whose change replaces the pool, sorted.
func RequiresReplace() []string { return attributesWith(Replace) }

// RecreatingAttributes lists the attributes whose change recreates the VMs, sorted.
func RecreatingAttributes() []string { return attributesWith(RecreatesNodes) }

func attributesWith(e Effect) []string {
	var out []string
	for k, v := range attributeEffects {
		if v == e {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// Worst is the strongest effect among changed attributes.
func Worst(changed []string) Effect {
	w := NoEffect
	for _, a := range changed {
		w = max(w, EffectOf(a))
	}
	return w
}
