# A condition an agent or sidecar sets on the Pod when its cache is warm.
resource "olapgke_statefulset_migration" "historical" {
  namespace   = "olap"
  statefulset = "historical"

  gate {
    name = "cache-warm"
    pod_condition {
      type = "example.com/cache-warm"
    }
  }
}
