package bench

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/olapgke/terraform-provider-olapgke/internal/render"
)

func secs(d time.Duration) string { return fmt.Sprintf("%.2f", d.Seconds()) }
func yes(ok bool) string {
	if ok {
		return "yes"
	}
	return "**NO**"
}

var scaleRE = regexp.MustCompile(`ordinals=(\d+)/nodes=(\d+)`)

// Markdown renders BENCHMARKS.md.
func (r *Results) Markdown() string {
	var b strings.Builder
	w := func(format string, a ...any) { fmt.Fprintf(&b, format+"\n", a...) }
	w("# olapgke benchmarks")
	w("")
	w("Written by `make bench` (`internal/bench`, driver `internal/bench/cmd/olapgke-bench`) from one run, %s to %s UTC (%s).",
		r.Started.UTC().Format("2006-01-02 15:04"), r.Finished.UTC().Format("15:04"), r.Finished.Sub(r.Started).Round(time.Second))
	w("Machine: %d CPUs (%s), %s RAM; %s; %s; load average (1/5/15 min) before the run: %s, after: %s.",
		r.Machine.CPUs, r.Machine.Model, r.Machine.Mem, r.Machine.Go, r.Machine.TF, r.Machine.LoadBefore, LoadAvg())
	w("The machine is shared (other builds and tests run on the same 2 cores), so absolute times are noisy;")
	w("the comparisons below are side by side in the same run.")
	w("")
	w("## Targets (issues 11, 17, 46 and 47)")
	w("")
	w("| target | measured | holds |")
	w("|---|---|---|")
	for _, v := range r.verdicts() {
		w("| %s | %s | %s |", v[0], v[1], v[2])
	}
	for _, n := range r.Notes {
		w("")
		w("%s", n)
	}

	w("")
	w("## 1. Plan of `olapgke_statefulset` (template change that recreates every ordinal)")
	w("")
	w("Real `terraform plan` with the built provider through `dev_overrides`. The StatefulSet (Parallel, RollingUpdate, one 1 GiB TopoLVM claim per ordinal, on pool-a) is applied and all Pods are Running with bound PVCs first (Ready in brackets: at 500 nodes on a loaded machine heartbeats lag and the node lifecycle controller marks some Pods not Ready, which KWOK does not undo); the plan changes a template annotation, so ModifyPlan runs the server-side dry run, the snapshot LISTs and the planner, and lists every ordinal as a recreate with its placement verdict. The last row (`-large`, e.g. 5,000 nodes x 1,000 ordinals) runs on its own world with the TopoLVM simulator and seeded claims: each ordinal's claim and its TopoLVM PV are written bound to each other, as the scheduler, external-provisioner and the PV controller leave them (one ordinal per pool-a node), before the StatefulSet is applied, whose Pods the scheduler then places on their volumes' nodes (unbound, it placed them at about 25 a minute at 2,000 nodes on 2 cores); a self-check on two small worlds first requires the seeded world's plan to equal the scheduled one's (per-ordinal verdicts, requests). That world's node grace period is 10 min: KWOK's heartbeats for 5,000 nodes lag on 2 cores. *Provider peak RSS* is the highest VmHWM of the provider process over the `plan -refresh=false` runs, read from /proc while it runs.")
	w("*Provider ms* is the provider's own `olapgke plan timing` log line (ModifyPlan, TF_LOG_PROVIDER=DEBUG), median of the `plan -refresh=false` runs (all runs in brackets); *provider CPU ms* is the same line's `cpu_ms`, the provider process's user+system time over the same span (getrusage). *Sandbox cores busy* is the sandbox's CPU time (its process and children, from /proc) over the run's wall time: what the API server, the controllers and the KWOK nodes took from the same 2 cores while the provider planned, so the provider's wall time includes waiting for a core and its CPU time does not. *Requests* are counted at a loopback proxy between the provider and the API server: `plan -refresh=false` isolates the per-ordinal plan; *full plan* adds the refresh (the resource's Read). *No TF_LOG* is one more `plan -refresh=false` with no logging variable set, as a user runs it.")
	w("")
	w("| nodes | ordinals (Ready) | provider ms, median [runs] | provider CPU ms, median [runs] | sandbox cores busy (median) | `terraform plan -refresh=false` wall s (median) | the same, no TF_LOG, wall s | requests (plan only) | by verb | requests (full plan) | full plan wall s | provider peak RSS MiB |")
	w("|---|---|---|---|---|---|---|---|---|---|---|---|")
	for _, p := range r.Plans {
		if p.Err != "" {
			w("| %d | %d | failed: %s | | | | | | | | | |", p.Nodes, p.Ordinals, oneLine(p.Err))
			continue
		}
		cpu := "-"
		if len(p.ProviderCPUMS) > 0 {
			cpu = fmt.Sprintf("%.0f [%s]", median(p.ProviderCPUMS), joinMS(p.ProviderCPUMS))
		}
		var totals []string
		for _, q := range p.Requests {
			totals = append(totals, strconv.Itoa(q.Total()))
		}
		w("| %d | %d (%d) | %.0f [%s] | %s | %.2f | %s | %s | %s | %s | %d | %s | %d |", p.Nodes, p.Ordinals, p.ReadyAtPlan, median(p.ProviderMS), joinMS(p.ProviderMS), cpu, median(p.SandboxCores),
			secs(median(p.Wall)), secs(p.QuietWall), strings.Join(totals, ", "), p.Requests[0].ByVerb(), p.RefreshRequests.Total(), secs(p.RefreshWall), p.ProviderRSSMiB)
	}
	if last := r.lastPlan(); last != nil {
		w("")
		w("Requests of one `plan -refresh=false` at %d nodes x %d ordinals, then of the full plan:", last.Nodes, last.Ordinals)
		w("")
		w("```")
		for _, k := range last.Requests[0].Keys() {
			w("%s", k)
		}
		w("--- full plan (refresh + plan)")
		for _, k := range last.RefreshRequests.Keys() {
			w("%s", k)
		}
		w("```")
	}

	w("")
	w("## 2. Migration of %d ordinals", r.migOrdinals())
	w("")
	if m := r.Migration; m == nil {
		w("Not run.")
	} else if m.Err != "" && m.Provider.N == 0 {
		w("Failed: %s", fence(m.Err))
	} else {
		w("Same StatefulSet (OnDelete, grace period 1 s, one 1 GiB TopoLVM claim per ordinal), same session: every ordinal is moved four times between pool-a and pool-b, ABBA so neither tool gets the easier direction: `olapgke_statefulset_migration` (`terraform apply`), a kubectl loop (real kubectl v1.37 built from k8s.io/kubectl, `make kubectl-bin`), the kubectl loop again, the provider again. The kubectl loop does the same steps in the same order (descending) (`kubectl delete pvc --wait=false`, `kubectl delete pod`, `kubectl wait --for=condition=Ready`, retried while the Pod does not exist yet).")
		w("*Cluster latency* of one ordinal: old Pod seen terminating -> its successor seen Ready, from a Pod watch in the benchmark process (object timestamps have 1 s resolution). *Span*: first old Pod terminating -> last new Pod Ready. *Overhead* = span / sum of cluster latencies - 1: time between the moves that the tool, not the cluster, spends. *Old Pods terminating*: the part of the cluster latency from the old Pod seen terminating to its delete event (the 1 s grace period, played by the sandbox's kubelet stand-in from when it sees the deletion). *Tool CPU*: user+system time of the tool's processes (terraform and the provider; bash and every kubectl), taken from the same 2 cores the sandbox runs on.")
		w("")
		w("| tool | moves | span s | sum of cluster latency s | overhead | whole command wall s | tool CPU s | API requests |")
		w("|---|---|---|---|---|---|---|---|")
		w("| olapgke_statefulset_migration | %d | %s | %s | %.1f%% | %s (`terraform apply`, incl. CLI start, refresh, plan) | %s (terraform + provider) | %d (%s) |", m.Provider.N, secs(m.Provider.Span), secs(m.Provider.Sum), 100*m.Provider.Overhead(), secs(m.ProviderApply), secs(m.ProviderCPU), m.ProviderRequests.Total(), m.ProviderRequests.ByVerb())
		if m.Kubectl.N > 0 {
			w("| kubectl loop | %d | %s | %s | %.1f%% | %s (bash loop) | %s (bash + kubectl) | not counted (direct) |", m.Kubectl.N, secs(m.Kubectl.Span), secs(m.Kubectl.Sum), 100*m.Kubectl.Overhead(), secs(m.KubectlLoop), secs(m.KubectlCPU))
		}
		w("")
		w("Rounds, in the order run (totals above are sums over each tool's two rounds):")
		w("")
		w("| round | tool | to | moves | span s | sum of cluster latency s | of which old Pods terminating s | overhead | command wall s | tool CPU s |")
		w("|---|---|---|---|---|---|---|---|---|---|")
		for i, rd := range m.Rounds {
			w("| %d | %s | %s | %d | %s | %s | %s | %.1f%% | %s | %s |", i+1, rd.Tool, rd.To, rd.Stats.N, secs(rd.Stats.Span), secs(rd.Stats.Sum), secs(rd.Stats.Terminating), 100*rd.Stats.Overhead(), secs(rd.Wall), secs(rd.CPU))
		}
		if m.Err != "" {
			w("")
			w("Error: %s", fence(m.Err))
		}
	}

	w("")
	w("## 2b. Restart in place (template change) against the controller's RollingUpdate")
	w("")
	if rs := r.Restart; rs == nil {
		w("Not run.")
	} else if rs.Err != "" && rs.Provider.N == 0 {
		w("Failed: %s", fence(rs.Err))
	} else {
		w("An image bump of a %d-ordinal StatefulSet (one 1 GiB TopoLVM claim each, grace period 1 s), rolled four times in one session: the StatefulSet controller's own RollingUpdate (maxUnavailable 1), `olapgke_statefulset_migration` restarting each ordinal in place under OnDelete (`terraform apply`), the provider again, the controller again. The provider talks to the API server directly (the sandbox's kubeconfig), as the controller does: the requests proxy of sections 1-2 would add a hop to each of its watch events and writes (about 20 ms per ordinal in the runs that had it). *Span*: first old Pod terminating -> last new Pod Ready, from the Pod watch. PVCs replaced over all rounds: %d.", rs.Ordinals, rs.PVCsReplaced)
		w("")
		w("| round | tool | image | restarts | span s | sum of cluster latency s | overhead | wall s |")
		w("|---|---|---|---|---|---|---|---|")
		for i, rd := range rs.Rounds {
			w("| %d | %s | %s | %d | %s | %s | %.1f%% | %s |", i+1, rd.Tool, rd.To, rd.Stats.N, secs(rd.Stats.Span), secs(rd.Stats.Sum), 100*rd.Stats.Overhead(), secs(rd.Wall))
		}
		if rs.Err != "" {
			w("")
			w("Error: %s", fence(rs.Err))
		}
	}
	w("")
	w("## 2c. One ordinal moved by the action `olapgke_move_ordinals` against the migration resource")
	w("")
	if a := r.Action; a == nil {
		w("Not run.")
	} else if a.Err != "" && len(a.Rounds) == 0 {
		w("Failed: %s", fence(a.Err))
	} else {
		w("Ordinal %d of the migration's StatefulSet moved between the pools four times in one session (ABBA): `olapgke_statefulset_migration` with `ordinals = [%d]` (`terraform apply`), the action `olapgke_move_ordinals` (`terraform apply -invoke`), the action again, the resource again. *Wall* is the whole command (CLI start-up, plan, the move); *move* is the cluster's latency from the Pod watch (old Pod terminating -> new Pod Ready). Action over resource, wall: x%.3f.", a.Ordinal, a.Ordinal, a.Ratio())
		w("")
		w("| round | tool | to | move s | wall s | CPU s |")
		w("|---|---|---|---|---|---|")
		for i, rd := range a.Rounds {
			w("| %d | %s | %s | %s | %s | %s |", i+1, rd.Tool, rd.To, secs(rd.Stats.Sum), secs(rd.Wall), secs(rd.CPU))
		}
		if a.Err != "" {
			w("")
			w("Error: %s", fence(a.Err))
		}
	}
	w("")
	w("## 2d. The renderer on a large plan")
	w("")
	if rr := r.Render; rr == nil {
		w("Not run.")
	} else if rr.Err != "" {
		w("Failed: %s", fence(rr.Err))
	} else {
		ratio, _ := rr.Bounded()
		w("`terraform-provider-olapgke render` (default `-max-rows %d`) on `terraform show -json` of an `olapgke_statefulset_migration` moving N ordinals (generated), median of the runs. Output at the largest plan over the smallest above the row bound: x%.3f.", render.DefaultMaxRows, ratio)
		w("")
		w("| ordinals | plan JSON KiB | render ms | Markdown KiB |")
		w("|---|---|---|---|")
		for _, c := range rr.Cells {
			w("| %d | %.0f | %.1f | %.1f |", c.Ordinals, float64(c.InputBytes)/1024, float64(c.Median.Microseconds())/1000, float64(c.OutBytes)/1024)
		}
	}
	w("")
	w("## 2e. `terraform query` over many StatefulSets")
	w("")
	if q := r.Query; q == nil {
		w("Not run.")
	} else if q.Err != "" && len(q.Cells) == 0 {
		w("Failed: %s", fence(q.Err))
	} else {
		w("`terraform query -json` of `list \"olapgke_statefulset\"` with `include_resource = true` over a namespace of N StatefulSets on TopoLVM storage (0 replicas), through the request-counting proxy: each result is built as `terraform import` builds the resource (its Read, the snapshot's LISTs), so requests grow with the StatefulSets listed. Requests per StatefulSet at the largest N: %.1f.", q.PerSet())
		w("")
		w("| StatefulSets | listed | wall s | CPU s | requests |")
		w("|---|---|---|---|---|")
		for _, c := range q.Cells {
			w("| %d | %d | %s | %s | %d |", c.Sets, c.Listed, secs(c.Wall), secs(c.CPU), c.Requests.Total())
		}
		if q.Err != "" {
			w("")
			w("Error: %s", fence(q.Err))
		}
	}
	w("")
	w("## 2f. Batched migration (`max_unavailable = k`)")
	w("")
	if b := r.Batch; b == nil {
		w("Not run.")
	} else if b.Err != "" && len(b.Rounds) == 0 {
		w("Failed: %s", fence(b.Err))
	} else {
		w("`olapgke_statefulset_migration` with `max_unavailable = k` moving all %d ordinals of one StatefulSet between the pools, one round per k. *Expected* is ceil(N/k) x the round's mean per-ordinal cluster latency (what the cluster allows k at a time); *most down* is the most ordinals between old Pod terminating and new Pod Ready at once, from the Pod watch (Ready never below replicas - k when it is at most k). The provider talks to the API server directly (the sandbox's kubeconfig), not through the requests proxy, since the cell compares its timing with the cluster's own.", b.Ordinals)
		w("")
		w("| k | to | span s | expected s | span / expected | most down | wall s |")
		w("|---|---|---|---|---|---|---|")
		for _, rd := range b.Rounds {
			w("| %d | %s | %s | %s | %.3f | %d | %s |", rd.K, rd.To, secs(rd.Stats.Span), secs(rd.Expected), rd.Ratio(), rd.MaxDown, secs(rd.Wall))
		}
		if b.Err != "" {
			w("")
			w("Error: %s", fence(b.Err))
		}
	}
	w("")
	w("## 2g. Warm moves (`copy`) against cold moves")
	w("")
	if r.Warm == nil {
		w("Not run.")
	} else {
		r.Warm.markdown(w)
	}
	w("")
	w("## 3. Sandbox start-up and memory")
	w("")
	w("`olapgke-sandbox up --config` with pool-a of N-5 and pool-b of 5 nodes (KWOK), on the TopoLVM simulator (`--topolvm sim`, which sections 1 and 2 run on too: they measure the provider, not TopoLVM) and on TopoLVM's own code (`--topolvm real`, the sandbox's default). Ready = DIR/ready exists (all nodes Ready, TopoLVM capacity published). Peak RSS is the process's VmHWM at ready and at the end of that sandbox's plan (and migration) runs. `internal/sandbox/bench/startup.sh` measures the same alone.")
	w("")
	w("*TopoLVM real* is `up --topolvm real`: TopoLVM v0.41.0's controller and node code, external-provisioner and external-resizer in the olapgke-topolvm child process, one node agent (lvmd fake, topolvm-node, CSI registration) per Local-SSD node, with the world's bring-up delays (lvmd start, CSI registration) at zero and external-provisioner's CSIStorageCapacity client at 500 writes/s (its default, which TopoLVM's chart keeps, is 1/s with a burst of 5: 500 nodes then wait ~8 min for their capacity objects, on GKE too), so the time is what the components cost; ready also waits for every node's CSIStorageCapacity. Its CPU and RSS are the sandbox's plus the child's (the sum of the two peaks). Nothing runs on it after ready, so its end column is read just before it stops. Each real-TopoLVM world starts several times (`-real-starts`, default 3; each start's time in brackets): the row is the start with the median time, with that start's CPU and the highest peak RSS of all, and the target is checked on it.")
	w("")
	w("| nodes | TopoLVM | start to ready s | CPU s to ready | Ready nodes | peak RSS at ready MiB | peak RSS at end MiB |")
	w("|---|---|---|---|---|---|---|")
	for _, s := range r.Sandboxes {
		if s.Err != "" {
			w("| %d | %s | failed: %s | | | | |", s.Nodes, s.TopoLVM, oneLine(s.Err))
			continue
		}
		ready := secs(s.Ready)
		if len(s.Starts) > 0 {
			all := make([]string, len(s.Starts))
			for i, d := range s.Starts {
				all[i] = secs(d)
			}
			ready += " [" + strings.Join(all, ", ") + "]"
		}
		w("| %d | %s | %s | %s | %d | %d | %d |", s.Nodes, s.TopoLVM, ready, secs(s.CPU), s.ReadyNodes, s.RSSReadyMiB, s.RSSEndMiB)
	}

	w("")
	w("## 4. Planner alone (`go test -bench 'BenchmarkBuild' -benchmem ./internal/planner/rollout/`)")
	w("")
	if r.PlannerErr != "" {
		w("Failed: %s", fence(r.PlannerErr))
	}
	w("BenchmarkBuild: 1,000 ordinals x 5,000 nodes (PVs pinned to pool-a, template moved to pool-b). BenchmarkBuildScale: the OnDelete case at growing sizes (nodes = 5 x ordinals).")
	w("")
	w("| benchmark | ms/op | KiB/op | allocs/op | bytes per ordinal | allocs per ordinal |")
	w("|---|---|---|---|---|---|")
	for _, g := range r.Planner {
		per, aper := "", ""
		if m := scaleRE.FindStringSubmatch(g.Name); m != nil {
			o, _ := strconv.Atoi(m[1])
			per, aper = fmt.Sprintf("%.0f", g.BytesPerOp/float64(o)), fmt.Sprintf("%.1f", g.AllocsPerOp/float64(o))
		}
		w("| %s | %.1f | %.0f | %.0f | %s | %s |", g.Name, g.NsPerOp/1e6, g.BytesPerOp/1024, g.AllocsPerOp, per, aper)
	}

	w("")
	w("## 5. Per-ordinal lists in the framework (`go test -bench 'BenchmarkPlanResourceChange' -benchmem ./internal/resources/objectlist/`)")
	w("")
	if r.ListsErr != "" {
		w("Failed: %s", fence(r.ListsErr))
	}
	w("terraform-plugin-framework's own PlanResourceChange (no ModifyPlan) of an update to a resource whose state holds 1,000 ordinals shaped as `olapgke_statefulset`'s, with the ordinals as a nested attribute list and as the list of objects `objectlist.FromNested` makes (the resources' schema): the framework looks up every value's path in the schema, and each step into a nested attribute object builds a map (DESIGN.md). Allocations are exact; time is noisy on a shared machine.")
	w("")
	w("| benchmark | ms/op | KiB/op | allocs/op |")
	w("|---|---|---|---|")
	for _, g := range r.Lists {
		w("| %s | %.1f | %.0f | %.0f |", g.Name, g.NsPerOp/1e6, g.BytesPerOp/1024, g.AllocsPerOp)
	}
	return b.String()
}

