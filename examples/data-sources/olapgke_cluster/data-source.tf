# The provider's cluster as GKE and its API server see it (no secrets).
data "olapgke_cluster" "this" {}

output "kubernetes_version" {
  value = data.olapgke_cluster.this.kubernetes_version
}

output "node_pools" {
  value = data.olapgke_cluster.this.node_pools
}
