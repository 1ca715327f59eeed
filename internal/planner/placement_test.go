package planner

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestPodCanSchedule(t *testing.T) {
	t.Parallel()
	podOn := func(sel map[string]string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "olap-4"}, Spec: corev1.PodSpec{NodeSelector: sel}}
	}
	tests := map[string]struct {
		pod    *corev1.Pod
		claims func(w *world, ix *Index) []ClaimState
		nodes  func(w *world)
		want   Verdict
		// wantIn: substrings of the reason instead of an exact verdict.
		wantIn []string
	}{
		"free pod lands on its pool": {
			pod:    podOn(map[string]string{poolKey: "pool-b"}),
			claims: func(*world, *Index) []ClaimState { return nil },
			want:   Verdict{OK: true, Node: "gke-olap-pool-b-0"},
		},
		"PVs pinned to two different nodes": {
			pod: podOn(map[string]string{poolKey: "pool-a"}),
			claims: func(w *world, ix *Index) []ClaimState {
				return []ClaimState{{Claim: "data", PVC: "data-olap-0", PV: ix.PV("pv-data-olap-0")}, {Claim: "data", PVC: "data-olap-1", PV: ix.PV("pv-data-olap-1")}}
			},
			wantIn: []string{"ordinal 4: the Pod's PVs are pinned to different nodes", "PV pv-data-olap-0 (PVC data-olap-0) admits [gke-olap-pool-a-0]", "PV pv-data-olap-1 (PVC data-olap-1) admits [gke-olap-pool-a-1]"},
		},
		"pinned PV plus a new claim that does not fit on the pinned node": {
			pod: podOn(map[string]string{poolKey: "pool-a"}),
			claims: func(w *world, ix *Index) []ClaimState {
				return []ClaimState{{Claim: "data", PVC: "data-olap-0", PV: ix.PV("pv-data-olap-0")}, {Claim: "cache", PVC: "cache-olap-0", StorageClass: scName, RequestBytes: 2000 * gib}}
			},
			wantIn: []string{"PV pv-data-olap-0 is pinned to node gke-olap-pool-a-0 (topology.topolvm.io/node); that node has only 1000Gi free for storage class topolvm-ssd (node annotation capacity.topolvm.io/ssd) but new PVC(s) cache-olap-0 need 2000Gi"},
		},
		"PV admitting a whole pool (zone-like affinity) picks a node that fits": {
			pod: podOn(map[string]string{poolKey: "pool-a"}),
			claims: func(w *world, ix *Index) []ClaimState {
				pv := ix.PV("pv-data-olap-0")
				pv.Spec.NodeAffinity.Required.NodeSelectorTerms[0].MatchExpressions[0] = corev1.NodeSelectorRequirement{Key: poolKey, Operator: corev1.NodeSelectorOpExists}
				return []ClaimState{{Claim: "data", PVC: "data-olap-0", PV: pv}}
			},
			nodes: func(w *world) { w.node(nodeName("pool-a", 0)).Spec.Unschedulable = true },
			want:  Verdict{OK: true, Node: "gke-olap-pool-a-1"},
		},
		"untolerated NoSchedule on every node of the pool": {
			pod:    podOn(map[string]string{poolKey: "pool-b"}),
			claims: func(*world, *Index) []ClaimState { return nil },
			nodes: func(w *world) {
				for i := 0; i < 3; i++ {
					w.node(nodeName("pool-b", i)).Spec.Taints = []corev1.Taint{{Key: "dedicated", Value: "olap", Effect: corev1.TaintEffectNoSchedule}}
				}
			},
			want: Verdict{Reason: "ordinal 4: no node can run Pod olap-4: 0/6 nodes are available: 3 node(s) fails the pod's nodeSelector cloud.google.com/gke-nodepool=pool-b, 3 node(s) has taint dedicated=olap:NoSchedule the pod does not tolerate"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			w := newWorld(t, mkSet(3), twoPools())
			if tc.nodes != nil {
				tc.nodes(w)
			}
			ix := NewIndex(&w.snap)
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
		if got := OrdinalOf(in); got != want {
			t.Errorf("OrdinalOf(%q) = %d, want %d", in, got, want)
		}
	}
}
