# A gate per replica: the URL names the Pod whose step just ended ({pod}), here a sidecar that
# answers {"absolute_delay": 0} from system.replicas.
resource "olapgke_statefulset_migration" "clickhouse" {
  namespace   = "olap"
  statefulset = "clickhouse"

  gate {
    name     = "replication-caught-up"
    interval = "10s"
    timeout  = "45m"
    http {
      url              = "http://{pod}.clickhouse.{namespace}.svc:8123/replication"
      expect_json_path = "{.absolute_delay}"
      expect_value     = "0"
    }
  }
}
