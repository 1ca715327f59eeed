# Step 2 without the module: historical.yaml now selects pool-b and has updateStrategy OnDelete.
resource "olapgke_statefulset" "historical" {
  manifest = yamldecode(file("${path.module}/historical.yaml"))
}

resource "olapgke_statefulset_migration" "historical" {
  namespace         = "olap"
  statefulset       = "historical"
  planned_manifest  = jsonencode(olapgke_statefulset.historical.manifest)
  max_unavailable   = 1
  min_ready_seconds = 60

  depends_on = [olapgke_statefulset.historical]
}
