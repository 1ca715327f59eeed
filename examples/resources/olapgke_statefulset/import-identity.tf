# Adopt an existing StatefulSet by its identity; the resource block (resource.tf) stays as you
# write it. The next plan shows the import and, per ordinal, what an apply would change.
import {
  to = olapgke_statefulset.historical
  identity = {
    namespace = "olap"
    name      = "historical"
  }
}
