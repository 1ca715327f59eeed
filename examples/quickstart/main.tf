# The quickstart `make demo` runs on the local sandbox. The provider block is empty: project,
# location, cluster, the GKE emulator's endpoint and the access token come from the environment
# the sandbox writes (set -a; . .cache/sandbox/env; set +a).
terraform {
  required_version = ">= 1.9"

  required_providers {
    olapgke = {
      source = "olapgke/olapgke"
    }
  }
}

provider "olapgke" {}

variable "active_pool" {
  description = "Key of pools the historical tier runs on."
  type        = string
  default     = "a"
}

variable "pools" {
  description = "Node pools of the tier (pool a today, pool b to move to)."
  type        = any
  default = {
    a = {}
    b = {}
  }
}

variable "spec_overrides" {
  description = "Merged over the StatefulSet spec; the demo passes { updateStrategy = { type = \"RollingUpdate\" } } to show the incident's edit being refused."
  type        = any
  default     = {}
}

module "historical" {
  source = "../../modules/olap-historical"

  name        = "historical"
  namespace   = "default"
  pools       = var.pools
  active_pool = var.active_pool

  image      = "apache/druid:31.0.0"
  args       = ["historical"]
  replicas   = 3
  cache_size = "50Gi"
  ports      = { http = 8083 }
  resources = {
    requests = { cpu = "500m", memory = "1Gi" }
  }

  # The sandbox comes with TopoLVM's chart defaults: device class ssd (the only thick class lvmd
  # allows on volume group vg-ssd) and StorageClass topolvm-provisioner; the import below adopts it.
  device_class = {
    name               = "ssd"
    volume_group       = "vg-ssd"
    default            = true
    storage_class_name = "topolvm-provisioner"
  }

  # The sandbox terminates Pods at once; keep the demo quick.
  termination_grace_period_seconds = 1
  spec_overrides                   = var.spec_overrides

  migration = {
    ordinal_timeout = "3m"
    timeout         = "15m"
  }
}

import {
  to = module.historical.olapgke_topolvm_device_class.this
  id = "ssd"
}

output "storage_class" {
  value = module.historical.storage_class
}

output "node_pools" {
  value = module.historical.node_pools
}

# ordinal -> Pod -> node -> PVs, read after the last apply.
output "ordinal_map" {
  value = module.historical.ordinals
}

# The same map as text, one line per ordinal (the demo prints it).
output "ordinal_table" {
  value = join("\n", [for k, o in module.historical.ordinals : format(
    "ordinal %s -> Pod %s -> node %s -> PV %s (pinned to %s)%s",
    k, o.pod, o.node == "" ? "(none)" : o.node, join(", ", o.pvs), join(", ", o.pinned_nodes), o.ready ? "" : " NOT READY",
  )])
}

output "moves" {
  value = module.historical.moves
}
