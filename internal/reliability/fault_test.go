package reliability

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/olapgke/terraform-provider-olapgke/internal/acctest"
	"github.com/olapgke/terraform-provider-olapgke/internal/faultproxy"
)

// apiFaults are the API-server fault rates of the suites: every kind, high enough that each run
// sees several, bounded so a run ends.
func apiFaults(seed uint64) faultproxy.Config {
	return faultproxy.Config{
		Seed: seed, MaxFaults: 40,
		Rates: map[faultproxy.Kind]float64{
			faultproxy.TooManyRequests: 0.05,
			faultproxy.InternalError:   0.01,
			faultproxy.Unavailable:     0.04,
			faultproxy.Conflict:        0.25,
			faultproxy.WatchDropped:    0.25,
			faultproxy.WatchExpired:    0.15,
			faultproxy.Slow:            0.04,
			faultproxy.Reset:           0.01,
		},
		RetryAfter: time.Second, SlowDelay: 1500 * time.Millisecond, WatchDropAfter: 700 * time.Millisecond,
	}
}

// gkeFaults are the GKE API fault rates (gRPC).
func gkeFaults(seed uint64) faultproxy.GRPCConfig {
	return faultproxy.GRPCConfig{
		Seed: seed, MaxFaults: 12,
		Rates: map[codes.Code]float64{
			codes.Unavailable:        0.15,
			codes.ResourceExhausted:  0.05,
			codes.FailedPrecondition: 0.05,
			codes.Internal:           0.03,
		},
		SlowRate: 0.05, SlowDelay: time.Second,
	}
}

// proxied starts both fault proxies and points the terraform runner's provider at them through
// the KUBE_* variables (kubernetes{} block fallbacks) and OLAPGKE_CONTAINER_ENDPOINT.
func proxied(t *testing.T, env *acctest.Env, f *tf, api faultproxy.Config, g faultproxy.GRPCConfig) (*faultproxy.Proxy, *faultproxy.GRPC) {
	t.Helper()
	p, err := faultproxy.New(env.REST, api)
	must(t, err)
	t.Cleanup(p.Close)
	gp, err := faultproxy.NewGRPC(env.Vars["OLAPGKE_CONTAINER_ENDPOINT"], g)
	must(t, err)
	t.Cleanup(gp.Close)
	f.Env["KUBE_HOST"] = p.URL
	f.Env["KUBE_TOKEN"] = env.Vars["GOOGLE_OAUTH_ACCESS_TOKEN"]
	f.Env["KUBE_CLUSTER_CA_CERT_DATA"] = string(p.CAPEM)
	f.Env["OLAPGKE_CONTAINER_ENDPOINT"] = gp.Addr
	return p, gp
}

// untilDone runs args (apply or destroy) while faults are on, at most tries times; each failed
// run must fail with a clear diagnostic. If every try failed, faults are switched off and one
// more run must succeed: the state left behind is resumable. It returns the error summaries.
func untilDone(t *testing.T, f *tf, tries int, off func(), args ...string) []string {
	t.Helper()
	var summaries []string
	for i := range tries + 1 {
		if i == tries {
			off()
		}
		out, err := f.Run(args...)
		if err == nil {
			return summaries
		}
		summaries = append(summaries, clearError(t, out))
		t.Logf("%s try %d stopped with a clear error:\n%s", args[0], i+1, errorBlock(out))
		notBlamingConfig(t, out)
	}
	t.Fatalf("%s still fails with faults off after %d tries: %v\n%s", args[0], tries, summaries, f.Logs[len(f.Logs)-1])
	return nil
}

// blames are advice that points at the configuration. The proxies inject only faults of the
// API server, GKE or the network (429, 5xx, resets, slow answers, dropped watches, 409 on a
// resourceVersion update; GKE Unavailable, ResourceExhausted, FailedPrecondition), so an error
// that follows one must not send the user to fix a configuration that is fine. Terraform wraps lines: words match across any whitespace.
var blames = func() []*regexp.Regexp {
	var out []*regexp.Regexp
	for _, s := range []string{"Rejected By The API Server", "Fix the manifest", "Fix the configuration", "manage_service = false"} {
		out = append(out, regexp.MustCompile(strings.Join(strings.Fields(regexp.QuoteMeta(s)), `\s+`)))
	}
	return out
}()

func notBlamingConfig(t *testing.T, out string) {
	t.Helper()
	for _, re := range blames {
		if re.MatchString(out) {
			t.Errorf("an injected fault was reported as a configuration error (%s):\n%s", re, errorBlock(out))
		}
	}
}

func migrationConfig(ns string, extra string) string {
	return fmt.Sprintf(`
resource "olapgke_statefulset_migration" "hist" {
  namespace       = %q
  statefulset     = %q
  ordinal_timeout = "3m"
%s
}
`, ns, setName, extra)
}

// TestAccReliability_MigrationUnderFaults moves 10 ordinals from pool-a to pool-b through the
// fault proxy (three seeds), with a watch recording every Pod/PVC deletion by UID.
func TestAccReliability_MigrationUnderFaults(t *testing.T) {
	slow(t)
	env := acctest.Sandbox(t)
	acctest.PreCheck(t)
	for _, seed := range firstIfFast([]uint64{1, 2, 3}) {
		t.Run(fmt.Sprintf("seed-%d", seed), func(t *testing.T) {
			ns := fmt.Sprintf("faults-%d", seed)
			s := newSet(t, env.Kube, ns, 10, "pool-a")
			s.switchPool(t, "pool-b")
			all := []int32{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}
			mon := s.watch(t, all, nil)
			f := newTF(t, migrationConfig(ns, ""))
			p, _ := proxied(t, env, f, apiFaults(seed), gkeFaults(seed))
			summaries := untilDone(t, f, 8, func() { p.SetEnabled(false) }, "apply", "-auto-approve")
			p.SetEnabled(false)
			f.PlanEmpty()
			longest, _ := mon.verify(t)
			s.checkFinal(t, "pool-b", all)
			f.NoSecrets(env.Vars["GOOGLE_OAUTH_ACCESS_TOKEN"])
			result(t, "10 ordinals moved; %d API requests, faults: %s; %d apply runs stopped with clear errors %v; longest single-ordinal move %s; violations: %v",
				p.Requests(), p.Summary(), len(summaries), summaries, longest.Round(time.Millisecond), t.Failed())
			_, _ = f.Run("destroy", "-auto-approve")
		})
	}
}

