variable "name" {
  description = "Name of the StatefulSet, its headless Service, PodDisruptionBudget and volume claim prefix; node pools are named `<name>-<pool key>`."
  type        = string
  default     = "historical"

  validation {
    # DNS-1123 label; 35 characters leave room for "-<pool key>" within GKE's 40.
    condition     = can(regex("^[a-z]([-a-z0-9]{0,33}[a-z0-9])?$", var.name))
    error_message = "name must be 1-35 lowercase letters, digits or hyphens, start with a letter and end with a letter or digit (a DNS-1123 label short enough for node pool names)."
  }
}

variable "namespace" {
  description = "Existing Kubernetes namespace of the StatefulSet (the module does not create it)."
  type        = string
  default     = "default"

  validation {
    condition     = can(regex("^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$", var.namespace))
    error_message = "namespace must be a DNS-1123 label."
  }
}

variable "pools" {
  description = <<-EOT
    Node pools with Local SSDs for the tier, by key (the key is what `active_pool` names). Add a
    pool beside the current one, switch `active_pool` to it (one apply moves every ordinal), then
    remove the old key. Only the active pool gets `deletion_protection` unless set explicitly; the
    data-loss guard refuses removing a pool while PVs are still pinned to its nodes.
  EOT
  type = map(object({
    machine_type = optional(string, "n2-standard-8")
    node_count   = optional(number, 3)
    # Raw-block Local SSDs per node for TopoLVM. Unset: 0 for Gen3 -lssd machine types (the
    # type's fixed count), else 2.
    local_nvme_ssd_count = optional(number)
    # Node image (e.g. "UBUNTU_CONTAINERD", whose /sbin/lvm lvmd runs); unset: GKE's default.
    # Changing it recreates every VM of the pool: the data-loss guard applies.
    image_type             = optional(string)
    boot_disk_type         = optional(string, "pd-balanced")
    boot_disk_size_gb      = optional(number, 100)
    expected_ephemeral_gib = optional(number)
    node_locations         = optional(set(string))
    spot                   = optional(bool, false)
    labels                 = optional(map(string), {})
    taints = optional(list(object({
      key    = string
      value  = optional(string)
      effect = string
    })), [])
    # The startup taint olapgke.io/storage-not-ready on every node GKE creates, removed by the
    # volume-group bootstrap once the node's storage is ready (examples/topolvm-gke).
    storage_startup_taint = optional(bool, false)
    # Node auto-upgrade, on like GKE's default: a cluster on a release channel (most are)
    # refuses a pool with it off. To keep GKE from upgrading (recreating) the Local SSD nodes,
    # use a cluster maintenance exclusion ("no minor or node upgrades") instead.
    auto_upgrade          = optional(bool, true)
    deletion_protection   = optional(bool)
    allow_local_data_loss = optional(bool, false)
  }))

  validation {
    condition     = length(var.pools) > 0
    error_message = "pools must hold at least one pool (the active one)."
  }
  validation {
    condition     = alltrue([for k in keys(var.pools) : can(regex("^[a-z]([-a-z0-9]{0,3}[a-z0-9])?$", k))])
    error_message = "pool keys must be 1-5 lowercase letters, digits or hyphens starting with a letter (they become the suffix of the node pool name)."
  }
  validation {
    condition     = alltrue([for p in values(var.pools) : p.node_count >= 1 && floor(p.node_count) == p.node_count])
    error_message = "node_count must be a whole number >= 1 per pool."
  }
  validation {
    condition     = alltrue([for p in values(var.pools) : p.boot_disk_size_gb >= 10])
    error_message = "boot_disk_size_gb must be at least 10 (GKE's minimum)."
  }
  validation {
    condition     = alltrue(flatten([for p in values(var.pools) : [for t in p.taints : contains(["NO_SCHEDULE", "PREFER_NO_SCHEDULE", "NO_EXECUTE"], t.effect)]]))
    error_message = "taint effect must be NO_SCHEDULE, PREFER_NO_SCHEDULE or NO_EXECUTE."
  }
}

variable "active_pool" {
  description = "Key of `pools` the StatefulSet's Pods run on. Changing it switches the pod template (updateStrategy OnDelete: no Pod is recreated by the controller) and the same apply moves every ordinal, one at a time, with `olapgke_statefulset_migration`."
  type        = string

  validation {
    condition     = contains(keys(var.pools), var.active_pool)
    error_message = "active_pool must be one of the keys of pools."
  }
}

