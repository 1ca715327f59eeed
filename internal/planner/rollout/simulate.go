package rollout

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
func simulate(cfg simConfig, initial map[int]*simPod, optimistic bool) simResult {
	// Pods live in a slice indexed by ordinal-base, covering the desired
	// range and every existing Pod.
	lo, hi := cfg.start, cfg.start+cfg.replicas
	for o := range initial {
		lo, hi = min(lo, o), max(hi, o+1)
	}
	base := lo
	pods := make([]simPod, hi-lo)
	for o, p := range initial {
		pods[o-base] = *p
	}
	createdRev := make([]string, len(pods))
	res := simResult{touched: map[int]int{}, createdAt: map[int]string{}}
	t := 0
	touch := func(o int) {
		if _, ok := res.touched[o]; !ok {
			res.touched[o] = t
		}
	}
	unavailable := func(p *simPod) bool { return !p.exists || !p.ready || p.terminating }
	rs, re := cfg.start-base, cfg.start-base+cfg.replicas // replica slice bounds
	monotonic := !cfg.parallel
	condemned := make([]int, 0)

	sync := func() bool {
		acted := false
		// replicas, ascending
		for k := rs; k < re; k++ {
			p := &pods[k]
			if !p.exists {
				rev := cfg.updateRev
				if !cfg.onDelete && k-rs < cfg.partition {
					rev = cfg.currentRev
				}
				*p = simPod{exists: true, rev: rev}
				createdRev[k] = rev
				res.createdAt[k+base] = rev
				touch(k + base)
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
		condemned = condemned[:0]
		for k := len(pods) - 1; k >= 0; k-- {
			if pods[k].exists && (k < rs || k >= re) {
				condemned = append(condemned, k)
			}
		}
		if len(condemned) > 0 {
			first := -1
			for k := rs; k < re; k++ {
				if unavailable(&pods[k]) {
					first = k
					break
				}
			}
			if first < 0 {
				for i := len(condemned) - 1; i >= 0; i-- {
					if unavailable(&pods[condemned[i]]) {
						first = condemned[i]
						break
					}
				}
			}
			for _, k := range condemned {
				p := &pods[k]
				if p.terminating {
					if monotonic {
						return acted
					}
					continue
				}
				if monotonic && !p.ready && k != first {
					return acted
				}
				p.terminating = true
				touch(k + base)
				acted = true
				if monotonic {
					return true
				}
			}
		}
		if cfg.onDelete {
			return acted
		}
		if cfg.legacy {
			// The loop updateStatefulSet runs when MaxUnavailableStatefulSet
			// is off (stateful_set_control.go, after the gate check): from the
			// highest replica down to the partition, delete the first Pod not
			// at the update revision, or stop at the first unavailable one.
			for k := re - 1; k >= rs+cfg.partition; k-- {
				p := &pods[k]
				if p.rev != cfg.updateRev && !p.terminating {
					p.terminating = true
					touch(k + base)
					return true
				}
				if unavailable(p) {
					return acted
				}
			}
			return acted
		}
		// rolling update (updateStatefulSetAfterInvariantEstablished)
		unav, needing := 0, 0
		for k := re - 1; k >= rs; k-- {
			p := &pods[k]
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
		del := func(k int) {
			pods[k].terminating = true
			touch(k + base)
			acted = true
		}
		low := rs + cfg.partition
		if cfg.parallel {
			for k := re - 1; k >= low; k-- {
				p := &pods[k]
				if p.exists && p.rev != cfg.updateRev && !p.ready && !p.terminating {
					del(k)
				}
			}
			budget := cfg.maxUnavailable - unav
			for k := re - 1; k >= low && budget > 0; k-- {
				p := &pods[k]
				if p.exists && p.rev != cfg.updateRev && !unavailable(p) {
					del(k)
					budget--
				}
			}
			return acted
		}
		toDelete := cfg.maxUnavailable - unav
		for k := re - 1; k >= low && toDelete > 0; k-- {
			p := &pods[k]
			if p.exists && p.rev != cfg.updateRev && !p.terminating {
				del(k)
				toDelete--
			}
		}
		return acted
	}

	canReady := func(k int) bool {
		if optimistic {
			return true
		}
		if rev := createdRev[k]; rev != "" {
			return cfg.canReady(k+base, rev)
		}
		return cfg.existingCanReady(k + base)
	}

	limit := 4*(len(pods)) + 16
	for t = 1; t <= limit; t++ {
		for i := 0; i < limit && sync(); i++ {
		}
		n := 0
		for k := rs; k < re; k++ {
			if cfg.counted[k+base] && unavailable(&pods[k]) {
				n++
			}
		}
		res.maxUnavail = max(res.maxUnavail, n)
		progressed := false
		for k := range pods {
			p := &pods[k]
			switch {
			case p.exists && p.terminating:
				*p = simPod{}
				createdRev[k] = ""
				progressed = true
			case p.exists && !p.ready && canReady(k):
				p.ready = true
				progressed = true
			}
		}
		if !progressed {
			break
		}
	}
	res.instants = t
	res.final = make(map[int]*simPod, len(pods))
	for k := range pods {
		p := &pods[k]
		res.final[k+base] = p
		if p.exists && !p.ready {
			res.stuck = append(res.stuck, k+base)
		}
		inRange := k >= rs && k < re
		if inRange && (unavailable(p) || (!cfg.onDelete && k-rs >= cfg.partition && p.rev != cfg.updateRev)) {
			res.stalled = true
		}
		if !inRange && p.exists {
			res.stalled = true
		}
	}
	return res
}