// listsRatio is the list of objects' BenchmarkPlanResourceChange over the nested list's: bytes
// allocated and time per plan (0, 0 when either is missing).
func (r *Results) listsRatio() (bytes, time float64) {
	var nested, objects GoBench
	for _, g := range r.Lists {
		switch {
		case strings.HasPrefix(g.Name, "BenchmarkPlanResourceChange/nested"):
			nested = g
		case strings.HasPrefix(g.Name, "BenchmarkPlanResourceChange/objectlist"):
			objects = g
		}
	}
	if nested.BytesPerOp == 0 || nested.NsPerOp == 0 || objects.Name == "" {
		return 0, 0
	}
	return objects.BytesPerOp / nested.BytesPerOp, objects.NsPerOp / nested.NsPerOp
}

func (r *Results) migOrdinals() int {
	if r.Migration != nil {
		return r.Migration.Ordinals
	}
	return 0
}

// largeVerdicts judge the plan of the large tier (the cell with the most nodes, when it is the
// only one at that size) against the smallest cell: provider time under 1 s, the same requests.
func (r *Results) largeVerdicts() [][3]string {
	var small, large *PlanResult
	count := map[int]int{}
	for i := range r.Plans {
		count[r.Plans[i].Nodes]++
	}
	for i := range r.Plans {
		p := &r.Plans[i]
		if small == nil || p.Nodes < small.Nodes || p.Nodes == small.Nodes && p.Ordinals < small.Ordinals {
			small = p
		}
		if count[p.Nodes] == 1 && (large == nil || p.Nodes > large.Nodes) {
			large = p
		}
	}
	if large == nil || small == nil || large == small {
		return nil
	}
	at := fmt.Sprintf("%d ordinals x %d nodes", large.Ordinals, large.Nodes)
	// Issue 47 asks for provider time under 1 s and for CPU seconds where wall time on the shared
	// 2-core machine is noise. Here the sandbox (API server, controllers, thousands of KWOK nodes'
	// heartbeats) shares the cores with the provider, so the provider's wall time is largely
	// waiting for a core: the target is judged on the provider's CPU time, the wall time is shown.
	what := "provider time of the plan at " + at + " < 1 s, as CPU time (wall time shown)"
	if large.Err != "" {
		return [][3]string{{what, "failed: " + oneLine(large.Err), yes(false)}}
	}
	m := median(large.ProviderMS)
	rss := fmt.Sprintf("provider peak RSS %d MiB (%d MiB at %d x %d)", large.ProviderRSSMiB, small.ProviderRSSMiB, small.Ordinals, small.Nodes)
	var out [][3]string
	if len(large.ProviderCPUMS) == 0 {
		out = append(out, [3]string{what, fmt.Sprintf("no CPU time in the provider's timing lines; wall %.0f ms (median%s); %s", m, phasesText(large.Phases), rss), yes(false)})
	} else {
		c := median(large.ProviderCPUMS)
		out = append(out, [3]string{what, fmt.Sprintf("CPU %.0f ms (median [%s]%s); wall %.0f ms (median%s), while the sandbox kept %.2f cores busy (median); %s",
			c, joinMS(large.ProviderCPUMS), cpuPhasesText(large.Phases), m, phasesText(large.Phases), median(large.SandboxCores), rss), yes(c < 1000)})
	}
	if small.Err == "" && len(small.Requests) > 0 && len(large.Requests) > 0 {
		s, l := small.Requests[0], large.Requests[0]
		out = append(out, [3]string{fmt.Sprintf("plan requests at %s the same as at %d x %d", at, small.Ordinals, small.Nodes),
			fmt.Sprintf("%d (%s) vs %d (%s); full plan %d vs %d", l.Total(), l.ByVerb(), s.Total(), s.ByVerb(), large.RefreshRequests.Total(), small.RefreshRequests.Total()),
			yes(l.Total() == s.Total() && l.ByVerb() == s.ByVerb() && large.RefreshRequests.Total() == small.RefreshRequests.Total())})
	}
	return out
}

