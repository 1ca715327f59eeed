package bench

import (
	"testing"
	"time"
)

// The cell measures what it says: the 1,000-ordinal plan renders, its output stops growing past
// the row bound, and a plan that did grow it would be reported as not bounded.
func TestRenderScenario(t *testing.T) {
	r := RenderScenario([]int{10, 100, 1000}, 2)
	if r.Err != "" || len(r.Cells) != 3 {
		t.Fatalf("%+v", r)
	}
	if r.Cells[2].InputBytes < 50*r.Cells[0].InputBytes {
		t.Errorf("input does not grow with ordinals: %+v", r.Cells)
	}
	if ratio, ok := r.Bounded(); !ok {
		t.Errorf("output at 1,000 ordinals is x%.2f that at 100", ratio)
	}
	grown := RenderResult{Cells: []RenderCell{{Ordinals: 100, OutBytes: 1000}, {Ordinals: 1000, OutBytes: 5000}}}
	if _, ok := grown.Bounded(); ok {
		t.Error("an output five times larger passes as bounded")
	}
}

// maxConcurrent counts overlapping moves, a Ready and a delete at the same instant not as two.
func TestMaxConcurrent(t *testing.T) {
	t0 := time.Unix(0, 0)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	moves := []Move{{Deleting: at(0), Ready: at(10)}, {Deleting: at(0), Ready: at(12)}, {Deleting: at(10), Ready: at(20)}, {Deleting: at(12), Ready: at(22)}}
	if got := maxConcurrent(moves); got != 2 {
		t.Errorf("two at a time: %d", got)
	}
	if got := maxConcurrent(append(moves, Move{Deleting: at(5), Ready: at(6)})); got != 3 {
		t.Errorf("a third inside: %d", got)
	}
}
