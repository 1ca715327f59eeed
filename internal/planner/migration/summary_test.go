package migration

import "testing"

func TestMigrationSummary(t *testing.T) {
	t.Parallel()
	pools := map[string]string{"n-a-1": "historical-a", "n-a-2": "historical-a", "n-b-1": "historical-b"}
	poolOf := func(n string) string { return pools[n] }
	move := func(o int32, a MigrationAction, node string) Move {
		return Move{Ordinal: o, Action: a, FromNode: node}
	}
	threeMoves := []Move{move(2, MigrationMove, "n-a-1"), move(1, MigrationMove, "n-a-2"), move(0, MigrationMove, "n-a-1")}
	est := func(sec float64) func(MigrationAction) (float64, bool) {
		return func(MigrationAction) (float64, bool) { return sec, true }
	}
	cases := map[string]struct {
		moves  []Move
		target string
		in     MigrationSummaryInput
		want   string
	}{
		"pool switch, with history and a gate": {
			moves: threeMoves, target: "historical-b",
			in: MigrationSummaryInput{Replicas: 3, PoolOf: poolOf, Parallelism: 1, SoakSeconds: 60, Gates: []string{"segments-loaded"},
				Estimate: est(1080), OthersReady: true},
			want: "move 3 of 3 ordinals (2,1,0) historical-a -> historical-b, 1 at a time, soak 60s, gate segments-loaded, about 54m; Ready never below 2",
		},
		"warm, bounded": {
			moves: []Move{{Ordinal: 1, Action: MigrationMove, FromNode: "n-a-1", CopyBytes: 100 << 30},
				{Ordinal: 0, Action: MigrationMove, FromNode: "n-a-2", CopyBytes: 50 << 30}},
			target: "historical-b",
			in:     MigrationSummaryInput{Replicas: 2, PoolOf: poolOf, Parallelism: 1, CopyBandwidth: 200 << 20},
			want:   "move 2 of 2 ordinals (1,0) historical-a -> historical-b, 1 at a time, warm: copy up to 100Gi per ordinal at 200Mi/s (at most 9m each) while it serves",
		},
		"warm, unbounded": {
			moves:  []Move{{Ordinal: 0, Action: MigrationMove, FromNode: "n-a-2", CopyBytes: 10 << 30}},
			target: "historical-b",
			in:     MigrationSummaryInput{Replicas: 1, PoolOf: poolOf, Parallelism: 1},
			want:   "move 1 of 1 ordinal (0) historical-a -> historical-b, 1 at a time, warm: copy up to 10Gi per ordinal while it serves",
		},
		"first run: no estimate": {
			moves: threeMoves, target: "historical-b",
			in:   MigrationSummaryInput{Replicas: 3, PoolOf: poolOf, Parallelism: 1, OthersReady: true},
			want: "move 3 of 3 ordinals (2,1,0) historical-a -> historical-b, 1 at a time; Ready never below 2",
		},
		"a window of 2: each step takes the slot that frees first": {
			moves:  []Move{move(2, MigrationMove, "n-a-1"), move(1, MigrationRestart, "n-b-1"), move(0, MigrationMove, "n-a-2")},
			target: "historical-b",
			in: MigrationSummaryInput{Replicas: 4, PoolOf: poolOf, Parallelism: 2, OthersReady: true,
				Estimate: func(a MigrationAction) (float64, bool) {
					if a == MigrationMove {
						return 600, true
					}
					return 60, true
				}},
			want: "move 2 and restart 1 of 4 ordinals (2,1,0) historical-a -> historical-b, 2 at a time, about 11m; Ready never below 2",
		},
		"with gates, batches of 2 take the longest step each": {
			moves:  []Move{move(2, MigrationMove, "n-a-1"), move(1, MigrationRestart, "n-b-1"), move(0, MigrationMove, "n-a-2")},
			target: "historical-b",
			in: MigrationSummaryInput{Replicas: 4, PoolOf: poolOf, Parallelism: 2, OthersReady: true, Gates: []string{"loaded"},
				Estimate: func(a MigrationAction) (float64, bool) {
					if a == MigrationMove {
						return 600, true
					}
					return 60, true
				}},
			want: "move 2 and restart 1 of 4 ordinals (2,1,0) historical-a -> historical-b, 2 at a time, gate loaded, about 20m; Ready never below 2",
		},
		"restarts only, others not required Ready": {
			moves: []Move{move(1, MigrationRestart, "n-a-1"), move(0, MigrationRestart, "n-a-2")}, target: "historical-a",
			in:   MigrationSummaryInput{Replicas: 2, PoolOf: poolOf, Parallelism: 1, Gates: []string{"a", "b"}, Estimate: est(45)},
			want: "restart 2 of 2 ordinals (1,0), 1 at a time, gates a,b, about 2m",
		},
		"an estimate missing for one action": {
			moves: []Move{move(1, MigrationRestart, "n-a-1"), move(0, MigrationMove, "n-a-2")}, target: "historical-b",
			in: MigrationSummaryInput{Replicas: 2, PoolOf: poolOf, Parallelism: 1,
				Estimate: func(a MigrationAction) (float64, bool) { return 60, a == MigrationRestart }},
			want: "move 1 and restart 1 of 2 ordinals (1,0) historical-a -> historical-b, 1 at a time",
		},
		"unknown pool": {
			moves: []Move{move(0, MigrationMove, "gone")}, target: "disktype=ssd",
			in:   MigrationSummaryInput{Replicas: 1, PoolOf: poolOf, Parallelism: 1, OthersReady: true},
			want: "move 1 of 1 ordinal (0) to disktype=ssd, 1 at a time; Ready never below 0",
		},
		"nothing": {want: "nothing to move"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if got := MigrationSummary(tc.moves, tc.target, tc.in); got != tc.want {
				t.Errorf("MigrationSummary:\n got %q\nwant %q", got, tc.want)
			}
		})
	}
}

func TestRoughDuration(t *testing.T) {
	t.Parallel()
	for in, want := range map[float64]string{0: "0s", 89.4: "89s", 90: "2m", 3240: "54m", 3600: "1h", 4800: "1h20m"} {
		if got := roughDuration(in); got != want {
			t.Errorf("roughDuration(%v) = %q, want %q", in, got, want)
		}
	}
}
