package render

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// poolSwitch is the plan JSON (terraform show -json) of the demo's pool switch: the quickstart
// applied on the sandbox, then planned with active_pool = "b" (testdata/README.md says how).
const poolSwitch = "testdata/pool-switch.plan.json"

// The demo's pool switch renders as the table and the gantt in testdata/pool-switch.md.
func TestMarkdownGolden(t *testing.T) {
	t.Parallel()
	for name, opts := range map[string]Options{"pool-switch.md": {}, "pool-switch-max1.md": {MaxRows: 1}} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f, err := os.Open(poolSwitch)
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = f.Close() }()
			var got bytes.Buffer
			if err := Markdown(f, &got, opts); err != nil {
				t.Fatal(err)
			}
			golden := filepath.Join("testdata", name)
			if *update {
				if err := os.WriteFile(golden, got.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(string(want), got.String()); d != "" {
				t.Errorf("Markdown (-%s +got):\n%s", golden, d)
			}
		})
	}
}

// The facts a reviewer needs are in the table and the gantt, whatever the golden file says:
// every move's Pod name, its node today with its pool, the PVC replaced, the target pool, the
// plan summaries; one task per ordinal and the Ready floor.
func TestMarkdownPoolSwitchFacts(t *testing.T) {
	t.Parallel()
	f, err := os.Open(poolSwitch)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	var b bytes.Buffer
	if err := Markdown(f, &b, Options{}); err != nil {
		t.Fatal(err)
	}
	md := b.String()
	for _, want := range []string{
		"### StatefulSet default/historical", "| 2 | historical-2 |", "| 1 | historical-1 |", "| 0 | historical-0 |",
		"(historical-a) | move | cache-historical-2 deleted, new on target | historical-b |",
		"```mermaid\ngantt", "section ordinal 2", "never below 2 of 3 Ready",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("rendering lacks %q:\n%s", want, md)
		}
	}
	if n := strings.Count(md, "\n> "); n < 2 {
		t.Errorf("%d plan_summary lines, want both resources':\n%s", n, md)
	}
}

// Over MaxRows ordinals, one summary row (and one gantt task) stands for the rest.
func TestMarkdownSizeBound(t *testing.T) {
	t.Parallel()
	var moves []string
	for o := 199; o >= 0; o-- {
		moves = append(moves, `{"ordinal":`+itoa(o)+`,"name":"h-`+itoa(o)+`","pod":"h-`+itoa(o)+`","action":"move","from_node":"n","to_pool_or_selector":"b","volumes":[{"pvc":"c-h-`+itoa(o)+`"}],"gates":[],"estimated_seconds":60}`)
	}
	js := `{"format_version":"1.2","resource_changes":[{"address":"olapgke_statefulset_migration.m","type":"olapgke_statefulset_migration","mode":"managed",
	  "change":{"actions":["update"],"before":{},"after":{"namespace":"olap","statefulset":"h","max_unavailable":2,"moves":[` + strings.Join(moves, ",") + `]}}}]}`
	var b bytes.Buffer
	if err := Markdown(strings.NewReader(js), &b, Options{MaxRows: 10}); err != nil {
		t.Fatal(err)
	}
	md := b.String()
	if rows := strings.Count(md, "\n| "); rows != 1+10+1 { // header, 10 ordinals, the summary
		t.Errorf("%d table rows, want 12:\n%s", rows, md)
	}
	if !strings.Contains(md, "| … | 190 more ordinals | | 190 move | | | | 3h10m |") || !strings.Contains(md, "190 more ordinals :rest, 00:05:00, 95m") {
		t.Errorf("no summary row or task for the rest:\n%s", md)
	}
	if len(md) > 8000 {
		t.Errorf("%d bytes for 200 ordinals bounded at 10", len(md))
	}
}

func TestMarkdownRefusesOtherInput(t *testing.T) {
	t.Parallel()
	for _, in := range []string{"", "not json", `{"resource_changes":[]}`} {
		if err := Markdown(strings.NewReader(in), &bytes.Buffer{}, Options{}); err == nil {
			t.Errorf("%q: rendered", in)
		}
	}
}

func itoa(i int) string { return strconv.Itoa(i) }

// The gantt follows the executor: without gates the window slides (an ordinal starts when a
// slot frees), with gates the ordinals move in batches.
func TestMarkdownGanttWindow(t *testing.T) {
	t.Parallel()
	plan := func(gates string) string {
		var moves []string
		for i, m := range []int{10, 2, 2, 2} { // ordinal 3 takes 10 minutes, the others 2
			o := 3 - i
			moves = append(moves, `{"ordinal":`+itoa(o)+`,"pod":"h-`+itoa(o)+`","action":"move","from_node":"n","to_pool_or_selector":"b","volumes":[],"gates":[`+gates+`],"estimated_seconds":`+itoa(m*60)+`}`)
		}
		return `{"format_version":"1.2","resource_changes":[{"address":"olapgke_statefulset_migration.m","type":"olapgke_statefulset_migration","mode":"managed",
	  "change":{"actions":["update"],"before":{},"after":{"namespace":"olap","statefulset":"h","max_unavailable":2,"moves":[` + strings.Join(moves, ",") + `]}}}]}`
	}
	for name, want := range map[string][]string{
		// 3 runs 0-10; 2 runs 0-2, then 1 at 2-4 and 0 at 4-6 in the slot 2 freed.
		"sliding": {"h-3 :o3, 00:00:00, 10m", "h-2 :o2, 00:00:00, 2m", "h-1 :o1, 00:02:00, 2m", "h-0 :o0, 00:04:00, 2m"},
		// The second batch (1 and 0) starts when the first (3 and 2) is done.
		"gated": {"h-3 :o3, 00:00:00, 10m", "h-2 :o2, 00:00:00, 2m", "h-1 :o1, 00:10:00, 2m", "h-0 :o0, 00:10:00, 2m"},
	} {
		gates := ""
		if name == "gated" {
			gates = `"segments-loaded"`
		}
		var b bytes.Buffer
		if err := Markdown(strings.NewReader(plan(gates)), &b, Options{}); err != nil {
			t.Fatal(err)
		}
		for _, w := range want {
			if !strings.Contains(b.String(), w) {
				t.Errorf("%s: gantt lacks %q:\n%s", name, w, b.String())
			}
		}
	}
}
