# Applies the module on a running sandbox (real API server, controllers, scheduler, KWOK nodes,
# TopoLVM and GKE emulators). Run through `make test-module` (it starts a fresh sandbox and
# points the provider at it); on its own: set -a; . .cache/sandbox/env; set +a, then
#   terraform test -test-directory=tests/sandbox
# with a CLI config whose dev_overrides point at the built provider.

variables {
  name       = "modtest"
  image      = "olap/historical:1"
  cache_size = "10Gi"
  replicas   = 3
  # A thin class beside the sandbox's thick `ssd` class: lvmd allows one thick class per volume
  # group, and the module creates (not adopts) this one.
  device_class = {
    name      = "modtest-thin"
    type      = "thin"
    thin_pool = { name = "modtest-pool", overprovision_ratio = 4, size_percent = 50 }
  }
  # The thin pool is made by the bootstrap (the sandbox plays the script's effect): lvmd exits
  # "Thin pool not found" without it.
  volume_group_bootstrap = { image = "olapgke-vg-bootstrap:test" }
  pools = {
    a = { node_count = 2 }
    b = { node_count = 3 }
  }
  active_pool                      = "a"
  termination_grace_period_seconds = 1
  pod_management_policy            = "Parallel"
  migration                        = { ordinal_timeout = "3m", timeout = "10m" }
}

run "create_on_pool_a" {
  assert {
    condition     = alltrue([for o in values(output.ordinals) : startswith(o.node, "gke-olap-modtest-a-") && o.ready])
    error_message = "every ordinal must run Ready on a node of pool modtest-a"
  }
  assert {
    condition     = alltrue([for o in values(output.ordinals) : length(o.pinned_nodes) == 1 && o.pinned_nodes[0] == o.node && length(o.pvs) == 1])
    error_message = "each ordinal's PV must be pinned to the node its Pod runs on"
  }
  assert {
    condition     = length(output.ordinals) == 3 && output.storage_class == "modtest-thin"
    error_message = "three ordinals on the module's StorageClass"
  }
}

# The incident's edit (the same switch under RollingUpdate) is refused by a provider error at
# plan; `terraform test` cannot expect provider diagnostics (expect_failures covers custom
# conditions only), so `make demo` checks that refusal and its per-ordinal reasons.

# Every ordinal's PV pinned to its node on pool b means a new PV: a PV's node affinity is
# immutable and the old ones were pinned to pool a. (No cross-run reference to the first run's
# PVs: OpenTofu's test runner does not resolve run.<name> inside assert conditions.)
run "move_to_pool_b" {
  variables {
    active_pool = "b"
  }

  assert {
    condition     = alltrue([for o in values(output.ordinals) : startswith(o.node, "gke-olap-modtest-b-") && o.ready && length(o.pinned_nodes) == 1 && o.pinned_nodes[0] == o.node])
    error_message = "after one apply every ordinal runs Ready on pool b with its PV pinned there"
  }
  assert {
    condition     = length(output.moves) == 3
    error_message = "the migration must have moved all three ordinals"
  }
}

run "remove_pool_a" {
  variables {
    active_pool = "b"
    # Cleanup at the end of the test destroys everything while the PVCs (retained) exist: lift
    # the protections for it.
    pools = {
      b = { node_count = 3, deletion_protection = false, allow_local_data_loss = true }
    }
    device_class = {
      name          = "modtest-thin"
      type          = "thin"
      thin_pool     = { name = "modtest-pool", overprovision_ratio = 4, size_percent = 50 }
      force_destroy = true
    }
  }

  assert {
    condition     = keys(output.node_pools) == ["b"]
    error_message = "pool a must be gone"
  }
}
