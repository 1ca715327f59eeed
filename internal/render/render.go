// Package render turns `terraform show -json` plan output into Markdown for a review: per
// StatefulSet a table of its ordinals (ordinal, Pod, node today and its pool, action, PVC fate,
// target, gates, estimate) and a Mermaid gantt of the moves with the Ready-count floor. Pure:
// JSON in, Markdown out (the command and the HCP Terraform run task live in cmd.go, runtask.go).
package render

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"strings"
)

// Options bound the output.
type Options struct {
	// MaxRows is how many ordinals each table and gantt shows before one summary row for the
	// rest (default 50: a 200-ordinal move stays far below a PR comment's size limit).
	MaxRows int
}

// DefaultMaxRows is Options.MaxRows when unset.
const DefaultMaxRows = 50

// plan is the part of Terraform's JSON plan format (format_version 1.x) this package reads.
type plan struct {
	FormatVersion   string           `json:"format_version"`
	ResourceChanges []resourceChange `json:"resource_changes"`
}

type resourceChange struct {
	Address string `json:"address"`
	Type    string `json:"type"`
	Mode    string `json:"mode"`
	Change  struct {
		Actions []string       `json:"actions"`
		Before  map[string]any `json:"before"`
		After   map[string]any `json:"after"`
	} `json:"change"`
}

// set is what the plan says about one StatefulSet.
type set struct {
	key, address     string
	summaries        []string
	ordinals         []ordinal // olapgke_statefulset's plan, by ordinal
	today            map[int64]string
	moves            []ordinal // olapgke_statefulset_migration's moves, in run order
	migration        string
	parallel         int64
	minReady         int64
	replicas         int
	hasSet, hasMoves bool
}

type ordinal struct {
	n                    int64
	name, pod, node      string
	action, target       string
	pvcs                 []string
	gates                []string
	estimate             float64
	estimateKnown, moved bool
}

// Markdown renders the plan read from r.
func Markdown(r io.Reader, w io.Writer, opts Options) error {
	var p plan
	if err := json.NewDecoder(r).Decode(&p); err != nil {
		return fmt.Errorf("reading the plan: %w (give the output of terraform show -json PLANFILE)", err)
	}
	if p.FormatVersion == "" {
		return fmt.Errorf("reading the plan: no format_version: not the output of terraform show -json PLANFILE")
	}
	if opts.MaxRows <= 0 {
		opts.MaxRows = DefaultMaxRows
	}
	sets, pools := collect(p)
	var b strings.Builder
	b.WriteString("## olapgke plan\n\n")
	if len(sets) == 0 {
		b.WriteString("No olapgke StatefulSet or migration changes in this plan.\n")
		_, err := io.WriteString(w, b.String())
		return err
	}
	for _, s := range sets {
		writeSet(&b, s, pools, opts)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func collect(p plan) ([]*set, map[string]string) {
	pools := map[string]string{} // node -> pool, from the node pools' nodes
	byKey := map[string]*set{}
	get := func(key string) *set {
		if s := byKey[key]; s != nil {
			return s
		}
		s := &set{key: key, today: map[int64]string{}}
		byKey[key] = s
		return s
	}
	for _, rc := range p.ResourceChanges {
		if rc.Mode == "data" {
			continue
		}
		after := rc.Change.After
		switch rc.Type {
		case "olapgke_local_ssd_node_pool":
			for _, side := range []map[string]any{rc.Change.Before, after} {
				for _, n := range list(side, "nodes") {
					if name, ok := n.(string); ok {
						pools[name] = str(side, "name")
					}
				}
			}
		case "olapgke_statefulset":
			if after == nil {
				continue
			}
			s := get(str(after, "namespace") + "/" + str(after, "name"))
			s.hasSet, s.address = true, rc.Address
			if v := str(after, "plan_summary"); v != "" {
				s.summaries = append(s.summaries, v)
			}
			for _, o := range list(after, "ordinals") {
				m, _ := o.(map[string]any)
				s.ordinals = append(s.ordinals, ordinalOf(m))
			}
			s.replicas = len(s.ordinals)
			for _, o := range list(rc.Change.Before, "ordinals") {
				m, _ := o.(map[string]any)
				if node := str(m, "node"); node != "" {
					s.today[num(m, "ordinal")] = node
				}
			}
		case "olapgke_statefulset_migration":
			if after == nil {
				continue
			}
			s := get(str(after, "namespace") + "/" + str(after, "statefulset"))
			s.hasMoves, s.migration = true, rc.Address
			if v := str(after, "plan_summary"); v != "" {
				s.summaries = append(s.summaries, v)
			}
			s.parallel, s.minReady = max(num(after, "max_unavailable"), 1), num(after, "min_ready_seconds")
			for _, mv := range list(after, "moves") {
				m, _ := mv.(map[string]any)
				o := ordinalOf(m)
				o.moved = true
				s.moves = append(s.moves, o)
			}
		}
	}
	out := make([]*set, 0, len(byKey))
	for _, s := range byKey {
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].key < out[j].key })
	return out, pools
}