// joinMS is ms values rounded, comma-separated.
func joinMS(v []float64) string {
	var parts []string
	for _, x := range v {
		parts = append(parts, fmt.Sprintf("%.0f", x))
	}
	return strings.Join(parts, ", ")
}

// cpuPhasesText is "; of it the snapshot's reads X ms, the planner Y ms" of CPU (medians), or ""
// without phase lines that carry CPU times.
func cpuPhasesText(ph []PlanPhases) string {
	var s, p []float64
	for _, x := range ph {
		if x.SnapshotCPU > 0 || x.PlannerCPU > 0 {
			s, p = append(s, x.SnapshotCPU), append(p, x.PlannerCPU)
		}
	}
	if len(s) == 0 {
		return ""
	}
	return fmt.Sprintf("; of it the snapshot's reads %.0f ms, the planner %.0f ms", median(s), median(p))
}

// phasesText is ", of it: snapshot X ms, planner Y ms, dry run Z ms" (medians of the runs), or
// "" without phase lines.
func phasesText(ph []PlanPhases) string {
	if len(ph) == 0 {
		return ""
	}
	var d, s, p []float64
	for _, x := range ph {
		d, s, p = append(d, x.DryRun), append(s, x.Snapshot), append(p, x.Planner)
	}
	return fmt.Sprintf("; of it the snapshot's reads %.0f ms, the planner %.0f ms, the dry run %.0f ms, medians", median(s), median(p), median(d))
}

