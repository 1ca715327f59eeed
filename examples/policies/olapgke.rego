# METADATA
# title: olapgke plan policy
# description: |
#   Refuses a Terraform plan (`terraform show -json plan.tfplan`) in which a StatefulSet ordinal
#   is left unable to run, or more than max_unavailable ordinals are recreated at once.
#   Reads the computed per-ordinal plan of olapgke_statefulset (`ordinals`: action, wave,
#   schedulable), the same per-ordinal plan of every data.olapgke_statefulset_plan read at plan
#   (a StatefulSet an operator or Helm writes: in `prior_state`, any module), and the planned
#   moves of olapgke_statefulset_migration (`moves`, `max_unavailable`). Set
#   data.olapgke_config.max_unavailable to allow more than 1.
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

# The per-ordinal plans judged below, each as {address, namespace, name, ordinals}: every
# olapgke_statefulset the plan changes, and every olapgke_statefulset_plan data source read at
# plan time (`prior_state`, root or child module; one read at apply has no ordinals yet).
planned contains {"address": rc.address, "namespace": rc.change.after.namespace, "name": rc.change.after.name, "ordinals": rc.change.after.ordinals} if {
	some rc in statefulsets
}

planned contains {"address": r.address, "namespace": r.values.namespace, "name": r.values.name, "ordinals": r.values.ordinals} if {
	walk(input.prior_state.values.root_module, [_, r])
	is_object(r)
	r.mode == "data"
	r.type == "olapgke_statefulset_plan"
	is_array(r.values.ordinals)
}

# An ordinal is moved by a migration in the same plan: the migration names the same StatefulSet
# and lists the ordinal in `moves`, or its moves are unknown until apply (set created in the
# same run), in which case it decides then.
moved(set, ordinal) if {
	some m in migrations
	m.change.after.namespace == set.namespace
	m.change.after.statefulset == set.name
	some mv in m.change.after.moves
	mv.ordinal == ordinal
}

moved(set, _) if {
	some m in migrations
	m.change.after.namespace == set.namespace
	m.change.after.statefulset == set.name
	m.change.after_unknown.moves == true
}

# Created or recreated into a Pod that can never schedule (e.g. its local PV is pinned to a node
# the new template does not select): it stays Pending and stalls the rollout.
deny contains msg if {
	some set in planned
	some o in set.ordinals
	o.action in {"create", "recreate"}
	o.schedulable == false
	msg := sprintf("%s: ordinal %d (Pod %s) would be %s into a Pod that cannot schedule: %s", [set.address, o.ordinal, o.pod, past(o.action), o.reason])
}

# Kept on the old template (OnDelete, partition) but unable to come back if deleted or evicted,
# and no migration in this plan moves it.
deny contains msg if {
	some set in planned
	some o in set.ordinals
	o.action == "stranded"
	not moved(set, o.ordinal)
	msg := sprintf("%s: ordinal %d (Pod %s) keeps running on the old template but could not schedule again, and no olapgke_statefulset_migration in this plan moves it: %s", [set.address, o.ordinal, o.pod, o.reason])
}

# The controller recreates a whole wave at once (maxUnavailable, Parallel).
deny contains msg if {
	some set in planned
	waves := {o.wave | some o in set.ordinals; o.action == "recreate"}
	some w in waves
	wave := sort([o.ordinal | some o in set.ordinals; o.action == "recreate"; o.wave == w])
	count(wave) > max_unavailable
	msg := sprintf("%s: wave %d recreates %d ordinals at once (%v); at most %d allowed", [set.address, w, count(wave), wave, max_unavailable])
}

deny contains msg if {
	some rc in migrations
	rc.change.after.max_unavailable > max_unavailable
	msg := sprintf("%s: moves %d ordinals at once (max_unavailable); at most %d allowed", [rc.address, rc.change.after.max_unavailable, max_unavailable])
}

past(action) := "created" if action == "create"

past(action) := "recreated" if action == "recreate"
