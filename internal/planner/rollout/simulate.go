package rollout

import "slices"

// simPod is the state of one ordinal's Pod in the controller simulation.
type simPod struct {
	exists      bool
	rev         string
	ready       bool
	terminating bool
}

// simConfig is what the StatefulSet controller looks at in the desired set.
type simConfig struct {
	start, replicas int
	parallel        bool
	onDelete        bool
	partition       int // replica index (ordinal - start), as the controller compares it
	maxUnavailable  int
	// legacy: MaxUnavailableStatefulSet is off (Kubernetes 1.34-1.36 by
	// default): the controller's rolling update is its one-Pod-at-a-time loop.
	legacy     bool
	updateRev  string
	currentRev string
	// canReady says whether a Pod of ordinal o at revision rev, created now,
	// ever becomes Running and Ready; existingCanReady the same for a Pod
	// that exists and is not Ready today.
	canReady         func(o int, rev string) bool
	existingCanReady func(o int) bool
	// counted are the ordinals whose unavailability is disruption (they
	// have a Pod before the apply); new ordinals are not.
	counted map[int]bool
}

type simResult struct {
	touched    map[int]int // ordinal -> instant of the controller's first action
	createdAt  map[int]string
	final      map[int]*simPod
	maxUnavail int
	stalled    bool
	stuck      []int // ordinals that never become Ready
	instants   int
}

// simulate replays the StatefulSet controller of Kubernetes 1.37
// (pkg/controller/statefulset stateful_set_control.go updateStatefulSet and
// updateStatefulSetAfterInvariantEstablished with MaxUnavailableStatefulSet
// on; its legacy loop with the gate off, as 1.34-1.36 run by default)
// on abstract Pod states. Each instant the controller syncs until it has
// nothing more to do; then time passes: terminating Pods disappear and Pods
// that can become Ready do. It stops when time changes nothing. The
// controller is simulated rather than summarised because its ordering rules
// (OrderedReady creates before it deletes, a deleted Pod is only recreated
// when every lower ordinal is Ready, Parallel spends the budget on
// already-unavailable Pods first) are what decide waves and stall points.
//
// One sync (simulator.sync) runs the controller's steps in its order:
// simProcessReplicas, simProcessCondemned, then simRollingUpdate (or
// simLegacyRollingUpdate with the gate off); between syncs simPassTime lets
// time pass, and simVerdict reads the final state.
func simulate(cfg simConfig, initial map[int]*simPod, optimistic bool) simResult {
	return newSimulator(cfg, initial, optimistic).run(nil)
}

// run is simulate's loop. observe (nil in the planner; the invariant tests set it) is called
// after each sync with the Pods as they were before it.
func (m *simulator) run(observe func(before []simPod)) simResult {
	limit := 4*(len(m.pods)) + 16
	for m.t = 1; m.t <= limit; m.t++ {
		for i := 0; i < limit; i++ {
			var before []simPod
			if observe != nil {
				before = slices.Clone(m.pods)
			}
			acted := m.sync()
			if observe != nil {
				observe(before)
			}
			if !acted {
				break
			}
		}
		m.res.maxUnavail = max(m.res.maxUnavail, m.countedUnavailable())
		if !m.simPassTime() {
			break
		}
	}
	return m.simVerdict()
}

// simulator is one run of simulate: the Pods, in a slice indexed by
// ordinal-base covering the desired range and every existing Pod, and the
// result being recorded.
type simulator struct {
	cfg        simConfig
	optimistic bool
	base       int
	pods       []simPod
	createdRev []string
	res        simResult
	t          int
	rs, re     int // replica slice bounds
	monotonic  bool
	condemned  []int
}

