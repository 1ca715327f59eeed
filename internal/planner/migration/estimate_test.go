package migration

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/olapgke/terraform-provider-olapgke/internal/planner/plannertest"
	"github.com/olapgke/terraform-provider-olapgke/internal/stsutil"
)

func TestEstimateStep(t *testing.T) {
	t.Parallel()
	h := []StepRecord{
		{Action: MigrationMove, Seconds: 20, GateSeconds: 40, Gated: true},
		{Action: MigrationMove, Seconds: 30, GateSeconds: 10, Gated: true},
		{Action: MigrationRestart, Seconds: 5},
	}
	for a, want := range map[MigrationAction]float64{MigrationMove: 50, MigrationRestart: 5, MigrationGate: 25} {
		if got, ok := EstimateStep(h, a); !ok || got != want {
			t.Errorf("EstimateStep(%s) = %v, %v; want %v", a, got, ok, want)
		}
	}
	if _, ok := EstimateStep(h[2:], MigrationGate); ok {
		t.Error("no gated record: want no estimate")
	}
	if _, ok := EstimateStep(nil, MigrationMove); ok {
		t.Error("no history: want no estimate")
	}
}

// TestPlanPendingGates: ordinals the StatefulSet marks as pending gates are planned as gate-only
// steps, first, only when the migration has gates and only when they need no step now.
func TestPlanPendingGates(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		pending string
		gated   bool
		setup   func(*plannertest.MigWorld)
		want    []string // ordinal:action
	}{
		"no gates configured":     {pending: "1", gated: false},
		"pending gate first":      {pending: "1", gated: true, want: []string{"1:gate"}},
		"pending gates ascending": {pending: "2,0", gated: true, want: []string{"0:gate", "2:gate"}},
		"gate-only steps before restarts": {pending: "0", gated: true,
			setup: func(w *plannertest.MigWorld) {
				w.S.Live.Status.UpdateRevision = plannertest.MigRevB
				for _, o := range []int32{0, 1} {
					w.Pod(o).Labels[stsutil.LabelControllerRevision] = plannertest.MigRevB
				}
			},
			want: []string{"0:gate", "2:restart"}},
		"a pending ordinal that needs a step takes the step": {pending: "1", gated: true,
			setup: func(w *plannertest.MigWorld) { w.SwitchTemplate("pool-b") },
			want:  []string{"2:move", "1:move", "0:move"}},
		"pending outside the candidates": {pending: "7", gated: true},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			w := plannertest.NewMigWorld(3, "pool-a")
			w.S.Live.Annotations = map[string]string{stsutil.AnnotationGatesPending: tc.pending}
			if tc.setup != nil {
				tc.setup(w)
			}
			p := NewMigration(w.Final()).Plan(MigrationOptions{Order: OrderDescending, MaxUnavailable: 1, Gated: tc.gated})
			var got []string
			for _, m := range p.Moves {
				got = append(got, fmt.Sprintf("%d:%s", m.Ordinal, m.Action))
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("moves (-want +got):\n%s\nproblems: %+v", d, p.Problems)
			}
		})
	}
}

func TestCopyMaxSeconds(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		bytes, bw int64
		want      float64
		ok        bool
	}{
		{100 << 30, 200 << 20, 512, true},
		{1 << 30, 3 << 20, 341.3, true},
		{1 << 30, 0, 0, false},
		{0, 1 << 20, 0, false},
	} {
		got, ok := CopyMaxSeconds(tc.bytes, tc.bw)
		if got != tc.want || ok != tc.ok {
			t.Errorf("CopyMaxSeconds(%d, %d) = %v, %v; want %v, %v", tc.bytes, tc.bw, got, ok, tc.want, tc.ok)
		}
	}
}
