locals {
  pool_names = { for k, p in var.pools : k => "${var.name}-${k}" }

  # The nodeSelector names the active pool once its `nodes` are known: known at plan for a pool
  # that exists, unknown for one this apply creates. The StatefulSet's and the migration's
  # placement checks then wait for the apply instead of refusing nodes they cannot see yet.
  active_pool      = olapgke_local_ssd_node_pool.this[var.active_pool]
  active_pool_name = length(local.active_pool.nodes) >= 0 ? local.active_pool.name : null

  taint_effects = { NO_SCHEDULE = "NoSchedule", PREFER_NO_SCHEDULE = "PreferNoSchedule", NO_EXECUTE = "NoExecute" }
  # The pool's taints are the historicals' to tolerate, except the startup taint the volume-group
  # bootstrap removes once the node's storage is ready (examples/topolvm-gke): tolerating it
  # would let a historical land on a node without its volume group.
  startup_taint = "olapgke.io/storage-not-ready"
  tolerations = [for t in var.pools[var.active_pool].taints : {
    for k, v in {
      key      = t.key
      operator = t.value == null ? "Exists" : "Equal"
      value    = t.value
      effect   = local.taint_effects[t.effect]
    } : k => v if v != null
  } if t.key != local.startup_taint]

  storage_class_name = coalesce(var.device_class.storage_class_name, var.device_class.name)
  claim_name         = "cache"

  # Optional fields are left out rather than sent empty: the API server drops empty lists and
  # maps, and the provider compares what it stored with what the manifest says.
  resources = { for k, v in var.resources : k => v if length(v) > 0 }
  container = merge({
    for k, v in {
      name         = var.name
      image        = var.image
      args         = length(var.args) > 0 ? var.args : null
      env          = length(var.env) > 0 ? [for n in sort(keys(var.env)) : { name = n, value = var.env[n] }] : null
      ports        = [for n in sort(keys(var.ports)) : { name = n, containerPort = var.ports[n] }]
      resources    = length(local.resources) > 0 ? local.resources : null
      volumeMounts = [{ name = local.claim_name, mountPath = var.cache_mount_path }]
    } : k => v if v != null
  }, var.container_overrides)

  pod_spec = merge({
    for k, v in {
      terminationGracePeriodSeconds = var.termination_grace_period_seconds
      nodeSelector                  = { "cloud.google.com/gke-nodepool" = local.active_pool_name }
      tolerations                   = length(local.tolerations) > 0 ? local.tolerations : null
      containers                    = [local.container]
    } : k => v if v != null
  }, var.pod_spec_overrides)

  spec = merge({
    replicas            = var.replicas
    serviceName         = var.name
    podManagementPolicy = var.pod_management_policy
    # OnDelete: switching pools changes the template without the controller recreating any Pod;
    # olapgke_statefulset_migration then moves the ordinals one at a time.
    updateStrategy = { type = "OnDelete" }
    selector       = { matchLabels = { app = var.name } }
    template = {
      metadata = { labels = merge(var.labels, { app = var.name }) }
      spec     = local.pod_spec
    }
    volumeClaimTemplates = [{
      metadata = { name = local.claim_name }
      spec = {
        accessModes      = ["ReadWriteOnce"]
        storageClassName = olapgke_topolvm_device_class.this.storage_class.name
        resources        = { requests = { storage = var.cache_size } }
      }
    }]
  }, var.spec_overrides)

  manifest = {
    apiVersion = "apps/v1"
    kind       = "StatefulSet"
    metadata   = { name = var.name, namespace = var.namespace }
    spec       = local.spec
  }
}

resource "olapgke_local_ssd_node_pool" "this" {
  for_each = var.pools

  name                   = local.pool_names[each.key]
  machine_type           = each.value.machine_type
  node_count             = each.value.node_count
  local_nvme_ssd_count   = coalesce(each.value.local_nvme_ssd_count, endswith(each.value.machine_type, "-lssd") ? 0 : 2)
  node_locations         = each.value.node_locations
  spot                   = each.value.spot
  image_type             = each.value.image_type
  expected_ephemeral_gib = each.value.expected_ephemeral_gib
  labels                 = length(each.value.labels) > 0 ? each.value.labels : null
  taints                 = length(each.value.taints) > 0 ? each.value.taints : null
  storage_startup_taint  = each.value.storage_startup_taint

  boot_disk = {
    type    = each.value.boot_disk_type
    size_gb = each.value.boot_disk_size_gb
  }
  # Both on by default, as GKE requires on a release-channel cluster. An upgrade recreates the
  # nodes (and their Local SSD data) outside Terraform: a maintenance exclusion with scope "no
  # minor or node upgrades" on the cluster holds upgrades off, up to the end of support
  # (https://cloud.google.com/kubernetes-engine/docs/concepts/maintenance-windows-and-exclusions).
  management = {
    auto_repair  = true
    auto_upgrade = each.value.auto_upgrade
  }

  # The active pool cannot be destroyed by accident; an inactive one can be removed from
  # `pools`, and the data-loss guard (allow_local_data_loss = false, the default) still refuses
  # that while a PV is pinned to one of its nodes.
  deletion_protection   = coalesce(each.value.deletion_protection, each.key == var.active_pool)
  allow_local_data_loss = each.value.allow_local_data_loss
}

