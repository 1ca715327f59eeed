package gkeacc

import (
	"strings"
	"testing"
)

const set = "hist"

// TestAccGKE_IncidentRefused: the README's incident on real nodes. A RollingUpdate StatefulSet on
// pool a, its PVs pinned to pool a's nodes by TopoLVM; switching its node selector to pool b is
// refused at plan, naming every ordinal, before anything is changed.
func TestAccGKE_IncidentRefused(t *testing.T) {
	c := setup(t)
	pools := c.poolHCL("a", false, "") + c.poolHCL("b", false, "")
	tf := c.terraform(pools, nil)
	c.apply(tf, pools)
	c.waitStorageReady(c.pool("a"))
	c.waitStorageReady(c.pool("b"))

	c.apply(tf, pools+c.stsHCL(set, "a", imageV1, "{type: RollingUpdate}", 2))
	before := c.ordinals(set, 2)

	out := c.planRefused(tf, pools+c.stsHCL(set, "b", imageV1, "{type: RollingUpdate}", 2), "Ordinals Would Stay Pending")
	for _, o := range []string{"- " + set + "-0", "- " + set + "-1"} {
		if !strings.Contains(out, o) {
			t.Errorf("the refusal does not name %s:\n%s", o, out)
		}
	}
	if after := c.ordinals(set, 2); !equal(before, after) {
		t.Errorf("a refused plan changed the cluster: before %+v, after %+v", before, after)
	}
}

// TestAccGKE_PoolMoveOneOrdinal: the safe move, one ordinal. The template switches to pool b under
// OnDelete and olapgke_statefulset_migration moves ordinal 1 only: its PVC is replaced by one
// pinned on pool b, ordinal 0 keeps its Pod and PVC on pool a.
func TestAccGKE_PoolMoveOneOrdinal(t *testing.T) {
	c := setup(t)
	pools := c.poolHCL("a", false, "") + c.poolHCL("b", false, "")
	tf := c.terraform(pools, nil)
	c.apply(tf, pools)
	c.waitStorageReady(c.pool("a"))
	c.waitStorageReady(c.pool("b"))

	c.apply(tf, pools+c.stsHCL(set, "a", imageV1, "{type: OnDelete}", 2))
	before := c.ordinals(set, 2)

	c.apply(tf, pools+c.stsHCL(set, "b", imageV1, "{type: OnDelete}", 2)+`
resource "olapgke_statefulset_migration" "move" {
  namespace        = olapgke_statefulset.hist.namespace
  statefulset      = olapgke_statefulset.hist.name
  planned_manifest = jsonencode(olapgke_statefulset.hist.manifest)
  volume_claims    = ["cache"]
  ordinals         = [1]
  ordinal_timeout  = "15m"
}
`)
	after := c.ordinals(set, 2)
	if after[0] != before[0] {
		t.Errorf("ordinal 0 was not asked to move but changed: before %+v, after %+v", before[0], after[0])
	}
	if after[1].pool != c.pool("b") {
		t.Errorf("ordinal 1 runs on pool %q, want %q", after[1].pool, c.pool("b"))
	}
	if after[1].pvcUID == before[1].pvcUID {
		t.Errorf("ordinal 1 kept PVC %s: a move must replace it with one pinned on pool b", before[1].pvcUID)
	}
}

// TestAccGKE_DayTwoImageBump: an image change under RollingUpdate restarts every Pod in place (same
// node, PV pinned there) and replaces no PVC.
func TestAccGKE_DayTwoImageBump(t *testing.T) {
	c := setup(t)
	pools := c.poolHCL("a", false, "")
	tf := c.terraform(pools, nil)
	c.apply(tf, pools)
	c.waitStorageReady(c.pool("a"))

	c.apply(tf, pools+c.stsHCL(set, "a", imageV1, "{type: RollingUpdate}", 2))
	before := c.ordinals(set, 2)
	c.apply(tf, pools+c.stsHCL(set, "a", imageV2, "{type: RollingUpdate}", 2))
	after := c.ordinals(set, 2)
	for o, b := range before {
		a := after[o]
		if a.podUID == b.podUID {
			t.Errorf("ordinal %d: Pod not restarted by the image change", o)
		}
		if a.pvcUID != b.pvcUID {
			t.Errorf("ordinal %d: PVC replaced (%s -> %s): an image change must keep the data", o, b.pvcUID, a.pvcUID)
		}
		if a.node != b.node {
			t.Errorf("ordinal %d: moved from node %s to %s: a restart stays where its PV is pinned", o, b.node, a.node)
		}
	}
}

// TestAccGKE_NodePoolReplacementGuard: changing local_nvme_ssd_count replaces the node pool (new
// VMs, empty Local SSDs); while an ordinal's PV is pinned to one of its nodes the data-loss guard
// refuses it at plan. allow_local_data_loss is set before the test's destroy.
func TestAccGKE_NodePoolReplacementGuard(t *testing.T) {
	c := setup(t)
	guarded := c.poolHCL("a", true, "")
	var cfg string
	tf := c.terraform(guarded, func() string {
		return strings.Replace(cfg, "allow_local_data_loss = false", "allow_local_data_loss = true", 1)
	})
	cfg = guarded
	c.apply(tf, cfg)
	c.waitStorageReady(c.pool("a"))

	cfg = guarded + c.stsHCL(set, "a", imageV1, "{type: OnDelete}", 1)
	c.apply(tf, cfg)
	before := c.ordinals(set, 1)

	replaced := strings.Replace(guarded, "local_nvme_ssd_count  = 2", "local_nvme_ssd_count  = 4", 1) + c.stsHCL(set, "a", imageV1, "{type: OnDelete}", 1)
	out := c.planRefused(tf, replaced, "Local Data Would Be Lost")
	if !strings.Contains(out, "ordinal(s) 0") {
		t.Errorf("the refusal does not name ordinal 0:\n%s", out)
	}
	if after := c.ordinals(set, 1); !equal(before, after) {
		t.Errorf("a refused plan changed the cluster: before %+v, after %+v", before, after)
	}
}

func equal(a, b map[int32]ordinal) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}
