variable "druid_auth" {
  type      = string
  sensitive = true
}

module "historical" {
  source = "../../../../modules/olap-historical" # your copy of modules/olap-historical

  pools       = { a = { machine_type = "n2-standard-16", local_nvme_ssd_count = 4 } }
  active_pool = "a"
  image       = "apache/druid:31.0.0"
  args        = ["historical"]
  cache_size  = "500Gi"
  env = {
    # Druid's segment cache on the Local SSD volume the module mounts at cache_mount_path.
    druid_segmentCache_locations = jsonencode([{ path = "/var/cache/olap", maxSize = "460g" }])
    druid_server_maxSize         = "460g"
  }

  gates = [{
    name     = "wikipedia-loaded"
    interval = "15s"
    timeout  = "2h"
    http = {
      url              = "http://druid-coordinator.olap.svc:8081/druid/coordinator/v1/loadstatus?full"
      expect_json_path = "$._default_tier.wikipedia"
      expect_value     = "0"
    }
  }]
  gate_headers = { "wikipedia-loaded" = { Authorization = var.druid_auth } }
}
