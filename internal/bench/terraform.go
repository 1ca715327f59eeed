package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Terraform runs the terraform CLI in Dir with a CLI config whose dev_overrides point
// registry.terraform.io/olapgke/olapgke at ProviderDir (no init, no registry).
type Terraform struct {
	// Bin is the CLI (default: terraform on PATH).
	Bin         string
	Dir         string
	ProviderDir string
	Env         map[string]string // added to the environment (the sandbox's DIR/env)
}

// Run is one terraform command's outcome.
type Run struct {
	Wall time.Duration
	// CPU is the user+system time of terraform and the processes it waited for (the provider).
	CPU      time.Duration
	ExitCode int
	Output   string
	// ProviderMS are the `olapgke plan timing` ms values the provider logged, in order.
	ProviderMS []float64
	// ProviderCPUMS are those lines' cpu_ms values (the provider process's CPU over the same
	// span), in order; a line without one (a platform without getrusage) adds none.
	ProviderCPUMS []float64
	// Phases are the provider's `olapgke plan phases` lines, in order: where ProviderMS went.
	Phases []PlanPhases
	// ProviderRSSMiB is the highest peak RSS (VmHWM) of a provider process of the run, read from
	// /proc while it runs (0: none seen).
	ProviderRSSMiB int
}

// ProviderSource is the address the generated configurations use.
const ProviderSource = "olapgke/olapgke"

// Exec runs `terraform args...` with the provider's debug log in Dir/<logName>. With an empty
// logName no TF_LOG* variable reaches the command (not even the bench's own): it runs as a user's
// does, which is also what a plan's wall time without logging means.
func (t *Terraform) Exec(ctx context.Context, logName string, args ...string) (Run, error) {
	rc := filepath.Join(t.Dir, "dev.tfrc")
	if err := os.WriteFile(rc, fmt.Appendf(nil, "provider_installation {\n  dev_overrides {\n    %q = %q\n  }\n  direct {}\n}\n",
		"registry.terraform.io/"+ProviderSource, t.ProviderDir), 0o644); err != nil {
		return Run{}, err
	}
	bin := t.Bin
	if bin == "" {
		bin = "terraform"
	}
	cmd := exec.CommandContext(ctx, bin, append([]string{"-chdir=" + t.Dir}, args...)...)
	env := append(os.Environ(), "TF_CLI_CONFIG_FILE="+rc, "CHECKPOINT_DISABLE=1", "TF_IN_AUTOMATION=1")
	for _, k := range []string{"TF_LOG", "TF_LOG_CORE", "TF_LOG_PROVIDER", "TF_LOG_SDK", "TF_LOG_SDK_PROTO", "TF_LOG_SDK_FRAMEWORK", "TF_LOG_PATH"} {
		env = append(env, k+"=")
	}
	for k, v := range t.Env {
		env = append(env, k+"="+v)
	}
	var logPath string
	if logName != "" {
		logPath = filepath.Join(t.Dir, logName)
		_ = os.Remove(logPath)
		// olapgke's timing lines are DEBUG. The plugin framework's own DEBUG lines would follow
		// TF_LOG_PROVIDER (provider.QuietFrameworkLogs); at 1,000 ordinals they are ~21,700 lines
		// per plan ("marking computed attribute ...") and ~10 s of wall time, so they stay off.
		env = append(env, "TF_LOG_PROVIDER=DEBUG", "TF_LOG_SDK_FRAMEWORK=WARN", "TF_LOG_PATH="+logPath)
	}
	cmd.Env = env
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return Run{}, err
	}
	peak := watchPeakRSS(filepath.Join(t.ProviderDir, "terraform-provider-olapgke"))
	err := cmd.Wait()
	r := Run{Wall: time.Since(start), Output: out.String(), CPU: processCPU(cmd.ProcessState), ProviderRSSMiB: peak() / 1024}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		r.ExitCode, err = ee.ExitCode(), nil
	}
	if err != nil {
		return r, err
	}
	if logPath != "" {
		b, _ := os.ReadFile(logPath)
		r.ProviderMS, r.ProviderCPUMS = ParseTimings(b)
		r.Phases = ParsePhases(b)
	}
	return r, nil
}

