package moduleacc

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
)

// planSection is the text terraform plan renders for one resource address: from its
// "# ADDRESS will be ..." header to the next resource header or the plan's summary line.
func planSection(out, address string) string {
	start := strings.Index(out, "# "+address+" ")
	if start < 0 {
		return ""
	}
	rest := out[start+1:]
	end := len(rest)
	for _, stop := range []string{"\n  # ", "\nPlan: "} {
		if i := strings.Index(rest, stop); i >= 0 && i < end {
			end = i
		}
	}
	return out[start : start+1+end]
}

// TestAccModule_PoolSwitchPlanText is the plan a reviewer reads for the module's pool switch
// (active_pool a -> b: the template switched under OnDelete, olapgke_statefulset_migration moves
// every ordinal), as `terraform plan` renders it: every ordinal and move is named, the ordinals'
// before side is the live view refreshed by Read (not the last apply's prediction), each resource
// says in one plan_summary line what it does, and no stale-ordinal warning asks for the migration
// the plan already contains.
func TestAccModule_PoolSwitchPlanText(t *testing.T) {
	v := vars{name: "shape", image: "olap/historical:1", replicas: 3, cacheSize: "50Gi", activePool: "a"}
	w := newWorld(t, "planshape", v)
	w.step(v)

	nv := v
	nv.activePool = "b"
	w.tf.Write(nv.config(w.ns))
	out, err := w.tf.Run("plan")
	if err != nil {
		t.Fatalf("plan of the pool switch failed: %v\n%s", err, out)
	}
	sts := planSection(out, "module.historical.olapgke_statefulset.this")
	mig := planSection(out, "module.historical.olapgke_statefulset_migration.this")
	if sts == "" || mig == "" {
		t.Fatalf("the plan does not update the StatefulSet and the migration:\n%s", out)
	}
	t.Logf("the plan as rendered:\n%s\n%s", sts, mig)
	for o := 0; o < 3; o++ {
		name := regexp.MustCompile(fmt.Sprintf(`(?m)^\s+[~+]?\s*name\s+= "shape-%d"$`, o))
		if len(name.FindAllString(sts, -1)) != 1 {
			t.Errorf("the StatefulSet's ordinals do not name ordinal %d once (name = \"shape-%d\"):\n%s", o, o, sts)
		}
		if len(name.FindAllString(mig, -1)) != 1 {
			t.Errorf("the migration's moves do not name ordinal %d once (name = \"shape-%d\"):\n%s", o, o, mig)
		}
	}
	// Before -> after reads today -> planned: the Pods run and are at the update revision today.
	if n := strings.Count(sts, `action      = "unchanged" -> "stranded"`); n != 3 {
		t.Errorf("%d ordinals go unchanged -> stranded, want 3 (the before side is the live view):\n%s", n, sts)
	}
	// Nothing reads as a lost placement: the Pods the apply keeps stay placed.
	if regexp.MustCompile(`schedulable\s+= true -> false`).MatchString(sts) {
		t.Errorf("an ordinal the migration moves reads schedulable = true -> false:\n%s", sts)
	}
	if strings.Contains(sts, `"create" ->`) {
		t.Errorf("an ordinal's before side is the last apply's prediction (create), not the live view:\n%s", sts)
	}
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`~ plan_summary\s+= "no change to 3 ordinals" -> "leave 3 ordinals on the old revision \(2,1,0\) for olapgke_statefulset_migration to move: none could come back in place"`),
	} {
		if !want.MatchString(sts) {
			t.Errorf("the StatefulSet's plan does not match %s:\n%s", want, sts)
		}
	}
	if want := regexp.MustCompile(`~ plan_summary\s+= "nothing to move" -> "move 3 of 3 ordinals \(2,1,0\) shape-a -> shape-b, 1 at a time; Ready never below 2"`); !want.MatchString(mig) {
		t.Errorf("the migration's plan does not match %s:\n%s", want, mig)
	}
	for _, bad := range []string{"Stale Ordinals Cannot Be Recreated In Place", "Stale Ordinals Not Moved"} {
		if strings.Contains(out, bad) {
			t.Errorf("the plan warns %q although the migration moves every stale ordinal:\n%s", bad, out)
		}
	}
}
