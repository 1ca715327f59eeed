# A pool for TopoLVM: both Local SSDs of an n2-standard-8 as raw NVMe block devices. Node
# ephemeral storage (images, writable layers, logs, emptyDir) then lives on the boot disk, so size
# it for the expected demand: the plan shows the arithmetic in `ephemeral_storage` and warns when
# nodes would hit DiskPressure.
resource "olapgke_local_ssd_node_pool" "olap" {
  name                 = "olap-ssd"
  machine_type         = "n2-standard-8"
  local_nvme_ssd_count = 2
  node_count           = 3

  boot_disk = {
    type    = "pd-balanced"
    size_gb = 200
  }
  expected_ephemeral_gib = 60

  labels = { role = "olap" }
  taints = [{ key = "dedicated", value = "olap", effect = "NO_SCHEDULE" }]

  # Upgrades recreate the nodes and lose their Local SSD data, but a cluster on a release channel
  # refuses auto_upgrade = false (so does the plan): hold upgrades off with a cluster maintenance
  # exclusion ("no minor or node upgrades") instead, and move ordinals to an upgraded pool.
  management = {
    auto_repair  = true
    auto_upgrade = true
  }
  upgrade_settings = {
    strategy        = "SURGE"
    max_surge       = 1
    max_unavailable = 0
  }
  kubelet_config = {
    eviction_soft              = { "nodefs.available" = "15%" }
    eviction_soft_grace_period = { "nodefs.available" = "60s" }
  }

  # Refuse plans that delete or recreate nodes while StatefulSet ordinals keep volumes on them
  # (the default); move them first with olapgke_statefulset_migration.
  allow_local_data_loss = false
  deletion_protection   = true
}

# A Gen3 -lssd type comes with a fixed Local SSD count: leaving local_nvme_ssd_count unset (or 0)
# means the type's count and never shows a diff.
resource "olapgke_local_ssd_node_pool" "c3" {
  name         = "olap-c3"
  machine_type = "c3-standard-8-lssd"
  autoscaling = {
    min_node_count = 1
    max_node_count = 4
  }
}