// TestAccReliability_PartialMigrationUnderFaults moves only ordinals 7 and 3: the other eight
// must keep their Pod and PVC UIDs through faults.
func TestAccReliability_PartialMigrationUnderFaults(t *testing.T) {
	slow(t)
	env := acctest.Sandbox(t)
	acctest.PreCheck(t)
	const ns = "faults-partial"
	s := newSet(t, env.Kube, ns, 10, "pool-a")
	s.switchPool(t, "pool-b")
	mon := s.watch(t, []int32{7, 3}, nil)
	f := newTF(t, migrationConfig(ns, "  ordinals = [7, 3]\n  order = \"explicit\""))
	p, _ := proxied(t, env, f, apiFaults(11), gkeFaults(11))
	summaries := untilDone(t, f, 8, func() { p.SetEnabled(false) }, "apply", "-auto-approve")
	p.SetEnabled(false)
	f.PlanEmpty()
	longest, _ := mon.verify(t)
	s.checkFinal(t, "pool-b", []int32{7, 3})
	result(t, "ordinals 7,3 of 10 moved, 8 untouched by UID; %d API requests, faults: %s; clear errors %v; longest move %s",
		p.Requests(), p.Summary(), summaries, longest.Round(time.Millisecond))
	_, _ = f.Run("destroy", "-auto-approve")
}

// stsConfig is an olapgke_statefulset (OnDelete) of 3 replicas on pool.
func stsConfig(ns, pool, image string) string {
	return acctest.HistoricalStatefulSetHCL(ns, pool, image)
}

const poolConfig = `
resource "olapgke_local_ssd_node_pool" "c" {
  name                 = "pool-c"
  machine_type         = "n2-standard-8"
  local_nvme_ssd_count = 2
  node_count           = 1
  deletion_protection  = false
}
`

const deviceClassConfig = `
resource "olapgke_topolvm_device_class" "fast" {
  name         = "rel-fast"
  volume_group = "vg-ssd"
  type         = "thin"
  thin_pool = {
    name                = "pool-rel-fast"
    overprovision_ratio = 2
  }
  storage_class = {
    name = "topolvm-rel-fast"
  }
}
`

// TestAccReliability_LifecyclesUnderFaults creates, updates and destroys an olapgke_statefulset,
// an olapgke_local_ssd_node_pool (GKE faults) and an olapgke_topolvm_device_class through the
// fault proxies. Every run completes or stops with a clear error; the next run resumes; the
// plan after each completed step is empty.
func TestAccReliability_LifecyclesUnderFaults(t *testing.T) {
	slow(t)
	env := acctest.Sandbox(t)
	acctest.PreCheck(t)
	const ns = "faults-lifecycle"
	_, err := env.Kube.CoreV1().Namespaces().Create(t.Context(), nsObject(ns), createOpts)
	must(t, err)
	t.Cleanup(func() { deleteNamespace(env, ns) })

	steps := []struct{ name, config string }{
		{"create", stsConfig(ns, "pool-a", "olap/historical:1") + poolConfig + deviceClassConfig},
		{"update", stsConfig(ns, "pool-a", "olap/historical:2") + strings.Replace(poolConfig, "node_count           = 1", "node_count           = 2", 1) + deviceClassConfig},
	}
	f := newTF(t, steps[0].config)
	p, g := proxied(t, env, f, apiFaults(21), gkeFaults(21))
	// Provider and Terraform logs at trace level: with faults, error paths are logged too.
	f.Env["TF_LOG"] = "trace"
	f.Env["TF_LOG_PATH"] = filepath.Join(t.TempDir(), "trace.log")
	off := func() { p.SetEnabled(false); g.SetEnabled(false) }
	on := func() { p.SetEnabled(true); g.SetEnabled(true) }
	var all []string
	for _, st := range steps {
		on()
		f.Write(st.config)
		all = append(all, untilDone(t, f, 8, off, "apply", "-auto-approve")...)
		off()
		f.PlanEmpty()
	}
	on()
	all = append(all, untilDone(t, f, 8, off, "destroy", "-auto-approve")...)
	off()
	out, err := f.Run("state", "list")
	if err != nil || strings.TrimSpace(out) != "" {
		t.Errorf("state after destroy is not empty (%v): %q", err, out)
	}
	f.NoSecrets(env.Vars["GOOGLE_OAUTH_ACCESS_TOKEN"])
	result(t, "statefulset/node pool/device class create, update, destroy (TF_LOG=trace: token in no log, output or state); API faults: %s; GKE faults: %s; clear errors %v",
		p.Summary(), g.Summary(), all)
}

// errorBlock is the first error diagnostic of terraform's output (for the log).
func errorBlock(out string) string {
	i := strings.Index(out, "Error: ")
	if i < 0 {
		return out
	}
	lines := strings.Split(out[i:], "\n")
	if len(lines) > 14 {
		lines = lines[:14]
	}
	return strings.Join(lines, "\n")
}
