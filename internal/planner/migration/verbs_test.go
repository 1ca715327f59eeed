package migration

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/olapgke/terraform-provider-olapgke/internal/planner"
	"github.com/olapgke/terraform-provider-olapgke/internal/planner/plannertest"
	"github.com/olapgke/terraform-provider-olapgke/internal/stsutil"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// A restart request names Pods by UID: those Pods restart in place (PVCs kept), their
// successors do not, and a killed run's request is resumed, not renewed.
func TestRestartRequest(t *testing.T) {
	opts := MigrationOptions{Order: OrderDescending, MaxUnavailable: 1, RequireOthersReady: true, Ordinals: []int32{0, 2}}
	w := plannertest.NewMigWorld(3, "pool-a")
	s := w.Final()
	if got := moveOrdinals(NewMigration(s).Plan(opts)); len(got) != 0 {
		t.Fatalf("without a request, up-to-date ordinals plan %v, want nothing", got)
	}
	req := RestartRequestFor(s, []int32{0, 2}, nil, plannertest.MigT0)
	if d := cmp.Diff(map[string]string{"hist-0": "pod-uid-a0", "hist-2": "pod-uid-a2"}, req.Pods); d != "" {
		t.Fatalf("request pods (-want +got):\n%s", d)
	}
	v := NewMigration(WithRestart(s, req))
	p := v.Plan(opts)
	if d := cmp.Diff([]int32{2, 0}, moveOrdinals(p)); d != "" || !p.OK() {
		t.Fatalf("moves (-want +got):\n%s problems %+v", d, p.Problems)
	}
	for _, m := range p.Moves {
		if m.Action != MigrationRestart || len(m.Volumes) != 0 {
			t.Errorf("ordinal %d: %s with volumes %v, want a restart keeping its PVCs", m.Ordinal, m.Action, m.Volumes)
		}
	}
	if s.Live.Annotations[stsutil.AnnotationRestart] != "" {
		t.Error("WithRestart changed the snapshot it was given")
	}
	// The step deletes the requested Pod, never its PVC.
	pr := v.StartProgress(2, []string{plannertest.MigClaim})
	if st := v.NextStep(2, []string{plannertest.MigClaim}, pr, 0, plannertest.MigT0); st.Kind != StepDeletePod || st.Pod.UID != "pod-uid-a2" {
		t.Fatalf("next step of ordinal 2 = %+v, want delete_pod of pod-uid-a2", st)
	}
	// Ordinal 2 came back (another UID) before the run was killed: the same request resumes.
	w.AddPod(2, "gke-olap-pool-a-2", plannertest.MigRevA, "b2", true)
	s2 := w.Final()
	again := RestartRequestFor(WithRestart(s2, req), []int32{0, 2}, &req, plannertest.MigT0.Add(1e9))
	if d := cmp.Diff(req, again); d != "" {
		t.Fatalf("resumed request (-want +got):\n%s", d)
	}
	p2 := NewMigration(WithRestart(s2, again)).Plan(opts)
	if d := cmp.Diff([]int32{0}, moveOrdinals(p2)); d != "" {
		t.Errorf("resumed moves (-want +got):\n%s", d)
	}
	v2 := NewMigration(WithRestart(s2, again))
	if st := v2.NextStep(2, []string{plannertest.MigClaim}, MoveProgress{}, 0, plannertest.MigT0); st.Kind != StepDone {
		t.Errorf("ordinal 2 restarted already: next step %+v, want done", st)
	}
	// Another set of ordinals is a new request.
	other := RestartRequestFor(s2, []int32{1}, &req, plannertest.MigT0)
	if d := cmp.Diff(map[string]string{"hist-1": "pod-uid-a1"}, other.Pods); d != "" {
		t.Errorf("new request (-want +got):\n%s", d)
	}
	// A malformed annotation restarts nothing.
	bad := *s2
	bad.Live = s2.Live.DeepCopy()
	bad.Live.Annotations = map[string]string{stsutil.AnnotationRestart: "{not json"}
	if got := moveOrdinals(NewMigration(&bad).Plan(opts)); len(got) != 0 {
		t.Errorf("malformed request plans %v", got)
	}
}

