package planner

import "sort"

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
	updateRev       string
	currentRev      string
	// canReady says whether a Pod of ordinal o at revision rev, created now,
	// ever becomes Running and Ready; existingCanReady the same for a Pod
	// that exists and is not Ready today.
	canReady         func(o int, rev string) bool
	existingCanReady func(o int) bool
}

type simResult struct {
	touched   map[int]int // ordinal -> instant of the controller's first action
	createdAt map[int]string
	final     map[int]*simPod
	maxUnavail int
	stalled    bool
	stuck      []int // ordinals that never become Ready
	instants   int
}

// simulate replays the StatefulSet controller of Kubernetes 1.37
// (pkg/controller/statefulset stateful_set_control.go updateStatefulSet and
// updateStatefulSetAfterInvariantEstablished, MaxUnavailableStatefulSet on)
// on abstract Pod states. Each instant the controller syncs until it has
// nothing more to do; then time passes: terminating Pods disappear and Pods
// that can become Ready do. It stops when time changes nothing. The
// controller is simulated rather than summarised because its ordering rules
// (OrderedReady creates before it deletes, a deleted Pod is only recreated
// when every lower ordinal is Ready, Parallel spends the budget on
// already-unavailable Pods first) are what decide waves and stall points.
func simulate(cfg simConfig, initial map[int]*simPod, optimistic bool) simResult {
	pods := make(map[int]*simPod, len(initial))
	for o, p := range initial {
		c := *p
		pods[o] = &c
	}
	res := simResult{touched: map[int]int{}, createdAt: map[int]string{}}
	// canBecomeReady memoises per ordinal whether its current Pod can become
	// Ready; reset when the Pod is replaced.
	createdRev := map[int]string{}
	t := 0
	touch := func(o int) {
		if _, ok := res.touched[o]; !ok {
			res.touched[o] = t
		}
	}
	get := func(o int) *simPod {
		p := pods[o]
		if p == nil {
			p = &simPod{}
			pods[o] = p
		}
		return p
	}
	unavailable := func(p *simPod) bool { return !p.exists || !p.ready || p.terminating }

	sync := func() bool {
		acted := false
		monotonic := !cfg.parallel
		// replicas
		for i := 0; i < cfg.replicas; i++ {
			o := cfg.start + i
			p := get(o)
			if !p.exists {
				rev := cfg.updateRev
				if !cfg.onDelete && i < cfg.partition {
					rev = cfg.currentRev
				}
				*p = simPod{exists: true, rev: rev}
				createdRev[o] = rev
				res.createdAt[o] = rev
				touch(o)
				acted = true
				if monotonic {
					return true
				}
				continue
			}
			if monotonic && (p.terminating || !p.ready) {
				return acted
			}
		}
		// condemned, descending
		var condemned []int
		for o, p := range pods {
			if p.exists && (o < cfg.start || o >= cfg.start+cfg.replicas) {
				condemned = append(condemned, o)
			}
		}
		sort.Sort(sort.Reverse(sort.IntSlice(condemned)))
		first := -1
		for i := 0; i < cfg.replicas; i++ {
			if unavailable(get(cfg.start + i)) {
				first = cfg.start + i
				break
			}
		}
		if first < 0 {
			for i := len(condemned) - 1; i >= 0; i-- {
				if unavailable(pods[condemned[i]]) {
					first = condemned[i]
					break
				}
			}
		}
		for _, o := range condemned {
			p := pods[o]
			if p.terminating {
				if monotonic {
					return acted
				}
				continue
			}
			if monotonic && !p.ready && o != first {
				return acted
			}
			p.terminating = true
			touch(o)
			acted = true
			if monotonic {
				return true
			}
		}
		if cfg.onDelete {
			return acted
		}
		// rolling update
		unav, needing := 0, 0
		for i := cfg.replicas - 1; i >= 0; i-- {
			p := get(cfg.start + i)
			if unavailable(p) {
				unav++
				if cfg.parallel && p.rev != cfg.updateRev && !p.terminating {
					needing++
				}
			}
		}
		if unav >= cfg.maxUnavailable && needing == 0 {
			return acted
		}
		del := func(o int) {
			p := get(o)
			p.terminating = true
			touch(o)
			acted = true
		}
		if cfg.parallel {
			for i := cfg.replicas - 1; i >= cfg.partition; i-- {
				p := get(cfg.start + i)
				if p.exists && p.rev != cfg.updateRev && !p.ready && !p.terminating {
					del(cfg.start + i)
				}
			}
			budget := cfg.maxUnavailable - unav
			for i := cfg.replicas - 1; i >= cfg.partition && budget > 0; i-- {
				p := get(cfg.start + i)
				if p.exists && p.rev != cfg.updateRev && !unavailable(p) {
					del(cfg.start + i)
					budget--
				}
			}
			return acted
		}
		toDelete := cfg.maxUnavailable - unav
		for i := cfg.replicas - 1; i >= cfg.partition && toDelete > 0; i-- {
			p := get(cfg.start + i)
			if p.exists && p.rev != cfg.updateRev && !p.terminating {
				del(cfg.start + i)
				toDelete--
			}
		}
		return acted
	}

	canReady := func(o int, p *simPod) bool {
		if optimistic {
			return true
		}
		if rev, ok := createdRev[o]; ok {
			return cfg.canReady(o, rev)
		}
		return cfg.existingCanReady(o)
	}

	limit := 4*(cfg.replicas+len(initial)) + 16
	for t = 1; t <= limit; t++ {
		for i := 0; i < limit && sync(); i++ {
		}
		n := 0
		for i := 0; i < cfg.replicas; i++ {
			if unavailable(get(cfg.start + i)) {
				n++
			}
		}
		if n > res.maxUnavail {
			res.maxUnavail = n
		}
		progressed := false
		for o, p := range pods {
			switch {
			case p.exists && p.terminating:
				*p = simPod{}
				delete(createdRev, o)
				progressed = true
			case p.exists && !p.ready && canReady(o, p):
				p.ready = true
				progressed = true
			}
		}
		if !progressed {
			break
		}
	}
	res.instants = t
	res.final = pods
	for o, p := range pods {
		if p.exists && !p.ready {
			res.stuck = append(res.stuck, o)
		}
	}
	sort.Ints(res.stuck)
	for i := 0; i < cfg.replicas; i++ {
		p := get(cfg.start + i)
		if unavailable(p) || (!cfg.onDelete && i >= cfg.partition && p.rev != cfg.updateRev) {
			res.stalled = true
		}
	}
	for o, p := range pods {
		if p.exists && (o < cfg.start || o >= cfg.start+cfg.replicas) {
			res.stalled = true
		}
	}
	return res
}
