package bench

import (
	"bufio"
	"cmp"
	"context"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Machine describes where the numbers were taken.
type Machine struct {
	CPUs               int
	Model, Go, TF, Mem string
	LoadBefore         string
}

// DescribeMachine reads nproc, the CPU model, memory, go and terraform versions, load average.
func DescribeMachine(ctx context.Context) Machine {
	m := Machine{CPUs: runtime.NumCPU(), Model: "unknown"}
	if f, err := os.Open("/proc/cpuinfo"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
				m.Model = strings.TrimSpace(v)
				break
			}
		}
		_ = f.Close()
	}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		var kb float64
		_, _ = fmt.Sscanf(strings.TrimSpace(strings.TrimPrefix(strings.SplitN(string(b), "\n", 2)[0], "MemTotal:")), "%f", &kb)
		m.Mem = fmt.Sprintf("%.1f GiB", kb/1048576)
	}
	if b, err := exec.CommandContext(ctx, "go", "version").Output(); err == nil {
		m.Go = strings.TrimSpace(string(b))
	}
	if b, err := exec.CommandContext(ctx, "terraform", "version").Output(); err == nil {
		m.TF = strings.SplitN(strings.TrimSpace(string(b)), "\n", 2)[0]
	}
	m.LoadBefore = LoadAvg()
	return m
}

// LoadAvg is the 1/5/15-minute load average.
func LoadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

// GoBench is one line of `go test -bench -benchmem` output.
type GoBench struct {
	Name                string
	N                   int
	NsPerOp, BytesPerOp float64
	AllocsPerOp         float64
}

var benchRE = regexp.MustCompile(`^(Benchmark\S+?)(?:-\d+)?\s+(\d+)\s+([0-9.]+) ns/op\s+([0-9.]+) B/op\s+([0-9.]+) allocs/op`)

// ParseGoBench reads `go test -bench -benchmem` output.
func ParseGoBench(out string) []GoBench {
	var res []GoBench
	for _, l := range strings.Split(out, "\n") {
		m := benchRE.FindStringSubmatch(strings.TrimSpace(l))
		if m == nil {
			continue
		}
		b := GoBench{Name: m[1]}
		b.N, _ = strconv.Atoi(m[2])
		b.NsPerOp, _ = strconv.ParseFloat(m[3], 64)
		b.BytesPerOp, _ = strconv.ParseFloat(m[4], 64)
		b.AllocsPerOp, _ = strconv.ParseFloat(m[5], 64)
		res = append(res, b)
	}
	return res
}

// SandboxResult is the start-up row for one world.
type SandboxResult struct {
	Nodes int
	// TopoLVM is the sandbox's TopoLVM: "sim" (the simulator) or "real" (TopoLVM's and
	// external-provisioner's own code, `up --topolvm real`).
	TopoLVM                string
	Ready, CPU             time.Duration
	ReadyNodes             int
	RSSReadyMiB, RSSEndMiB int
	Err                    string
	// Starts are the start-to-ready times of every start when the row is the median of several
	// (MedianStart); empty for a single start.
	Starts []time.Duration
}

// MedianStart is the row of several starts of one world: the start with the median
// start-to-ready time (its CPU and Ready nodes with it), the highest peak RSS of all, and every
// start's time in Starts. The first failed start, if any, is the row. A 2-core machine shared
// with other work gives one start's wall time a spread of a second or more; the median of an odd
// number of starts is what the target is checked on.
func MedianStart(runs []SandboxResult) SandboxResult {
	if len(runs) == 0 {
		return SandboxResult{Err: "no start"}
	}
	for _, r := range runs {
		if r.Err != "" {
			return r
		}
	}
	sorted := slices.Clone(runs)
	slices.SortStableFunc(sorted, func(a, b SandboxResult) int { return cmp.Compare(a.Ready, b.Ready) })
	med := sorted[(len(sorted)-1)/2]
	for _, r := range runs {
		med.RSSReadyMiB = max(med.RSSReadyMiB, r.RSSReadyMiB)
		med.RSSEndMiB = max(med.RSSEndMiB, r.RSSEndMiB)
	}
	med.Starts = nil
	if len(runs) > 1 {
		for _, r := range runs {
			med.Starts = append(med.Starts, r.Ready)
		}
	}
	return med
}

// Results is everything one `make bench` run measured.
type Results struct {
	Started, Finished time.Time
	Machine           Machine
	Planner           []GoBench
	PlannerErr        string
	// Lists: BenchmarkPlanResourceChange (internal/resources/objectlist), the framework's cost of
	// a plan over 1,000 ordinals as a nested attribute list and as a list of objects.
	Lists     []GoBench
	ListsErr  string
	Sandboxes []SandboxResult
	Plans     []PlanResult
	Migration *MigrationResult
	Restart   *RestartResult
	Action    *ActionResult
	Render    *RenderResult
	Query     *QueryResult
	Batch     *BatchResult
	Warm      *WarmResult
	Notes     []string
}
