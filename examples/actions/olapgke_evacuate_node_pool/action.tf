# Before the old pool is destroyed, move every ordinal whose Local SSD data is on it onto the new
# pool (the StatefulSet's template must admit both). When `terraform apply` replaces the pool, a
# failed evacuation halts the run (on_failure = halt); `terraform destroy` never halts on an
# action (Terraform 1.16), but olapgke_local_ssd_node_pool checks again at apply and refuses to
# delete a pool that still holds data.
action "olapgke_evacuate_node_pool" "historical_a" {
  config {
    node_pool            = "historical-a"
    target_node_selector = { "cloud.google.com/gke-nodepool" = "historical-b" }
  }
}

resource "olapgke_local_ssd_node_pool" "historical_a" {
  name                 = "historical-a"
  machine_type         = "n2-standard-8"
  local_nvme_ssd_count = 2
  node_count           = 3

  lifecycle {
    action_trigger {
      events     = [before_destroy]
      actions    = [action.olapgke_evacuate_node_pool.historical_a]
      on_failure = halt
    }
  }
}
