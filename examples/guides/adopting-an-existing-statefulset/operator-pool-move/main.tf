# A node-pool move of a StatefulSet an operator writes (druid-operator, clickhouse-operator, ...).
# Terraform never writes the StatefulSet: the operator writes it from its custom resource (CR).
# This configuration predicts the operator's next StatefulSet, waits until the operator wrote it,
# then moves the ordinals onto the new pool one at a time (delete the Local SSD PVC, delete the
# Pod, wait until it is Ready on the new pool with a new PV pinned there).

terraform {
  required_providers {
    olapgke = { source = "olapgke/olapgke" }
  }
}

variable "namespace" {
  description = "Namespace of the StatefulSet."
  type        = string
  default     = "olap"
}

variable "name" {
  description = "Name of the StatefulSet the operator writes."
  type        = string
  default     = "historical"
}

variable "next_historical" {
  description = "The StatefulSet as the operator will write it after the CR change: `kubectl get statefulset -o json` without status and the server-set metadata, with spec.template.spec.nodeSelector set to the new pool (spec.updateStrategy.type already OnDelete)."
  type        = any
}

variable "min_ready_seconds" {
  description = "Seconds each moved Pod must stay Ready before the next ordinal moves."
  type        = number
  default     = 60
}

# The CR change goes here, in this configuration, with the kubernetes provider, e.g.
#
#   resource "kubernetes_manifest" "druid" {
#     manifest = yamldecode(file("${path.module}/druid.yaml")) # historicals: nodeSelector historical-b
#   }
#
# and the expectation below orders itself after it: depends_on = [kubernetes_manifest.druid] and
# triggers = { cr = sha1(jsonencode(kubernetes_manifest.druid.manifest)) }. The migration then
# runs after the operator wrote the new template, in the same apply.

# Predict, at plan, what the operator's StatefulSet does to each ordinal: under OnDelete the
# controller recreates nothing, so every ordinal on the old pool is `stranded` (its Pod and its
# PVs stay where they are until the migration below moves it). A StatefulSet the controller would
# change Pods of on its own (RollingUpdate, a replica change) fails the plan here, before the CR
# changes.
data "olapgke_statefulset_plan" "next" {
  namespace = var.namespace
  name      = var.name
  manifest  = var.next_historical

  lifecycle {
    postcondition {
      condition     = alltrue([for o in self.ordinals : contains(["unchanged", "stale", "stranded"], o.action)])
      error_message = "The operator's next StatefulSet would make the controller recreate or delete Pods itself (updateStrategy must be OnDelete, replicas unchanged): ${join(", ", [for o in self.ordinals : "${o.name} ${o.action}" if !contains(["unchanged", "stale", "stranded"], o.action)])}."
    }
  }
}

# Wait until the operator reconciled (its StatefulSet unchanged and observed for `settle`), then
# check it wrote what the migration relies on: OnDelete and the new pool. When it wrote something
# else the apply stops here with "Operator Did Not Apply Expected Fields", before any move.
resource "olapgke_statefulset_expectation" "next" {
  namespace = var.namespace
  name      = var.name

  expect = {
    spec = {
      updateStrategy = { type = "OnDelete" }
      template = {
        spec = {
          nodeSelector = var.next_historical.spec.template.spec.nodeSelector
        }
      }
    }
  }
  settle = "30s" # longer than the operator's reconcile delay

  # Check again whenever the prediction changes; with the CR in this configuration, add
  # cr = sha1(jsonencode(kubernetes_manifest.druid.manifest)) and depends_on it.
  triggers = {
    next = sha1(jsonencode(var.next_historical))
  }

  timeouts {
    create = "15m"
    update = "15m"
  }
}

# Move the ordinals. planned_manifest makes the plan list the moves from the predicted template,
# before the operator wrote anything; the apply starts after the expectation held and first checks
# that the live template asks for the same placement and revision as planned (else it stops,
# nothing deleted: plan again with the StatefulSet the operator really wrote).
resource "olapgke_statefulset_migration" "pool_move" {
  namespace        = var.namespace
  statefulset      = var.name
  planned_manifest = jsonencode(var.next_historical)

  order             = "descending"
  max_unavailable   = 1
  min_ready_seconds = var.min_ready_seconds
  ordinal_timeout   = "15m"

  timeouts {
    create = "2h"
    update = "2h"
  }

  depends_on = [olapgke_statefulset_expectation.next]
}

output "plan_summary" {
  description = "What the migration does, e.g. `move 3 of 3 ordinals (2,1,0) historical-a -> historical-b, 1 at a time`."
  value       = olapgke_statefulset_migration.pool_move.plan_summary
}
