package migration_test

import (
	"regexp"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"

	"github.com/olapgke/terraform-provider-olapgke/internal/acctest"
)

// Plan-only checks that need no cluster (resource.UnitTest, as terraform-provider-random tests
// its plan logic): configuration validation runs before anything is read.
func TestUnitStatefulSetMigration_Validation(t *testing.T) {
	for name, c := range map[string]struct{ body, want string }{
		"explicit order needs ordinals": {`order = "explicit"`, `Ordinals Required For Explicit Order`},
		"bad ordinal timeout":           {`ordinal_timeout = "soon"`, `Invalid Duration`},
		"negative ordinal":              {`ordinals = [-1]`, `ordinals`},
		"max_unavailable below one":     {`max_unavailable = 0`, `max_unavailable`},
		"unknown order":                 {`order = "random"`, `order`},
		"gate without a check":          {`gate { name = "g" }`, `(?s)Invalid Gate.*exactly one of pod_condition and http`},
		"gate with both checks": {`gate {
    pod_condition { type = "x" }
    http { url = "http://c/" }
  }`, `(?s)Invalid Gate.*exactly one`},
		"gate placeholder": {`gate {
    http { url = "http://c/{podname}" }
  }`, `(?s)Invalid Gate.*unknown placeholder \{podname\}`},
		"gate relative url": {`gate {
    http { url = "/status" }
  }`, `(?s)Invalid Gate.*absolute`},
		"gate json path": {`gate {
    http {
      url              = "http://c/"
      expect_json_path = "{.a[}"
    }
  }`, `(?s)Invalid Gate.*expect_json_path`},
		"gate interval above timeout": {`gate {
    interval = "1h"
    pod_condition { type = "x" }
  }`, `(?s)Invalid Gate.*longer than timeout`},
		"gate bad duration": {`gate {
    timeout = "soon"
    pod_condition { type = "x" }
  }`, `Invalid Duration`},
	} {
		t.Run(name, func(t *testing.T) {
			resource.UnitTest(t, resource.TestCase{
				ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories,
				Steps: []resource.TestStep{{
					Config: acctest.UnitProviderConfig + `
resource "olapgke_statefulset_migration" "m" {
  namespace   = "olap"
  statefulset = "hist"
  ` + c.body + `
}
`,
					PlanOnly:    true,
					ExpectError: regexp.MustCompile(c.want),
				}},
			})
		})
	}
}
