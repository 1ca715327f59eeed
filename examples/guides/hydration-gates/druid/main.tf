# One gate per datasource the moving tier serves, each on that tier's count in loadstatus?full.
resource "olapgke_statefulset_migration" "historical" {
  namespace         = "olap"
  statefulset       = "historical"
  min_ready_seconds = 120 # at least twice druid.coordinator.period (default PT60S)

  gate {
    name     = "wikipedia-loaded"
    interval = "15s"
    timeout  = "2h"
    http {
      url              = "http://druid-coordinator.olap.svc:8081/druid/coordinator/v1/loadstatus?full"
      headers_from_env = { Authorization = "DRUID_BASIC_AUTH" }
      expect_json_path = "$._default_tier.wikipedia"
      expect_value     = "0"
    }
  }
  # ...one such gate for every other datasource on the tier (koalas, ...)
}
