# Will images, logs and emptyDirs of 40 GiB per node fit on a 100 GiB boot disk
# before the kubelet reports DiskPressure and evicts Pods?
# Provider functions need the provider in required_providers (Terraform 1.8+).
terraform {
  required_providers {
    olapgke = { source = "olapgke/olapgke", version = "~> 0.1" }
  }
}

locals {
  expected_ephemeral_gib = 40
  disk                   = provider::olapgke::ephemeral_storage("n2-standard-8", 100, 0)
  headroom_gib           = local.disk.capacity_gib - local.disk.reserved_gib - local.disk.eviction_threshold_gib - local.expected_ephemeral_gib
}

check "boot_disk_fits_ephemeral_demand" {
  assert {
    condition     = local.headroom_gib >= 0
    error_message = "Nodes will hit DiskPressure: ${local.disk.eviction_signal} leaves ${local.disk.capacity_gib - local.disk.reserved_gib - local.disk.eviction_threshold_gib} GiB for ${local.expected_ephemeral_gib} GiB of ephemeral use."
  }
}

output "allocatable_ephemeral_gib" {
  value = local.disk.allocatable_gib
}