func (r *Results) lastPlan() *PlanResult {
	for i := len(r.Plans) - 1; i >= 0; i-- {
		if r.Plans[i].Err == "" {
			return &r.Plans[i]
		}
	}
	return nil
}

func oneLine(s string) string {
	s = strings.SplitN(s, "\n", 2)[0]
	return strings.ReplaceAll(s, "|", "/")
}

func fence(s string) string { return "\n\n```\n" + s + "\n```" }

// verdicts: target, measured, holds.
func (r *Results) verdicts() [][3]string {
	var out [][3]string
	// Requests constant in ordinals, per node count.
	byNodes := map[int][]PlanResult{}
	var nodeOrder []int
	for _, p := range r.Plans {
		if _, ok := byNodes[p.Nodes]; !ok {
			nodeOrder = append(nodeOrder, p.Nodes)
		}
		byNodes[p.Nodes] = append(byNodes[p.Nodes], p)
	}
	for _, n := range nodeOrder {
		if len(byNodes[n]) < 2 {
			continue // one cell (the large tier): compared with the smallest cell below
		}
		var parts []string
		set, setFull := map[int]bool{}, map[int]bool{}
		failed := false
		for _, p := range byNodes[n] {
			if p.Err != "" {
				failed = true
				continue
			}
			for _, q := range p.Requests {
				set[q.Total()] = true
			}
			setFull[p.RefreshRequests.Total()] = true
			parts = append(parts, fmt.Sprintf("%d ordinals: %d (full plan %d)", p.Ordinals, p.Requests[0].Total(), p.RefreshRequests.Total()))
		}
		out = append(out, [3]string{fmt.Sprintf("plan API requests do not grow with ordinals (%d nodes)", n), strings.Join(parts, "; "),
			yes(!failed && len(parts) > 1 && len(set) == 1 && len(setFull) == 1)})
	}
	for _, p := range r.Plans {
		if p.Nodes == 500 && p.Ordinals == 200 {
			if p.Err != "" {
				out = append(out, [3]string{"provider time of the plan at 200 ordinals x 500 nodes < 2 s", "failed: " + oneLine(p.Err), yes(false)})
			} else {
				m := median(p.ProviderMS)
				out = append(out, [3]string{"provider time of the plan at 200 ordinals x 500 nodes < 2 s", fmt.Sprintf("%.0f ms (median)", m), yes(m < 2000)})
			}
		}
	}
	out = append(out, r.largeVerdicts()...)
	if m := r.Migration; m != nil && m.Provider.N > 0 {
		out = append(out, [3]string{"migration overhead <= 5% over the cluster's own latency",
			fmt.Sprintf("%.1f%% (span %ss, sum %ss)", 100*m.Provider.Overhead(), secs(m.Provider.Span), secs(m.Provider.Sum)), yes(m.Provider.Overhead() <= 0.05)})
		if m.Kubectl.N > 0 {
			out = append(out, [3]string{"migration not slower than the kubectl loop (the moves: span)",
				fmt.Sprintf("%ss vs %ss (overhead %.1f%% vs %.1f%%)", secs(m.Provider.Span), secs(m.Kubectl.Span), 100*m.Provider.Overhead(), 100*m.Kubectl.Overhead()),
				yes(m.Provider.Span <= m.Kubectl.Span)})
			out = append(out, [3]string{"migration not slower than the kubectl loop (whole command: `terraform apply` vs the bash loop)",
				fmt.Sprintf("%ss vs %ss", secs(m.ProviderApply), secs(m.KubectlLoop)),
				yes(m.ProviderApply <= m.KubectlLoop)})
		}
	} else {
		out = append(out, [3]string{"migration overhead <= 5%", "not measured", yes(false)})
	}
	if rs := r.Restart; rs != nil && rs.Provider.N > 0 && rs.Controller.N > 0 {
		out = append(out, [3]string{"restart roll by the migration <= 1.02 x the controller's RollingUpdate (span), 0 PVCs replaced",
			fmt.Sprintf("%ss vs %ss (x%.3f), %d PVCs replaced", secs(rs.Provider.Span), secs(rs.Controller.Span), rs.Ratio(), rs.PVCsReplaced),
			yes(rs.Ratio() <= 1.02 && rs.PVCsReplaced == 0)})
	} else {
		out = append(out, [3]string{"restart roll by the migration <= 1.02 x the controller's RollingUpdate", "not measured", yes(false)})
	}
	if a := r.Action; a != nil && a.Err == "" && a.Resource > 0 {
		out = append(out, [3]string{"the action olapgke_move_ordinals within 5% of olapgke_statefulset_migration (one ordinal, whole `terraform apply`)",
			fmt.Sprintf("%ss vs %ss (x%.3f)", secs(a.Action), secs(a.Resource), a.Ratio()), yes(a.Ratio() <= 1.05)})
	} else {
		out = append(out, [3]string{"the action olapgke_move_ordinals within 5% of olapgke_statefulset_migration", "not measured", yes(false)})
	}
	if rr := r.Render; rr != nil && rr.Err == "" && len(rr.Cells) > 0 {
		ratio, ok := rr.Bounded()
		top := rr.Cells[len(rr.Cells)-1]
		out = append(out, [3]string{"the renderer's output is bounded: the largest plan's Markdown within 10% of the smallest above the row bound",
			fmt.Sprintf("%d ordinals: %.1f KiB in %.1f ms (x%.3f)", top.Ordinals, float64(top.OutBytes)/1024, float64(top.Median.Microseconds())/1000, ratio), yes(ok)})
	} else {
		out = append(out, [3]string{"the renderer's output is bounded", "not measured", yes(false)})
	}
	if q := r.Query; q != nil && q.Err == "" && len(q.Cells) > 0 {
		ok := true
		for _, c := range q.Cells {
			ok = ok && c.Listed == c.Sets
		}
		top := q.Cells[len(q.Cells)-1]
		out = append(out, [3]string{"terraform query lists every StatefulSet on TopoLVM storage (include_resource)",
			fmt.Sprintf("%d of %d in %ss, %.1f requests each", top.Listed, top.Sets, secs(top.Wall), q.PerSet()), yes(ok)})
	} else {
		out = append(out, [3]string{"terraform query lists every StatefulSet", "not measured", yes(false)})
	}
	if b := r.Batch; b != nil && b.Err == "" && len(b.Rounds) > 0 {
		for _, rd := range b.Rounds {
			out = append(out, [3]string{fmt.Sprintf("batched migration, max_unavailable = %d: span <= 1.05 x ceil(N/k) x per-ordinal latency, at most %d down", rd.K, rd.K),
				fmt.Sprintf("x%.3f, at most %d down", rd.Ratio(), rd.MaxDown), yes(rd.Ratio() <= 1.05 && rd.MaxDown <= rd.K)})
		}
	} else {
		out = append(out, [3]string{"batched migration (max_unavailable = 1, 2, 4)", "not measured", yes(false)})
	}
	if r.Warm != nil {
		out = append(out, r.Warm.verdicts()...)
	} else {
		out = append(out, [3]string{"warm move downtime per ordinal <= 1.10 x cold move downtime", "not measured", yes(false)})
	}
	// Start-up CPU per node (issue 47: CPU seconds, not wall seconds, on a shared machine): the
	// largest world's CPU per node against the smallest's, per TopoLVM, in the same run.
	for _, kind := range []string{"sim", "real"} {
		var small, large *SandboxResult
		for i := range r.Sandboxes {
			s := &r.Sandboxes[i]
			if s.TopoLVM != kind || s.Err != "" || s.Nodes == 0 {
				continue
			}
			if small == nil || s.Nodes < small.Nodes {
				small = s
			}
			if large == nil || s.Nodes > large.Nodes {
				large = s
			}
		}
		if small == nil || large == nil || small == large {
			continue
		}
		per := func(s *SandboxResult) float64 { return s.CPU.Seconds() / float64(s.Nodes) }
		marginal := (large.CPU - small.CPU).Seconds() / float64(large.Nodes-small.Nodes)
		out = append(out, [3]string{fmt.Sprintf("sandbox (%s TopoLVM) start-up CPU per node does not grow with nodes (%d -> %d)", kind, small.Nodes, large.Nodes),
			fmt.Sprintf("%.1f -> %.1f ms per node (marginal %.1f ms per node)", 1000*per(small), 1000*per(large), 1000*marginal), yes(per(large) <= per(small))})
	}
	for _, s := range r.Sandboxes {
		if s.Nodes != 500 {
			continue
		}
		// Issue 11's targets for the simulator; issue 17's for TopoLVM's own code.
		what, memMiB, mem := "sandbox", 1024, "1 GiB"
		if s.TopoLVM == "real" {
			what, memMiB, mem = "sandbox with real TopoLVM", 1536, "1.5 GiB"
		}
		if s.Err != "" {
			out = append(out, [3]string{what + " ready < 10 s and < " + mem + " at 500 nodes", "failed: " + oneLine(s.Err), yes(false)})
			continue
		}
		ready := secs(s.Ready) + " s (CPU " + secs(s.CPU) + " s)"
		if len(s.Starts) > 0 {
			ready = fmt.Sprintf("%s s, median of %d starts (CPU %s s)", secs(s.Ready), len(s.Starts), secs(s.CPU))
		}
		// Issue 47 replaced the wall-seconds start-up targets of issues 11 and 17 (too noisy on a
		// shared 2-core machine to steer by) with CPU per node, judged above; the wall time
		// stays as a figure.
		out = append(out, [3]string{what + " start to ready at 500 nodes (issues 11 and 17 asked < 10 s; issue 47 judges CPU per node instead)", ready, reported(s.Ready > 0)})
		out = append(out, [3]string{what + " peak RSS < " + mem + " at 500 nodes", fmt.Sprintf("%d MiB at ready, %d MiB at end", s.RSSReadyMiB, s.RSSEndMiB), yes(s.RSSEndMiB < memMiB && s.RSSReadyMiB < memMiB)})
	}
	var worst GoBench
	var scale []GoBench
	for _, g := range r.Planner {
		if strings.HasPrefix(g.Name, "BenchmarkBuild/") && g.NsPerOp > worst.NsPerOp {
			worst = g
		}
		if scaleRE.MatchString(g.Name) {
			scale = append(scale, g)
		}
	}
	if worst.Name != "" {
		out = append(out, [3]string{"planner < 1 s at 1,000 ordinals x 5,000 nodes", fmt.Sprintf("slowest case %s: %.0f ms", worst.Name, worst.NsPerOp/1e6), yes(worst.NsPerOp < 1e9)})
	}
	if len(r.Lists) > 0 || r.ListsErr != "" {
		bytes, t := r.listsRatio()
		got := fmt.Sprintf("allocations x%.2f, time x%.2f of the nested list's", bytes, t)
		if r.ListsErr != "" || bytes == 0 {
			got = "failed: " + oneLine(r.ListsErr)
		}
		out = append(out, [3]string{"the framework's plan of 1,000 ordinals as a list of objects allocates <= 0.5 x the nested attribute list's (time reported)", got, yes(bytes > 0 && bytes <= 0.5)})
	}
	if len(scale) >= 2 {
		a, z := scale[0], scale[len(scale)-1]
		oa, _ := strconv.Atoi(scaleRE.FindStringSubmatch(a.Name)[1])
		oz, _ := strconv.Atoi(scaleRE.FindStringSubmatch(z.Name)[1])
		grow := (z.BytesPerOp / float64(oz)) / (a.BytesPerOp / float64(oa))
		out = append(out, [3]string{"planner allocation growth linear",
			fmt.Sprintf("bytes per ordinal x%.2f and allocs per ordinal x%.2f from %d to %d ordinals; time x%.1f for x%d size", grow,
				(z.AllocsPerOp/float64(oz))/(a.AllocsPerOp/float64(oa)), oa, oz, z.NsPerOp/a.NsPerOp, oz/oa), yes(grow < 1.25)})
	}
	return out
}
