variable "druid_auth" {
  type      = string
  sensitive = true
}

module "historical" {
  source = "../../../../modules/olap-historical" # your copy of modules/olap-historical

  pools       = { a = { machine_type = "n2-standard-16", local_nvme_ssd_count = 4 } }
  active_pool = "a"
  image       = "apache/druid:31.0.0"
  cache_size  = "500Gi"

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
