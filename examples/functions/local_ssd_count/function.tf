# Check a node pool's Local SSD count (of any node pool resource, google_container_node_pool
# included) against olapgke's table at plan.
# Provider functions need the provider in required_providers (Terraform 1.8+).
terraform {
  required_providers {
    olapgke = { source = "olapgke/olapgke", version = "~> 0.1" }
  }
}

variable "machine_type" {
  type    = string
  default = "n2-standard-8"
}

variable "local_ssd_count" {
  type    = number
  default = 2
}

check "local_ssd_count_is_valid" {
  assert {
    condition     = contains(provider::olapgke::local_ssd_count(var.machine_type), var.local_ssd_count)
    error_message = "${var.machine_type} takes ${join(", ", provider::olapgke::local_ssd_count(var.machine_type))} Local SSDs per node, not ${var.local_ssd_count}."
  }
}

output "accepted_local_ssd_counts" {
  value = provider::olapgke::local_ssd_count(var.machine_type)
}
