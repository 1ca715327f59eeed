# The StatefulSet an operator will write after a change of its custom resource: here the live
# object with the node pool the change selects.
variable "next_historical" {
  description = "The StatefulSet as the operator will write it: the live object (kubectl get -o yaml without status, or the kubernetes provider's kubernetes_resource data source) with the fields the change sets, e.g. its nodeSelector."
  type        = any
}

# A check block reports the verdicts as warnings in every plan; outside a check block, an ordinal
# that would stay Pending fails the plan before the custom resource is changed.
check "historical_change_is_safe" {
  data "olapgke_statefulset_plan" "next" {
    namespace = "olap"
    name      = "historical"
    manifest  = var.next_historical
  }

  assert {
    condition     = data.olapgke_statefulset_plan.next.all_schedulable
    error_message = "The operator's change would leave historical Pods Pending (their Local SSD volumes are pinned to other nodes)."
  }
}
