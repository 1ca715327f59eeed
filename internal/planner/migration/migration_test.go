package migration

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/olapgke/terraform-provider-olapgke/internal/planner"
	"github.com/olapgke/terraform-provider-olapgke/internal/planner/plannertest"
	"github.com/olapgke/terraform-provider-olapgke/internal/stsutil"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

func moveOrdinals(p MigrationPlan) []int32 {
	out := []int32{}
	for _, m := range p.Moves {
		out = append(out, m.Ordinal)
	}
	return out
}

func problemKinds(p MigrationPlan) []MigrationProblemKind {
	out := []MigrationProblemKind{}
	for _, pr := range p.Problems {
		out = append(out, pr.Kind)
	}
	return out
}

func TestPlanMigration(t *testing.T) {
	t.Parallel()
	defaults := MigrationOptions{Order: OrderDescending, MaxUnavailable: 1, RequireOthersReady: true}
	cases := map[string]struct {
		replicas    int32
		setup       func(w *plannertest.MigWorld)
		opt         *MigrationOptions
		wantMoves   []int32
		wantProbs   []MigrationProblemKind
		wantPar     int
		wantInProbs string // substring of the joined problem messages
		// notInProbs must not appear in them (advice that would lead to the next refusal).
		notInProbs string
		wantReason string // substring of the first move's reason
		// wantActions are the moves' actions in order; nil: every one "move".
		wantActions []MigrationAction
	}{
		"template on pool-b under OnDelete moves every ordinal, descending": {
			replicas:   3,
			setup:      func(w *plannertest.MigWorld) { w.SwitchTemplate("pool-b") },
			wantMoves:  []int32{2, 1, 0},
			wantProbs:  []MigrationProblemKind{},
			wantPar:    1,
			wantReason: "runs on node gke-olap-pool-a-2, which fails the template placement pool-b",
		},
		"ascending order": {
			replicas: 3, setup: func(w *plannertest.MigWorld) { w.SwitchTemplate("pool-b") },
			opt:       &MigrationOptions{Order: OrderAscending, MaxUnavailable: 1},
			wantMoves: []int32{0, 1, 2}, wantProbs: []MigrationProblemKind{}, wantPar: 1,
		},
		"explicit order follows ordinals": {
			replicas: 3, setup: func(w *plannertest.MigWorld) { w.SwitchTemplate("pool-b") },
			opt:       &MigrationOptions{Order: OrderExplicit, Ordinals: []int32{1, 2, 0}, MaxUnavailable: 1},
			wantMoves: []int32{1, 2, 0}, wantProbs: []MigrationProblemKind{}, wantPar: 1,
		},
		"subset moves only ordinal 1": {
			replicas: 3, setup: func(w *plannertest.MigWorld) { w.SwitchTemplate("pool-b") },
			opt:       &MigrationOptions{Ordinals: []int32{1}, MaxUnavailable: 1, RequireOthersReady: true},
			wantMoves: []int32{1}, wantProbs: []MigrationProblemKind{}, wantPar: 1,
		},
		"nothing to move when everything is in place": {
			replicas: 3, wantMoves: []int32{}, wantProbs: []MigrationProblemKind{}, wantPar: 1,
		},
		"planned template (Desired) is judged before it is live": {
			replicas: 3,
			setup: func(w *plannertest.MigWorld) {
				d := w.S.Live.DeepCopy()
				d.Spec.Template.Spec.NodeSelector = map[string]string{stsutil.LabelNodePool: "pool-b"}
				w.S.Desired = d
			},
			wantMoves: []int32{2, 1, 0}, wantProbs: []MigrationProblemKind{}, wantPar: 1,
		},
		"pod at an old revision on the right pool restarts in place": {
			replicas: 3,
			setup: func(w *plannertest.MigWorld) {
				w.S.Live.Status.UpdateRevision = plannertest.MigRevB
				w.AddPod(0, "gke-olap-pool-a-0", plannertest.MigRevB, "a0", true)
				w.AddPod(1, "gke-olap-pool-a-1", plannertest.MigRevB, "a1", true)
			},
			wantMoves: []int32{2}, wantProbs: []MigrationProblemKind{}, wantPar: 1,
			wantReason:  "is at revision hist-aaaa, the update revision is hist-bbbb",
			wantActions: []MigrationAction{MigrationRestart},
		},
		"planned image change (Desired) restarts every ordinal, keeping PVCs": {
			replicas: 3,
			setup: func(w *plannertest.MigWorld) {
				d := w.S.Live.DeepCopy()
				d.Spec.Template.Spec.Containers = []corev1.Container{{Name: "olap", Image: "olap:2"}}
				w.S.Desired = d
			},
			wantMoves: []int32{2, 1, 0}, wantProbs: []MigrationProblemKind{}, wantPar: 1,
			wantReason:  "restarts there with its PVCs",
			wantActions: []MigrationAction{MigrationRestart, MigrationRestart, MigrationRestart},
		},
		"old revision under RollingUpdate is the controller's, not a restart": {
			replicas: 3,
			setup: func(w *plannertest.MigWorld) {
				w.S.Live.Spec.UpdateStrategy = appsv1.StatefulSetUpdateStrategy{Type: appsv1.RollingUpdateStatefulSetStrategyType}
				w.S.Live.Status.UpdateRevision = plannertest.MigRevB
			},
			wantMoves: []int32{}, wantProbs: []MigrationProblemKind{}, wantPar: 1,
		},
		"restart onto a cordoned node is refused": {
			replicas: 3,
			setup: func(w *plannertest.MigWorld) {
				w.S.Live.Status.UpdateRevision = plannertest.MigRevB
				w.Node("gke-olap-pool-a-1").Spec.Unschedulable = true
			},
			wantMoves: []int32{2, 1, 0}, wantProbs: []MigrationProblemKind{ProblemUnschedulable}, wantPar: 1,
			wantInProbs: "ordinal 1 cannot be restarted in place; the scheduler says: 0/6 nodes are available: 1 node(s) were unschedulable, 2 node(s) didn't match PersistentVolume's node affinity",
			wantActions: []MigrationAction{MigrationRestart, MigrationRestart, MigrationRestart},
		},
		"restart onto a node with an untolerated NoSchedule taint is refused": {
			replicas: 1,
			setup: func(w *plannertest.MigWorld) {
				w.S.Live.Status.UpdateRevision = plannertest.MigRevB
				w.Node("gke-olap-pool-a-0").Spec.Taints = []corev1.Taint{{Key: "maintenance", Effect: corev1.TaintEffectNoSchedule}}
			},
			wantMoves: []int32{0}, wantProbs: []MigrationProblemKind{ProblemUnschedulable}, wantPar: 1,
			wantInProbs: "1 node(s) had untolerated taint(s)",
			wantActions: []MigrationAction{MigrationRestart},
		},
		"a cordoned node of a moved ordinal does not matter": {
			replicas: 1,
			setup: func(w *plannertest.MigWorld) {
				w.SwitchTemplate("pool-b")
				w.Node("gke-olap-pool-a-0").Spec.Unschedulable = true
			},
			wantMoves: []int32{0}, wantProbs: []MigrationProblemKind{}, wantPar: 1,
		},
		"already moved ordinals are left alone (resume)": {
			replicas: 3,
			setup: func(w *plannertest.MigWorld) {
				w.SwitchTemplate("pool-b")
				w.AddOrdinal(2, "gke-olap-pool-b-0", plannertest.MigRevB, "b2")
			},
			wantMoves: []int32{1, 0}, wantProbs: []MigrationProblemKind{}, wantPar: 1,
		},
		"a PVC being deleted is a move in progress": {
			replicas: 3,
			setup: func(w *plannertest.MigWorld) {
				w.SwitchTemplate("pool-b")
				w.AddOrdinal(2, "gke-olap-pool-b-0", plannertest.MigRevB, "b2")
				w.AddOrdinal(1, "gke-olap-pool-b-1", plannertest.MigRevB, "b1")
				w.Terminate(&w.PVC(1).ObjectMeta)
			},
			wantMoves: []int32{1, 0}, wantProbs: []MigrationProblemKind{}, wantPar: 1,
			wantReason: "is being deleted",
		},
		"a Pod moved back shows up again": {
			replicas: 3,
			setup: func(w *plannertest.MigWorld) {
				w.SwitchTemplate("pool-b")
				w.AddOrdinal(2, "gke-olap-pool-b-0", plannertest.MigRevB, "b2")
				w.AddOrdinal(1, "gke-olap-pool-b-1", plannertest.MigRevB, "b1")
				w.AddOrdinal(0, "gke-olap-pool-b-2", plannertest.MigRevB, "b0")
				w.AddPVC(1, "gke-olap-pool-a-1", "back1")
			},
			wantMoves: []int32{1}, wantProbs: []MigrationProblemKind{}, wantPar: 1,
			wantReason: "is pinned to node gke-olap-pool-a-1",
		},
		"scale-up ordinals (no Pod, no PVC) are not moves": {
			replicas: 3,
			setup: func(w *plannertest.MigWorld) {
				w.SwitchTemplate("pool-b")
				d := w.S.Live.DeepCopy()
				d.Spec.Replicas = ptr.To[int32](5)
				w.S.Desired = d
				w.AddOrdinal(2, "gke-olap-pool-b-0", plannertest.MigRevB, "b2")
				w.AddOrdinal(1, "gke-olap-pool-b-1", plannertest.MigRevB, "b1")
			},
			wantMoves: []int32{0}, wantProbs: []MigrationProblemKind{}, wantPar: 1,
		},
		"Pod gone, PVC still there: a move in progress": {
			replicas: 3,
			setup: func(w *plannertest.MigWorld) {
				w.SwitchTemplate("pool-b")
				w.AddOrdinal(2, "gke-olap-pool-b-0", plannertest.MigRevB, "b2")
				w.AddOrdinal(1, "gke-olap-pool-b-1", plannertest.MigRevB, "b1")
				w.AddPVC(0, "", "new0")
				w.RemovePod(0)
			},
			wantMoves: []int32{0}, wantProbs: []MigrationProblemKind{}, wantPar: 1,
			wantReason: "Pod hist-0 does not exist",
		},
		"Pod and PVC gone (an apply killed mid-move): finished first, not a down other ordinal": {
			replicas: 3,
			setup: func(w *plannertest.MigWorld) {
				w.SwitchTemplate("pool-b")
				w.AddOrdinal(2, "gke-olap-pool-b-0", plannertest.MigRevB, "b2")
				w.RemovePod(1)
				w.RemovePVC(1)
			},
			wantMoves: []int32{1, 0}, wantProbs: []MigrationProblemKind{}, wantPar: 1,
			wantReason: "Pod hist-1 and its PVCs do not exist",
		},
		"target nodes missing": {
			replicas: 3, setup: func(w *plannertest.MigWorld) { w.SwitchTemplate("pool-c") },
			wantMoves: []int32{2, 1, 0}, wantProbs: []MigrationProblemKind{ProblemTargetNodesMissing}, wantPar: 1,
			wantInProbs: "none of the 6 nodes matches the template placement (pool-c)",
		},
		"target nodes cordoned": {
			replicas: 3,
			setup: func(w *plannertest.MigWorld) {
				w.SwitchTemplate("pool-b")
				for _, n := range []string{"gke-olap-pool-b-0", "gke-olap-pool-b-1", "gke-olap-pool-b-2"} {
					w.Node(n).Spec.Unschedulable = true
				}
			},
			wantMoves: []int32{2, 1, 0}, wantProbs: []MigrationProblemKind{ProblemTargetNodesMissing}, wantPar: 1,
			wantInProbs: "3 node(s) are cordoned",
		},
		"untolerated taint on the target pool": {
			replicas: 1,
			setup: func(w *plannertest.MigWorld) {
				w.SwitchTemplate("pool-b")
				for _, n := range []string{"gke-olap-pool-b-0", "gke-olap-pool-b-1", "gke-olap-pool-b-2"} {
					w.Node(n).Spec.Taints = []corev1.Taint{{Key: "dedicated", Value: "olap", Effect: corev1.TaintEffectNoSchedule}}
				}
			},
			wantMoves: []int32{0}, wantProbs: []MigrationProblemKind{ProblemTargetNodesMissing}, wantPar: 1,
			wantInProbs: "untolerated taint dedicated=olap:NoSchedule",
		},
		"tolerated taint is fine": {
			replicas: 1,
			setup: func(w *plannertest.MigWorld) {
				w.SwitchTemplate("pool-b")
				for _, n := range []string{"gke-olap-pool-b-0", "gke-olap-pool-b-1", "gke-olap-pool-b-2"} {
					w.Node(n).Spec.Taints = []corev1.Taint{{Key: "dedicated", Value: "olap", Effect: corev1.TaintEffectNoSchedule}}
				}
				w.S.Live.Spec.Template.Spec.Tolerations = []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "olap", Effect: corev1.TaintEffectNoSchedule}}
			},
			wantMoves: []int32{0}, wantProbs: []MigrationProblemKind{}, wantPar: 1,
		},
		"capacity runs out after the first moves": {
			replicas: 3,
			setup: func(w *plannertest.MigWorld) {
				w.SwitchTemplate("pool-b")
				// 15Gi per node: each takes one 10Gi volume; two nodes gone.
				for _, n := range []string{"gke-olap-pool-b-0", "gke-olap-pool-b-1", "gke-olap-pool-b-2"} {
					w.Node(n).Annotations[stsutil.AnnotationCapacityPrefix+"ssd"] = "16106127360"
				}
				w.Node("gke-olap-pool-b-2").Annotations[stsutil.AnnotationCapacityPrefix+"ssd"] = "1073741824"
			},
			wantMoves: []int32{2, 1, 0}, wantProbs: []MigrationProblemKind{ProblemCapacity}, wantPar: 1,
			wantInProbs: "ordinal 0 cannot be placed on the target nodes after the steps before it; the scheduler says: 0/6 nodes are available: 3 node(s) did not have enough free storage",
		},
		"capacity enough for all moves": {
			replicas: 3,
			setup: func(w *plannertest.MigWorld) {
				w.SwitchTemplate("pool-b")
				w.Node("gke-olap-pool-b-0").Annotations[stsutil.AnnotationCapacityPrefix+"ssd"] = "32212254720" // 30Gi
				w.Node("gke-olap-pool-b-1").Annotations[stsutil.AnnotationCapacityPrefix+"ssd"] = "0"
				w.Node("gke-olap-pool-b-2").Annotations[stsutil.AnnotationCapacityPrefix+"ssd"] = "0"
			},
			wantMoves: []int32{2, 1, 0}, wantProbs: []MigrationProblemKind{}, wantPar: 1,
		},
		"RollingUpdate without partition would roll other ordinals": {
			replicas: 3,
			setup: func(w *plannertest.MigWorld) {
				w.SwitchTemplate("pool-b")
				w.S.Live.Spec.UpdateStrategy = appsv1.StatefulSetUpdateStrategy{Type: appsv1.RollingUpdateStatefulSetStrategyType}
			},
			wantMoves: []int32{2, 1, 0}, wantProbs: []MigrationProblemKind{ProblemStrategy}, wantPar: 1,
			// The template change is pending: a partition above every ordinal would be refused
			// next, so only OnDelete is offered.
			wantInProbs: "RollingUpdate with partition 0", notInProbs: "partition above",
		},
		"RollingUpdate with a partition above every ordinal and a pending template": {
			replicas: 3,
			setup: func(w *plannertest.MigWorld) {
				w.SwitchTemplate("pool-b")
				w.S.Live.Spec.UpdateStrategy = appsv1.StatefulSetUpdateStrategy{Type: appsv1.RollingUpdateStatefulSetStrategyType,
					RollingUpdate: &appsv1.RollingUpdateStatefulSetStrategy{Partition: ptr.To[int32](3)}}
			},
			wantMoves: []int32{2, 1, 0}, wantProbs: []MigrationProblemKind{ProblemStrategy}, wantPar: 1,
			wantInProbs: "recreated from the current revision",
		},
		"planned OnDelete (Desired) clears the strategy problem": {
			replicas: 3,
			setup: func(w *plannertest.MigWorld) {
				w.S.Live.Spec.UpdateStrategy = appsv1.StatefulSetUpdateStrategy{Type: appsv1.RollingUpdateStatefulSetStrategyType}
				d := w.S.Live.DeepCopy()
				d.Spec.UpdateStrategy = appsv1.StatefulSetUpdateStrategy{Type: appsv1.OnDeleteStatefulSetStrategyType}
				d.Spec.Template.Spec.NodeSelector = map[string]string{stsutil.LabelNodePool: "pool-b"}
				w.S.Desired = d
			},
			wantMoves: []int32{2, 1, 0}, wantProbs: []MigrationProblemKind{}, wantPar: 1,
		},
		"PDB with no disruptions allowed forbids": {
			replicas:  3,
			setup:     func(w *plannertest.MigWorld) { w.SwitchTemplate("pool-b"); w.AddPDB(0) },
			wantMoves: []int32{2, 1, 0}, wantProbs: []MigrationProblemKind{ProblemPDB}, wantPar: 1,
			wantInProbs: "PodDisruptionBudget olap/hist",
		},
		"PDB lowers max_unavailable": {
			replicas:  3,
			setup:     func(w *plannertest.MigWorld) { w.SwitchTemplate("pool-b"); w.AddPDB(2) },
			opt:       &MigrationOptions{MaxUnavailable: 3},
			wantMoves: []int32{2, 1, 0}, wantProbs: []MigrationProblemKind{}, wantPar: 2,
		},
		"PDB at zero does not block moving a Pod that is already down": {
			replicas: 3,
			setup: func(w *plannertest.MigWorld) {
				w.SwitchTemplate("pool-b")
				w.AddOrdinal(0, "gke-olap-pool-b-0", plannertest.MigRevB, "b0")
				w.AddOrdinal(1, "gke-olap-pool-b-1", plannertest.MigRevB, "b1")
				w.AddPod(2, "", plannertest.MigRevB, "b2", false) // the incident: Pending
				w.AddPDB(0)
			},
			wantMoves: []int32{2}, wantProbs: []MigrationProblemKind{}, wantPar: 1,
		},
		"another ordinal unhealthy": {
			replicas: 3,
			setup: func(w *plannertest.MigWorld) {
				w.SwitchTemplate("pool-b")
				w.Pod(0).Status.Conditions[0].Status = corev1.ConditionFalse
			},
			opt:       &MigrationOptions{Ordinals: []int32{2}, MaxUnavailable: 1, RequireOthersReady: true},
			wantMoves: []int32{2}, wantProbs: []MigrationProblemKind{ProblemOthersUnhealthy}, wantPar: 1,
			wantInProbs: "ordinal 0: Pod hist-0 is not Ready",
		},
		"another ordinal unhealthy but not required": {
			replicas: 3,
			setup: func(w *plannertest.MigWorld) {
				w.SwitchTemplate("pool-b")
				w.Pod(0).Status.Conditions[0].Status = corev1.ConditionFalse
			},
			opt:       &MigrationOptions{Ordinals: []int32{2}, MaxUnavailable: 1},
			wantMoves: []int32{2}, wantProbs: []MigrationProblemKind{}, wantPar: 1,
		},
		"unknown ordinal and claim": {
			replicas: 3, setup: func(w *plannertest.MigWorld) { w.SwitchTemplate("pool-b") },
			opt:       &MigrationOptions{Ordinals: []int32{7}, VolumeClaims: []string{"data"}, MaxUnavailable: 1},
			wantMoves: []int32{}, wantProbs: []MigrationProblemKind{ProblemUnknownClaim, ProblemUnknownOrdinal}, wantPar: 1,
			wantInProbs: "ordinal 7 is not an ordinal of StatefulSet olap/hist (it has ordinals 0..2)",
		},
		"ordinals.start is honoured": {
			replicas: 2,
			setup: func(w *plannertest.MigWorld) {
				w.S.Live.Spec.Ordinals = &appsv1.StatefulSetOrdinals{Start: 5}
				w.S.Pods, w.S.PVCs, w.S.PVs = nil, nil, nil
				w.AddOrdinal(5, "gke-olap-pool-a-0", plannertest.MigRevA, "a5")
				w.AddOrdinal(6, "gke-olap-pool-a-1", plannertest.MigRevA, "a6")
				w.SwitchTemplate("pool-b")
			},
			wantMoves: []int32{6, 5}, wantProbs: []MigrationProblemKind{}, wantPar: 1,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			w := plannertest.NewMigWorld(tc.replicas, "pool-a")
			if tc.setup != nil {
				tc.setup(w)
			}
			opt := defaults
			if tc.opt != nil {
				opt = *tc.opt
			}
			got := NewMigration(w.Final()).Plan(opt)
			if d := cmp.Diff(tc.wantMoves, moveOrdinals(got)); d != "" {
				t.Errorf("moves (-want +got):\n%s", d)
			}
			if d := cmp.Diff(tc.wantProbs, problemKinds(got)); d != "" {
				t.Errorf("problems (-want +got):\n%s\n%+v", d, got.Problems)
			}
			if got.Parallelism != tc.wantPar {
				t.Errorf("parallelism = %d, want %d", got.Parallelism, tc.wantPar)
			}
			var msgs []string
			for _, p := range got.Problems {
				msgs = append(msgs, p.Message, p.Fix)
			}
			if tc.wantInProbs != "" && !strings.Contains(strings.Join(msgs, "\n"), tc.wantInProbs) {
				t.Errorf("problems %q do not mention %q", msgs, tc.wantInProbs)
			}
			if tc.notInProbs != "" && strings.Contains(strings.Join(msgs, "\n"), tc.notInProbs) {
				t.Errorf("problems %q mention %q", msgs, tc.notInProbs)
			}
			wantActions := tc.wantActions
			if wantActions == nil {
				for range got.Moves {
					wantActions = append(wantActions, MigrationMove)
				}
			}
			var gotActions []MigrationAction
			for _, m := range got.Moves {
				gotActions = append(gotActions, m.Action)
				if m.Action == MigrationRestart && len(m.Volumes) != 0 {
					t.Errorf("restart of ordinal %d recreates volumes %+v", m.Ordinal, m.Volumes)
				}
			}
			if d := cmp.Diff(wantActions, gotActions); d != "" {
				t.Errorf("actions (-want +got):\n%s", d)
			}
			if tc.wantReason != "" && (len(got.Moves) == 0 || !strings.Contains(got.Moves[0].Reason, tc.wantReason)) {
				t.Errorf("first move %+v: reason does not mention %q", got.Moves, tc.wantReason)
			}
		})
	}
}

