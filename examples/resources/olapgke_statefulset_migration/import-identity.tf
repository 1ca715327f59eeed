# The migration of StatefulSet olap/historical. The next plan lists the ordinals that still need
# a move.
import {
  to = olapgke_statefulset_migration.historical
  identity = {
    namespace   = "olap"
    statefulset = "historical"
  }
}
