# Fast tests: no cluster. The provider is mocked; computed attributes the module reads get
# fixed values so the manifest it builds is fully known.
mock_provider "olapgke" {
  mock_resource "olapgke_local_ssd_node_pool" {
    defaults = {
      nodes = ["node-1", "node-2", "node-3"]
    }
  }
  mock_resource "olapgke_topolvm_device_class" {
    defaults = {
      capacity = {}
    }
  }
  # The ordinal map output is checked on the sandbox (tests/sandbox): this Terraform's mocks
  # cannot fill a list of nested objects ("expected object type, found tuple").
}

variables {
  image      = "apache/druid:31.0.0"
  cache_size = "100Gi"
  pools = {
    a = {}
    # Pool b also carries the startup taint the volume-group bootstrap removes
    # (examples/topolvm-gke): the historicals must not tolerate it.
    b = { machine_type = "c3-standard-8-lssd", image_type = "UBUNTU_CONTAINERD", taints = [
      { key = "dedicated", value = "olap", effect = "NO_SCHEDULE" },
      { key = "olapgke.io/storage-not-ready", value = "true", effect = "NO_SCHEDULE" },
    ] }
  }
  active_pool = "a"
}

run "defaults_on_pool_a" {
  command = apply

  assert {
    condition     = olapgke_statefulset.this.manifest.spec.updateStrategy.type == "OnDelete"
    error_message = "the StatefulSet must use OnDelete so a pool switch never recreates Pods by itself"
  }
  assert {
    condition     = olapgke_statefulset.this.manifest.spec.template.spec.nodeSelector["cloud.google.com/gke-nodepool"] == "historical-a"
    error_message = "the pod template must select the active pool"
  }
  assert {
    condition     = olapgke_statefulset.this.manifest.spec.volumeClaimTemplates[0].spec.storageClassName == "olap-cache" && olapgke_statefulset.this.manifest.spec.volumeClaimTemplates[0].spec.resources.requests.storage == "100Gi"
    error_message = "the cache claim must use the device class's StorageClass and cache_size"
  }
  assert {
    condition     = olapgke_local_ssd_node_pool.this["a"].deletion_protection && !olapgke_local_ssd_node_pool.this["b"].deletion_protection
    error_message = "only the active pool is deletion-protected by default"
  }
  assert {
    condition     = olapgke_local_ssd_node_pool.this["a"].local_nvme_ssd_count == 2 && olapgke_local_ssd_node_pool.this["b"].local_nvme_ssd_count == 0
    error_message = "Local SSD count defaults to 2, or 0 (the type's fixed count) for -lssd machine types"
  }
  assert {
    condition     = olapgke_local_ssd_node_pool.this["b"].image_type == "UBUNTU_CONTAINERD"
    error_message = "a pool's image_type reaches its node pool"
  }
  assert {
    condition     = !olapgke_local_ssd_node_pool.this["a"].allow_local_data_loss && !olapgke_local_ssd_node_pool.this["b"].allow_local_data_loss
    error_message = "the data-loss guard must be on by default"
  }
  assert {
    condition     = olapgke_local_ssd_node_pool.this["a"].management.auto_upgrade && olapgke_local_ssd_node_pool.this["a"].management.auto_repair
    error_message = "node auto-upgrade and auto-repair stay on by default (GKE's default; a release-channel cluster refuses them off)"
  }
  assert {
    condition     = !can(olapgke_statefulset.this.manifest.spec.template.spec.tolerations)
    error_message = "pool a has no taints, so the Pods need no tolerations"
  }
  assert {
    condition     = jsondecode(olapgke_statefulset_migration.this.planned_manifest).spec.template.spec.nodeSelector["cloud.google.com/gke-nodepool"] == "historical-a"
    error_message = "the migration must judge the template this apply writes"
  }
  assert {
    condition     = output.storage_class == "olap-cache" && output.active_node_pool == "historical-a" && output.node_pools == { a = "historical-a", b = "historical-b" }
    error_message = "outputs: storage class, active node pool, node pool names"
  }
}

