# Step 3: the provider, configured for the cluster only (credentials from the environment).
provider "olapgke" {
  project  = "my-olap-project" # GOOGLE_PROJECT
  location = "us-central1-a"   # OLAPGKE_LOCATION
  cluster  = "olap"            # OLAPGKE_CLUSTER
}
