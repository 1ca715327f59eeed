terraform {
  # Cross-variable validation (active_pool must name a key of pools) needs 1.9.
  required_version = ">= 1.9"

  required_providers {
    olapgke = {
      source = "olapgke/olapgke"
    }
  }
}