func TestPlanMigrationMoveDetails(t *testing.T) {
	t.Parallel()
	w := plannertest.NewMigWorld(3, "pool-a")
	w.SwitchTemplate("pool-b")
	got := NewMigration(w.Final()).Plan(MigrationOptions{MaxUnavailable: 1})
	want := Move{
		Ordinal: 2, Pod: "hist-2", Action: MigrationMove, FromNode: "gke-olap-pool-a-2", Target: "pool-b",
		Volumes: []planner.Volume{{Claim: "cache", PVC: "cache-hist-2", PV: "pvc-a2-2", PinnedNode: "gke-olap-pool-a-2"}},
		Reason:  "Pod hist-2 runs on node gke-olap-pool-a-2, which fails the template placement pool-b",
	}
	if d := cmp.Diff(want, got.Moves[0], cmp.FilterPath(func(p cmp.Path) bool { return p.String() == "TargetNode" }, cmp.Ignore())); d != "" {
		t.Errorf("move (-want +got):\n%s", d)
	}
	if got.Moves[0].TargetNode == "" || !strings.Contains(got.Moves[0].TargetNode, "pool-b") {
		t.Errorf("target node %q is not on pool-b", got.Moves[0].TargetNode)
	}
	if d := cmp.Diff([]string{"cache"}, got.Claims); d != "" {
		t.Errorf("claims (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]string{"gke-olap-pool-b-0", "gke-olap-pool-b-1", "gke-olap-pool-b-2"}, got.TargetNodes); d != "" {
		t.Errorf("target nodes (-want +got):\n%s", d)
	}
}

func TestDefaultMigrationClaims(t *testing.T) {
	t.Parallel()
	w := plannertest.NewMigWorld(1, "pool-a")
	// A second claim on network storage: PV without node affinity.
	w.S.Live.Spec.VolumeClaimTemplates = append(w.S.Live.Spec.VolumeClaimTemplates, corev1.PersistentVolumeClaim{})
	w.S.Live.Spec.VolumeClaimTemplates[1].Name = "logs"
	w.S.Live.Spec.VolumeClaimTemplates[1].Spec.StorageClassName = ptr.To("standard-rwo")
	w.S.PVCs = append(w.S.PVCs, corev1.PersistentVolumeClaim{})
	w.S.PVCs[1].Namespace, w.S.PVCs[1].Name, w.S.PVCs[1].Spec.VolumeName = plannertest.MigNS, "logs-hist-0", "pd-1"
	w.S.PVs = append(w.S.PVs, corev1.PersistentVolume{})
	w.S.PVs[1].Name = "pd-1"
	// A third claim with no PV yet on TopoLVM.
	w.S.Live.Spec.VolumeClaimTemplates = append(w.S.Live.Spec.VolumeClaimTemplates, corev1.PersistentVolumeClaim{})
	w.S.Live.Spec.VolumeClaimTemplates[2].Name = "scratch"
	w.S.Live.Spec.VolumeClaimTemplates[2].Spec.StorageClassName = ptr.To(plannertest.MigSC)
	if d := cmp.Diff([]string{"cache", "scratch"}, NewMigration(w.Final()).DefaultClaims()); d != "" {
		t.Errorf("claims (-want +got):\n%s", d)
	}
}

// TestNextStep walks one move through every phase, as the executor and the
// real controllers would change the world, and resumes from each phase with
// and without the executor's memory.
func TestNextStep(t *testing.T) {
	t.Parallel()
	const minReady = 30 * time.Second
	oldUIDs := MoveProgress{OldPodUID: "pod-uid-a2", OldPVCUIDs: map[string]plannertest.TypesUID{"cache-hist-2": "pvc-uid-a2"}}
	phases := map[string]struct {
		setup func(w *plannertest.MigWorld)
		want  Step
	}{
		"start: delete the old PVC first": {
			setup: func(w *plannertest.MigWorld) {},
			want: Step{Kind: StepDeletePVCs, PVCs: []ObjectRef{{Name: "cache-hist-2", UID: "pvc-uid-a2"}},
				Pod: ObjectRef{Name: "hist-2", UID: "pod-uid-a2"}, Node: "gke-olap-pool-a-2"},
		},
		"after PVC delete: delete the Pod": {
			setup: func(w *plannertest.MigWorld) { w.Terminate(&w.PVC(2).ObjectMeta) },
			want:  Step{Kind: StepDeletePod, Pod: ObjectRef{Name: "hist-2", UID: "pod-uid-a2"}, Node: "gke-olap-pool-a-2"},
		},
		"Pod terminating: wait": {
			setup: func(w *plannertest.MigWorld) { w.Terminate(&w.PVC(2).ObjectMeta); w.Terminate(&w.Pod(2).ObjectMeta) },
			want:  Step{Kind: StepWait, Pod: ObjectRef{Name: "hist-2", UID: "pod-uid-a2"}, Node: "gke-olap-pool-a-2"},
		},
		"Pod gone, old PVC still terminating: wait": {
			setup: func(w *plannertest.MigWorld) { w.Terminate(&w.PVC(2).ObjectMeta); w.RemovePod(2) },
			want:  Step{Kind: StepWait},
		},
		"both gone: wait for the controller": {
			setup: func(w *plannertest.MigWorld) { w.RemovePVC(2); w.RemovePod(2) },
			want:  Step{Kind: StepWait},
		},
		"controller raced: new Pod on the old terminating PVC is deleted": {
			setup: func(w *plannertest.MigWorld) {
				w.Terminate(&w.PVC(2).ObjectMeta)
				w.AddPod(2, "", plannertest.MigRevB, "race", false)
			},
			want: Step{Kind: StepDeletePod, Pod: ObjectRef{Name: "hist-2", UID: "pod-uid-race"}},
		},
		"controller raced: new Pod scheduled on the old node with the old terminating PVC is deleted": {
			setup: func(w *plannertest.MigWorld) {
				w.Terminate(&w.PVC(2).ObjectMeta)
				w.AddPod(2, "gke-olap-pool-a-2", plannertest.MigRevB, "race", false)
			},
			want: Step{Kind: StepDeletePod, Pod: ObjectRef{Name: "hist-2", UID: "pod-uid-race"}, Node: "gke-olap-pool-a-2"},
		},
		"PVC cache behind: the new Pod Ready on pool-b cannot hold the old PVC, wait": {
			setup: func(w *plannertest.MigWorld) {
				// The Pod watch shows the new Pod Ready on its new PV's node; the PVC watch
				// (dropped and not relisted yet) still shows the old PVC terminating.
				w.Terminate(&w.PVC(2).ObjectMeta)
				w.S.PVs = append(w.S.PVs, func() corev1.PersistentVolume {
					pv := *w.S.PVs[2].DeepCopy()
					pv.Name = "pvc-b2-2"
					pv.Spec.NodeAffinity.Required.NodeSelectorTerms[0].MatchExpressions[0].Values = []string{"gke-olap-pool-b-0"}
					return pv
				}())
				w.AddPod(2, "gke-olap-pool-b-0", plannertest.MigRevB, "b2", true)
			},
			want: Step{Kind: StepWait, Pod: ObjectRef{Name: "hist-2", UID: "pod-uid-b2"}, Node: "gke-olap-pool-b-0"},
		},
		"controller raced: new Pod bound the old PVC (pod-first order)": {
			setup: func(w *plannertest.MigWorld) { w.AddPod(2, "", plannertest.MigRevB, "race", false) },
			want: Step{Kind: StepDeletePVCs, PVCs: []ObjectRef{{Name: "cache-hist-2", UID: "pvc-uid-a2"}},
				Pod: ObjectRef{Name: "hist-2", UID: "pod-uid-race"}},
		},
		"new Pod Pending unschedulable: wait, quoting the scheduler": {
			setup: func(w *plannertest.MigWorld) {
				w.AddPVC(2, "", "b2")
				w.AddPod(2, "", plannertest.MigRevB, "b2", false)
				w.Pod(2).Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse,
					Reason: corev1.PodReasonUnschedulable, Message: "0/6 nodes are available: 3 node(s) were unschedulable."}}
			},
			want: Step{Kind: StepWait, Pod: ObjectRef{Name: "hist-2", UID: "pod-uid-b2"},
				Unschedulable: "0/6 nodes are available: 3 node(s) were unschedulable."},
		},
		"new Pod scheduled, PVC not bound yet: wait": {
			setup: func(w *plannertest.MigWorld) {
				w.AddPVC(2, "", "b2")
				w.AddPod(2, "gke-olap-pool-b-0", plannertest.MigRevB, "b2", false)
			},
			want: Step{Kind: StepWait, Pod: ObjectRef{Name: "hist-2", UID: "pod-uid-b2"}, Node: "gke-olap-pool-b-0"},
		},
		// The hand-over race of a warm move: the claim was created unbound, the scheduler chose
		// a node to provision on, the PV controller bound the claim to the copy on another node.
		"new Pod placed on another node than its bound PV: delete it, the claim stays": {
			setup: func(w *plannertest.MigWorld) {
				w.AddPVC(2, "gke-olap-pool-b-0", "b2")
				w.AddPod(2, "gke-olap-pool-b-1", plannertest.MigRevB, "b2", true)
			},
			want: Step{Kind: StepDeletePod, Pod: ObjectRef{Name: "hist-2", UID: "pod-uid-b2"}, Node: "gke-olap-pool-b-1"},
		},
		"new Pod not Ready yet: wait": {
			setup: func(w *plannertest.MigWorld) {
				w.AddPVC(2, "gke-olap-pool-b-0", "b2")
				w.AddPod(2, "gke-olap-pool-b-0", plannertest.MigRevB, "b2", false)
			},
			want: Step{Kind: StepWait, Pod: ObjectRef{Name: "hist-2", UID: "pod-uid-b2"}, Node: "gke-olap-pool-b-0"},
		},
		"new Pod Ready 1m ago with 30s soak: done": {
			setup: func(w *plannertest.MigWorld) { w.AddOrdinal(2, "gke-olap-pool-b-0", plannertest.MigRevB, "b2") },
			want: Step{Kind: StepDone, Pod: ObjectRef{Name: "hist-2", UID: "pod-uid-b2"}, Node: "gke-olap-pool-b-0",
				ReadySince: plannertest.MigT0.Add(-time.Minute)},
		},
		"new Pod Ready 10s ago: soak": {
			setup: func(w *plannertest.MigWorld) {
				w.AddOrdinal(2, "gke-olap-pool-b-0", plannertest.MigRevB, "b2")
				w.Pod(2).Status.Conditions[0].LastTransitionTime.Time = plannertest.MigT0.Add(-10 * time.Second)
			},
			want: Step{Kind: StepSoak, Pod: ObjectRef{Name: "hist-2", UID: "pod-uid-b2"}, Node: "gke-olap-pool-b-0",
				ReadySince: plannertest.MigT0.Add(-10 * time.Second), Remaining: 20 * time.Second},
		},
	}
	for name, tc := range phases {
		for _, memory := range []bool{true, false} {
			t.Run(name+map[bool]string{true: " (in run)", false: " (resumed)"}[memory], func(t *testing.T) {
				t.Parallel()
				w := plannertest.NewMigWorld(3, "pool-a")
				w.SwitchTemplate("pool-b")
				tc.setup(w)
				pr := MoveProgress{}
				if memory {
					pr = oldUIDs
				}
				got := NewMigration(w.Final()).NextStep(2, []string{"cache"}, pr, minReady, plannertest.MigT0)
				want := tc.want
				want.Ordinal = 2
				if d := cmp.Diff(want, got, cmp.FilterPath(func(p cmp.Path) bool { return p.String() == "Reason" }, cmp.Ignore())); d != "" {
					t.Errorf("step (-want +got):\n%s\nreason: %s", d, got.Reason)
				}
				if got.Reason == "" {
					t.Error("step has no reason")
				}
			})
		}
	}
}

