# Development: one small pool of Gen3 -lssd machines (their Local SSD count is fixed by the type),
# two replicas, a modest cache. To move the tier to new machines, add a pool next to `a`, apply,
# set active_pool to it and apply (one apply moves every ordinal), then remove `a`.
terraform {
  required_version = ">= 1.9"

  required_providers {
    olapgke = {
      source  = "olapgke/olapgke"
      version = "~> 0.1"
    }
  }
}

provider "olapgke" {
  project  = var.project
  location = var.location
  cluster  = var.cluster
}

variable "project" {
  description = "GCP project of the cluster."
  type        = string
}

variable "location" {
  description = "Cluster location (zone or region)."
  type        = string
  default     = "europe-west4-a"
}

variable "cluster" {
  description = "GKE cluster name."
  type        = string
  default     = "olap-dev"
}

module "historical" {
  source = "../../../modules/olap-historical"

  name      = "historical"
  namespace = "olap"

  pools = {
    a = {
      machine_type      = "c3-standard-8-lssd" # 2 x 375 GiB Local SSD
      node_count        = 2
      boot_disk_size_gb = 100
      spot              = true
    }
  }
  active_pool = "a"

  image      = "apache/druid:31.0.0"
  args       = ["historical"]
  replicas   = 2
  cache_size = "300Gi"
  resources = {
    requests = { cpu = "2", memory = "8Gi" }
    limits   = { memory = "8Gi" }
  }
  env = {
    DRUID_XMX = "4g"
    # The segment cache on the Local SSD volume (mounted at cache_mount_path, /var/cache/olap by
    # default); without it Druid keeps its cache on the boot disk.
    druid_segmentCache_locations = jsonencode([{ path = "/var/cache/olap", maxSize = "280g" }])
    druid_server_maxSize         = "280g"
  }
}

output "ordinals" {
  value = module.historical.ordinals
}
