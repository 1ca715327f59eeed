package acctest

import "fmt"

// TwoPoolWorld is the sandbox world of the suites that move Pods between pools: the default world
// plus pool-b, shaped like pool-a (three n2-standard-8 nodes with two raw-block Local SSDs each).
const TwoPoolWorld = `
clusters:
- name: olap
  location: us-central1-a
  nodePools:
  - name: pool-a
  - name: pool-b
`

// HistoricalStatefulSetHCL is the olapgke_statefulset "hist" the acceptance suites share:
// 3 replicas (Parallel, OnDelete, 1 s grace period) of image on node pool pool in namespace ns,
// each with a 1 GiB TopoLVM claim "cache".
func HistoricalStatefulSetHCL(ns, pool, image string) string {
	return fmt.Sprintf(`
resource "olapgke_statefulset" "hist" {
  manifest = {
    apiVersion = "apps/v1"
    kind       = "StatefulSet"
    metadata   = { name = "hist", namespace = %[1]q }
    spec = {
      replicas            = 3
      serviceName         = "hist"
      podManagementPolicy = "Parallel"
      updateStrategy      = { type = "OnDelete" }
      selector            = { matchLabels = { app = "hist" } }
      template = {
        metadata = { labels = { app = "hist" } }
        spec = {
          terminationGracePeriodSeconds = 1
          nodeSelector                  = { "cloud.google.com/gke-nodepool" = %[2]q }
          containers = [{
            name         = "historical"
            image        = %[3]q
            ports        = [{ name = "http", containerPort = 8083 }]
            volumeMounts = [{ name = "cache", mountPath = "/cache" }]
          }]
        }
      }
      volumeClaimTemplates = [{
        metadata = { name = "cache" }
        spec = {
          accessModes      = ["ReadWriteOnce"]
          storageClassName = "topolvm-provisioner"
          resources        = { requests = { storage = "1Gi" } }
        }
      }]
    }
  }
}
`, ns, pool, image)
}

// UnitProviderConfig is the provider block of resource.UnitTest suites: fully configured, with a
// Kubernetes host nothing listens on, so validation and plan logic run and any cluster read fails.
const UnitProviderConfig = `
provider "olapgke" {
  project  = "p"
  location = "europe-west4"
  cluster  = "c"
  kubernetes {
    host  = "https://127.0.0.1:1"
    token = "unit-test"
  }
}
`