// TestNextStepRestartKeepsPVCs walks a restart in place (same pool, new
// revision under OnDelete) through every phase, in the run and resumed: only
// the Pod is ever deleted, the PVC is kept and the recreated Pod on the same
// node with the same PV is done.
func TestNextStepRestartKeepsPVCs(t *testing.T) {
	t.Parallel()
	phases := map[string]struct {
		setup func(w *plannertest.MigWorld)
		want  StepKind
	}{
		"start: delete only the Pod":           {func(w *plannertest.MigWorld) {}, StepDeletePod},
		"Pod terminating: wait":                {func(w *plannertest.MigWorld) { w.Terminate(&w.Pod(0).ObjectMeta) }, StepWait},
		"Pod gone: wait for the controller":    {func(w *plannertest.MigWorld) { w.RemovePod(0) }, StepWait},
		"new Pod Pending on the PVC: wait":     {func(w *plannertest.MigWorld) { w.AddPod(0, "", plannertest.MigRevB, "new0", false) }, StepWait},
		"new Pod scheduled, not Ready: wait":   {func(w *plannertest.MigWorld) { w.AddPod(0, "gke-olap-pool-a-0", plannertest.MigRevB, "new0", false) }, StepWait},
		"new Pod Ready on the same node: done": {func(w *plannertest.MigWorld) { w.AddPod(0, "gke-olap-pool-a-0", plannertest.MigRevB, "new0", true) }, StepDone},
	}
	for name, tc := range phases {
		for _, memory := range []bool{true, false} {
			t.Run(name+map[bool]string{true: " (in run)", false: " (resumed)"}[memory], func(t *testing.T) {
				t.Parallel()
				w := plannertest.NewMigWorld(1, "pool-a")
				w.S.Live.Status.UpdateRevision = plannertest.MigRevB
				pr := MoveProgress{}
				if memory {
					pr = NewMigration(w.Final()).StartProgress(0, []string{"cache"})
					if pr.OldPodUID != "pod-uid-a0" || len(pr.OldPVCUIDs) != 0 {
						t.Fatalf("progress %+v: want the old Pod and no PVC", pr)
					}
				}
				tc.setup(w)
				got := NewMigration(w.Final()).NextStep(0, []string{"cache"}, pr, 0, plannertest.MigT0)
				if got.Kind != tc.want {
					t.Fatalf("got %+v, want %s", got, tc.want)
				}
				if got.Kind == StepDeletePod && got.Pod.UID != "pod-uid-a0" {
					t.Errorf("deletes Pod %s, want the old one", got.Pod.UID)
				}
			})
		}
	}
}

