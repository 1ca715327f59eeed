package migration

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/google/go-cmp/cmp"
	"github.com/olapgke/terraform-provider-olapgke/internal/planner"
	"github.com/olapgke/terraform-provider-olapgke/internal/planner/plannertest"
	"github.com/olapgke/terraform-provider-olapgke/internal/stsutil"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// freshPoolB makes pool-b's nodes look as a pool created moments ago does under real
// TopoLVM: no capacity annotation (hence no CSIStorageCapacity in final()), and, with
// unregistered, no topology label either.
func freshPoolB(w *plannertest.MigWorld, unregistered bool) {
	for i := range w.S.Nodes {
		n := &w.S.Nodes[i]
		if n.Labels[stsutil.LabelNodePool] != "pool-b" {
			continue
		}
		delete(n.Annotations, stsutil.AnnotationCapacityPrefix+"ssd")
		if unregistered {
			delete(n.Labels, stsutil.LabelTopoLVMNode)
		}
	}
}

var poolBNodes = []string{"gke-olap-pool-b-0", "gke-olap-pool-b-1", "gke-olap-pool-b-2"}

// TestMigrationWaitsForTopoLVMOnFreshPool: a move onto a pool whose nodes TopoLVM is not
// ready on yet plans its moves (the same as once ready), no problem, and names the nodes to
// wait for; once ready the plan is the same without waits; the engine's StepCheck agrees.
func TestMigrationWaitsForTopoLVMOnFreshPool(t *testing.T) {
	t.Parallel()
	type want struct {
		probs []MigrationProblemKind
		waits []string
		why   string // in every wait reason
	}
	tests := map[string]struct {
		setup func(w *plannertest.MigWorld)
		want  want
	}{
		"capacity not published yet": {
			setup: func(w *plannertest.MigWorld) { freshPoolB(w, false) },
			want:  want{waits: poolBNodes, why: "no CSIStorageCapacity of StorageClass topolvm-provisioner"},
		},
		"CSI driver not registered yet": {
			setup: func(w *plannertest.MigWorld) { freshPoolB(w, true) },
			want:  want{waits: poolBNodes, why: "CSI driver is not registered"},
		},
		"start-up taint (capacity published)": {
			setup: func(w *plannertest.MigWorld) {
				for i := range w.S.Nodes {
					if w.S.Nodes[i].Labels[stsutil.LabelNodePool] == "pool-b" {
						w.S.Nodes[i].Spec.Taints = []corev1.Taint{{Key: planner.TaintStorageNotReady, Value: "true", Effect: corev1.TaintEffectNoSchedule}}
					}
				}
			},
			want: want{waits: poolBNodes, why: "start-up taint"},
		},
		"capacity published as 0 before TopoLVM's controller saw the nodes": {
			setup: func(w *plannertest.MigWorld) {
				for _, n := range poolBNodes {
					w.S.Capacities = append(w.S.Capacities, storagev1.CSIStorageCapacity{
						ObjectMeta:       metav1.ObjectMeta{Namespace: "topolvm-system", Name: "csisc-" + n},
						NodeTopology:     &metav1.LabelSelector{MatchLabels: map[string]string{stsutil.LabelTopoLVMNode: n}},
						StorageClassName: plannertest.MigSC, Capacity: ptr.To(resource.MustParse("0")),
					})
				}
			},
			want: want{waits: poolBNodes, why: "says 0 while capacity.topolvm.io/ssd says"},
		},
		"one node not ready, the others take the moves": {
			setup: func(w *plannertest.MigWorld) {
				delete(w.Node("gke-olap-pool-b-2").Annotations, stsutil.AnnotationCapacityPrefix+"ssd")
			},
			want: want{},
		},
		"ready but too small: refused, no wait": {
			setup: func(w *plannertest.MigWorld) {
				for _, n := range poolBNodes {
					w.Node(n).Annotations[stsutil.AnnotationCapacityPrefix+"ssd"] = plannertest.CapacityBytes("1Gi")
				}
			},
			want: want{probs: []MigrationProblemKind{ProblemCapacity, ProblemCapacity, ProblemCapacity}},
		},
		"not ready and would not fit anyway (CPU): refused, no wait": {
			setup: func(w *plannertest.MigWorld) {
				freshPoolB(w, false)
				w.S.Live.Spec.Template.Spec.Containers = []corev1.Container{{Name: "olap", Image: "olap:1",
					Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("64")}}}}
			},
			want: want{probs: []MigrationProblemKind{ProblemUnschedulable, ProblemUnschedulable, ProblemUnschedulable}},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			w := plannertest.NewMigWorld(3, "pool-a")
			w.SwitchTemplate("pool-b")
			tc.setup(w)
			v := NewMigration(w.Final())
			p := v.Plan(MigrationOptions{Order: OrderDescending, MaxUnavailable: 1})
			var kinds []MigrationProblemKind
			for _, pr := range p.Problems {
				kinds = append(kinds, pr.Kind)
			}
			if diff := cmp.Diff(tc.want.probs, kinds); diff != "" {
				t.Errorf("problems (-want +got):\n%s\n%v", diff, p.Problems)
			}
			var waits []string
			for _, nw := range p.TopoLVMWaits {
				waits = append(waits, nw.Node)
				if !strings.Contains(nw.Reason, tc.want.why) {
					t.Errorf("wait %s: reason %q lacks %q", nw.Node, nw.Reason, tc.want.why)
				}
			}
			if diff := cmp.Diff(tc.want.waits, waits); diff != "" {
				t.Errorf("waits (-want +got):\n%s", diff)
			}
			if got := movesOf(p); fmt.Sprint(got) != "[2 1 0]" {
				t.Errorf("moves %v, want [2 1 0]", got)
			}
			// One decision: the executor's check before ordinal 2's first deletion agrees.
			why, wait := NewMigration(w.Final()).StepCheck(2, MigrationMove, p.Claims)
			switch {
			case len(tc.want.waits) > 0 && (len(wait) == 0 || why == ""):
				t.Errorf("StepCheck = %q, %v; want a wait", why, wait)
			case len(tc.want.waits) == 0 && len(wait) > 0:
				t.Errorf("StepCheck waits %v; want none", wait)
			case len(tc.want.probs) > 0 && why == "":
				t.Errorf("StepCheck lets a step that does not fit go")
			}
		})
	}
}

