package gkerules

import (
	"maps"
	"sort"
)

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

// attributeEffects is THE classification of olapgke_local_ssd_node_pool attributes. It fails
// closed: an attribute it does not name replaces the pool (EffectOf), and a test ties it to the
// resource's schema, so an attribute added to the schema without an entry here can never be
// taken for an in-place change that the data-loss guard does not see.
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
//
// The google_container_node_pool parity fields (issue 21):
//   - InPlace: tags, resource_manager_tags (UpdateNodePoolRequest.tags / resource_manager_tags:
//     "replaced", applied to the existing VMs; the google provider updates them in place) and
//     node_drain_config (UpdateNodePoolRequest.node_drain_config, a setting of GKE's drain, not
//     of the VMs).
//   - RecreatesNodes: workload_metadata_config, linux_node_config, gvnic and gcfs_config
//     (UpdateNodePoolRequest carries each; GKE applies node system configuration, the metadata
//     server mode, gVNIC and image streaming with the node upgrade strategy, recreating the
//     nodes: https://cloud.google.com/kubernetes-engine/docs/concepts/managing-clusters, "changes
//     that recreate nodes", and the node-system-config, workload-identity, gvnic and
//     image-streaming how-to pages), network_config.enable_private_nodes and
//     network_config.network_performance_config (UpdateNodePoolRequest.node_network_config;
//     applied by recreating the nodes) and the boot disk's provisioned IOPS and throughput (part
//     of boot_disk: UpdateNodePoolRequest.boot_disk "initiates an upgrade operation that migrates
//     the nodes").
//   - Replace: fields UpdateNodePoolRequest does not carry - metadata, shielded_instance_config,
//     reservation_affinity, secondary_boot_disks, data_cache_count (ephemeral storage Local SSD
//     config), local_ssd_encryption_mode, max_pods_per_node, placement_policy,
//     network_config.pod_range / create_pod_range - plus queued_provisioning, which the request
//     carries but GKE documents only at pool creation (the google provider forces new for it,
//     as for all of the above), and name_prefix (a new name).
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
	"storage_startup_taint":             InPlace, // a NoSchedule taint in node_config.taints: evicts nothing
	"resource_labels":                   InPlace,
	"management":                        InPlace,
	"upgrade_settings":                  InPlace,

	"name_prefix":                               Replace,
	"metadata":                                  Replace,
	"shielded_instance_config":                  Replace,
	"reservation_affinity":                      Replace,
	"secondary_boot_disks":                      Replace,
	"data_cache_count":                          Replace,
	"local_ssd_encryption_mode":                 Replace,
	"max_pods_per_node":                         Replace,
	"placement_policy":                          Replace,
	"queued_provisioning":                       Replace,
	"network_config.pod_range":                  Replace,
	"network_config.create_pod_range":           Replace,
	"workload_metadata_config":                  RecreatesNodes,
	"linux_node_config":                         RecreatesNodes,
	"gvnic":                                     RecreatesNodes,
	"gcfs_config":                               RecreatesNodes,
	"network_config.enable_private_nodes":       RecreatesNodes,
	"network_config.network_performance_config": RecreatesNodes,
	"tags":                  InPlace,
	"resource_manager_tags": InPlace,
	"node_drain_config":     InPlace,

	// Provider-side settings and computed results: nothing is sent to GKE when they change.
	"id":                     NoEffect,
	"deletion_protection":    NoEffect,
	"allow_local_data_loss":  NoEffect,
	"expected_ephemeral_gib": NoEffect,
	"timeouts":               NoEffect,
	"instance_group_urls":    NoEffect,
	"nodes":                  NoEffect,
	"local_ssd_gib_per_node": NoEffect,
	"ephemeral_storage":      NoEffect,
	"operations":             NoEffect,
	"pending_upgrade":        NoEffect,
	// network_config as a whole: its fields are classified one by one (network_config.*).
	"network_config": NoEffect,
}

// EffectOf returns the effect of changing one top-level attribute, or one field of
// network_config ("network_config.pod_range"), whose fields take different paths. An attribute
// the table does not name replaces the pool: the safe answer for a change nobody classified.
func EffectOf(attribute string) Effect {
	if e, ok := attributeEffects[attribute]; ok {
		return e
	}
	return Replace
}

// Attributes is the classification table, one entry per attribute (a copy): the single list of
// the node pool's attributes and what changing each does.
func Attributes() map[string]Effect { return maps.Clone(attributeEffects) }

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
