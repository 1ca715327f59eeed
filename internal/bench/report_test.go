package bench

import (
	"slices"
	"strings"
	"testing"
	"time"
)

func TestMedianStart(t *testing.T) {
	s := time.Second
	runs := []SandboxResult{
		{Nodes: 500, TopoLVM: "real", Ready: 13 * s, CPU: 24 * s, ReadyNodes: 500, RSSReadyMiB: 1100, RSSEndMiB: 1100},
		{Nodes: 500, TopoLVM: "real", Ready: 11 * s, CPU: 20 * s, ReadyNodes: 500, RSSReadyMiB: 1150, RSSEndMiB: 1160},
		{Nodes: 500, TopoLVM: "real", Ready: 12 * s, CPU: 22 * s, ReadyNodes: 499, RSSReadyMiB: 1120, RSSEndMiB: 1130},
	}
	got := MedianStart(runs)
	if got.Ready != 12*s || got.CPU != 22*s || got.ReadyNodes != 499 {
		t.Errorf("median row: ready %v, CPU %v, %d nodes; want the 12 s start's (22 s, 499)", got.Ready, got.CPU, got.ReadyNodes)
	}
	if got.RSSReadyMiB != 1150 || got.RSSEndMiB != 1160 {
		t.Errorf("peak RSS %d/%d MiB, want the highest of all starts, 1150/1160", got.RSSReadyMiB, got.RSSEndMiB)
	}
	if want := []time.Duration{13 * s, 11 * s, 12 * s}; !slices.Equal(got.Starts, want) {
		t.Errorf("Starts = %v, want every start in order %v", got.Starts, want)
	}

	if one := MedianStart(runs[:1]); one.Ready != 13*s || one.Starts != nil {
		t.Errorf("one start: ready %v, Starts %v; want 13s and no list", one.Ready, one.Starts)
	}
	failed := append(slices.Clone(runs[:1]), SandboxResult{Nodes: 500, TopoLVM: "real", Err: "exited before ready"})
	if f := MedianStart(failed); f.Err != "exited before ready" {
		t.Errorf("a failed start: Err %q, want the failure reported", f.Err)
	}
	// Even count: the lower middle, never a time no start had.
	if even := MedianStart(runs[1:]); even.Ready != 11*s {
		t.Errorf("two starts (11 s, 12 s): ready %v, want 11s", even.Ready)
	}
}

// The large tier's cell is judged against the smallest one: provider time under 1 s, as CPU time
// (wall time is shown: the sandbox shares the cores), and the same requests; it is left out of
// the per-size "requests do not grow" check (one cell only).
func TestLargeVerdicts(t *testing.T) {
	reqs := func(lists int) []Requests { return []Requests{{"LIST pods": lists, "GET statefulsets": 1}} }
	cell := func(nodes, ords int, cpuMS float64, lists int) PlanResult {
		return PlanResult{Nodes: nodes, Ordinals: ords, ProviderMS: []float64{1700}, ProviderCPUMS: []float64{cpuMS}, Requests: reqs(lists),
			RefreshRequests: Requests{"GET statefulsets": 2}, ProviderRSSMiB: nodes / 10, SandboxCores: []float64{1.2}}
	}
	noCPU := cell(5000, 1000, 0, 1)
	noCPU.ProviderCPUMS = nil
	for name, tc := range map[string]struct {
		large PlanResult
		want  []string
	}{
		"holds":          {cell(5000, 1000, 640, 1), []string{"yes", "yes"}},
		"slow":           {cell(5000, 1000, 1400, 1), []string{"**NO**", "yes"}},
		"no CPU time":    {noCPU, []string{"**NO**", "yes"}},
		"more requests":  {cell(5000, 1000, 640, 3), []string{"yes", "**NO**"}},
		"failed to plan": {PlanResult{Nodes: 5000, Ordinals: 1000, Err: "sandbox did not start"}, []string{"**NO**"}},
	} {
		r := &Results{Plans: []PlanResult{cell(50, 10, 90, 1), cell(50, 200, 150, 1), tc.large}}
		var got []string
		for _, v := range r.verdicts() {
			if strings.Contains(v[0], "5000 nodes") {
				got = append(got, v[2])
			}
			if strings.Contains(v[0], "(5000 nodes)") {
				t.Errorf("%s: the large cell is in the per-size check: %v", name, v)
			}
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: verdicts %v, want %v", name, got, tc.want)
		}
	}
}

func TestListsVerdict(t *testing.T) {
	t.Parallel()
	lists := func(nestedBytes, objectBytes float64) []GoBench {
		return []GoBench{{Name: "BenchmarkPlanResourceChange/nested-2", NsPerOp: 2e9, BytesPerOp: nestedBytes},
			{Name: "BenchmarkPlanResourceChange/objectlist-2", NsPerOp: 1e9, BytesPerOp: objectBytes}}
	}
	for name, tc := range map[string]struct {
		r    Results
		want string
	}{
		"holds":     {Results{Lists: lists(1000, 410)}, "yes"},
		"too much":  {Results{Lists: lists(1000, 600)}, "**NO**"},
		"one half":  {Results{Lists: lists(1000, 0)[:1]}, "**NO**"},
		"failed":    {Results{ListsErr: "exit status 1"}, "**NO**"},
		"not asked": {Results{}, ""},
	} {
		got := ""
		for _, v := range tc.r.verdicts() {
			if strings.Contains(v[0], "list of objects") {
				got = v[2]
			}
		}
		if got != tc.want {
			t.Errorf("%s: verdict %q, want %q", name, got, tc.want)
		}
	}
}

// Every row of the plan table, a failed cell's too, has as many columns as its header.
func TestPlanTableColumns(t *testing.T) {
	t.Parallel()
	ok := PlanResult{Nodes: 50, Ordinals: 10, ReadyAtPlan: 10, ProviderMS: []float64{55, 47}, ProviderCPUMS: []float64{40, 38},
		SandboxCores: []float64{0.4}, Wall: []time.Duration{time.Second}, Requests: []Requests{{"LIST pods": 1}}}
	noCPU := ok
	noCPU.ProviderCPUMS = nil
	r := &Results{Plans: []PlanResult{ok, noCPU, {Nodes: 500, Ordinals: 10, Err: "boom"}}}
	var header int
	rows := 0
	for _, l := range strings.Split(r.Markdown(), "\n") {
		if strings.HasPrefix(l, "| nodes | ordinals (Ready) |") {
			header = strings.Count(l, "|")
			continue
		}
		if header > 0 && strings.HasPrefix(l, "| ") && !strings.HasPrefix(l, "|---") {
			rows++
			if n := strings.Count(l, "|"); n != header {
				t.Errorf("row %q has %d separators, the header %d", l, n, header)
			}
		}
		if header > 0 && l == "" && rows > 0 {
			break
		}
	}
	if header == 0 || rows != 3 {
		t.Fatalf("plan table: header %d separators, %d rows; want a header and 3 rows", header, rows)
	}
}