func TestNextStepFailsWhenRecreatedPodIsOld(t *testing.T) {
	t.Parallel()
	// The live template still selects pool-a: the recreated Pod lands there again.
	w := plannertest.NewMigWorld(1, "pool-b")
	w.AddOrdinal(0, "gke-olap-pool-a-0", plannertest.MigRevA, "again")
	w.S.Live.Spec.Template.Spec.NodeSelector = map[string]string{stsutil.LabelNodePool: "pool-b"}
	pr := MoveProgress{OldPodUID: "pod-uid-a0", OldPVCUIDs: map[string]plannertest.TypesUID{"cache-hist-0": "pvc-uid-a0"}}
	w.AddPVC(0, "", "new") // new PVC, unbound: not old
	got := NewMigration(w.Final()).NextStep(0, []string{"cache"}, pr, 0, plannertest.MigT0)
	if got.Kind != StepFail || !strings.Contains(got.Reason, "does not move it") {
		t.Fatalf("got %+v, want fail", got)
	}
}

func TestMigrationBatch(t *testing.T) {
	t.Parallel()
	w := plannertest.NewMigWorld(4, "pool-a")
	w.AddPod(1, "", plannertest.MigRevA, "p1", false)
	got := NewMigration(w.Final()).Batch([]int32{3, 2, 1, 0}, 2)
	if d := cmp.Diff([]int32{1, 3}, got); d != "" {
		t.Errorf("batch (-want +got):\n%s", d)
	}
	claims := []string{plannertest.MigClaim}
	if down, up := NewMigration(w.Final()).OthersDown(claims, []int32{3}, []int32{2}); cmp.Diff([]string{"ordinal 1: Pod hist-1 is Pending"}, down) != "" || up != nil {
		t.Errorf("others: down %q, coming up %q; want ordinal 1 down (not scheduled)", down, up)
	}
	if down, up := NewMigration(w.Final()).OthersDown(claims, []int32{3}, []int32{1}); len(down)+len(up) != 0 {
		t.Errorf("queued ordinal counted as other: %q %q", down, up)
	}
}

