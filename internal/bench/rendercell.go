package bench

import (
	"bytes"
	"fmt"
	"strings"
	"time"

	"github.com/olapgke/terraform-provider-olapgke/internal/render"
)

// RenderResult is the renderer (`terraform-provider-olapgke render`) on plan JSON of a
// migration moving n ordinals, for each n: time (median of runs) and output size.
type RenderResult struct {
	Cells []RenderCell
	Err   string
}

// RenderCell is one plan size.
type RenderCell struct {
	Ordinals   int
	InputBytes int
	Median     time.Duration
	OutBytes   int
}

// Bounded reports whether the largest plan's output is within 10% of the smallest's above the
// row bound (render.DefaultMaxRows): past it, more ordinals add no rows.
func (r RenderResult) Bounded() (float64, bool) {
	var base, top RenderCell
	for _, c := range r.Cells {
		if c.Ordinals > render.DefaultMaxRows && (base.Ordinals == 0 || c.Ordinals < base.Ordinals) {
			base = c
		}
		if c.Ordinals > top.Ordinals {
			top = c
		}
	}
	if base.OutBytes == 0 {
		return 0, false
	}
	ratio := float64(top.OutBytes) / float64(base.OutBytes)
	return ratio, ratio <= 1.10
}

// migrationPlanJSON is `terraform show -json` of a plan whose olapgke_statefulset_migration
// moves n ordinals, two at a time.
func migrationPlanJSON(n int) []byte {
	moves := make([]string, 0, n)
	for o := n - 1; o >= 0; o-- {
		moves = append(moves, fmt.Sprintf(`{"ordinal":%[1]d,"name":"hist-%[1]d","pod":"hist-%[1]d","action":"move","from_node":"gke-olap-pool-a-%[1]d",`+
			`"to_pool_or_selector":"pool-b","volumes":[{"claim":"cache","pvc":"cache-hist-%[1]d","pv":"pvc-%[1]d","pinned_node":"gke-olap-pool-a-%[1]d"}],`+
			`"reason":"PV pinned to a node of pool-a","gates":["segments-loaded"],"estimated_seconds":1200}`, o))
	}
	return []byte(`{"format_version":"1.2","resource_changes":[{"address":"olapgke_statefulset_migration.hist","type":"olapgke_statefulset_migration","mode":"managed",` +
		`"change":{"actions":["update"],"before":{},"after":{"namespace":"olap","statefulset":"hist","max_unavailable":2,"moves":[` + strings.Join(moves, ",") + `]}}}]}`)
}

// RenderScenario renders plans of sizes ordinals runs times each.
func RenderScenario(ordinals []int, runs int) RenderResult {
	var r RenderResult
	for _, n := range ordinals {
		in := migrationPlanJSON(n)
		var times []time.Duration
		var out bytes.Buffer
		for range runs {
			out.Reset()
			t0 := time.Now()
			if err := render.Markdown(bytes.NewReader(in), &out, render.Options{}); err != nil {
				r.Err = fmt.Sprintf("%d ordinals: %v", n, err)
				return r
			}
			times = append(times, time.Since(t0))
		}
		r.Cells = append(r.Cells, RenderCell{Ordinals: n, InputBytes: len(in), Median: median(times), OutBytes: out.Len()})
	}
	return r
}
