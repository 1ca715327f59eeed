# Step 5: the volume-group bootstrap, after the pools.
resource "olapgke_volume_group_bootstrap" "this" {
  image        = "REGION-docker.pkg.dev/PROJECT/olapgke/vg-bootstrap:0.1"
  volume_group = "vg-ssd"
  depends_on   = [olapgke_local_ssd_node_pool.a]
}
