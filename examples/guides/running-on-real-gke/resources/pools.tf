# Step 4: a Local-SSD node pool with the startup taint.
resource "olapgke_local_ssd_node_pool" "a" {
  name                 = "historical-a"
  machine_type         = "n2-standard-8"
  local_nvme_ssd_count = 2 # 2 x 375 GiB
  node_count           = 3
  # Ubuntu ships lvm2, which TopoLVM's lvmd runs on the node (nsenter into PID 1).
  image_type = "UBUNTU_CONTAINERD"

  # olapgke.io/storage-not-ready=true:NoSchedule on every node GKE creates or recreates; the
  # volume-group bootstrap removes it once the node's volume group exists.
  storage_startup_taint = true
}