// TestOthersDown: an ordinal left alone that is not Ready is down (the migration refuses)
// unless it is only coming up where and as the template says (the apply waits for it): Pending
// or Running on a node the template selects, at the update revision, its PVC bound to a PV that
// fits.
func TestOthersDown(t *testing.T) {
	t.Parallel()
	claims := []string{plannertest.MigClaim}
	tests := map[string]struct {
		setup    func(w *plannertest.MigWorld)
		down, up string // substrings of ordinal 1's entry; "" when not in that list
	}{
		"Ready": {setup: func(w *plannertest.MigWorld) {}},
		"moved earlier, Running but not Ready yet: coming up": {setup: func(w *plannertest.MigWorld) {
			w.AddOrdinal(1, "gke-olap-pool-b-1", plannertest.MigRevB, "b1")
			w.Pod(1).Status.Conditions = nil
		}, up: "ordinal 1: Pod hist-1 is not Ready (scheduled on node gke-olap-pool-b-1 at the update revision"},
		"moved earlier, Pending on its node (containers starting): coming up": {setup: func(w *plannertest.MigWorld) {
			w.AddPVC(1, "gke-olap-pool-b-1", "b1")
			w.AddPod(1, "gke-olap-pool-b-1", plannertest.MigRevB, "b1", false)
		}, up: "ordinal 1: Pod hist-1 is Pending"},
		"not scheduled: down": {setup: func(w *plannertest.MigWorld) {
			w.AddPVC(1, "", "b1")
			w.AddPod(1, "", plannertest.MigRevB, "b1", false)
		}, down: "ordinal 1: Pod hist-1 is Pending"},
		"on the old pool, not Ready: down": {setup: func(w *plannertest.MigWorld) {
			w.Pod(1).Status.Conditions = nil
		}, down: "ordinal 1: Pod hist-1 is not Ready"},
		"old revision on the target pool, not Ready: down": {setup: func(w *plannertest.MigWorld) {
			w.AddOrdinal(1, "gke-olap-pool-b-1", plannertest.MigRevA, "b1")
			w.Pod(1).Status.Conditions = nil
		}, down: "not Ready"},
		"PV pinned to the old pool: down": {setup: func(w *plannertest.MigWorld) {
			w.AddPVC(1, "gke-olap-pool-a-1", "a1")
			w.AddPod(1, "gke-olap-pool-b-1", plannertest.MigRevB, "b1", false)
		}, down: "Pending"},
		"Failed: down": {setup: func(w *plannertest.MigWorld) {
			w.AddOrdinal(1, "gke-olap-pool-b-1", plannertest.MigRevB, "b1")
			w.Pod(1).Status.Phase = corev1.PodFailed
		}, down: "is Failed"},
		"Pod gone: down": {setup: func(w *plannertest.MigWorld) { w.RemovePod(1) }, down: "does not exist"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			w := plannertest.NewMigWorld(3, "pool-a")
			w.SwitchTemplate("pool-b")
			tc.setup(w)
			down, up := NewMigration(w.Final()).OthersDown(claims, []int32{2, 0})
			check := func(what string, got []string, want string) {
				if want == "" {
					if len(got) != 0 {
						t.Errorf("%s = %q, want none", what, got)
					}
					return
				}
				if len(got) != 1 || !strings.Contains(got[0], want) {
					t.Errorf("%s = %q, want one entry containing %q", what, got, want)
				}
			}
			check("down", down, tc.down)
			check("coming up", up, tc.up)
		})
	}
}