run "switch_to_pool_b" {
  command = apply

  variables {
    active_pool = "b"
  }

  assert {
    condition     = olapgke_statefulset.this.manifest.spec.template.spec.nodeSelector["cloud.google.com/gke-nodepool"] == "historical-b"
    error_message = "switching active_pool must switch the pod template's pool"
  }
  assert {
    condition     = olapgke_statefulset.this.manifest.spec.updateStrategy.type == "OnDelete"
    error_message = "the switch must stay under OnDelete"
  }
  assert {
    condition     = jsonencode(olapgke_statefulset.this.manifest.spec.template.spec.tolerations) == jsonencode([{ effect = "NoSchedule", key = "dedicated", operator = "Equal", value = "olap" }])
    error_message = "Pods must tolerate the active pool's taints (GKE effect names mapped to Kubernetes ones) except the startup taint"
  }
  assert {
    condition     = jsondecode(olapgke_statefulset_migration.this.planned_manifest).spec.template.spec.nodeSelector["cloud.google.com/gke-nodepool"] == "historical-b"
    error_message = "the migration must see the switched template"
  }
  assert {
    condition     = olapgke_local_ssd_node_pool.this["b"].deletion_protection && !olapgke_local_ssd_node_pool.this["a"].deletion_protection
    error_message = "protection follows the active pool, so the old one can be removed afterwards"
  }
}

run "remove_old_pool" {
  command = plan

  variables {
    active_pool = "b"
    pools = {
      b = { machine_type = "c3-standard-8-lssd", taints = [{ key = "dedicated", value = "olap", effect = "NO_SCHEDULE" }] }
    }
  }

  assert {
    condition     = keys(olapgke_local_ssd_node_pool.this) == ["b"]
    error_message = "removing a key of pools removes that node pool only"
  }
}

run "overrides_merge" {
  command = plan

  variables {
    spec_overrides      = { updateStrategy = { type = "RollingUpdate" }, minReadySeconds = 10 }
    pod_spec_overrides  = { priorityClassName = "olap" }
    container_overrides = { readinessProbe = { httpGet = { path = "/status/health", port = "http" } } }
    args                = ["historical"]
    env                 = { DRUID_XMX = "4g" }
    resources           = { requests = { cpu = "2" } }
    ports               = { http = 8083, metrics = 9090 }
  }

  assert {
    condition     = olapgke_statefulset.this.manifest.spec.updateStrategy.type == "RollingUpdate" && olapgke_statefulset.this.manifest.spec.minReadySeconds == 10
    error_message = "spec_overrides must replace top-level spec keys"
  }
  assert {
    condition     = olapgke_statefulset.this.manifest.spec.template.spec.priorityClassName == "olap" && olapgke_statefulset.this.manifest.spec.template.spec.nodeSelector["cloud.google.com/gke-nodepool"] == "historical-a"
    error_message = "pod_spec_overrides must add to the pod spec and keep the pool selection"
  }
  assert {
    condition     = olapgke_statefulset.this.manifest.spec.template.spec.containers[0].readinessProbe.httpGet.path == "/status/health" && olapgke_statefulset.this.manifest.spec.template.spec.containers[0].image == "apache/druid:31.0.0"
    error_message = "container_overrides must add to the container and keep the image"
  }
  assert {
    condition     = jsonencode(olapgke_statefulset.this.manifest.spec.template.spec.containers[0].args) == jsonencode(["historical"]) && jsonencode(olapgke_statefulset.this.manifest.spec.template.spec.containers[0].env) == jsonencode([{ name = "DRUID_XMX", value = "4g" }])
    error_message = "args and env reach the container"
  }
  assert {
    condition     = jsonencode(olapgke_statefulset.this.manifest.spec.template.spec.containers[0].resources) == jsonencode({ requests = { cpu = "2" } })
    error_message = "empty limits must be left out, not sent as {}"
  }
  assert {
    condition     = length(olapgke_statefulset.this.manifest.spec.template.spec.containers[0].ports) == 2
    error_message = "every port reaches the container"
  }
}