# Creates the device class's volume group on every Local-SSD node, then removes the start-up
# taint (pools with storage_startup_taint). Apply waits for the pools' nodes.
resource "olapgke_volume_group_bootstrap" "this" {
  count = var.volume_group_bootstrap == null ? 0 : 1

  image           = var.volume_group_bootstrap.image
  namespace       = var.volume_group_bootstrap.namespace
  volume_group    = var.device_class.volume_group
  lvm_mode        = var.volume_group_bootstrap.lvm_mode
  recheck_seconds = var.volume_group_bootstrap.recheck_seconds
  wait_for_nodes  = var.volume_group_bootstrap.wait_for_nodes
  # A thin class's pool: lvmd exits "Thin pool not found" without it, and TopoLVM makes none.
  thin_pools = var.device_class.thin_pool == null ? null : { (var.device_class.thin_pool.name) = var.device_class.thin_pool.size_percent }

  depends_on = [olapgke_local_ssd_node_pool.this]
}

resource "olapgke_topolvm_device_class" "this" {
  name         = var.device_class.name
  volume_group = var.device_class.volume_group
  default      = var.device_class.default
  spare_gb     = var.device_class.spare_gb
  type         = var.device_class.type
  thin_pool    = var.device_class.thin_pool == null ? null : { name = var.device_class.thin_pool.name, overprovision_ratio = var.device_class.thin_pool.overprovision_ratio }

  force_destroy = var.device_class.force_destroy

  storage_class = {
    name    = local.storage_class_name
    fs_type = var.device_class.fs_type
  }

  # The bootstrap's apply waits until every Local-SSD node has the volume group and its thin
  # pool; the class's own check (Thin Pool Not Found) then finds them.
  depends_on = [olapgke_volume_group_bootstrap.this]
}

resource "olapgke_statefulset" "this" {
  manifest            = local.manifest
  wait_for_rollout    = var.wait_for_rollout
  allow_unschedulable = var.allow_unschedulable

  pod_disruption_budget = var.pod_disruption_budget_max_unavailable == null ? null : {
    max_unavailable = var.pod_disruption_budget_max_unavailable
  }
}

resource "olapgke_statefulset_migration" "this" {
  namespace   = var.namespace
  statefulset = var.name

  # Judge the template this apply writes, not the live one.
  planned_manifest  = jsonencode(olapgke_statefulset.this.manifest)
  volume_claims     = [local.claim_name]
  order             = var.migration.order
  max_unavailable   = var.migration.max_unavailable
  min_ready_seconds = var.migration.min_ready_seconds
  ordinal_timeout   = var.migration.ordinal_timeout

  # Hydration gates: after each restart or move, wait until the application says the ordinal
  # serves (segments loaded, replication caught up) before the next one starts.
  dynamic "gate" {
    for_each = var.gates
    content {
      name     = gate.value.name
      timeout  = gate.value.timeout
      interval = gate.value.interval
      dynamic "pod_condition" {
        for_each = gate.value.pod_condition == null ? [] : [gate.value.pod_condition]
        content {
          type   = pod_condition.value.type
          status = pod_condition.value.status
        }
      }
      dynamic "http" {
        for_each = gate.value.http == null ? [] : [gate.value.http]
        content {
          url              = http.value.url
          method           = http.value.method
          headers          = lookup(var.gate_headers, gate.value.name, null)
          headers_from_env = http.value.headers_from_env
          expect_status    = http.value.expect_status
          expect_json_path = http.value.expect_json_path
          expect_value     = http.value.expect_value
        }
      }
    }
  }

  timeouts {
    create = var.migration.timeout
    update = var.migration.timeout
  }

  depends_on = [olapgke_statefulset.this]
}

# Read after the migration: where each ordinal runs now and where its PVs are pinned.
data "olapgke_statefulset_ordinals" "this" {
  namespace = var.namespace
  name      = var.name

  depends_on = [olapgke_statefulset_migration.this]
}