func ordinalOf(m map[string]any) ordinal {
	o := ordinal{n: num(m, "ordinal"), name: str(m, "name"), pod: str(m, "pod"), action: str(m, "action"),
		node: str(m, "from_node"), target: str(m, "to_pool_or_selector")}
	if o.node == "" {
		o.node = str(m, "node")
	}
	for _, v := range list(m, "volumes") {
		vm, _ := v.(map[string]any)
		if c := str(vm, "pvc"); c != "" {
			o.pvcs = append(o.pvcs, c)
		}
	}
	for _, g := range list(m, "gates") {
		if gs, ok := g.(string); ok {
			o.gates = append(o.gates, gs)
		}
	}
	if e, ok := m["estimated_seconds"].(float64); ok {
		o.estimate, o.estimateKnown = e, true
	}
	return o
}

// rows are the table's rows: the migration's moves in run order; without a migration, the
// StatefulSet's ordinals that the apply acts on.
func (s *set) rows() []ordinal {
	if s.hasMoves {
		return s.moves
	}
	var out []ordinal
	for _, o := range s.ordinals {
		switch o.action {
		case "", "unchanged", "none":
			continue
		}
		if t := s.today[o.n]; t != "" {
			o.node = t
		}
		out = append(out, o)
	}
	return out
}

func writeSet(b *strings.Builder, s *set, pools map[string]string, opts Options) {
	fmt.Fprintf(b, "### StatefulSet %s\n\n", s.key)
	for _, sum := range s.summaries {
		fmt.Fprintf(b, "> %s\n", escape(sum))
	}
	if len(s.summaries) > 0 {
		b.WriteString("\n")
	}
	rows := s.rows()
	if len(rows) == 0 {
		b.WriteString("No ordinal is restarted or moved.\n\n")
		return
	}
	b.WriteString("| ordinal | Pod | node today (pool) | action | PVC fate | target | gates | estimate |\n")
	b.WriteString("|---:|---|---|---|---|---|---|---:|\n")
	shown := rows
	if len(rows) > opts.MaxRows {
		shown = rows[:opts.MaxRows]
	}
	for _, o := range shown {
		fmt.Fprintf(b, "| %d | %s | %s | %s | %s | %s | %s | %s |\n", o.n, escape(podName(o)), escape(nodeCell(o.node, pools)),
			escape(o.action), escape(pvcFate(o)), escape(dash(o.target)), escape(dash(strings.Join(o.gates, ", "))), estimateCell(o))
	}
	if rest := rows[len(shown):]; len(rest) > 0 {
		actions := map[string]int{}
		total, known := 0.0, true
		for _, o := range rest {
			actions[o.action]++
			total += o.estimate
			known = known && o.estimateKnown
		}
		keys := make([]string, 0, len(actions))
		for a := range actions {
			keys = append(keys, a)
		}
		sort.Strings(keys)
		parts := make([]string, 0, len(keys))
		for _, a := range keys {
			parts = append(parts, fmt.Sprintf("%d %s", actions[a], a))
		}
		est := "-"
		if known {
			est = duration(total)
		}
		fmt.Fprintf(b, "| … | %d more ordinals | | %s | | | | %s |\n", len(rest), strings.Join(parts, ", "), est)
	}
	b.WriteString("\n")
	if s.hasMoves {
		writeGantt(b, s, rows, opts)
	}
}

