# The chart's default class, adopted as it is (import it first: see import.sh).
resource "olapgke_topolvm_device_class" "ssd" {
  name         = "ssd"
  volume_group = "vg-ssd"
  default      = true

  storage_class = {
    name = "topolvm-provisioner"
  }
}

# A thin class on the same volume group: up to 4x the pool's size can be promised to PVCs.
# It shares the ConfigMap topolvm-system/topolvm-lvmd-0 with "ssd" (the chart's defaults).
resource "olapgke_topolvm_device_class" "ssd_thin" {
  name         = "ssd-thin"
  volume_group = "vg-ssd"
  type         = "thin"
  spare_gb     = 20

  thin_pool = {
    name                = "pool0"
    overprovision_ratio = 4
  }

  storage_class = {
    name           = "topolvm-ssd-thin"
    fs_type        = "xfs"
    reclaim_policy = "Delete"
    labels = {
      "team" = "olap"
    }
  }

  # lvmd reads its config only at start: roll the lvmd DaemonSet when this entry changes (default).
  restart_lvmd = true
}

# Free bytes per node, as TopoLVM publishes them (capacity.topolvm.io/ssd-thin).
output "ssd_thin_capacity" {
  value = olapgke_topolvm_device_class.ssd_thin.capacity
}

# The PVCs (and StatefulSet ordinals) that would be stranded if the class went away.
output "ssd_thin_volumes" {
  value = [for v in olapgke_topolvm_device_class.ssd_thin.volumes : "${v.namespace}/${v.pvc} (${v.statefulset} #${v.ordinal})"]
}
