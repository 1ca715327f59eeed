# The Local-SSD pool registers its nodes with the start-up taint olapgke.io/storage-not-ready:
# nothing that needs the node's storage lands before the volume group exists.
resource "olapgke_local_ssd_node_pool" "historicals" {
  name                  = "historicals"
  machine_type          = "n2-standard-16"
  local_nvme_ssd_count  = 4
  node_count            = 3
  storage_startup_taint = true
}

# Creates vg-ssd on every node's raw-block Local SSDs (and again after GKE recreates a VM with
# empty disks), then removes the taint. Build the image from examples/topolvm-gke/Dockerfile.
resource "olapgke_volume_group_bootstrap" "this" {
  image        = "europe-docker.pkg.dev/my-project/olap/olapgke-vg-bootstrap:1.0.0"
  volume_group = "vg-ssd" # the device class's volume_group

  # Apply waits for the pool's nodes to be prepared.
  depends_on = [olapgke_local_ssd_node_pool.historicals]
}
