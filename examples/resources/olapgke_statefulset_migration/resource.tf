# Move the historical tier from pool-a to pool-b in one apply: the StatefulSet's template is
# switched to pool-b under OnDelete (nothing is recreated by the controller), then the migration
# moves one ordinal at a time: delete its Local SSD PVC, delete its Pod, wait until the new Pod
# is Ready on pool-b with a new PV pinned there, soak, continue. A template change that keeps the
# pool (image, env, resources) restarts each ordinal in place instead: only the Pod is deleted and
# it comes back on its node with its PVC, cache kept.
resource "olapgke_statefulset" "historical" {
  manifest = yamldecode(file("${path.module}/historical.yaml")) # nodeSelector: pool-b, updateStrategy: OnDelete
}

resource "olapgke_statefulset_migration" "historical" {
  namespace   = "olap"
  statefulset = "historical"

  # The plan judges the template this apply writes, not the live one.
  planned_manifest = jsonencode(olapgke_statefulset.historical.manifest)

  order             = "descending"
  max_unavailable   = 1
  min_ready_seconds = 60
  ordinal_timeout   = "15m"

  triggers = {
    # Change to force a new run (it moves whatever needs moving then).
    run = "2026-11-29"
  }

  timeouts {
    create = "2h"
    update = "2h"
  }

  depends_on = [olapgke_statefulset.historical]
}

# To try a move or a restart on one replica first, give the migration above `ordinals = [1]`
# for one apply, then remove it. Two migrations of the same StatefulSet in one configuration
# would run in the same apply, with nothing but require_others_ready between them.