run "empty_optional_fields_left_out" {
  command = plan

  assert {
    condition     = !can(olapgke_statefulset.this.manifest.spec.template.spec.containers[0].args) && !can(olapgke_statefulset.this.manifest.spec.template.spec.containers[0].env) && !can(olapgke_statefulset.this.manifest.spec.template.spec.containers[0].resources)
    error_message = "unset args, env and resources must not be sent (the API server drops empty values and the provider compares)"
  }
}

run "active_pool_must_be_a_key" {
  command = plan

  variables {
    active_pool = "c"
  }

  expect_failures = [var.active_pool]
}

run "cache_size_must_be_a_quantity" {
  command = plan

  variables {
    cache_size = "lots"
  }

  expect_failures = [var.cache_size]
}

run "pool_keys_are_short_names" {
  command = plan

  variables {
    pools       = { "Pool_A" = {} }
    active_pool = "Pool_A"
  }

  expect_failures = [var.pools]
}

run "replicas_whole_and_positive" {
  command = plan

  variables {
    replicas = 0
  }

  expect_failures = [var.replicas]
}

run "thin_class_needs_thin_pool" {
  command = plan

  variables {
    device_class = { type = "thin" }
  }

  expect_failures = [var.device_class]
}

run "migration_order_checked" {
  command = plan

  variables {
    migration = { order = "random" }
  }

  expect_failures = [var.migration]
}

run "taint_effect_checked" {
  command = plan

  variables {
    pools       = { a = { taints = [{ key = "k", effect = "NoSchedule" }] } }
    active_pool = "a"
  }

  expect_failures = [var.pools]
}

run "gates_reach_the_migration" {
  command = plan

  variables {
    gates = [
      {
        name     = "wikipedia-loaded"
        interval = "15s"
        http = {
          url              = "http://druid-coordinator.olap.svc:8081/druid/coordinator/v1/loadstatus?full"
          headers_from_env = { Authorization = "DRUID_BASIC_AUTH" }
          expect_json_path = "$._default_tier.wikipedia"
          expect_value     = "0"
        }
      },
      { name = "cache-warm", pod_condition = { type = "example.com/cache-warm" } },
    ]
  }

  assert {
    condition     = length(olapgke_statefulset_migration.this.gate) == 2
    error_message = "each gate of var.gates must become a gate block of the migration"
  }
  assert {
    condition     = olapgke_statefulset_migration.this.gate[0].http.expect_json_path == "$._default_tier.wikipedia" && olapgke_statefulset_migration.this.gate[0].http.headers_from_env["Authorization"] == "DRUID_BASIC_AUTH" && olapgke_statefulset_migration.this.gate[0].timeout == "30m"
    error_message = "the HTTP gate must carry its path, value, environment headers and default timeout"
  }
  assert {
    condition     = olapgke_statefulset_migration.this.gate[1].pod_condition.type == "example.com/cache-warm" && olapgke_statefulset_migration.this.gate[1].pod_condition.status == "True" && olapgke_statefulset_migration.this.gate[1].http == null
    error_message = "the condition gate must carry its type and the default status, and no http block"
  }
}

run "gate_kind_checked" {
  command = plan

  variables {
    gates = [{ name = "neither" }]
  }

  expect_failures = [var.gates]
}

run "volume_group_bootstrap_off_by_default" {
  command = plan

  assert {
    condition     = length(olapgke_volume_group_bootstrap.this) == 0
    error_message = "the bootstrap is installed only when volume_group_bootstrap is set"
  }
}

run "volume_group_bootstrap_on_the_device_class_volume_group" {
  command = plan

  variables {
    device_class           = { volume_group = "vg-olap" }
    volume_group_bootstrap = { image = "registry.example/olapgke-vg-bootstrap:1" }
  }

  assert {
    condition     = olapgke_volume_group_bootstrap.this[0].volume_group == "vg-olap" && olapgke_volume_group_bootstrap.this[0].image == "registry.example/olapgke-vg-bootstrap:1"
    error_message = "the bootstrap creates the device class's volume group with the given image"
  }
  assert {
    condition     = olapgke_volume_group_bootstrap.this[0].namespace == "olapgke-system" && olapgke_volume_group_bootstrap.this[0].wait_for_nodes
    error_message = "the bootstrap's defaults: namespace olapgke-system, waiting for the nodes"
  }
}
