data "olapgke_statefulset_ordinals" "historical" {
  namespace = "olap"
  name      = "historical"
}

# Which node each ordinal's local volumes are pinned to.
output "pinned_nodes" {
  value = {
    for o in data.olapgke_statefulset_ordinals.historical.ordinals :
    o.pod => distinct([for v in o.volumes : v.pinned_node])
  }
}
