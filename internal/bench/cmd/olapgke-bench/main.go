// Command olapgke-bench runs the performance scenarios of `make bench` on the local sandbox and
// writes BENCHMARKS.md: planner Go benchmarks, then per world size (50 / 500 nodes) sandbox
// start-up and memory, plan cost at 10 / 50 / 200 ordinals, and (on the first world) a
// migration of 10 ordinals by olapgke_statefulset_migration against a kubectl loop, and the
// other migration cells (restart, action, batch, query, warm against cold moves); then, with
// -large, the plan of a large tier (e.g. 1,000 ordinals on 5,000 nodes) on its own world.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/olapgke/terraform-provider-olapgke/internal/bench"
)

func main() {
	root, _ := os.Getwd()
	var (
		sandboxBin  = flag.String("sandbox-bin", filepath.Join(root, ".bin/olapgke-sandbox"), "olapgke-sandbox binary")
		providerDir = flag.String("provider-dir", filepath.Join(root, ".bin"), "directory holding terraform-provider-olapgke (dev_overrides)")
		kubectl     = flag.String("kubectl", filepath.Join(root, ".bin/kubectl"), "kubectl binary for the comparison loop")
		work        = flag.String("work", filepath.Join(root, ".cache/bench"), "scratch directory (sandbox state, terraform dirs, logs)")
		out         = flag.String("out", filepath.Join(root, "BENCHMARKS.md"), "Markdown report to write (empty: stdout only)")
		nodesFlag   = flag.String("nodes", "50,500", "world sizes (total nodes; pool-b gets 5 of them)")
		ordFlag     = flag.String("ordinals", "10,50,200", "StatefulSet sizes for the plan scenario")
		migrate     = flag.Int("migrate", 10, "ordinals to migrate on the first world (0: skip)")
		runs        = flag.Int("plan-runs", 3, "`terraform plan -refresh=false` runs per cell")
		planner     = flag.Bool("planner", true, "run the planner Go benchmarks")
		topolvmBin  = flag.String("topolvm-bin", filepath.Join(root, ".bin/olapgke-topolvm"), "olapgke-topolvm binary: each world also starts -real-starts times with `up --topolvm real` (empty: skip)")
		realStarts  = flag.Int("real-starts", 3, "starts of each world with real TopoLVM; its row is the median start (bench.MedianStart)")
		note        = flag.String("note", "", "a sentence to add to the report (e.g. which commit was measured)")
		tfBin       = flag.String("terraform", "terraform", "Terraform CLI of every scenario; the action cell needs 1.14+ (make bench passes 1.16.4)")
		cellsFlag   = flag.String("cells", "migration,restart,action,batch,query,warm", "the first world's cells after the plan (action needs migration's StatefulSet), e.g. -cells warm for a quick look")
		warmReady   = flag.Duration("warm-ready-after", 2*time.Second, "warm cell: every Pod's readiness delay (the same for warm and cold moves)")
		warmCopy    = flag.Duration("warm-copy-for", 3*time.Second, "warm cell: how long the sandbox runs each copy's sink")
		large       = flag.String("large", "", "NODESxORDINALS, e.g. 5000x1000: the plan of a large tier on its own world, sim TopoLVM, claims seeded (empty: skip; make bench BENCH_LARGE=5000x1000)")
		seedCheck   = flag.String("seed-check", "50x10", "NODESxORDINALS of the self-check -large runs first: the plan on a seeded world must equal the plan on a scheduled one (empty: skip)")
	)
	flag.Parse()
	for _, p := range []*string{sandboxBin, providerDir, kubectl, work, topolvmBin} {
		if *p == "" {
			continue
		}
		if a, err := filepath.Abs(*p); err == nil {
			*p = a // terraform runs with -chdir; dev_overrides needs an absolute path
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	logf := func(format string, a ...any) { log.Printf(format, a...) }

	nodes, err := ints(*nodesFlag)
	if err != nil {
		log.Fatalf("-nodes: %v", err)
	}
	ords, err := ints(*ordFlag)
	if err != nil {
		log.Fatalf("-ordinals: %v", err)
	}
	for _, f := range []string{*sandboxBin, filepath.Join(*providerDir, "terraform-provider-olapgke")} {
		if _, err := os.Stat(f); err != nil {
			log.Fatalf("%s missing (make bench builds it): %v", f, err)
		}
	}
	if *topolvmBin != "" {
		if _, err := os.Stat(*topolvmBin); err != nil {
			log.Fatalf("%s missing (make bench builds it; -topolvm-bin= skips real TopoLVM): %v", *topolvmBin, err)
		}
	}
	cells := map[string]bool{}
	for _, c := range strings.Split(*cellsFlag, ",") {
		switch c = strings.TrimSpace(c); c {
		case "migration", "restart", "action", "batch", "query", "warm":
			cells[c] = true
		case "":
		default:
			log.Fatalf("-cells: unknown cell %q", c)
		}
	}
	if *migrate > 0 && cells["migration"] {
		if _, err := os.Stat(*kubectl); err != nil {
			log.Fatalf("kubectl missing at %s (make bench builds it): %v", *kubectl, err)
		}
	}

	res := &bench.Results{Started: time.Now(), Machine: bench.DescribeMachine(ctx)}
	if b, err := exec.CommandContext(ctx, *sandboxBin, "version").Output(); err == nil {
		res.Notes = append(res.Notes, "Sandbox binary: "+strings.Join(strings.Fields(string(b)), " ")+".")
	}
	if *note != "" {
		res.Notes = append(res.Notes, *note)
	}
	if *planner {
		logf("planner benchmarks")
		res.Planner, res.PlannerErr = goBench(ctx, logf, 0, "-bench", "^BenchmarkBuild", "-timeout", "20m", "./internal/planner/rollout/")
		logf("per-ordinal list benchmarks")
		res.Lists, res.ListsErr = goBench(ctx, logf, 2, "-bench", "^BenchmarkPlanResourceChange$", "-benchtime", "4x", "-timeout", "10m", "./internal/resources/objectlist/")
	}

	rr := bench.RenderScenario([]int{10, 100, 1000}, 5)
	res.Render = &rr
	logf("renderer: %+v", rr.Cells)

	for i, n := range nodes {
		dir := filepath.Join(*work, fmt.Sprintf("nodes-%d", n))
		_ = os.RemoveAll(dir)
		logf("sandbox with %d nodes", n)
		sr := bench.SandboxResult{Nodes: n, TopoLVM: "sim"}
		// The plan and migration scenarios measure the provider, not TopoLVM: they run on the
		// simulator, whose capacity is published at once (real TopoLVM's start-up is below).
		sb, err := bench.StartSandbox(ctx, *sandboxBin, dir, bench.World(n-5, 5), 15*time.Minute, "--topolvm", "sim")
		if err != nil {
			sr.Err = err.Error()
			res.Sandboxes = append(res.Sandboxes, sr)
			logf("  %v", err)
			continue
		}
		sr.Ready, sr.CPU, sr.ReadyNodes, sr.RSSReadyMiB = sb.StartToReady, sb.CPUToReady, sb.ReadyNodes, sb.RSSAtReadyMiB
		logf("  ready in %s (CPU %s), %d Ready nodes, peak RSS %d MiB", sb.StartToReady.Round(time.Millisecond), sb.CPUToReady, sb.ReadyNodes, sb.RSSAtReadyMiB)
		proxy, err := bench.NewProxy(sb.Rest)
		if err != nil {
			sb.Stop()
			log.Fatalf("proxy: %v", err)
		}
		res.Plans = append(res.Plans, bench.PlanScenario(ctx, sb, proxy, *providerDir, filepath.Join(dir, "plan"), n, ords, *runs, logf)...)
		if i == 0 && *migrate > 0 && ctx.Err() == nil {
			if cells["migration"] {
				m := bench.MigrationScenario(ctx, sb, proxy, *providerDir, *kubectl, filepath.Join(dir, "migrate"), *migrate, logf)
				res.Migration = &m
			}
			if cells["restart"] {
				rs := bench.RestartScenario(ctx, sb, *providerDir, filepath.Join(dir, "restart"), *migrate, logf)
				res.Restart = &rs
			}
			if cells["action"] {
				as := bench.ActionScenario(ctx, sb, proxy, *tfBin, *providerDir, filepath.Join(dir, "action"), *migrate, logf)
				res.Action = &as
			}
			if cells["batch"] {
				bs := bench.BatchScenario(ctx, sb, *tfBin, *providerDir, filepath.Join(dir, "batch"), 12, []int{1, 2, 4}, logf)
				res.Batch = &bs
			}
			if cells["query"] {
				qs := bench.QueryScenario(ctx, sb, proxy, *tfBin, *providerDir, filepath.Join(dir, "query"), []int{20, 200}, logf)
				res.Query = &qs
			}
			if cells["warm"] && ctx.Err() == nil {
				ws := bench.WarmScenario(ctx, sb, proxy, *tfBin, *providerDir, filepath.Join(dir, "warm"), *migrate, *warmReady, *warmCopy, logf)
				res.Warm = &ws
			}
		}
		sr.RSSEndMiB = sb.PeakRSSMiB()
		res.Sandboxes = append(res.Sandboxes, sr)
		_ = proxy.Close()
		sb.Stop()
		if ctx.Err() != nil {
			break
		}
		if *topolvmBin != "" {
			var runs []bench.SandboxResult
			for k := 0; k < max(*realStarts, 1) && ctx.Err() == nil; k++ {
				r := realTopoLVMStartup(ctx, *sandboxBin, *topolvmBin, filepath.Join(*work, fmt.Sprintf("nodes-%d-real", n)), n, logf)
				runs = append(runs, r)
				if r.Err != "" {
					break
				}
			}
			res.Sandboxes = append(res.Sandboxes, bench.MedianStart(runs))
			if ctx.Err() != nil {
				break
			}
		}
	}
	if *large != "" && ctx.Err() == nil {
		var n, o int
		if _, err := fmt.Sscanf(*large, "%dx%d", &n, &o); err != nil || n < 10 || o < 1 {
			log.Fatalf("-large %q: want NODESxORDINALS, e.g. 5000x1000", *large)
		}
		plans, note := largePlan(ctx, *sandboxBin, *providerDir, *work, n, o, *runs, *seedCheck, logf)
		res.Plans = append(res.Plans, plans...)
		if note != "" {
			res.Notes = append(res.Notes, note)
		}
	}
	res.Finished = time.Now()
	md := res.Markdown()
	fmt.Print(md)
	if *out != "" {
		if err := os.WriteFile(*out, []byte(md), 0o644); err != nil {
			log.Fatal(err)
		}
		logf("wrote %s", *out)
	}
}

// largePlan is the plan cell of a large tier (o ordinals on n nodes) on its own world with the
// TopoLVM simulator: provider time, requests and the provider's peak RSS, as on the small worlds.
// Its claims are seeded (bench.SeededPlanScenario: the scheduler alone takes far too long to
// place 1,000 Pods with unbound claims on thousands of nodes on 2 cores), after a self-check on a
// small world that a seeded world's plan equals a scheduled one's (bench.SeedSelfCheck).
// The note says how the large world started (it has no row in the start-up table, whose
// targets are about the default worlds).
func largePlan(ctx context.Context, sandboxBin, providerDir, work string, n, o, runs int, seedCheck string, logf func(string, ...any)) ([]bench.PlanResult, string) {
	fail := func(err error) ([]bench.PlanResult, string) {
		logf("  %v", err)
		return []bench.PlanResult{{Nodes: n, Ordinals: o, Err: err.Error()}}, ""
	}
	if seedCheck != "" {
		var cn, co int
		if _, err := fmt.Sscanf(seedCheck, "%dx%d", &cn, &co); err != nil || cn < 10 || co < 1 {
			log.Fatalf("-seed-check %q: want NODESxORDINALS, e.g. 50x10", seedCheck)
		}
		dir := filepath.Join(work, "seed-check")
		_ = os.RemoveAll(dir)
		logf("seed self-check: %d nodes x %d ordinals, scheduled and seeded", cn, co)
		if err := bench.SeedSelfCheck(ctx, sandboxBin, providerDir, dir, cn, co, logf); err != nil {
			return fail(err)
		}
	}
	dir := filepath.Join(work, fmt.Sprintf("large-%d", n))
	_ = os.RemoveAll(dir)
	logf("sandbox with %d nodes for the plan of %d ordinals", n, o)
	// 5,000 KWOK nodes take minutes to start on 2 cores: past `up`'s default ready timeout. Their
	// Lease renewals lag by more than the node lifecycle controller's default 50 s grace on 2
	// cores, which marked 20-60 of them Unknown (tainted, their Pods not Ready) while the world
	// started and the Pods were placed: the grace is raised for this world only (see up's
	// --node-monitor-grace-period). The plan reads nodes, Pods and claims; heartbeats are not
	// what it measures.
	sb, err := bench.StartSandbox(ctx, sandboxBin, dir, bench.World(n-5, 5), 30*time.Minute, "--topolvm", "sim", "--ready-timeout", "30m",
		"--node-monitor-grace-period", "10m")
	if err != nil {
		return fail(err)
	}
	defer sb.Stop()
	logf("  ready in %s (CPU %s), %d Ready nodes, peak RSS %d MiB", sb.StartToReady.Round(time.Millisecond), sb.CPUToReady, sb.ReadyNodes, sb.RSSAtReadyMiB)
	proxy, err := bench.NewProxy(sb.Rest)
	if err != nil {
		return fail(err)
	}
	defer func() { _ = proxy.Close() }()
	t0 := time.Now()
	plans := bench.SeededPlanScenario(ctx, sb, proxy, providerDir, filepath.Join(dir, "plan"), n, []int{o}, runs, logf)
	return plans, fmt.Sprintf("Large tier's world (%d nodes, TopoLVM simulator): ready in %s (CPU %s), %d Ready nodes, sandbox peak RSS %d MiB at ready, %d MiB at the end; claims seeded, Pods placed and the plans run in %s.",
		n, sb.StartToReady.Round(time.Second), sb.CPUToReady.Round(time.Second), sb.ReadyNodes, sb.RSSAtReadyMiB, sb.PeakRSSMiB(), time.Since(t0).Round(time.Second))
}

// realTopoLVMStartup starts the world of n nodes with `up --topolvm real` (TopoLVM's own code,
// external-provisioner, external-resizer in the olapgke-topolvm child) and measures its start-up.
func realTopoLVMStartup(ctx context.Context, sandboxBin, topolvmBin, dir string, n int, logf func(string, ...any)) bench.SandboxResult {
	_ = os.RemoveAll(dir)
	logf("sandbox with %d nodes, real TopoLVM", n)
	sr := bench.SandboxResult{Nodes: n, TopoLVM: "real"}
	sb, err := bench.StartSandbox(ctx, sandboxBin, dir, bench.RealTopoLVMWorld(n-5, 5), 15*time.Minute, "--topolvm", "real", "--topolvm-bin", topolvmBin)
	if err != nil {
		sr.Err = err.Error()
		logf("  %v", err)
		return sr
	}
	defer sb.Stop()
	sr.Ready, sr.CPU, sr.ReadyNodes, sr.RSSReadyMiB = sb.StartToReady, sb.CPUToReady, sb.ReadyNodes, sb.RSSAtReadyMiB
	sr.RSSEndMiB = sb.PeakRSSMiB()
	logf("  ready in %s (CPU %s), %d Ready nodes, peak RSS %d MiB (sandbox + olapgke-topolvm)", sb.StartToReady.Round(time.Millisecond), sb.CPUToReady, sb.ReadyNodes, sb.RSSAtReadyMiB)
	return sr
}

func ints(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		v, err := strconv.Atoi(f)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

// goBench runs `go test -run ^$ -benchmem -count 1 args...` and logs each result. The error text
// (the command's error and output) is set when it failed or gave no result, or not want results
// when want > 0.
func goBench(ctx context.Context, logf func(string, ...any), want int, args ...string) ([]bench.GoBench, string) {
	b, err := exec.CommandContext(ctx, "go", append([]string{"test", "-run", "^$", "-benchmem", "-count", "1"}, args...)...).CombinedOutput()
	res := bench.ParseGoBench(string(b))
	failed := ""
	if err != nil || len(res) == 0 || (want > 0 && len(res) != want) {
		failed = fmt.Sprintf("%v\n%s", err, b)
	}
	for _, g := range res {
		logf("  %s: %.1f ms/op, %.0f B/op, %.0f allocs/op", g.Name, g.NsPerOp/1e6, g.BytesPerOp, g.AllocsPerOp)
	}
	return res, failed
}
