# The StatefulSet exactly as you keep it in YAML; every field reaches the API server untouched.
resource "olapgke_statefulset" "historical" {
  manifest = yamldecode(file("${path.module}/historical.yaml"))

  # Refuse at plan when a Pod would be recreated onto nodes its local PVs cannot follow
  # (the default); set to true to apply anyway and leave such Pods Pending.
  allow_unschedulable = false

  # Wait for the ordinals this apply creates or recreates (RollingUpdate), or only the created
  # ones (OnDelete), to be Ready at the update revision.
  wait_for_rollout = true

  pod_disruption_budget = {
    max_unavailable = "1"
  }

  timeouts {
    create = "30m"
    update = "60m"
  }
}

# Policies can gate on the per-ordinal plan, e.g. no ordinal may be recreated into a Pod that
# cannot schedule.
output "recreated_ordinals" {
  value = [for o in olapgke_statefulset.historical.ordinals : o.ordinal if o.action == "recreate"]
}
