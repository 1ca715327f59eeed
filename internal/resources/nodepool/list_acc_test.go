package nodepool_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/olapgke/terraform-provider-olapgke/internal/acctest"
)

// TestAccQuery_LocalSSDNodePools: `terraform query` lists the cluster's pools with raw-block
// Local SSDs, each with its identity and how many PVs are pinned to its nodes, and the
// generated import block plans as an import with no change.
func TestAccQuery_LocalSSDNodePools(t *testing.T) {
	acctest.Sandbox(t)
	acctest.PreCheck(t)
	acctest.RequireActions(t) // list resources came with actions: Terraform 1.14+
	tf := acctest.NewTF(t, "")
	if err := os.WriteFile(filepath.Join(tf.Dir, "pools.tfquery.hcl"), []byte(`
list "olapgke_local_ssd_node_pool" "all" {
  provider         = olapgke
  include_resource = true
  config {}
}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := tf.Run("query", "-json")
	if err != nil {
		t.Fatalf("terraform query -json: %v\n%s", err, out)
	}
	found := ""
	for _, r := range acctest.QueryResults(out) {
		if r.Identity["name"] == "pool-a" {
			found = r.DisplayName
			if r.Identity["cluster"] == "" || r.Identity["project"] == "" {
				t.Errorf("identity %v lacks the cluster or project", r.Identity)
			}
		}
	}
	if !strings.HasPrefix(found, "pool-a (n2-standard-8, 2 Local SSD(s), ") || !strings.Contains(found, "PV(s) pinned") {
		t.Fatalf("pool-a listed as %q, want its machine type, 2 Local SSDs and the pinned PVs:\n%s", found, out)
	}
	out, err = tf.Run("query", "-generate-config-out=generated.tf")
	if err != nil {
		t.Fatalf("terraform query -generate-config-out: %v\n%s", err, out)
	}
	gen, err := os.ReadFile(filepath.Join(tf.Dir, "generated.tf"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(gen), "import {") || !strings.Contains(string(gen), `"pool-a"`) {
		t.Fatalf("generated.tf does not import pool-a:\n%s", gen)
	}
}
