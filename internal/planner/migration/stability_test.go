package migration

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/olapgke/terraform-provider-olapgke/internal/planner/plannertest"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
)

// migrationValues are what olapgke_statefulset_migration plans as known.
func migrationValues(p MigrationPlan) []string {
	out := []string{"update_revision=" + p.UpdateRevision, fmt.Sprint("claims=", p.Claims)}
	for _, m := range p.Moves {
		out = append(out, fmt.Sprintf("%d %s %s from=%s to=%s vols=%v reason=%q", m.Ordinal, m.Pod, m.Action, m.FromNode, m.Target, m.Volumes, m.Reason))
	}
	return out
}

func TestMigrationPlanStableUnderDrift(t *testing.T) {
	t.Parallel()
	worlds := map[string]func(w *plannertest.MigWorld){
		"restart every ordinal": func(w *plannertest.MigWorld) { w.S.Live.Status.UpdateRevision = plannertest.MigRevB },
		"move every ordinal":    func(w *plannertest.MigWorld) { w.SwitchTemplate("pool-b") },
		"planned image change": func(w *plannertest.MigWorld) {
			d := w.S.Live.DeepCopy()
			d.Spec.Template.Spec.Containers = []corev1.Container{{Name: "c", Image: "x:2"}}
			w.S.Desired = d
		},
		"nothing to do": func(w *plannertest.MigWorld) {},
	}
	migDrifts := map[string]func(w *plannertest.MigWorld){
		"Pod restarted in place": func(w *plannertest.MigWorld) { w.Pod(1).UID = "restarted" },
		"Pod not Ready":          func(w *plannertest.MigWorld) { w.Pod(1).Status.Conditions[0].Status = corev1.ConditionFalse },
		"node of an ordinal cordoned": func(w *plannertest.MigWorld) {
			n := w.Node("gke-olap-pool-a-1")
			n.Spec.Unschedulable = true
		},
		"unrelated node cordoned": func(w *plannertest.MigWorld) { w.Node("gke-olap-pool-b-2").Spec.Unschedulable = true },
		"target node added":       func(w *plannertest.MigWorld) { w.AddNode("gke-olap-pool-b-9", "pool-b", "700Gi") },
	}
	opt := MigrationOptions{MaxUnavailable: 1, RequireOthersReady: true}
	for wname, setup := range worlds {
		for dname, drift := range migDrifts {
			t.Run(wname+"/"+dname, func(t *testing.T) {
				t.Parallel()
				w := plannertest.NewMigWorld(3, "pool-a")
				setup(w)
				before := NewMigration(w.Final()).Plan(opt)
				if !before.OK() {
					t.Fatalf("first plan refused: %+v", before.Problems)
				}
				drift(w)
				after := NewMigration(w.Final()).Plan(opt)
				if !after.OK() {
					return // refused with olapgke's diagnostic before anything is deleted
				}
				if d := cmp.Diff(migrationValues(before), migrationValues(after)); d != "" {
					t.Errorf("planned values changed under drift (-first +second):\n%s", d)
				}
			})
		}
	}
	_ = appsv1.OnDeleteStatefulSetStrategyType
}
