# Stop managing olap/historical without deleting it (instead of deleting the resource block).
removed {
  from = olapgke_statefulset.historical

  lifecycle {
    destroy = false
  }
}
