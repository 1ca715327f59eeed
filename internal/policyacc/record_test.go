// Package policyacc keeps the plan JSON the OPA policy of examples/policies is tested on real:
// TestAccPolicyFixtures sets up the four scenarios of examples/policies/README.md on the sandbox,
// saves each plan (`terraform plan -out`, `terraform show -json`) and either records it as
// examples/policies/testdata/<scenario>/plan.json (OLAPGKE_RECORD_POLICY_FIXTURES=1, `make
// policy-fixtures`) or only checks it; in both modes the policy runs over the fresh JSON with OPA
// (`opa eval` as the README shows, then the Rego tests of olapgke_test.rego) and must give the
// verdicts the committed fixtures give.
package policyacc

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/olapgke/terraform-provider-olapgke/internal/acctest"
)

func TestMain(m *testing.M) { acctest.Main(m) }

// EnvRecord set to 1 writes the fresh plans over examples/policies/testdata/*/plan.json.
const EnvRecord = "OLAPGKE_RECORD_POLICY_FIXTURES"

// opa is the OPA of `make policy-test`, built from the Go module proxy (not in go.mod).
var opa = []string{"run", "github.com/open-policy-agent/opa@v1.22.3"}

// moduleConfig is modules/olap-historical as the `safe` and `migration3` scenarios apply it:
// StatefulSet "pol" in namespace default on node pools pol-a and pol-b, pods on activePool.
func moduleConfig(activePool string, maxUnavailable int) string {
	return fmt.Sprintf(`
module "historical" {
  source = %q

  name       = "pol"
  namespace  = "default"
  image      = "olap/historical:1"
  replicas   = 3
  cache_size = "5Gi"
  device_class = {
    name          = "pol-thin"
    type          = "thin"
    thin_pool     = { name = "pol-pool", overprovision_ratio = 4, size_percent = 50 }
    force_destroy = true
  }
  # Makes the thin pool on every Local-SSD node (the sandbox plays the script's effect).
  volume_group_bootstrap = { image = "olapgke-vg-bootstrap:test" }
  pools = {
    a = { node_count = 3, deletion_protection = false, allow_local_data_loss = true }
    b = { node_count = 3, deletion_protection = false, allow_local_data_loss = true }
  }
  active_pool                      = %q
  termination_grace_period_seconds = 1
  migration                        = { max_unavailable = %d, ordinal_timeout = "3m" }
}
`, filepath.Join(acctest.RepoRoot(), "modules", "olap-historical"), activePool, maxUnavailable)
}

// setsConfig is the `incident` and `parallel` scenarios' two StatefulSets in namespace default,
// three ordinals each with a 1 GiB TopoLVM claim: inc (OrderedReady, RollingUpdate,
// allow_unschedulable) on node pool incPool, and par (Parallel, RollingUpdate maxUnavailable 2)
// on pool-a running parImage.
func setsConfig(incPool, parImage string) string {
	return statefulSetHCL("inc", "OrderedReady", 1, incPool, "olap/historical:1", true) +
		statefulSetHCL("par", "Parallel", 2, "pool-a", parImage, false)
}

func statefulSetHCL(name, policy string, maxUnavailable int, pool, image string, allowUnschedulable bool) string {
	return fmt.Sprintf(`
resource "olapgke_statefulset" %[1]q {
  allow_unschedulable = %[6]t
  manifest = {
    apiVersion = "apps/v1"
    kind       = "StatefulSet"
    metadata   = { name = %[1]q, namespace = "default" }
    spec = {
      replicas            = 3
      serviceName         = %[1]q
      podManagementPolicy = %[2]q
      updateStrategy      = { type = "RollingUpdate", rollingUpdate = { maxUnavailable = %[3]d } }
      selector            = { matchLabels = { app = %[1]q } }
      template = {
        metadata = { labels = { app = %[1]q } }
        spec = {
          terminationGracePeriodSeconds = 1
          nodeSelector                  = { "cloud.google.com/gke-nodepool" = %[4]q }
          containers = [{
            name         = "h"
            image        = %[5]q
            volumeMounts = [{ name = "cache", mountPath = "/cache" }]
          }]
        }
      }
      volumeClaimTemplates = [{
        metadata = { name = "cache" }
        spec = {
          accessModes      = ["ReadWriteOnce"]
          storageClassName = "topolvm-provisioner"
          resources        = { requests = { storage = "1Gi" } }
        }
      }]
    }
  }
}
`, name, policy, maxUnavailable, pool, image, allowUnschedulable)
}

