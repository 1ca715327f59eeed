# With dynamic provider credentials (TFC_GCP_* variables on the workspace) the provider reads the
# run's external_account file as Application Default Credentials: only the cluster is configured.
provider "olapgke" {
  project  = "my-project"
  location = "europe-west4"
  cluster  = "olap-prod"
}