var (
	timingRE    = regexp.MustCompile(`olapgke plan timing:[^\n]*`)
	timingMSRE  = regexp.MustCompile(`\bms=([0-9.]+)`)
	timingCPURE = regexp.MustCompile(`\bcpu_ms=([0-9.]+)`)
)

// ParseTimings extracts the ms and cpu_ms values of the provider's `olapgke plan timing` log
// lines (their fields in any order, as terraform-plugin-log writes them).
func ParseTimings(log []byte) (ms, cpuMS []float64) {
	field := func(re *regexp.Regexp, line []byte, into *[]float64) {
		if m := re.FindSubmatch(line); m != nil {
			if v, err := strconv.ParseFloat(string(m[1]), 64); err == nil {
				*into = append(*into, v)
			}
		}
	}
	for _, line := range timingRE.FindAll(log, -1) {
		field(timingMSRE, line, &ms)
		field(timingCPURE, line, &cpuMS)
	}
	return ms, cpuMS
}

// PlanPhases is one `olapgke plan phases` line of the statefulset plan: its server-side dry
// run, the snapshot's reads (with their decoding) and the planner, in ms of wall time; the
// snapshot's and the planner's CPU in ms (0 when the line has none).
type PlanPhases struct{ DryRun, Snapshot, Planner, SnapshotCPU, PlannerCPU float64 }

var phasesRE = regexp.MustCompile(`olapgke plan phases:[^\n]*`)
var phaseRE = regexp.MustCompile(`\b(dry_run_ms|snapshot_ms|planner_ms|snapshot_cpu_ms|planner_cpu_ms)=([0-9.]+)`)

// ParsePhases extracts the provider's `olapgke plan phases` log lines (their fields in any
// order, as terraform-plugin-log writes them).
func ParsePhases(log []byte) []PlanPhases {
	var out []PlanPhases
	for _, line := range phasesRE.FindAll(log, -1) {
		var p PlanPhases
		for _, m := range phaseRE.FindAllSubmatch(line, -1) {
			v, err := strconv.ParseFloat(string(m[2]), 64)
			if err != nil {
				continue
			}
			switch string(m[1]) {
			case "dry_run_ms":
				p.DryRun = v
			case "snapshot_ms":
				p.Snapshot = v
			case "planner_ms":
				p.Planner = v
			case "snapshot_cpu_ms":
				p.SnapshotCPU = v
			case "planner_cpu_ms":
				p.PlannerCPU = v
			}
		}
		out = append(out, p)
	}
	return out
}

// processCPU is the user+system time of a finished process, including the children it waited
// for (wait4's rusage on Linux).
func processCPU(ps *os.ProcessState) time.Duration {
	if ps == nil {
		return 0
	}
	return ps.UserTime() + ps.SystemTime()
}

// watchPeakRSS polls /proc every 50 ms for processes running exe and keeps the highest VmHWM
// (the kernel's peak RSS of a process) it reads. VmHWM only grows, so the last read before a
// process exits is its peak up to the last 50 ms. The returned func stops the poll and returns
// the peak in KiB. (wait4's rusage would give the larger of terraform's and the provider's peak,
// not the provider's.)
func watchPeakRSS(exe string) func() int {
	stop := make(chan struct{})
	done := make(chan int)
	go func() {
		peak := 0
		t := time.NewTicker(50 * time.Millisecond)
		defer t.Stop()
		for {
			peak = max(peak, peakRSSOf(exe))
			select {
			case <-stop:
				done <- peak
				return
			case <-t.C:
			}
		}
	}()
	return func() int {
		close(stop)
		return <-done
	}
}

// peakRSSOf is the highest VmHWM in KiB of the running processes whose executable is exe.
func peakRSSOf(exe string) int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0
	}
	peak := 0
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		if target, err := os.Readlink(filepath.Join("/proc", e.Name(), "exe")); err != nil || target != exe {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "status"))
		if err != nil {
			continue
		}
		for line := range strings.Lines(string(b)) {
			if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmHWM:" {
				if kb, err := strconv.Atoi(f[1]); err == nil {
					peak = max(peak, kb)
				}
			}
		}
	}
	return peak
}
