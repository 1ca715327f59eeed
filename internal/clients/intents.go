package clients

import (
	"sync"

	appsv1 "k8s.io/api/apps/v1"
)

// plannedSets is what olapgke_statefulset plans to write in this run, by
// namespace/name, so that an olapgke_statefulset_migration planned after it
// (depends_on) judges the template the same run writes even without
// planned_manifest. Terraform runs one provider process per walk (plan, then
// apply) for each provider configuration, and plans a resource again during
// apply before applying it, so the record is there in both walks.
type plannedSets struct {
	mu   sync.Mutex
	sets map[string]PlannedStatefulSet
}

// PlannedStatefulSet is one StatefulSet a run writes.
type PlannedStatefulSet struct {
	// Set is the API server's dry-run answer for the manifest.
	Set *appsv1.StatefulSet
	// Recreated is true when the object is deleted (orphaning its Pods) and
	// created again, because the change touches immutable fields.
	Recreated bool
	// Stranded are the ordinals this change leaves on the old revision whose
	// Pods could not come back in place if deleted (a pool switch under
	// OnDelete). olapgke_statefulset gives no warning for them, since it is
	// planned before any migration of the set; a migration warns for those
	// its moves leave out.
	Stranded []StrandedOrdinal
}

// StrandedOrdinal is one ordinal of PlannedStatefulSet.Stranded.
type StrandedOrdinal struct {
	Ordinal int32
	Pod     string
	// Reason is the planner's: why the Pod could not come back in place.
	Reason string
	// Short is Reason without the ordinal and Pod it names ("" when it names neither).
	Short string
}

// RecordPlannedStatefulSet remembers p as what this run writes to
// namespace/name; a nil p.Set forgets it.
func (c *Clients) RecordPlannedStatefulSet(namespace, name string, p PlannedStatefulSet) {
	if c == nil {
		return
	}
	c.intents.mu.Lock()
	defer c.intents.mu.Unlock()
	if c.intents.sets == nil {
		c.intents.sets = map[string]PlannedStatefulSet{}
	}
	if p.Set == nil {
		delete(c.intents.sets, namespace+"/"+name)
		return
	}
	p.Set = p.Set.DeepCopy()
	p.Stranded = append([]StrandedOrdinal(nil), p.Stranded...)
	c.intents.sets[namespace+"/"+name] = p
}

// PlannedStatefulSet returns what RecordPlannedStatefulSet recorded for
// namespace/name in this process; ok is false when nothing was.
func (c *Clients) PlannedStatefulSet(namespace, name string) (p PlannedStatefulSet, ok bool) {
	if c == nil {
		return p, false
	}
	c.intents.mu.Lock()
	defer c.intents.mu.Unlock()
	p, ok = c.intents.sets[namespace+"/"+name]
	if ok {
		p.Set = p.Set.DeepCopy()
	}
	return p, ok
}