// writeGantt draws the moves in a window of the migration's parallelism (each ordinal starts
// when a slot frees; with gates, in batches, each after the previous one), each ordinal as long
// as its estimate (1 minute when unknown), and the floor of Ready Pods the migration keeps while
// it runs.
func writeGantt(b *strings.Builder, s *set, rows []ordinal, opts Options) {
	b.WriteString("```mermaid\ngantt\n  dateFormat HH:mm:ss\n  axisFormat %H:%M\n")
	title := fmt.Sprintf("%s: %d ordinal(s), %d at a time", mermaidText(s.key), len(rows), s.parallel)
	for _, o := range rows {
		if !o.estimateKnown || o.estimate <= 0 {
			title += " (no estimate yet for some: 1m each; estimates come from earlier moves)"
			break
		}
	}
	fmt.Fprintf(b, "  title %s\n", title)
	start := 0.0
	var total float64
	shown := rows
	if len(rows) > opts.MaxRows {
		shown = rows[:opts.MaxRows]
	}
	// Without gates the window slides (engine.Migrate): each ordinal takes the slot that frees
	// first. With gates the ordinals move as batches, each after the previous one's gates.
	gated := false
	for _, o := range shown {
		gated = gated || len(o.gates) > 0
	}
	slots := make([]float64, int(s.parallel))
	for i, o := range shown {
		if gated && i%len(slots) == 0 {
			end := slices.Max(slots)
			for j := range slots {
				slots[j] = end
			}
		}
		j := slices.Index(slots, slices.Min(slots))
		d := minutes(o)
		fmt.Fprintf(b, "  section ordinal %d\n  %s %s :o%d, %s, %dm\n", o.n, mermaidText(o.action), mermaidText(podName(o)), o.n, clock(slots[j]), int(d))
		slots[j] += d
	}
	start = slices.Max(slots)
	if rest := rows[len(shown):]; len(rest) > 0 {
		d := 0.0
		for _, o := range rest {
			d += minutes(o)
		}
		d = math.Ceil(d / float64(s.parallel))
		fmt.Fprintf(b, "  section %d more\n  %d more ordinals :rest, %s, %dm\n", len(rest), len(rest), clock(start), int(d))
		start += d
	}
	total = start
	if s.replicas > 0 {
		floor := max(s.replicas-int(s.parallel), 0)
		fmt.Fprintf(b, "  section Ready\n  never below %d of %d Ready :crit, ready, 00:00:00, %dm\n", floor, s.replicas, int(math.Max(total, 1)))
	}
	b.WriteString("```\n\n")
}

func minutes(o ordinal) float64 {
	if !o.estimateKnown || o.estimate <= 0 {
		return 1
	}
	return math.Max(1, math.Ceil(o.estimate/60))
}

func clock(minutes float64) string {
	m := int(minutes)
	return fmt.Sprintf("%02d:%02d:00", m/60, m%60)
}

func podName(o ordinal) string {
	switch {
	case o.name != "":
		return o.name
	case o.pod != "":
		return o.pod
	}
	return fmt.Sprintf("ordinal %d", o.n)
}

func nodeCell(node string, pools map[string]string) string {
	if node == "" {
		return "-"
	}
	if p := pools[node]; p != "" {
		return node + " (" + p + ")"
	}
	return node
}

func pvcFate(o ordinal) string {
	if len(o.pvcs) == 0 {
		return "-"
	}
	switch o.action {
	case "move":
		return strings.Join(o.pvcs, ", ") + " deleted, new on target"
	case "restart", "gate":
		return strings.Join(o.pvcs, ", ") + " kept"
	}
	return strings.Join(o.pvcs, ", ")
}

func estimateCell(o ordinal) string {
	if !o.estimateKnown || o.estimate <= 0 {
		return "-"
	}
	return duration(o.estimate)
}

func duration(sec float64) string {
	switch {
	case sec < 60:
		return fmt.Sprintf("%.0fs", sec)
	case sec < 3600:
		return fmt.Sprintf("%.0fm", math.Ceil(sec/60))
	}
	return fmt.Sprintf("%dh%02dm", int(sec)/3600, int(math.Ceil(sec/60))%60)
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// escape keeps a value inside its table cell (or quote line) and out of HTML.
func escape(s string) string {
	return strings.NewReplacer("|", `\|`, "\n", " ", "<", "&lt;").Replace(s)
}

// mermaidText keeps a value from ending a gantt task's name (":" and "#" are syntax there).
func mermaidText(s string) string {
	return strings.NewReplacer(":", " ", "#", " ", ";", " ", "\n", " ").Replace(s)
}

func str(m map[string]any, k string) string {
	s, _ := m[k].(string)
	return s
}

func num(m map[string]any, k string) int64 {
	f, _ := m[k].(float64)
	return int64(f)
}

func list(m map[string]any, k string) []any {
	l, _ := m[k].([]any)
	return l
}
