# The cluster the provider is configured for, as GKE and its API server report it.
data "olapgke_cluster" "this" {}

output "cluster" {
  value = {
    endpoint           = data.olapgke_cluster.this.endpoint
    master_version     = data.olapgke_cluster.this.master_version
    kubernetes_version = data.olapgke_cluster.this.kubernetes_version
    node_pools         = data.olapgke_cluster.this.node_pools
  }
}
