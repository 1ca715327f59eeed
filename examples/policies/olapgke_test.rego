# Tests on real plan JSON from the sandbox (testdata/*/plan.json, `terraform show -json` trimmed to
# format_version, terraform_version and resource_changes; recorded by TestAccPolicyFixtures in
# internal/policyacc, `make policy-fixtures`, which also runs these tests over a fresh recording):
#   safe        module active_pool a -> b: template switched under OnDelete, migration moves 2, 1, 0
#   migration3  the same with migration.max_unavailable = 3
#   incident    nodeSelector pool-a -> pol-b under RollingUpdate with allow_unschedulable = true
#   parallel    image change, Parallel + RollingUpdate maxUnavailable 2 (ordinals 1 and 2 in wave 1)
package olapgke.plan_test

import rego.v1

import data.olapgke.plan

test_safe_move_allowed if {
	count(plan.deny) == 0 with input as data.testdata.safe
}

test_incident_refused_per_ordinal if {
	denied := plan.deny with input as data.testdata.incident
	count(denied) == 3
	every ordinal in [0, 1, 2] {
		some msg in denied
		contains(msg, sprintf("olapgke_statefulset.inc: ordinal %d (Pod inc-%d) would be recreated into a Pod that cannot schedule", [ordinal, ordinal]))

		# kube-scheduler's own reason: the PV pins the Pod to a node the new nodeSelector excludes.
		contains(msg, "didn't match PersistentVolume's node affinity")
	}
}

test_stranded_ordinals_without_migration_refused if {
	without_migration := {"resource_changes": [rc |
		some rc in data.testdata.safe.resource_changes
		rc.type != "olapgke_statefulset_migration"
	]}
	denied := plan.deny with input as without_migration
	count(denied) == 3
	some msg in denied
	contains(msg, "ordinal 2 (Pod pol-2) keeps running on the old template")
}

test_migration_of_another_statefulset_does_not_excuse if {
	other := {"resource_changes": [patched |
		some rc in data.testdata.safe.resource_changes
		patched := rename_migration(rc)
	]}
	count(plan.deny) == 3 with input as other
}

rename_migration(rc) := json.patch(rc, [{"op": "replace", "path": "/change/after/statefulset", "value": "other"}]) if {
	rc.type == "olapgke_statefulset_migration"
}

rename_migration(rc) := rc if rc.type != "olapgke_statefulset_migration"

test_two_ordinals_in_one_wave_refused if {
	denied := plan.deny with input as data.testdata.parallel
	denied == {"olapgke_statefulset.par: wave 1 recreates 2 ordinals at once ([1, 2]); at most 1 allowed"}
}

test_two_ordinals_in_one_wave_allowed_with_max_2 if {
	count(plan.deny) == 0 with input as data.testdata.parallel with data.olapgke_config.max_unavailable as 2
}

test_migration_three_at_once_refused if {
	denied := plan.deny with input as data.testdata.migration3
	denied == {"module.historical.olapgke_statefulset_migration.this: moves 3 ordinals at once (max_unavailable); at most 1 allowed"}
}

test_migration_three_at_once_allowed_with_max_3 if {
	count(plan.deny) == 0 with input as data.testdata.migration3 with data.olapgke_config.max_unavailable as 3
}

test_no_op_resources_ignored if {
	# In the incident plan, olapgke_statefulset.par is a no-op (its `after` is today's ordinals,
	# all unchanged). Made to list its three ordinals as recreated in one wave into Pods that
	# cannot schedule, it is still not judged; the same ordinals under an update are.
	no_op := {"resource_changes": [patched |
		some rc in data.testdata.incident.resource_changes
		patched := par_recreated_in_one_wave(rc, "no-op")
	]}
	denied := plan.deny with input as no_op
	count(denied) == 3
	every msg in denied {
		not contains(msg, "olapgke_statefulset.par")
	}
	updated := {"resource_changes": [patched |
		some rc in data.testdata.incident.resource_changes
		patched := par_recreated_in_one_wave(rc, "update")
	]}
	some msg in plan.deny with input as updated
	startswith(msg, "olapgke_statefulset.par: ")
}

par_recreated_in_one_wave(rc, action) := json.patch(rc, [
	{"op": "replace", "path": "/change/actions", "value": [action]},
	{"op": "replace", "path": "/change/after/ordinals", "value": [json.patch(o, [
		{"op": "replace", "path": "/action", "value": "recreate"},
		{"op": "replace", "path": "/wave", "value": 1},
		{"op": "replace", "path": "/schedulable", "value": false},
	]) |
		some o in rc.change.after.ordinals
	]},
]) if {
	rc.address == "olapgke_statefulset.par"
}

par_recreated_in_one_wave(rc, _) := rc if rc.address != "olapgke_statefulset.par"

test_hcp_terraform_wrapper_reads_input_plan if {
	denied := data.terraform.policies.olapgke.deny with input as {"plan": data.testdata.parallel}
	count(denied) == 1
	count(data.terraform.policies.olapgke.deny) == 0 with input as {"plan": data.testdata.safe}
}

# data.olapgke_statefulset_plan (a StatefulSet an operator writes), read at plan time: its
# ordinals sit in prior_state (here in a child module), judged like olapgke_statefulset's.
incident_as_data_source := {"prior_state": {"values": {"root_module": {"child_modules": [{
	"address": "module.druid",
	"resources": [{
		"address": "module.druid.data.olapgke_statefulset_plan.historical",
		"mode": "data",
		"type": "olapgke_statefulset_plan",
		"name": "historical",
		"values": after,
	}],
}]}}}} if {
	some rc in data.testdata.incident.resource_changes
	rc.address == "olapgke_statefulset.inc"
	after := rc.change.after
}

test_data_source_incident_refused_per_ordinal if {
	denied := plan.deny with input as incident_as_data_source
	count(denied) == 3
	every ordinal in [0, 1, 2] {
		some msg in denied
		contains(msg, sprintf("module.druid.data.olapgke_statefulset_plan.historical: ordinal %d (Pod inc-%d) would be recreated into a Pod that cannot schedule", [ordinal, ordinal]))
	}
}

# The near miss: the same data source with every ordinal able to schedule passes.
test_data_source_schedulable_allowed if {
	schedulable := json.patch(incident_as_data_source, [{
		"op": "replace",
		"path": "/prior_state/values/root_module/child_modules/0/resources/0/values/ordinals",
		"value": [json.patch(o, [{"op": "replace", "path": "/schedulable", "value": true}]) |
			some o in incident_as_data_source.prior_state.values.root_module.child_modules[0].resources[0].values.ordinals
		],
	}])
	count(plan.deny) == 0 with input as schedulable
}

# A managed resource of the same type name is not the data source: only mode "data" counts.
test_managed_resource_in_prior_state_ignored if {
	managed := json.patch(incident_as_data_source, [{
		"op": "replace",
		"path": "/prior_state/values/root_module/child_modules/0/resources/0/mode",
		"value": "managed",
	}])
	count(plan.deny) == 0 with input as managed
}
