package planner_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/olapgke/terraform-provider-olapgke/internal/planner"
	"github.com/olapgke/terraform-provider-olapgke/internal/planner/plannertest"
	"github.com/olapgke/terraform-provider-olapgke/internal/stsutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestPodCanSchedule(t *testing.T) {
	t.Parallel()
	podOn := func(sel map[string]string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "olap-4", Namespace: plannertest.NS}, Spec: corev1.PodSpec{NodeSelector: sel}}
	}
	tests := map[string]struct {
		pod    *corev1.Pod
		claims func(w *plannertest.World, ix *planner.Index) []planner.ClaimState
		nodes  func(w *plannertest.World)
		want   planner.Verdict
		// wantIn: substrings of the reason instead of an exact verdict.
		wantIn []string
	}{
		"free pod lands on its pool": {
			pod:    podOn(map[string]string{plannertest.PoolKey: "pool-b"}),
			claims: func(*plannertest.World, *planner.Index) []planner.ClaimState { return nil },
			want:   planner.Verdict{OK: true, Node: "gke-olap-pool-b-0"},
		},
		"PVs pinned to two different nodes": {
			pod: podOn(map[string]string{plannertest.PoolKey: "pool-a"}),
			claims: func(w *plannertest.World, ix *planner.Index) []planner.ClaimState {
				return []planner.ClaimState{{Claim: "data", PVC: "data-olap-0", PV: ix.PV("pv-data-olap-0")}, {Claim: "data2", PVC: "data-olap-1", PV: ix.PV("pv-data-olap-1")}}
			},
			wantIn: []string{"0/6 nodes are available: 3 node(s) didn't match PersistentVolume's node affinity, 3 node(s) didn't match Pod's node affinity/selector."},
		},
		"pinned PV plus a new claim that does not fit on the pinned node": {
			pod: podOn(map[string]string{plannertest.PoolKey: "pool-a"}),
			claims: func(w *plannertest.World, ix *planner.Index) []planner.ClaimState {
				return []planner.ClaimState{{Claim: "data", PVC: "data-olap-0", PV: ix.PV("pv-data-olap-0")}, {Claim: "cache", PVC: "cache-olap-0", StorageClass: plannertest.SCName, RequestBytes: 2000 * plannertest.Gib}}
			},
			// VolumeBinding gives a node several reasons, so the counts add up to more than 6,
			// exactly as kube-scheduler words it.
			wantIn: []string{"0/6 nodes are available: 2 node(s) didn't match PersistentVolume's node affinity, 3 node(s) did not have enough free storage, 3 node(s) didn't match Pod's node affinity/selector."},
		},
		"PV admitting a whole pool (zone-like affinity) picks a node that fits": {
			pod: podOn(map[string]string{plannertest.PoolKey: "pool-a"}),
			claims: func(w *plannertest.World, ix *planner.Index) []planner.ClaimState {
				pv := ix.PV("pv-data-olap-0")
				pv.Spec.NodeAffinity.Required.NodeSelectorTerms[0].MatchExpressions[0] = corev1.NodeSelectorRequirement{Key: plannertest.PoolKey, Operator: corev1.NodeSelectorOpExists}
				return []planner.ClaimState{{Claim: "data", PVC: "data-olap-0", PV: pv}}
			},
			nodes: func(w *plannertest.World) { w.Node(plannertest.NodeName("pool-a", 0)).Spec.Unschedulable = true },
			want:  planner.Verdict{OK: true, Node: "gke-olap-pool-a-1"},
		},
		"untolerated NoSchedule on every node of the pool": {
			pod:    podOn(map[string]string{plannertest.PoolKey: "pool-b"}),
			claims: func(*plannertest.World, *planner.Index) []planner.ClaimState { return nil },
			nodes: func(w *plannertest.World) {
				for i := 0; i < 3; i++ {
					w.Node(plannertest.NodeName("pool-b", i)).Spec.Taints = []corev1.Taint{{Key: "dedicated", Value: "olap", Effect: corev1.TaintEffectNoSchedule}}
				}
			},
			want: planner.Verdict{Reason: "0/6 nodes are available: 3 node(s) didn't match Pod's node affinity/selector, 3 node(s) had untolerated taint(s)."},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			w := plannertest.NewWorld(t, plannertest.MkSet(3), plannertest.TwoPools())
			if tc.nodes != nil {
				tc.nodes(w)
			}
			snap := w.Final()
			ix := planner.NewIndex(&snap)
			got := planner.PodCanSchedule(tc.pod, tc.claims(w, ix), ix)
			if tc.wantIn != nil {
				if got.OK {
					t.Fatalf("got OK %+v", got)
				}
				for _, s := range tc.wantIn {
					if !strings.Contains(got.Reason, s) {
						t.Errorf("reason %q lacks %q", got.Reason, s)
					}
				}
				return
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestOrdinalOf(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]int32{"olap-0": 0, "my-set-12": 12, "olap": -1, "olap-x": -1, "olap--1": 1} {
		if got := stsutil.OrdinalOf(in); got != want {
			t.Errorf("stsutil.OrdinalOf(%q) = %d, want %d", in, got, want)
		}
	}
}
