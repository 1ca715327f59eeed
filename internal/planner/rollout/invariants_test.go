package rollout

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// The simulator is checked as the StatefulSet controller's own tests check the controller
// (kubernetes pkg/controller/statefulset stateful_set_control_test.go: assertMonotonicInvariants,
// assertUpdateInvariants run after every sync of generated sets): over generated simConfigs and
// initial Pods, after every sync of simulate's loop,
//   - OrderedReady creates a Pod only when every lower replica is Running and Ready;
//   - a replica below the partition is never deleted by a rolling update, and OnDelete deletes
//     no replica at all;
//   - a rolling update deletes an available Pod only while the unavailable replicas stay within
//     maxUnavailable (one at a time, above available replicas only, with the
//     MaxUnavailableStatefulSet gate off);
//   - Pods outside the replica range are only ever deleted;
//
// and, when every Pod can become Ready, the rollout finishes: every replica Ready, those at or
// above the partition at the update revision (under RollingUpdate), nothing outside the range.
func TestSimulateKeepsTheControllersInvariants(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 44))
	states := []simPod{
		{},                                      // missing
		{exists: true, rev: "old", ready: true}, // outdated, Ready
		{exists: true, rev: "old"},              // outdated, not Ready
		{exists: true, rev: "new", ready: true},
		{exists: true, rev: "new"},
		{exists: true, rev: "old", ready: true, terminating: true},
	}
	runs := 0
	for i := 0; i < 20000; i++ {
		replicas := rng.IntN(5)
		start := rng.IntN(2)
		cfg := simConfig{
			start: start, replicas: replicas,
			parallel: rng.IntN(2) == 0, onDelete: rng.IntN(4) == 0, legacy: rng.IntN(3) == 0,
			partition: rng.IntN(replicas + 1), maxUnavailable: 1 + rng.IntN(3),
			updateRev: "new", currentRev: "old", counted: map[int]bool{},
		}
		allReady := rng.IntN(3) != 0
		never := map[int]bool{}
		if !allReady {
			never[start+rng.IntN(replicas+2)] = true
		}
		cfg.canReady = func(o int, rev string) bool { return !never[o] }
		cfg.existingCanReady = func(o int) bool { return !never[o] }
		initial := map[int]*simPod{}
		for o := start; o < start+replicas+2; o++ { // up to two Pods above the range: condemned
			st := states[rng.IntN(len(states))]
			if st.exists {
				initial[o] = &st
				cfg.counted[o] = true
			}
		}
		name := fmt.Sprintf("run %d: %+v initial %s", i, describeConfig(cfg), describePods(initial))
		m := newSimulator(cfg, initial, false)
		var bad string
		res := m.run(func(before []simPod) {
			if bad == "" {
				bad = checkSync(m, before)
			}
		})
		if bad != "" {
			t.Fatalf("%s: %s", name, bad)
		}
		if allReady && !cfg.onDelete {
			if res.stalled || len(res.stuck) > 0 {
				t.Fatalf("%s: every Pod can become Ready and the rollout did not finish: stalled %v, stuck %v, final %s",
					name, res.stalled, res.stuck, describePods(res.final))
			}
		}
		runs++
	}
	t.Logf("%d generated sets, every sync checked", runs)
}

// checkSync returns the first invariant the last sync of m broke, "" when none.
func checkSync(m *simulator, before []simPod) string {
	cfg := &m.cfg
	unavailable := 0
	for k := m.rs; k < m.re; k++ {
		if simUnavailable(&m.pods[k]) {
			unavailable++
		}
	}
	var deletedAvailable []int
	for k := range m.pods {
		b, a := &before[k], &m.pods[k]
		inRange := k >= m.rs && k < m.re
		created := !b.exists && a.exists
		deleted := b.exists && !b.terminating && a.terminating
		switch {
		case created && !inRange:
			return fmt.Sprintf("Pod %d created outside the replica range", k+m.base)
		case created && !cfg.parallel:
			for j := m.rs; j < k; j++ {
				if simUnavailable(&before[j]) {
					return fmt.Sprintf("OrderedReady created Pod %d while Pod %d was not Running and Ready", k+m.base, j+m.base)
				}
			}
		case deleted && inRange && cfg.onDelete:
			return fmt.Sprintf("OnDelete: Pod %d deleted by the controller", k+m.base)
		case deleted && inRange && k-m.rs < cfg.partition:
			return fmt.Sprintf("Pod %d below the partition %d deleted", k+m.base, cfg.partition)
		case deleted && inRange && b.rev == cfg.updateRev:
			return fmt.Sprintf("Pod %d at the update revision deleted", k+m.base)
		case deleted && inRange && !simUnavailable(b):
			deletedAvailable = append(deletedAvailable, k)
		}
	}
	if len(deletedAvailable) == 0 {
		return ""
	}
	if cfg.legacy {
		if len(deletedAvailable) > 1 {
			return fmt.Sprintf("MaxUnavailableStatefulSet off: %d available Pods deleted in one sync", len(deletedAvailable))
		}
		for j := deletedAvailable[0] + 1; j < m.re; j++ {
			if simUnavailable(&before[j]) {
				return fmt.Sprintf("MaxUnavailableStatefulSet off: Pod %d deleted while Pod %d above it was unavailable",
					deletedAvailable[0]+m.base, j+m.base)
			}
		}
		return ""
	}
	if unavailable > cfg.maxUnavailable {
		return fmt.Sprintf("available Pods %v deleted, leaving %d replicas unavailable, maxUnavailable %d",
			deletedAvailable, unavailable, cfg.maxUnavailable)
	}
	return ""
}

func describeConfig(c simConfig) string {
	return fmt.Sprintf("start %d replicas %d parallel %v onDelete %v legacy %v partition %d maxUnavailable %d",
		c.start, c.replicas, c.parallel, c.onDelete, c.legacy, c.partition, c.maxUnavailable)
}

func describePods(pods map[int]*simPod) string {
	out := ""
	for o := 0; o < 8; o++ {
		p, ok := pods[o]
		if !ok || !p.exists {
			continue
		}
		out += fmt.Sprintf(" %d:%s", o, p.rev)
		if p.ready {
			out += "/ready"
		}
		if p.terminating {
			out += "/terminating"
		}
	}
	return "[" + out + " ]"
}