variable "device_class" {
  description = "TopoLVM device class (lvmd `device-classes` entry) and its StorageClass the cache volumes use."
  type = object({
    name         = optional(string, "olap-cache")
    volume_group = optional(string, "vg-ssd")
    default      = optional(bool, false)
    spare_gb     = optional(number)
    type         = optional(string, "thick")
    thin_pool = optional(object({
      name                = string
      overprovision_ratio = number
      # Percent of the volume group the pool takes when volume_group_bootstrap creates it
      # (thin_pools of olapgke_volume_group_bootstrap); with the bootstrap installed elsewhere,
      # list the pool there.
      size_percent = optional(number, 90)
    }))
    storage_class_name = optional(string)
    fs_type            = optional(string, "xfs")
    # Allow destroying the class while PVs use it (their data stays stranded on the nodes).
    force_destroy = optional(bool, false)
  })
  default = {}

  validation {
    condition     = can(regex("^[A-Za-z0-9]([-_.A-Za-z0-9]{0,61}[A-Za-z0-9])?$", var.device_class.name))
    error_message = "device_class.name must be 1-63 alphanumerics, '-', '_' or '.', starting and ending with an alphanumeric (lvmd's rule)."
  }
  validation {
    condition     = contains(["thick", "thin"], var.device_class.type) && (var.device_class.type == "thin") == (var.device_class.thin_pool != null)
    error_message = "device_class.type must be thick or thin, and thin_pool is required exactly when it is thin."
  }
  validation {
    condition     = contains(["xfs", "ext4", "btrfs"], var.device_class.fs_type)
    error_message = "device_class.fs_type must be xfs, ext4 or btrfs."
  }
}

variable "image" {
  description = "Container image of the OLAP server."
  type        = string

  validation {
    condition     = length(trimspace(var.image)) > 0
    error_message = "image must not be empty."
  }
}

variable "args" {
  description = "Container arguments."
  type        = list(string)
  default     = []
}

variable "env" {
  description = "Container environment variables."
  type        = map(string)
  default     = {}
}

variable "replicas" {
  description = "Number of ordinals."
  type        = number
  default     = 3

  validation {
    condition     = var.replicas >= 1 && floor(var.replicas) == var.replicas
    error_message = "replicas must be a whole number >= 1."
  }
}

variable "resources" {
  description = "Container resource requests and limits, e.g. `{ requests = { cpu = \"2\", memory = \"8Gi\" } }`."
  type = object({
    requests = optional(map(string), {})
    limits   = optional(map(string), {})
  })
  default = {}
}

variable "cache_size" {
  description = "Size of each ordinal's Local SSD cache volume (a Kubernetes quantity, e.g. `500Gi`)."
  type        = string

  validation {
    condition     = can(regex("^[0-9]+(\\.[0-9]+)?(Ki|Mi|Gi|Ti|Pi|k|M|G|T|P)?$", var.cache_size))
    error_message = "cache_size must be a Kubernetes quantity such as 500Gi."
  }
}

variable "cache_mount_path" {
  description = "Where the cache volume is mounted in the container."
  type        = string
  default     = "/var/cache/olap"

  validation {
    condition     = startswith(var.cache_mount_path, "/")
    error_message = "cache_mount_path must be an absolute path."
  }
}

variable "ports" {
  description = "Container ports by name; they also become the headless Service's ports."
  type        = map(number)
  default     = { http = 8083 }

  validation {
    condition     = alltrue([for p in values(var.ports) : p >= 1 && p <= 65535 && floor(p) == p])
    error_message = "ports must be whole numbers from 1 to 65535."
  }
  validation {
    condition     = alltrue([for n in keys(var.ports) : can(regex("^[a-z0-9]([-a-z0-9]{0,13}[a-z0-9])?$", n))])
    error_message = "port names must be IANA service names: 1-15 lowercase letters, digits or hyphens."
  }
}

variable "pod_management_policy" {
  description = "`OrderedReady` or `Parallel`."
  type        = string
  default     = "OrderedReady"

  validation {
    condition     = contains(["OrderedReady", "Parallel"], var.pod_management_policy)
    error_message = "pod_management_policy must be OrderedReady or Parallel."
  }
}

variable "termination_grace_period_seconds" {
  description = "Pod termination grace period."
  type        = number
  default     = 30

  validation {
    condition     = var.termination_grace_period_seconds >= 0
    error_message = "termination_grace_period_seconds must be >= 0."
  }
}

variable "labels" {
  description = "Extra labels on the StatefulSet's Pods (the selector stays `app = <name>`)."
  type        = map(string)
  default     = {}
}

variable "spec_overrides" {
  description = "Merged over the StatefulSet's `spec` (top-level keys replace the module's), e.g. `{ minReadySeconds = 10 }`. `{ updateStrategy = { type = \"RollingUpdate\" } }` reproduces the incident: the plan then refuses the pool switch."
  type        = any
  default     = {}
}

variable "pod_spec_overrides" {
  description = "Merged over the pod template's `spec` (top-level keys replace the module's), e.g. `{ priorityClassName = \"olap\" }`."
  type        = any
  default     = {}
}

