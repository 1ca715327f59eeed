output "statefulset_name" {
  description = "Name of the StatefulSet."
  value       = olapgke_statefulset.this.name
}

output "namespace" {
  description = "Namespace of the StatefulSet."
  value       = olapgke_statefulset.this.namespace
}

output "storage_class" {
  description = "StorageClass of the cache volumes (TopoLVM device class `device_class.name`)."
  value       = olapgke_topolvm_device_class.this.storage_class.name
}

output "device_class" {
  description = "TopoLVM device class name."
  value       = olapgke_topolvm_device_class.this.name
}

output "node_pools" {
  description = "GKE node pool name per key of `pools`."
  value       = { for k, p in olapgke_local_ssd_node_pool.this : k => p.name }
}

output "active_node_pool" {
  description = "GKE node pool the pod template selects."
  value       = local.active_pool_name
}

output "ordinals" {
  description = "Ordinal -> Pod, node, readiness and the PVs (with the node each is pinned to), read after the migration."
  value = {
    for o in data.olapgke_statefulset_ordinals.this.ordinals : tostring(o.ordinal) => {
      pod          = o.pod
      node         = o.node
      ready        = o.ready
      pvs          = [for v in o.volumes : v.pv]
      pinned_nodes = distinct([for v in o.volumes : v.pinned_node])
    }
  }
}

output "moves" {
  description = "Ordinals the last migration moved, with the node and PVs each landed on."
  value = {
    for c in coalesce(olapgke_statefulset_migration.this.completed, []) : tostring(c.ordinal) => {
      pod              = c.pod
      node             = c.node
      pvs              = c.pvs
      duration_seconds = c.duration_seconds
    }
  }
}