// TestAccPolicyFixtures records (or re-plans and checks) the four plans of
// examples/policies/testdata on one sandbox:
//
//	safe        module pol applied on pool a, then planned with active_pool = "b": the template
//	            switched under OnDelete, the migration moves ordinals 2, 1, 0 one at a time
//	migration3  the same with migration.max_unavailable = 3
//	incident    inc (on pool-a) planned with nodeSelector pol-b under RollingUpdate, with
//	            allow_unschedulable = true (par unchanged: a no-op)
//	parallel    par planned with image olap/historical:2, Parallel + maxUnavailable 2 (inc a no-op)
func TestAccPolicyFixtures(t *testing.T) {
	acctest.Sandbox(t)
	acctest.PreCheck(t)
	plans := map[string][]byte{}

	// The module first: its node pools pol-a and pol-b exist when the incident points inc at
	// pol-b. Nothing is destroyed at the end: the package's sandbox goes with the test process.
	mod := acctest.NewTF(t, moduleConfig("a", 1))
	run(t, mod, "get")
	apply(t, mod)
	mod.Write(moduleConfig("b", 1))
	plans["safe"] = savedPlan(t, mod)
	mod.Write(moduleConfig("b", 3))
	plans["migration3"] = savedPlan(t, mod)

	sets := acctest.NewTF(t, setsConfig("pool-a", "olap/historical:1"))
	apply(t, sets)
	sets.Write(setsConfig("pol-b", "olap/historical:1"))
	plans["incident"] = savedPlan(t, sets)
	sets.Write(setsConfig("pool-a", "olap/historical:2"))
	plans["parallel"] = savedPlan(t, sets)

	policies := filepath.Join(acctest.RepoRoot(), "examples", "policies")
	if os.Getenv(EnvRecord) == "1" {
		for name, js := range plans {
			p := filepath.Join(policies, "testdata", name, "plan.json")
			if err := os.WriteFile(p, js, 0o644); err != nil {
				t.Fatal(err)
			}
			t.Logf("recorded %s (%d bytes)", p, len(js))
		}
	}

	// The policy over the fresh plans, as the README runs it.
	dir := t.TempDir()
	for name, js := range plans {
		if err := os.WriteFile(filepath.Join(dir, name+".json"), js, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	rego := filepath.Join(policies, "olapgke.rego")
	deny := func(scenario string, maxUnavailable int) []string {
		t.Helper()
		args := append(append([]string{}, opa...), "eval", "--format", "json", "-d", rego, "-i", filepath.Join(dir, scenario+".json"))
		if maxUnavailable > 0 {
			cfg := filepath.Join(dir, fmt.Sprintf("config-%d.json", maxUnavailable))
			if err := os.WriteFile(cfg, fmt.Appendf(nil, `{"olapgke_config": {"max_unavailable": %d}}`, maxUnavailable), 0o644); err != nil {
				t.Fatal(err)
			}
			args = append(args, "-d", cfg)
		}
		out := goCmd(t, append(args, "data.olapgke.plan.deny")...)
		var res struct {
			Result []struct {
				Expressions []struct {
					Value []string `json:"value"`
				} `json:"expressions"`
			} `json:"result"`
		}
		if err := json.Unmarshal(out, &res); err != nil || len(res.Result) != 1 || len(res.Result[0].Expressions) != 1 {
			t.Fatalf("opa eval of %s: unexpected output (%v):\n%s", scenario, err, out)
		}
		msgs := res.Result[0].Expressions[0].Value
		sort.Strings(msgs)
		return msgs
	}
	same := func(scenario string, got []string, want ...string) {
		t.Helper()
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("%s: deny = %q, want %q", scenario, got, want)
		}
	}

	same("safe", deny("safe", 0))
	same("migration3", deny("migration3", 0),
		"module.historical.olapgke_statefulset_migration.this: moves 3 ordinals at once (max_unavailable); at most 1 allowed")
	same("migration3 with max_unavailable 3", deny("migration3", 3))
	same("parallel", deny("parallel", 0),
		"olapgke_statefulset.par: wave 1 recreates 2 ordinals at once ([1, 2]); at most 1 allowed")
	same("parallel with max_unavailable 2", deny("parallel", 2))
	incident := deny("incident", 0)
	if len(incident) != 3 {
		t.Errorf("incident: %d deny messages, want 3 (one per ordinal): %q", len(incident), incident)
	}
	for o := range 3 {
		want := fmt.Sprintf("olapgke_statefulset.inc: ordinal %d (Pod inc-%d) would be recreated into a Pod that cannot schedule", o, o)
		found := false
		for _, m := range incident {
			found = found || strings.HasPrefix(m, want) && strings.Contains(m, "didn't match PersistentVolume's node affinity")
		}
		if !found {
			t.Errorf("incident: no deny message %q... giving the PV's node affinity as the reason: %q", want, incident)
		}
	}

	// Every Rego test of olapgke_test.rego over the fresh plans: a copy of examples/policies
	// whose testdata is this run's.
	tree := filepath.Join(t.TempDir(), "policies")
	copyTree(t, policies, tree)
	for name, js := range plans {
		if err := os.WriteFile(filepath.Join(tree, "testdata", name, "plan.json"), js, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("opa test over the fresh plans:\n%s", goCmd(t, append(append([]string{}, opa...), "test", "-v", tree)...))
}

func run(t *testing.T, f *acctest.TF, args ...string) string {
	t.Helper()
	out, err := f.Run(args...)
	if err != nil {
		t.Fatalf("terraform %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

func apply(t *testing.T, f *acctest.TF) {
	t.Helper()
	out, err := f.Apply()
	if err != nil {
		t.Fatalf("apply: %v\n%s", err, out)
	}
	f.PlanEmpty()
}

// savedPlan is `terraform plan -out` then `terraform show -json` of that plan, trimmed to what
// the policy and its tests read: format_version, terraform_version and resource_changes (keys
// sorted, one-space indent, no HTML escaping).
func savedPlan(t *testing.T, f *acctest.TF) []byte {
	t.Helper()
	out := run(t, f, "plan", "-out=policy.tfplan")
	for _, bad := range acctest.ProviderBugTexts {
		if strings.Contains(out, bad) {
			t.Fatalf("plan printed %q:\n%s", bad, out)
		}
	}
	cmd, errOut := f.Cmd(t.Context(), "show", "-json", "policy.tfplan")
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	if err := cmd.Run(); err != nil {
		t.Fatalf("terraform show -json: %v\n%s", err, errOut)
	}
	dec := json.NewDecoder(&stdout)
	dec.UseNumber()
	var full map[string]any
	if err := dec.Decode(&full); err != nil {
		t.Fatalf("decoding terraform show -json: %v", err)
	}
	trimmed := map[string]any{}
	for _, k := range []string{"format_version", "terraform_version", "resource_changes"} {
		v, ok := full[k]
		if !ok {
			t.Fatalf("terraform show -json has no %q", k)
		}
		trimmed[k] = v
	}
	var js bytes.Buffer
	enc := json.NewEncoder(&js)
	enc.SetEscapeHTML(false) // "pol-a -> pol-b", not "-\u003e"
	enc.SetIndent("", " ")
	if err := enc.Encode(trimmed); err != nil {
		t.Fatal(err)
	}
	return js.Bytes()
}

// goCmd runs `go ARGS` and returns its stdout, failing the test on error.
func goCmd(t *testing.T, args ...string) []byte {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), "go", args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("go %s: %v\n%s%s", strings.Join(args, " "), err, stdout.Bytes(), stderr.Bytes())
	}
	return stdout.Bytes()
}

// copyTree copies the regular files under src to dst.
func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}
