package reliability

import (
	"regexp"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"

	"github.com/olapgke/terraform-provider-olapgke/internal/acctest"
)

// wrapped compiles a pattern whose spaces match any whitespace (Terraform wraps diagnostics).
func wrapped(pattern string) *regexp.Regexp {
	return regexp.MustCompile("(?s)" + strings.ReplaceAll(pattern, " ", `\s+`))
}

// TestAccReliability_BadMigrationInput is the migration part of the bad-input corpus (the other
// resources' invalid inputs are tested in their packages; see RELIABILITY.md for the full
// list). Each case must fail at plan with its diagnostic, and the watch must see no Pod or PVC
// deleted: nothing was touched.
func TestAccReliability_BadMigrationInput(t *testing.T) {
	env := acctest.Sandbox(t)
	const ns = "bad-input"
	s := newSet(t, env.Kube, ns, 3, "pool-a")
	s.switchPool(t, "pool-b")
	mon := s.watch(t, nil, nil)
	cases := []struct{ name, config, want string }{
		{"unknown statefulset", `
resource "olapgke_statefulset_migration" "bad" {
  namespace   = "bad-input"
  statefulset = "nope"
}`, `StatefulSet Not Found`},
		{"ordinal out of range", `
resource "olapgke_statefulset_migration" "bad" {
  namespace   = "bad-input"
  statefulset = "hist"
  ordinals    = [7]
}`, `Unknown Ordinal.*7`},
		{"negative ordinal", `
resource "olapgke_statefulset_migration" "bad" {
  namespace   = "bad-input"
  statefulset = "hist"
  ordinals    = [-1]
}`, `ordinals.*at least 0`},
		{"duplicate ordinals", `
resource "olapgke_statefulset_migration" "bad" {
  namespace   = "bad-input"
  statefulset = "hist"
  ordinals    = [1, 1]
}`, `Duplicate List Value.*duplicate values of: 1`},
		{"explicit order without ordinals", `
resource "olapgke_statefulset_migration" "bad" {
  namespace   = "bad-input"
  statefulset = "hist"
  order       = "explicit"
}`, `Ordinals Required For Explicit Order`},
		{"unknown volume claim", `
resource "olapgke_statefulset_migration" "bad" {
  namespace     = "bad-input"
  statefulset   = "hist"
  volume_claims = ["data"]
}`, `Unknown Volume Claim.*data`},
		{"bad ordinal timeout", `
resource "olapgke_statefulset_migration" "bad" {
  namespace       = "bad-input"
  statefulset     = "hist"
  ordinal_timeout = "soon"
}`, `Invalid Duration.*soon`},
		{"zero max_unavailable", `
resource "olapgke_statefulset_migration" "bad" {
  namespace       = "bad-input"
  statefulset     = "hist"
  max_unavailable = 0
}`, `max_unavailable.*at least 1`},
		{"planned manifest not a StatefulSet", `
resource "olapgke_statefulset_migration" "bad" {
  namespace        = "bad-input"
  statefulset      = "hist"
  planned_manifest = jsonencode({ kind = "Deployment" })
}`, `Invalid Planned Manifest`},
		{"planned manifest not JSON", `
resource "olapgke_statefulset_migration" "bad" {
  namespace        = "bad-input"
  statefulset      = "hist"
  planned_manifest = "{not json"
}`, `Invalid Planned Manifest`},
	}
	steps := make([]resource.TestStep, 0, len(cases))
	for _, c := range cases {
		steps = append(steps, resource.TestStep{Config: c.config, PlanOnly: true, ExpectError: wrapped(c.want)})
	}
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories,
		Steps:                    steps,
	})
	mon.verify(t)
	s.checkFinal(t, "pool-a", nil)
	names := make([]string, len(cases))
	for i, c := range cases {
		names[i] = c.name
	}
	result(t, "%d invalid migration inputs refused at plan, nothing deleted: %s", len(cases), strings.Join(names, "; "))
}
