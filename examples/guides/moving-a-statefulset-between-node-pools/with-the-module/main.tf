# The three steps as three edits of the module's inputs: add a key to pools (step 1), point
# active_pool at it (step 2), remove the old key (step 3).
module "historical" {
  source = "../../../../modules/olap-historical" # your copy of modules/olap-historical

  pools = {
    a = { machine_type = "n2-standard-16", local_nvme_ssd_count = 4 } # step 3: delete this line
    b = { machine_type = "n2-standard-32", local_nvme_ssd_count = 8 } # step 1
  }
  active_pool = "b" # step 2 (was "a")

  image      = "apache/druid:31.0.0"
  args       = ["historical"]
  replicas   = 3
  cache_size = "500Gi"
  env = {
    # Druid's segment cache on the Local SSD volume the module mounts at cache_mount_path.
    druid_segmentCache_locations = jsonencode([{ path = "/var/cache/olap", maxSize = "460g" }])
    druid_server_maxSize         = "460g"
  }
}