func TestPDBBlocks(t *testing.T) {
	t.Parallel()
	w := plannertest.NewMigWorld(3, "pool-a")
	if got := NewMigration(w.Final()).PDBBlocks([]int32{2, 1}); got != "" {
		t.Errorf("no PDB: %q", got)
	}
	w.AddPDB(1)
	if got := NewMigration(w.Final()).PDBBlocks([]int32{2}); got != "" {
		t.Errorf("one Ready Pod against 1 allowed: %q", got)
	}
	got := NewMigration(w.Final()).PDBBlocks([]int32{2, 1})
	if !strings.Contains(got, "PodDisruptionBudget olap/hist allows 1 disruption(s) now") || !strings.Contains(got, "ordinal(s) 2, 1 takes 2") {
		t.Errorf("two Ready Pods against 1 allowed: %q", got)
	}
	// A Pod that is already down costs nothing (a budget of minAvailable 1, counted after it
	// went down: 2 healthy, 1 desired, 1 allowed).
	w.AddPod(1, "gke-olap-pool-a-1", plannertest.MigRevA, "down", false)
	w.S.PDBs[0].Status.CurrentHealthy, w.S.PDBs[0].Status.DesiredHealthy = 2, 1
	if got := NewMigration(w.Final()).PDBBlocks([]int32{2, 1}); got != "" {
		t.Errorf("one Ready + one down Pod against 1 allowed: %q", got)
	}
	// The status lags the Pods: 1 allowed by it, 0 by the live Pods (2 healthy, 2 desired).
	w.S.PDBs[0].Status.DesiredHealthy = 2
	if got := NewMigration(w.Final()).PDBBlocks([]int32{2}); !strings.Contains(got, "allows 0 disruption(s)") {
		t.Errorf("a Ready Pod against 1 allowed by a status that still counts a down Pod: %q", got)
	}
	w.S.PDBs[0].Status.DisruptionsAllowed = 0
	if got := NewMigration(w.Final()).PDBBlocks([]int32{1}); got != "" {
		t.Errorf("only a down Pod against 0 allowed: %q", got)
	}
	if got := NewMigration(w.Final()).PDBBlocks([]int32{2}); !strings.Contains(got, "allows 0 disruption(s)") {
		t.Errorf("a Ready Pod against 0 allowed: %q", got)
	}
	// A budget the controller has not counted since it changed.
	w.S.PDBs[0].Status.DisruptionsAllowed = 5
	w.S.PDBs[0].Generation, w.S.PDBs[0].Status.ObservedGeneration = 2, 1
	if got := NewMigration(w.Final()).PDBBlocks([]int32{2}); !strings.Contains(got, "has not counted it yet") {
		t.Errorf("stale budget status: %q", got)
	}
	// Budgets of other namespaces or other Pods do not apply.
	w.S.PDBs[0].Namespace = "elsewhere"
	if got := NewMigration(w.Final()).PDBBlocks([]int32{2}); got != "" {
		t.Errorf("other namespace: %q", got)
	}
}

