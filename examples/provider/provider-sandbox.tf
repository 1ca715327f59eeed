# Local sandbox (for contributors, from a checkout of the provider's repository: `make sandbox`):
# everything comes from the environment it writes to
# .cache/sandbox/env (GOOGLE_PROJECT, OLAPGKE_LOCATION, OLAPGKE_CLUSTER,
# OLAPGKE_CONTAINER_ENDPOINT, OLAPGKE_CONTAINER_INSECURE, GOOGLE_OAUTH_ACCESS_TOKEN):
#
#   set -a; . .cache/sandbox/env; set +a
provider "olapgke" {}
