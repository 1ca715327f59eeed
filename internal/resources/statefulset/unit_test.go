package statefulset_test

import (
	"regexp"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"

	"github.com/olapgke/terraform-provider-olapgke/internal/acctest"
)

// Plan-only checks that need no cluster (resource.UnitTest): the manifest is judged before any
// dry run, so these fail at plan against an unreachable API server.
func TestUnitStatefulSet_ManifestChecks(t *testing.T) {
	provider := acctest.UnitProviderConfig
	for name, c := range map[string]struct{ manifest, want string }{
		"not a StatefulSet": {`{ apiVersion = "v1", kind = "ConfigMap", metadata = { name = "x" } }`, `Invalid StatefulSet Manifest`},
		"no name":           {`{ apiVersion = "apps/v1", kind = "StatefulSet", metadata = {}, spec = {} }`, `Invalid StatefulSet Manifest`},
		"no serviceName": {`{ apiVersion = "apps/v1", kind = "StatefulSet", metadata = { name = "x", namespace = "olap" },
		  spec = { selector = { matchLabels = { app = "x" } }, template = { metadata = { labels = { app = "x" } }, spec = { containers = [{ name = "c", image = "i" }] } } } }`,
			`StatefulSet Has No serviceName`},
	} {
		t.Run(name, func(t *testing.T) {
			resource.UnitTest(t, resource.TestCase{
				ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories,
				Steps: []resource.TestStep{{
					Config:      provider + "resource \"olapgke_statefulset\" \"s\" {\n  manifest = " + c.manifest + "\n}\n",
					PlanOnly:    true,
					ExpectError: regexp.MustCompile(c.want),
				}},
			})
		})
	}
}

// The plan data source and the expectation refuse bad input before reading the cluster.
func TestUnitStatefulSetPlanAndExpectation_InputChecks(t *testing.T) {
	provider := acctest.UnitProviderConfig
	for name, c := range map[string]struct{ config, want string }{
		"plan: another object's name": {`data "olapgke_statefulset_plan" "p" {
  namespace = "olap"
  name      = "hist"
  manifest  = { metadata = { name = "other" }, spec = {} }
}`, `(?s)Invalid StatefulSet Manifest.*metadata.name is "other", but name = "hist"`},
		"plan: not a StatefulSet": {`data "olapgke_statefulset_plan" "p" {
  namespace = "olap"
  name      = "hist"
  manifest  = { kind = "Deployment", spec = {} }
}`, `(?s)Invalid StatefulSet Manifest.*apps/v1 StatefulSet only`},
		"expectation: bad settle": {`resource "olapgke_statefulset_expectation" "e" {
  namespace = "olap"
  name      = "hist"
  expect    = { spec = { updateStrategy = { type = "OnDelete" } } }
  settle    = "soon"
}`, `Invalid Duration`},
	} {
		t.Run(name, func(t *testing.T) {
			resource.UnitTest(t, resource.TestCase{
				ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories,
				Steps: []resource.TestStep{{
					Config:      provider + c.config,
					PlanOnly:    true,
					ExpectError: regexp.MustCompile(c.want),
				}},
			})
		})
	}
}
