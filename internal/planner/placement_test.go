package planner

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/olapgke/terraform-provider-olapgke/internal/stsutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestPodCanSchedule(t *testing.T) {
	t.Parallel()
	podOn := func(sel map[string]string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "olap-4", Namespace: NS}, Spec: corev1.PodSpec{NodeSelector: sel}}
	}
	tests := map[string]struct {
		pod    *corev1.Pod
		claims func(w *World, ix *Index) []ClaimState
		nodes  func(w *World)
		want   Verdict
		// wantIn: substrings of the reason instead of an exact verdict.
		wantIn []string
	}{
		"free pod lands on its pool": {
			pod:    podOn(map[string]string{PoolKey: "pool-b"}),
			claims: func(*World, *Index) []ClaimState { return nil },
			want:   Verdict{OK: true, Node: "gke-olap-pool-b-0"},
		},
		"PVs pinned to two different nodes": {
			pod: podOn(map[string]string{PoolKey: "pool-a"}),
			claims: func(w *World, ix *Index) []ClaimState {
				return []ClaimState{{Claim: "data", PVC: "data-olap-0", PV: ix.PV("pv-data-olap-0")}, {Claim: "data2", PVC: "data-olap-1", PV: ix.PV("pv-data-olap-1")}}
			},
			wantIn: []string{"0/6 nodes are available: 3 node(s) didn't match PersistentVolume's node affinity, 3 node(s) didn't match Pod's node affinity/selector."},
		},
		"pinned PV plus a new claim that does not fit on the pinned node": {
			pod: podOn(map[string]string{PoolKey: "pool-a"}),
			claims: func(w *World, ix *Index) []ClaimState {
				return []ClaimState{{Claim: "data", PVC: "data-olap-0", PV: ix.PV("pv-data-olap-0")}, {Claim: "cache", PVC: "cache-olap-0", StorageClass: SCName, RequestBytes: 2000 * Gib}}
			},
			// VolumeBinding gives a node several reasons, so the counts add up to more than 6,
			// exactly as kube-scheduler words it.
			wantIn: []string{"0/6 nodes are available: 2 node(s) didn't match PersistentVolume's node affinity, 3 node(s) did not have enough free storage, 3 node(s) didn't match Pod's node affinity/selector."},
		},
		"PV admitting a whole pool (zone-like affinity) picks a node that fits": {
			pod: podOn(map[string]string{PoolKey: "pool-a"}),
			claims: func(w *World, ix *Index) []ClaimState {
				pv := ix.PV("pv-data-olap-0")
				pv.Spec.NodeAffinity.Required.NodeSelectorTerms[0].MatchExpressions[0] = corev1.NodeSelectorRequirement{Key: PoolKey, Operator: corev1.NodeSelectorOpExists}
				return []ClaimState{{Claim: "data", PVC: "data-olap-0", PV: pv}}
			},
			nodes: func(w *World) { w.Node(NodeName("pool-a", 0)).Spec.Unschedulable = true },
			want:  Verdict{OK: true, Node: "gke-olap-pool-a-1"},
		},
		"untolerated NoSchedule on every node of the pool": {
			pod:    podOn(map[string]string{PoolKey: "pool-b"}),
			claims: func(*World, *Index) []ClaimState { return nil },
			nodes: func(w *World) {
				for i := 0; i < 3; i++ {
					w.Node(NodeName("pool-b", i)).Spec.Taints = []corev1.Taint{{Key: "dedicated", Value: "olap", Effect: corev1.TaintEffectNoSchedule}}
				}
			},
			want: Verdict{Reason: "0/6 nodes are available: 3 node(s) didn't match Pod's node affinity/selector, 3 node(s) had untolerated taint(s)."},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			w := NewWorld(t, MkSet(3), TwoPools())
			if tc.nodes != nil {
				tc.nodes(w)
			}
			snap := w.Final()
			ix := NewIndex(&snap)
			got := PodCanSchedule(tc.pod, tc.claims(w, ix), ix)
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
