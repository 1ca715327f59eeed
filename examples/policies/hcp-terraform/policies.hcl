# Policy set for HCP Terraform (policy framework OPA): this file at the set's root, next to
# ../olapgke.rego and this directory's olapgke.rego renamed (e.g. olapgke-hcp.rego).
policy "olapgke" {
  query             = "data.terraform.policies.olapgke.deny"
  enforcement_level = "mandatory"
}
