# Import the live StatefulSet olap/historical; historical.yaml is the live object without status
# and server-set metadata (see "Writing historical.yaml").
import {
  to = olapgke_statefulset.historical
  id = "olap/historical"
}

resource "olapgke_statefulset" "historical" {
  manifest        = yamldecode(file("${path.module}/historical.yaml"))
  force_conflicts = true
  manage_service  = false # the headless Service stays with its owner (see below)
}