// An evacuation taint makes the ordinals pinned to the pool's nodes move, onto nodes outside
// it only; when the template admits no other node, the plan refuses before anything changes.
func TestEvacuation(t *testing.T) {
	opts := MigrationOptions{Order: OrderDescending, MaxUnavailable: 1, RequireOthersReady: true}
	poolA := []string{"gke-olap-pool-a-0", "gke-olap-pool-a-1", "gke-olap-pool-a-2"}

	t.Run("template admits another pool", func(t *testing.T) {
		w := plannertest.NewMigWorld(3, "pool-a")
		w.S.Live.Spec.Template.Spec.NodeSelector = nil
		w.S.Live.Spec.Template.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
				MatchExpressions: []corev1.NodeSelectorRequirement{{Key: stsutil.LabelNodePool, Operator: corev1.NodeSelectorOpIn, Values: []string{"pool-a", "pool-b"}}},
			}}},
		}}
		s := w.Final()
		if got := moveOrdinals(NewMigration(s).Plan(opts)); len(got) != 0 {
			t.Fatalf("without the taint: moves %v", got)
		}
		// Only one node of the pool: only the ordinal pinned there moves.
		p1 := NewMigration(WithEvacuation(s, poolA[1:2], "pool-a")).Plan(opts)
		if d := cmp.Diff([]int32{1}, moveOrdinals(p1)); d != "" || !p1.OK() {
			t.Fatalf("one node evacuated: moves (-want +got):\n%s problems %+v", d, p1.Problems)
		}
		ev := WithEvacuation(s, poolA, "pool-a")
		if planner.Evacuating(&s.Nodes[0]) != "" {
			t.Fatal("WithEvacuation changed the snapshot it was given")
		}
		p := NewMigration(ev).Plan(opts)
		if d := cmp.Diff([]int32{2, 1, 0}, moveOrdinals(p)); d != "" || !p.OK() {
			t.Fatalf("moves (-want +got):\n%s problems %+v", d, p.Problems)
		}
		for _, m := range p.Moves {
			if m.Action != MigrationMove || !strings.Contains(m.Reason, "is being evacuated (taint olapgke.io/evacuating=pool-a)") {
				t.Errorf("ordinal %d: %s (%s), want a move naming the evacuation", m.Ordinal, m.Action, m.Reason)
			}
			if !strings.Contains(m.TargetNode, "pool-b") {
				t.Errorf("ordinal %d lands on %q, want a pool-b node", m.Ordinal, m.TargetNode)
			}
		}
		for _, n := range p.TargetNodes {
			if slices.Contains(poolA, n) {
				t.Errorf("target nodes %v include evacuated %s", p.TargetNodes, n)
			}
		}
	})

	t.Run("template admits only the pool", func(t *testing.T) {
		w := plannertest.NewMigWorld(3, "pool-a")
		p := NewMigration(WithEvacuation(w.Final(), poolA, "pool-a")).Plan(opts)
		if d := cmp.Diff([]MigrationProblemKind{ProblemTargetNodesMissing}, problemKinds(p)); d != "" {
			t.Fatalf("problems (-want +got):\n%s", d)
		}
		if msg := fmt.Sprint(p.Problems); !strings.Contains(msg, "evacuated") {
			t.Errorf("problem %q does not say the nodes are evacuated", msg)
		}
	})
}

func TestPinnedStatefulSets(t *testing.T) {
	w := plannertest.NewMigWorld(3, "pool-a")
	other := w.S.Live.DeepCopy()
	other.Name = "broker" // no PVCs of its own
	sets := []appsv1.StatefulSet{*other, *w.S.Live}
	got := PinnedStatefulSets(sets, w.S.PVs, []string{"gke-olap-pool-a-1"})
	if d := cmp.Diff([]types.NamespacedName{{Namespace: plannertest.MigNS, Name: plannertest.MigSet}}, got); d != "" {
		t.Errorf("pinned to pool-a-1 (-want +got):\n%s", d)
	}
	if got := PinnedStatefulSets(sets, w.S.PVs, []string{"gke-olap-pool-b-0"}); len(got) != 0 {
		t.Errorf("pinned to an empty node: %v", got)
	}
	// An ordinal above the replicas (scaled down, PVC retained) is not the set's to move.
	w.S.Live.Spec.Replicas = ptr.To(int32(1))
	if got := PinnedStatefulSets([]appsv1.StatefulSet{*w.S.Live}, w.S.PVs, []string{"gke-olap-pool-a-2"}); len(got) != 0 {
		t.Errorf("pinned by a retained PVC of a removed ordinal: %v", got)
	}
}
