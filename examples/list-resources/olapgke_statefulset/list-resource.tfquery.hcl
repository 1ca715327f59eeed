# terraform query -generate-config-out=historicals.tf
# lists the StatefulSets on TopoLVM storage and writes an import block and configuration for
# each; `terraform plan` then shows them as imports.
list "olapgke_statefulset" "druid" {
  provider         = olapgke
  include_resource = true

  config {
    namespace      = "druid"
    label_selector = "app.kubernetes.io/name=druid"
  }
}
