# Production: n2-standard-32 nodes with 8 raw-block Local SSDs each (3 TiB per node for TopoLVM),
# six replicas, a large cache, a PodDisruptionBudget, and a conservative migration (one ordinal
# at a time, 5 minutes of soak each). The tier is moving from pool `a` to the larger `b`:
# `b` was added first, then active_pool switched; remove `a` once the apply is done.
terraform {
  required_version = ">= 1.9"

  required_providers {
    olapgke = {
      source  = "olapgke/olapgke"
      version = "~> 0.1"
    }
  }

  # Remote state, e.g. Terraform Cloud (see the guide "Using olapgke in Terraform Cloud"):
  # cloud {
  #   organization = "example"
  #   workspaces { name = "olap-prod" }
  # }
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
  description = "Cluster location (region)."
  type        = string
  default     = "europe-west4"
}

variable "cluster" {
  description = "GKE cluster name."
  type        = string
  default     = "olap-prod"
}

module "historical" {
  source = "../../../modules/olap-historical"

  name      = "historical"
  namespace = "olap"

  pools = {
    a = {
      machine_type           = "n2-standard-16"
      node_count             = 2 # per zone
      local_nvme_ssd_count   = 4
      boot_disk_type         = "pd-ssd"
      boot_disk_size_gb      = 200
      expected_ephemeral_gib = 60
      node_locations         = ["europe-west4-a", "europe-west4-b", "europe-west4-c"]
      labels                 = { role = "olap-historical" }
      taints                 = [{ key = "dedicated", value = "olap", effect = "NO_SCHEDULE" }]
    }
    b = {
      machine_type           = "n2-standard-32"
      node_count             = 2
      local_nvme_ssd_count   = 8
      boot_disk_type         = "pd-ssd"
      boot_disk_size_gb      = 200
      expected_ephemeral_gib = 80
      node_locations         = ["europe-west4-a", "europe-west4-b", "europe-west4-c"]
      labels                 = { role = "olap-historical" }
      taints                 = [{ key = "dedicated", value = "olap", effect = "NO_SCHEDULE" }]
    }
  }
  active_pool = "b"

  device_class = {
    name               = "olap-cache"
    volume_group       = "vg-olap"
    spare_gb           = 20
    storage_class_name = "olap-cache"
  }

  image    = "apache/druid:31.0.0"
  args     = ["historical"]
  replicas = 6
  # Every ordinal's PVC must fit a node of the pool it runs on: pool a's 4 x 375 GiB (1500 GiB,
  # less spare_gb) during the move as well as pool b's 3 TiB afterwards.
  cache_size = "1400Gi"
  resources = {
    requests = { cpu = "12", memory = "96Gi" }
    limits   = { memory = "96Gi" }
  }
  env = {
    DRUID_XMX = "32g"
    # The segment cache on the Local SSD volume (the module mounts it at cache_mount_path,
    # /var/cache/olap by default); without it Druid keeps its cache on the boot disk.
    druid_segmentCache_locations = jsonencode([{ path = "/var/cache/olap", maxSize = "1300g" }])
    druid_server_maxSize         = "1300g"
  }
  ports = { http = 8083, metrics = 9090 }

  container_overrides = {
    readinessProbe = {
      httpGet             = { path = "/druid/historical/v1/readiness", port = "http" }
      periodSeconds       = 10
      failureThreshold    = 3
      initialDelaySeconds = 30
    }
  }
  spec_overrides = {
    minReadySeconds = 30
  }
  termination_grace_period_seconds = 300

  pod_disruption_budget_max_unavailable = "1"
  migration = {
    max_unavailable   = 1
    min_ready_seconds = 300
    ordinal_timeout   = "45m"
    timeout           = "6h"
  }
}

output "storage_class" {
  value = module.historical.storage_class
}

output "ordinals" {
  value = module.historical.ordinals
}
