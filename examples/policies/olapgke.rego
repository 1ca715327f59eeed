# METADATA
# title: olapgke plan policy
# description: |
#   Refuses a Terraform plan (`terraform show -json plan.tfplan`) in which a StatefulSet ordinal
#   is left unable to run, or more than max_unavailable ordinals are recreated at once.
#   Reads the computed per-ordinal plan of olapgke_statefulset (`ordinals`: action, wave,
#   schedulable) and the planned moves of olapgke_statefulset_migration (`moves`,
#   `max_unavailable`). Set data.olapgke_config.max_unavailable to allow more than 1.
package olapgke.plan

import rego.v1

default max_unavailable := 1

max_unavailable := n if {
	n := data.olapgke_config.max_unavailable
}

# Resource changes that do something: a no-op's `after` is the state of the last apply.
changing(rc) if {
	some action in rc.change.actions
	action in {"create", "update"}
}

statefulsets contains rc if {
	some rc in input.resource_changes
	rc.type == "olapgke_statefulset"
	changing(rc)
}

migrations contains rc if {
	some rc in input.resource_changes
	rc.type == "olapgke_statefulset_migration"
	changing(rc)
}

# An ordinal is moved by a migration in the same plan: the migration names the same StatefulSet
# and lists the ordinal in `moves`, or its moves are unknown until apply (set created in the
# same run), in which case it decides then.
moved(set, ordinal) if {
	some m in migrations
	m.change.after.namespace == set.change.after.namespace
	m.change.after.statefulset == set.change.after.name
	some mv in m.change.after.moves
	mv.ordinal == ordinal
}

moved(set, _) if {
	some m in migrations
	m.change.after.namespace == set.change.after.namespace
	m.change.after.statefulset == set.change.after.name
	m.change.after_unknown.moves == true
}

# Created or recreated into a Pod that can never schedule (e.g. its local PV is pinned to a node
# the new template does not select): it stays Pending and stalls the rollout.
deny contains msg if {
	some rc in statefulsets
	some o in rc.change.after.ordinals
	o.action in {"create", "recreate"}
	o.schedulable == false
	msg := sprintf("%s: ordinal %d (Pod %s) would be %s into a Pod that cannot schedule: %s", [rc.address, o.ordinal, o.pod, past(o.action), o.reason])
}

# Kept on the old template (OnDelete, partition) but unable to come back if deleted or evicted,
# and no migration in this plan moves it.
deny contains msg if {
	some rc in statefulsets
	some o in rc.change.after.ordinals
	o.action == "stranded"
	not moved(rc, o.ordinal)
	msg := sprintf("%s: ordinal %d (Pod %s) keeps running on the old template but could not schedule again, and no olapgke_statefulset_migration in this plan moves it: %s", [rc.address, o.ordinal, o.pod, o.reason])
}

# The controller recreates a whole wave at once (maxUnavailable, Parallel).
deny contains msg if {
	some rc in statefulsets
	waves := {o.wave | some o in rc.change.after.ordinals; o.action == "recreate"}
	some w in waves
	wave := sort([o.ordinal | some o in rc.change.after.ordinals; o.action == "recreate"; o.wave == w])
	count(wave) > max_unavailable
	msg := sprintf("%s: wave %d recreates %d ordinals at once (%v); at most %d allowed", [rc.address, w, count(wave), wave, max_unavailable])
}

deny contains msg if {
	some rc in migrations
	rc.change.after.max_unavailable > max_unavailable
	msg := sprintf("%s: moves %d ordinals at once (max_unavailable); at most %d allowed", [rc.address, rc.change.after.max_unavailable, max_unavailable])
}

past(action) := "created" if action == "create"

past(action) := "recreated" if action == "recreate"
