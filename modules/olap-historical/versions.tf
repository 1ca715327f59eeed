terraform {
  # Cross-variable validation (active_pool must name a key of pools) needs 1.9.
  required_version = ">= 1.9"

  required_providers {
    olapgke = {
      source = "olapgke/olapgke"
      # 0.x: a minor release may change a schema (CHANGELOG.md); ~> 0.1 takes any 0.1.x.
      version = "~> 0.1"
    }
  }
}
