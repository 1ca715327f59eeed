# Step 7: the module: pools, device class, StatefulSet and migration together.
module "historical" {
  # Your copy of modules/olap-historical, or once the repository is public:
  # source = "github.com/olapgke/terraform-provider-olapgke//modules/olap-historical"
  source = "../../../../modules/olap-historical"

  name       = "historical"
  namespace  = "olap"
  image      = "us-docker.pkg.dev/my-olap-project/olap/historical:1.0"
  replicas   = 3
  cache_size = "300Gi"
  pools = {
    a = { machine_type = "n2-standard-8", node_count = 3, storage_startup_taint = true }
  }
  active_pool = "a"
}