func TestMigrationInFlux(t *testing.T) {
	t.Parallel()
	w := plannertest.NewMigWorld(3, "pool-a")
	if got := NewMigration(w.Final()).InFlux([]string{"cache"}); len(got) != 0 {
		t.Errorf("settled set in flux: %q", got)
	}
	w.Terminate(&w.PVC(1).ObjectMeta)
	w.AddPod(2, "", plannertest.MigRevA, "p2", false)
	w.S.Live.Generation = 3
	want := []string{"PVC cache-hist-1 is being deleted", "Pod hist-2 is not scheduled"}
	if d := cmp.Diff(want, NewMigration(w.Final()).InFlux([]string{"cache"})); d != "" {
		t.Errorf("in flux (-want +got):\n%s", d)
	}
}

// TestPlanWaitsForOthersComingUp: with require_others_ready, an ordinal an earlier apply moved
// whose new Pod is not Ready yet is no problem; the plan names it for the apply to wait for.
func TestPlanWaitsForOthersComingUp(t *testing.T) {
	t.Parallel()
	w := plannertest.NewMigWorld(3, "pool-a")
	w.SwitchTemplate("pool-b")
	w.AddOrdinal(1, "gke-olap-pool-b-1", plannertest.MigRevB, "b1")
	w.Pod(1).Status.Conditions = nil
	p := NewMigration(w.Final()).Plan(MigrationOptions{Order: OrderDescending, MaxUnavailable: 1, RequireOthersReady: true})
	var moves []int32
	for _, m := range p.Moves {
		moves = append(moves, m.Ordinal)
	}
	if d := cmp.Diff([]int32{2, 0}, moves); d != "" || len(p.Problems) != 0 {
		t.Fatalf("moves (-want +got):\n%s\nproblems: %v", d, p.Problems)
	}
	if len(p.OthersComingUp) != 1 || !strings.Contains(p.OthersComingUp[0], "ordinal 1: Pod hist-1 is not Ready") {
		t.Errorf("OthersComingUp = %q, want ordinal 1", p.OthersComingUp)
	}
	p = NewMigration(w.Final()).Plan(MigrationOptions{Order: OrderDescending, MaxUnavailable: 1})
	if len(p.OthersComingUp) != 0 {
		t.Errorf("without require_others_ready: OthersComingUp = %q, want none", p.OthersComingUp)
	}
}