func newSimulator(cfg simConfig, initial map[int]*simPod, optimistic bool) *simulator {
	lo, hi := cfg.start, cfg.start+cfg.replicas
	for o := range initial {
		lo, hi = min(lo, o), max(hi, o+1)
	}
	m := &simulator{cfg: cfg, optimistic: optimistic, base: lo, pods: make([]simPod, hi-lo),
		res: simResult{touched: map[int]int{}, createdAt: map[int]string{}}, monotonic: !cfg.parallel, condemned: make([]int, 0)}
	for o, p := range initial {
		m.pods[o-m.base] = *p
	}
	m.createdRev = make([]string, len(m.pods))
	m.rs, m.re = cfg.start-m.base, cfg.start-m.base+cfg.replicas
	return m
}

func (m *simulator) touch(o int) {
	if _, ok := m.res.touched[o]; !ok {
		m.res.touched[o] = m.t
	}
}

func simUnavailable(p *simPod) bool { return !p.exists || !p.ready || p.terminating }

// sync is one pass of the controller's updateStatefulSet over the Pods: it says
// whether the controller acted. Each stage returns whether it acted and
// whether the controller stops this pass there (monotonic: OrderedReady).
func (m *simulator) sync() bool {
	acted, halt := m.simProcessReplicas()
	if halt {
		return acted
	}
	a, halt := m.simProcessCondemned()
	acted = acted || a
	if halt || m.cfg.onDelete {
		return acted
	}
	if m.cfg.legacy {
		return m.simLegacyRollingUpdate() || acted
	}
	return m.simRollingUpdate() || acted
}

// simProcessReplicas mirrors the controller's processReplica over the replicas,
// ascending: a missing Pod is created (at the current revision below the
// partition); with OrderedReady the pass stops after a creation or at the first
// Pod that is terminating or not Ready.
func (m *simulator) simProcessReplicas() (acted, halt bool) {
	cfg := &m.cfg
	for k := m.rs; k < m.re; k++ {
		p := &m.pods[k]
		if !p.exists {
			rev := cfg.updateRev
			if !cfg.onDelete && k-m.rs < cfg.partition {
				rev = cfg.currentRev
			}
			*p = simPod{exists: true, rev: rev}
			m.createdRev[k] = rev
			m.res.createdAt[k+m.base] = rev
			m.touch(k + m.base)
			acted = true
			if m.monotonic {
				return true, true
			}
			continue
		}
		if m.monotonic && (p.terminating || !p.ready) {
			return acted, true
		}
	}
	return acted, false
}

// simProcessCondemned mirrors the controller's processCondemned over the Pods
// outside the replica range, descending: each is deleted; with OrderedReady
// one at a time, and only once it is Ready or it is the first unavailable Pod.
func (m *simulator) simProcessCondemned() (acted, halt bool) {
	m.condemned = m.condemned[:0]
	for k := len(m.pods) - 1; k >= 0; k-- {
		if m.pods[k].exists && (k < m.rs || k >= m.re) {
			m.condemned = append(m.condemned, k)
		}
	}
	if len(m.condemned) == 0 {
		return false, false
	}
	first := -1
	for k := m.rs; k < m.re; k++ {
		if simUnavailable(&m.pods[k]) {
			first = k
			break
		}
	}
	if first < 0 {
		for i := len(m.condemned) - 1; i >= 0; i-- {
			if simUnavailable(&m.pods[m.condemned[i]]) {
				first = m.condemned[i]
				break
			}
		}
	}
	for _, k := range m.condemned {
		p := &m.pods[k]
		if p.terminating {
			if m.monotonic {
				return acted, true
			}
			continue
		}
		if m.monotonic && !p.ready && k != first {
			return acted, true
		}
		p.terminating = true
		m.touch(k + m.base)
		acted = true
		if m.monotonic {
			return true, true
		}
	}
	return acted, false
}

// simLegacyRollingUpdate mirrors the loop updateStatefulSet runs when
// MaxUnavailableStatefulSet is off (stateful_set_control.go, after the gate
// check): from the highest replica down to the partition, delete the first Pod
// not at the update revision, or stop at the first unavailable one.
func (m *simulator) simLegacyRollingUpdate() bool {
	for k := m.re - 1; k >= m.rs+m.cfg.partition; k-- {
		p := &m.pods[k]
		if p.rev != m.cfg.updateRev && !p.terminating {
			p.terminating = true
			m.touch(k + m.base)
			return true
		}
		if simUnavailable(p) {
			return false
		}
	}
	return false
}

