# Real GKE: project, location and cluster identify the cluster whose node pools olapgke manages
# and whose API server it talks to. Credentials come from Application Default Credentials
# (GOOGLE_APPLICATION_CREDENTIALS, gcloud ADC, the metadata server, or Terraform Cloud dynamic
# credentials) unless `credentials` or `access_token` is set. No kubeconfig or gcloud needed.
provider "olapgke" {
  project  = "my-project"
  location = "europe-west4"
  cluster  = "olap"
}
