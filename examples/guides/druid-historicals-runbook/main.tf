# Druid historicals from node pool historical-a to historical-b, one ordinal at a time, each
# move gated on the coordinator's load status. Apply in three steps (see the runbook):
#   1. the new pool alone (the import, the StatefulSet and the migration commented out);
#   2. everything below: import, template switch under OnDelete, migration;
#   3. remove the old pool from its own configuration.

# Step 1: the new pool. Sized for the cache: 2 x 375 GiB per node holds one 500Gi PVC.
resource "olapgke_local_ssd_node_pool" "historical_b" {
  name                 = "historical-b"
  machine_type         = "n2-standard-8"
  local_nvme_ssd_count = 2
  node_count           = 3
  deletion_protection  = true
}

# Step 2: adopt the running StatefulSet (no Pod restarts: the plan after the import is empty
# when historical.yaml matches the live object) ...
import {
  to = olapgke_statefulset.historical
  id = "olap/historical"
}

resource "olapgke_statefulset" "historical" {
  manifest = yamldecode(file("${path.module}/historical.yaml"))

  # The headless Service and the budget stay with whoever made them (Helm, kubectl).
  manage_service = false

  timeouts {
    update = "20m" # the default; the template switch under OnDelete restarts nothing
  }

  depends_on = [olapgke_local_ssd_node_pool.historical_b]
}

# ... and move its ordinals, highest first, each after the tier has reloaded the last one.
resource "olapgke_statefulset_migration" "historical" {
  namespace        = "olap"
  statefulset      = "historical"
  planned_manifest = jsonencode(olapgke_statefulset.historical.manifest)

  order             = "descending"
  max_unavailable   = 1
  min_ready_seconds = 120   # at least twice druid.coordinator.period (PT60S)
  ordinal_timeout   = "15m" # first deletion to the end of the soak: schedule, provision, JVM start

  gate {
    name     = "wikipedia-loaded"
    interval = "30s"
    timeout  = "90m" # the reload of one historical's share, with margin (see the runbook)
    http {
      # Replicas still to load per tier and datasource, replication included (not ?simple).
      # 127.0.0.1: kubectl -n olap port-forward svc/druid-coordinator 8081:8081 during the apply.
      url              = "http://127.0.0.1:8081/druid/coordinator/v1/loadstatus?full"
      headers_from_env = { Authorization = "DRUID_BASIC_AUTH" }
      expect_json_path = "$._default_tier.wikipedia"
      expect_value     = "0"
    }
  }

  # Every move waits for its ordinal's gate: 3 x (15m + 2m + 90m) at worst.
  timeouts {
    create = "6h"
    update = "6h"
  }

  depends_on = [olapgke_statefulset.historical]
}

output "plan_summary" {
  value = olapgke_statefulset_migration.historical.plan_summary
}