// simRollingUpdate mirrors updateStatefulSetAfterInvariantEstablished: the
// rolling update deletes Pods not at the update revision, from the highest
// replica down to the partition, within maxUnavailable; Parallel first deletes
// the outdated Pods that are already not Ready.
func (m *simulator) simRollingUpdate() bool {
	cfg := &m.cfg
	unav, needing := 0, 0
	for k := m.re - 1; k >= m.rs; k-- {
		p := &m.pods[k]
		if simUnavailable(p) {
			unav++
			if cfg.parallel && p.rev != cfg.updateRev && !p.terminating {
				needing++
			}
		}
	}
	if unav >= cfg.maxUnavailable && needing == 0 {
		return false
	}
	acted := false
	del := func(k int) {
		m.pods[k].terminating = true
		m.touch(k + m.base)
		acted = true
	}
	low := m.rs + cfg.partition
	if cfg.parallel {
		for k := m.re - 1; k >= low; k-- {
			p := &m.pods[k]
			if p.exists && p.rev != cfg.updateRev && !p.ready && !p.terminating {
				del(k)
			}
		}
		budget := cfg.maxUnavailable - unav
		for k := m.re - 1; k >= low && budget > 0; k-- {
			p := &m.pods[k]
			if p.exists && p.rev != cfg.updateRev && !simUnavailable(p) {
				del(k)
				budget--
			}
		}
		return acted
	}
	toDelete := cfg.maxUnavailable - unav
	for k := m.re - 1; k >= low && toDelete > 0; k-- {
		p := &m.pods[k]
		if p.exists && p.rev != cfg.updateRev && !p.terminating {
			del(k)
			toDelete--
		}
	}
	return acted
}

// countedUnavailable is the disruption now: replicas that had a Pod before the
// apply and are unavailable.
func (m *simulator) countedUnavailable() int {
	n := 0
	for k := m.rs; k < m.re; k++ {
		if m.cfg.counted[k+m.base] && simUnavailable(&m.pods[k]) {
			n++
		}
	}
	return n
}

// canReady says whether the Pod at slice index k becomes Ready (always, when
// optimistic); the placement verdicts answer it otherwise.
func (m *simulator) canReady(k int) bool {
	if m.optimistic {
		return true
	}
	if rev := m.createdRev[k]; rev != "" {
		return m.cfg.canReady(k+m.base, rev)
	}
	return m.cfg.existingCanReady(k + m.base)
}

// simPassTime lets time pass between syncs, as the kubelet and the garbage
// collector do: terminating Pods disappear and Pods that can become Ready do.
// It says whether anything changed.
func (m *simulator) simPassTime() bool {
	progressed := false
	for k := range m.pods {
		p := &m.pods[k]
		switch {
		case p.exists && p.terminating:
			*p = simPod{}
			m.createdRev[k] = ""
			progressed = true
		case p.exists && !p.ready && m.canReady(k):
			p.ready = true
			progressed = true
		}
	}
	return progressed
}

// simVerdict reads the final state: the Pods that never become Ready, and
// whether the rollout stalls (a replica unavailable or, above the partition,
// not at the update revision, or a condemned Pod left).
func (m *simulator) simVerdict() simResult {
	res := m.res
	res.instants = m.t
	res.final = make(map[int]*simPod, len(m.pods))
	for k := range m.pods {
		p := &m.pods[k]
		res.final[k+m.base] = p
		if p.exists && !p.ready {
			res.stuck = append(res.stuck, k+m.base)
		}
		inRange := k >= m.rs && k < m.re
		if inRange && (simUnavailable(p) || (!m.cfg.onDelete && k-m.rs >= m.cfg.partition && p.rev != m.cfg.updateRev)) {
			res.stalled = true
		}
		if !inRange && p.exists {
			res.stalled = true
		}
	}
	return res
}