variable "container_overrides" {
  description = "Merged over the server container (top-level keys replace the module's), e.g. a `readinessProbe`."
  type        = any
  default     = {}
}

variable "pod_disruption_budget_max_unavailable" {
  description = "When set, a PodDisruptionBudget with this `maxUnavailable` (number or percentage); migrations never move more ordinals at once than it allows."
  type        = string
  default     = null

  validation {
    condition     = var.pod_disruption_budget_max_unavailable == null || can(regex("^([0-9]+|[0-9]{1,3}%)$", var.pod_disruption_budget_max_unavailable))
    error_message = "pod_disruption_budget_max_unavailable must be a number (\"1\") or a percentage (\"25%\")."
  }
}

variable "allow_unschedulable" {
  description = "Downgrade the StatefulSet's plan error for ordinals that would be recreated into Pods that can never schedule to a warning. Leave false; policies (examples/policies) can still refuse such plans."
  type        = bool
  default     = false
}

variable "wait_for_rollout" {
  description = "Wait after apply until created ordinals are Running and Ready."
  type        = bool
  default     = true
}

variable "migration" {
  description = "How a pool switch moves ordinals: `max_unavailable` ordinals at a time, `order` (`descending` or `ascending`), `min_ready_seconds` soak per ordinal, `ordinal_timeout` per ordinal and `timeout` for the whole move."
  type = object({
    max_unavailable   = optional(number, 1)
    order             = optional(string, "descending")
    min_ready_seconds = optional(number, 0)
    ordinal_timeout   = optional(string, "15m")
    timeout           = optional(string, "2h")
  })
  default = {}

  validation {
    condition     = var.migration.max_unavailable >= 1 && floor(var.migration.max_unavailable) == var.migration.max_unavailable
    error_message = "migration.max_unavailable must be a whole number >= 1."
  }
  validation {
    condition     = contains(["descending", "ascending"], var.migration.order)
    error_message = "migration.order must be descending or ascending."
  }
  validation {
    condition     = var.migration.min_ready_seconds >= 0
    error_message = "migration.min_ready_seconds must be >= 0."
  }
  validation {
    condition     = can(regex("^([0-9]+(\\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$", var.migration.ordinal_timeout)) && can(regex("^([0-9]+(\\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$", var.migration.timeout))
    error_message = "migration.ordinal_timeout and migration.timeout must be Go durations such as 15m or 2h."
  }
}

variable "gates" {
  description = "Hydration gates of the migration: after each restart or move, the next ordinal waits until every gate passes. Each has a `name`, `timeout` (default 30m), `interval` (default 10s) and exactly one of `pod_condition` (`type`, `status`) and `http` (`url`, `method`, `headers_from_env`, `expect_status`, `expect_json_path`, `expect_value`; `{ordinal}`, `{pod}`, `{namespace}`, `{statefulset}`, `{node}` and `{pod_ip}` are filled per ordinal). Secret headers go in `gate_headers`."
  type = list(object({
    name     = string
    timeout  = optional(string, "30m")
    interval = optional(string, "10s")
    pod_condition = optional(object({
      type   = string
      status = optional(string, "True")
    }))
    http = optional(object({
      url              = string
      method           = optional(string, "GET")
      headers_from_env = optional(map(string))
      expect_status    = optional(number, 200)
      expect_json_path = optional(string)
      expect_value     = optional(string)
    }))
  }))
  default = []

  validation {
    condition     = alltrue([for g in var.gates : (g.pod_condition == null) != (g.http == null)])
    error_message = "Each gate takes exactly one of pod_condition and http."
  }
  validation {
    condition     = length(distinct([for g in var.gates : g.name])) == length(var.gates)
    error_message = "Gate names must be unique (gate_headers is keyed by them)."
  }
}

variable "gate_headers" {
  description = "Secret request headers of the HTTP gates, by gate name (`{ loaded = { Authorization = \"Bearer ...\" } }`). Passed to the provider's write-only `headers` (Terraform 1.11+, OpenTofu 1.11+): never in state. On older CLIs use `http.headers_from_env`."
  type        = map(map(string))
  default     = {}
  sensitive   = true
}

variable "volume_group_bootstrap" {
  description = "Install the volume-group bootstrap (olapgke_volume_group_bootstrap) that creates device_class.volume_group on the pools' raw-block Local SSDs and removes the start-up taint. null (default): installed elsewhere, or not needed (the sandbox's default world, Local SSDs prepared another way). One per cluster: with several instances of this module, set it on one."
  type = object({
    image           = string
    namespace       = optional(string, "olapgke-system")
    lvm_mode        = optional(string, "auto")
    recheck_seconds = optional(number, 60)
    wait_for_nodes  = optional(bool, true)
  })
  default = null
}