// TestTopoLVMWaitKeepsMovesStable: the moves planned while waiting are those planned once
// TopoLVM is ready (Terraform plans again at apply and requires the same values).
func TestTopoLVMWaitKeepsMovesStable(t *testing.T) {
	t.Parallel()
	ready := plannertest.NewMigWorld(3, "pool-a")
	ready.SwitchTemplate("pool-b")
	fresh := plannertest.NewMigWorld(3, "pool-a")
	fresh.SwitchTemplate("pool-b")
	freshPoolB(fresh, true)
	opts := MigrationOptions{Order: OrderDescending, MaxUnavailable: 1}
	a := NewMigration(fresh.Final()).Plan(opts)
	b := NewMigration(ready.Final()).Plan(opts)
	strip := func(ms []Move) []Move {
		out := append([]Move(nil), ms...)
		for i := range out {
			out[i].TargetNode = "" // a prediction, not in `moves`
		}
		return out
	}
	if diff := cmp.Diff(strip(b.Moves), strip(a.Moves)); diff != "" {
		t.Errorf("moves while waiting differ from moves once ready (-ready +waiting):\n%s", diff)
	}
	if len(a.TopoLVMWaits) != 3 || len(b.TopoLVMWaits) != 0 || !a.OK() || !b.OK() {
		t.Errorf("waits %v / %v, problems %v / %v", a.TopoLVMWaits, b.TopoLVMWaits, a.Problems, b.Problems)
	}
}

func movesOf(p MigrationPlan) []int32 {
	out := []int32{}
	for _, m := range p.Moves {
		out = append(out, m.Ordinal)
	}
	return out
}

// TestTopoLVMWaitPlansConcurrently plans fresh-pool migrations from several goroutines at once,
// as parallel applies in one provider process do. Under -race (make test-race) it fails when
// the TopoLVM-ready assumption writes shared state (once: a package-level Quantity whose
// String caches its text).
func TestTopoLVMWaitPlansConcurrently(t *testing.T) {
	const n = 4
	worlds := make([]*planner.Snapshot, n)
	for i := range worlds {
		w := plannertest.NewMigWorld(3, "pool-a")
		w.SwitchTemplate("pool-b")
		freshPoolB(w, true)
		worlds[i] = w.Final()
	}
	start := make(chan struct{})
	waits := make([]int, n)
	var wg sync.WaitGroup
	for i := range worlds {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			waits[i] = len(NewMigration(worlds[i]).Plan(MigrationOptions{Order: OrderDescending, MaxUnavailable: 1}).TopoLVMWaits)
		}()
	}
	close(start)
	wg.Wait()
	for i, w := range waits {
		if w != 3 {
			t.Errorf("plan %d: %d TopoLVM waits, want 3", i, w)
		}
	}
}
