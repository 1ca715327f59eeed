# project, location and cluster are optional: leave all three out to use the provider's.
import {
  to = olapgke_local_ssd_node_pool.olap
  identity = {
    project  = "sandbox"
    location = "us-central1-a"
    cluster  = "olap"
    name     = "olap-ssd"
  }
}
