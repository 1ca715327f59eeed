# The operator owns the StatefulSet; Terraform owns the custom resource (e.g. a Druid CR applied
# with the kubernetes provider). After each change of the CR, check that what the operator
# generated holds the fields this team relies on.
resource "olapgke_statefulset_expectation" "historical" {
  namespace = "olap"
  name      = "historical"

  expect = {
    spec = {
      updateStrategy = { type = "OnDelete" }
      template = {
        spec = {
          nodeSelector = { "cloud.google.com/gke-nodepool" = "historical-b" }
        }
      }
    }
  }
  settle = "30s" # longer than the operator's reconcile delay

  # Check again whenever the custom resource changes: with the CR in a kubernetes_manifest, e.g.
  # cr = sha1(jsonencode(kubernetes_manifest.druid.manifest)), and depends_on that resource.
  triggers = {
    cr = "generation-7"
  }
}
