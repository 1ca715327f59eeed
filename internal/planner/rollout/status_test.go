package rollout

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/olapgke/terraform-provider-olapgke/internal/planner/plannertest"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestRollout(t *testing.T) {
	t.Parallel()
	const sched = "0/6 nodes are available: 3 node(s) didn't match PersistentVolume's node affinity, 3 node(s) didn't match Pod's node affinity/selector."
	tests := map[string]struct {
		mutate       func(w *plannertest.World)
		wantComplete bool
		wantStalled  bool
		wantStuck    []StuckOrdinal
	}{
		"complete": {mutate: func(*plannertest.World) {}, wantComplete: true},
		"stalled incident: ordinal 2 Pending at the update revision": {
			mutate: func(w *plannertest.World) {
				w.Snap.Live.Status.UpdateRevision = "olap-new"
				w.Snap.Pods = w.Snap.Pods[:2]
				pending := w.Snap.Live.DeepCopy()
				plannertest.ToPoolB(pending)
				w.AddPod(pending, 2, "", "olap-new", false)
				w.Snap.Pods[2].Status.Conditions[0].Message = sched
			},
			wantStalled: true,
			wantStuck:   []StuckOrdinal{{Ordinal: 2, Pod: "olap-2", Phase: "Pending", Revision: "olap-new", Reason: "Unschedulable", Message: sched}},
		},
		"OnDelete with stale Pods is complete": {
			mutate: func(w *plannertest.World) {
				plannertest.OnDelete(w.Snap.Live)
				w.Snap.Live.Status.UpdateRevision = "olap-new"
			},
			wantComplete: true,
		},
		"missing Pod is not complete but not stuck": {
			mutate:       func(w *plannertest.World) { w.Snap.Pods = w.Snap.Pods[:2] },
			wantComplete: false,
		},
		"terminating Pod is stuck": {
			mutate: func(w *plannertest.World) {
				w.Snap.Pods[1].DeletionTimestamp = &metav1.Time{}
			},
			wantStalled: true,
			wantStuck:   []StuckOrdinal{{Ordinal: 1, Pod: "olap-1", Node: "gke-olap-pool-a-1", Phase: "Terminating", Revision: "REV"}},
		},
		"controller has not observed the spec": {
			mutate:       func(w *plannertest.World) { w.Snap.Live.Generation = 2 },
			wantComplete: false,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			w := plannertest.NewWorld(t, plannertest.MkSet(3), plannertest.TwoPools())
			rev := w.Snap.Live.Status.UpdateRevision
			tc.mutate(w)
			got := Rollout(w.Snap.Live, w.Snap.Pods)
			for i := range tc.wantStuck {
				if tc.wantStuck[i].Revision == "REV" {
					tc.wantStuck[i].Revision = rev
				}
			}
			if got.Complete != tc.wantComplete || got.Stalled() != tc.wantStalled {
				t.Errorf("complete=%v stalled=%v, want %v %v", got.Complete, got.Stalled(), tc.wantComplete, tc.wantStalled)
			}
			if diff := cmp.Diff(tc.wantStuck, got.Stuck); diff != "" {
				t.Errorf("stuck (-want +got):\n%s", diff)
			}
		})
	}
}

func TestStuckOrdinalSummary(t *testing.T) {
	t.Parallel()
	s := StuckOrdinal{Ordinal: 2, Pod: "olap-2", Phase: string(corev1.PodPending), Revision: "olap-x", Reason: "Unschedulable", Message: "0/6 nodes are available"}
	want := "ordinal 2 (Pod olap-2) is Pending at revision olap-x: Unschedulable: 0/6 nodes are available"
	if got := s.Summary(); got != want {
		t.Errorf("got %q\nwant %q", got, want)
	}
}
