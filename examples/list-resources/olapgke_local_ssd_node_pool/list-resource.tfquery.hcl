# terraform query
# lists the cluster's node pools with raw-block Local SSDs, and how many PVs are pinned to each.
list "olapgke_local_ssd_node_pool" "all" {
  provider = olapgke

  config {}
}
