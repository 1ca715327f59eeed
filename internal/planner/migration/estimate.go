package migration

// MigrationGate is the action of an ordinal whose step an earlier apply finished but whose gates
// it did not see pass (the run failed or was killed during the wait): nothing of it is deleted
// again, its gates are waited for before anything else.
const MigrationGate MigrationAction = "gate"

// StepRecord is one finished step of an earlier run, as state keeps it.
type StepRecord struct {
	Action MigrationAction
	// Seconds from the first deletion to the end of the soak; GateSeconds the gates' wait after
	// (Gated: the step had gates).
	Seconds, GateSeconds float64
	Gated                bool
}

// EstimateStep estimates how long a step of action a takes, gates included: the mean of earlier
// steps of the same action (for a gate-only step: of earlier gate waits). ok is false when no
// earlier step is known.
func EstimateStep(history []StepRecord, a MigrationAction) (seconds float64, ok bool) {
	n := 0
	for _, r := range history {
		switch {
		case a == MigrationGate && r.Gated:
			seconds += r.GateSeconds
		case a != MigrationGate && r.Action == a:
			seconds += r.Seconds + r.GateSeconds
		default:
			continue
		}
		n++
	}
	if n == 0 {
		return 0, false
	}
	return float64(int64(seconds/float64(n)*10+0.5)) / 10, true
}

// CopyMaxSeconds is the longest a warm move's copy of bytes can take at bandwidth bytes per
// second: every byte of the claims copied at the bound (the copy reads only what the volumes
// hold, so it is usually shorter). ok is false without a bound.
func CopyMaxSeconds(bytes, bandwidth int64) (seconds float64, ok bool) {
	if bandwidth <= 0 || bytes <= 0 {
		return 0, false
	}
	return float64(int64(float64(bytes)/float64(bandwidth)*10+0.5)) / 10, true
}
