# Policy set for HCP Terraform (policy framework OPA). Upload this directory together with
# ../olapgke.rego as one policy set.
policy "olapgke" {
  query             = "data.terraform.policies.olapgke.deny"
  enforcement_level = "mandatory"
}
