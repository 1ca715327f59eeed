# HCP Terraform / Terraform Cloud policy set wrapper: HCP Terraform passes the plan JSON as
# input.plan (next to input.run and others); this evaluates olapgke.plan over it.
package terraform.policies.olapgke

import rego.v1

import data.olapgke.plan

deny contains msg if {
	some msg in plan.deny with input as input.plan
}
