package rollout

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/olapgke/terraform-provider-olapgke/internal/planner"
	"github.com/olapgke/terraform-provider-olapgke/internal/planner/plannertest"
	"github.com/olapgke/terraform-provider-olapgke/internal/stsutil"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/olapgke/terraform-provider-olapgke/internal/k8sfeatures"
)

// retainedClaimGrowth is a 2-replica set whose scale-down retained data-olap-2 (pinned to node),
// with the claim template grown to gi GiB (an immutable change: the object is re-created).
func retainedClaimGrowth(node string, gi int64) func(t *testing.T) *plannertest.World {
	return func(t *testing.T) *plannertest.World {
		w := plannertest.NewWorld(t, plannertest.MkSet(2), plannertest.TwoPools())
		w.AddBoundClaim("data-olap-2", w.Snap.Live.Spec.VolumeClaimTemplates[0], node)
		w.Desire(func(s *appsv1.StatefulSet) {
			s.Spec.VolumeClaimTemplates[0].Spec.Resources.Requests[corev1.ResourceStorage] = *resource.NewQuantity(gi*plannertest.Gib, resource.BinarySI)
		})
		w.Snap.StorageClasses[0].AllowVolumeExpansion = ptr.To(true)
		w.Snap.Immutable = &planner.ImmutableChange{Fields: []string{"spec"}}
		return w
	}
}

func whenScaledDelete(s *appsv1.StatefulSet) {
	s.Spec.PersistentVolumeClaimRetentionPolicy.WhenScaled = appsv1.DeletePersistentVolumeClaimRetentionPolicyType
}

func requiredPool(pool string) func(*appsv1.StatefulSet) {
	return func(s *appsv1.StatefulSet) {
		s.Spec.Template.Spec.NodeSelector = nil
		s.Spec.Template.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
				MatchExpressions: []corev1.NodeSelectorRequirement{{Key: plannertest.PoolKey, Operator: corev1.NodeSelectorOpIn, Values: []string{pool}}},
			}}},
		}}
	}
}

func TestBuild(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		world func(t *testing.T) *plannertest.World
		want  []string
		// wantStall is the stuck ordinals, nil when the rollout completes.
		wantStall      []int32
		wantStallWave  int
		wantMaxUnavail int32
		// wantReason: ordinal -> substrings of its Reason.
		wantReason map[int32][]string
		check      func(t *testing.T, w *plannertest.World, p *Plan)
	}{
		"seed incident under RollingUpdate: highest ordinal recreated, Pending, rollout stalls": {
			world: func(t *testing.T) *plannertest.World {
				return plannertest.NewWorld(t, plannertest.MkSet(3), plannertest.TwoPools()).Desire(plannertest.ToPoolB)
			},
			want:      []string{"0 recreate w3 NO blocked", "1 recreate w2 NO blocked", "2 recreate w1 NO"},
			wantStall: []int32{2}, wantStallWave: 1, wantMaxUnavail: 1,
			wantReason: map[int32][]string{2: {"0/6 nodes are available: 3 node(s) didn't match PersistentVolume's node affinity, 3 node(s) didn't match Pod's node affinity/selector."}},
		},
		"seed incident with required node affinity names the failing term": {
			world: func(t *testing.T) *plannertest.World {
				return plannertest.NewWorld(t, plannertest.MkSet(3), plannertest.TwoPools()).Desire(requiredPool("pool-b"))
			},
			want:      []string{"0 recreate w3 NO blocked", "1 recreate w2 NO blocked", "2 recreate w1 NO"},
			wantStall: []int32{2}, wantStallWave: 1, wantMaxUnavail: 1,
			wantReason: map[int32][]string{2: {"0/6 nodes are available: 3 node(s) didn't match PersistentVolume's node affinity, 3 node(s) didn't match Pod's node affinity/selector."}},
		},
		"seed incident under OnDelete: every ordinal stranded (kept, could not come back if deleted)": {
			world: func(t *testing.T) *plannertest.World {
				w := plannertest.NewWorld(t, plannertest.MkSet(3), plannertest.TwoPools())
				plannertest.OnDelete(w.Snap.Live)
				return w.Desire(plannertest.ToPoolB)
			},
			want: []string{"0 stranded w0 ok", "1 stranded w0 ok", "2 stranded w0 ok"},
			wantReason: map[int32][]string{
				0: {"ordinal 0: PV pv-data-olap-0 is pinned to node gke-olap-pool-a-0"},
				1: {"ordinal 1: PV pv-data-olap-1 is pinned to node gke-olap-pool-a-1"},
			},
		},
		"RollingUpdate image change rolls high to low": {
			world: func(t *testing.T) *plannertest.World {
				return plannertest.NewWorld(t, plannertest.MkSet(3), plannertest.TwoPools()).Desire(plannertest.NewImage)
			},
			want:           []string{"0 recreate w3 ok", "1 recreate w2 ok", "2 recreate w1 ok"},
			wantMaxUnavail: 1,
			check: func(t *testing.T, w *plannertest.World, p *Plan) {
				if !p.TemplateChanged || p.UpdateRevision == w.Snap.Live.Status.UpdateRevision {
					t.Errorf("TemplateChanged=%v UpdateRevision=%s live=%s", p.TemplateChanged, p.UpdateRevision, w.Snap.Live.Status.UpdateRevision)
				}
				if p.Disruption.Waves != 3 || p.Disruption.Unbounded {
					t.Errorf("disruption %+v", p.Disruption)
				}
			},
		},
		"no change leaves everything unchanged": {
			world: func(t *testing.T) *plannertest.World {
				return plannertest.NewWorld(t, plannertest.MkSet(3), plannertest.TwoPools()).Desire()
			},
			want: []string{"0 unchanged w0 ok", "1 unchanged w0 ok", "2 unchanged w0 ok"},
			check: func(t *testing.T, w *plannertest.World, p *Plan) {
				if p.TemplateChanged || p.UpdateRevision != w.Snap.Live.Status.UpdateRevision {
					t.Errorf("TemplateChanged=%v UpdateRevision=%s", p.TemplateChanged, p.UpdateRevision)
				}
			},
		},
		"partition 2 of 3 recreates exactly ordinal 2": {
			world: func(t *testing.T) *plannertest.World {
				w := plannertest.NewWorld(t, plannertest.MkSet(3), plannertest.TwoPools())
				plannertest.Partition(2)(w.Snap.Live)
				return w.Desire(plannertest.NewImage)
			},
			want:           []string{"0 stale w0 ok", "1 stale w0 ok", "2 recreate w1 ok"},
			wantMaxUnavail: 1,
		},
		"partition protects the incident ordinals below it": {
			world: func(t *testing.T) *plannertest.World {
				return plannertest.NewWorld(t, plannertest.MkSet(3), plannertest.TwoPools()).Desire(plannertest.ToPoolB, plannertest.Partition(3))
			},
			want: []string{"0 stale w0 ok", "1 stale w0 ok", "2 stale w0 ok"},
		},
		"maxUnavailable 2 OrderedReady: two deleted, only the lower recreated": {
			world: func(t *testing.T) *plannertest.World {
				return plannertest.NewWorld(t, plannertest.MkSet(3), plannertest.TwoPools()).Desire(plannertest.ToPoolB, plannertest.MaxUnavailable(2))
			},
			want:      []string{"0 recreate w2 NO blocked", "1 recreate w1 NO", "2 recreate w1 NO nopod"},
			wantStall: []int32{1}, wantStallWave: 1, wantMaxUnavail: 2,
		},
		"maxUnavailable 2 Parallel: two highest recreated together, both Pending": {
			world: func(t *testing.T) *plannertest.World {
				w := plannertest.NewWorld(t, plannertest.MkSet(3), plannertest.TwoPools())
				plannertest.Parallel(w.Snap.Live)
				return w.Desire(plannertest.ToPoolB, plannertest.MaxUnavailable(2))
			},
			want:      []string{"0 recreate w2 NO blocked", "1 recreate w1 NO", "2 recreate w1 NO"},
			wantStall: []int32{1, 2}, wantStallWave: 1, wantMaxUnavail: 2,
		},
		"maxUnavailable 2 Parallel image change: pairs": {
			world: func(t *testing.T) *plannertest.World {
				w := plannertest.NewWorld(t, plannertest.MkSet(4), plannertest.TwoPools())
				plannertest.Parallel(w.Snap.Live)
				return w.Desire(plannertest.NewImage, plannertest.MaxUnavailable(2))
			},
			want:           []string{"0 recreate w2 ok", "1 recreate w2 ok", "2 recreate w1 ok", "3 recreate w1 ok"},
			wantMaxUnavail: 2,
		},
		// Kubernetes 1.35 (MaxUnavailableStatefulSet off): the legacy loop, one
		// Pod at a time from the top; a manifest's maxUnavailable (which the
		// 1.35 API server would have dropped) changes nothing.
		"1.35 Parallel image change: one at a time": {
			world: func(t *testing.T) *plannertest.World {
				w := plannertest.NewWorld(t, plannertest.MkSet(4), plannertest.TwoPools())
				plannertest.Parallel(w.Snap.Live)
				w.Snap.Server = k8sfeatures.Server{Version: k8sfeatures.Version{Major: 1, Minor: 35}}
				return w.Desire(plannertest.NewImage, plannertest.MaxUnavailable(2))
			},
			want:           []string{"0 recreate w4 ok", "1 recreate w3 ok", "2 recreate w2 ok", "3 recreate w1 ok"},
			wantMaxUnavail: 1,
		},
		"1.37 with the gate observed off: one at a time": {
			world: func(t *testing.T) *plannertest.World {
				w := plannertest.NewWorld(t, plannertest.MkSet(4), plannertest.TwoPools())
				plannertest.Parallel(w.Snap.Live)
				w.Snap.Server = k8sfeatures.Server{Version: k8sfeatures.Version{Major: 1, Minor: 37}, Off: []string{"MaxUnavailableStatefulSet"}}
				return w.Desire(plannertest.NewImage, plannertest.MaxUnavailable(2))
			},
			want:           []string{"0 recreate w4 ok", "1 recreate w3 ok", "2 recreate w2 ok", "3 recreate w1 ok"},
			wantMaxUnavail: 1,
		},
		"1.36 Parallel pool move: only the highest deleted, it stays Pending": {
			world: func(t *testing.T) *plannertest.World {
				w := plannertest.NewWorld(t, plannertest.MkSet(3), plannertest.TwoPools())
				plannertest.Parallel(w.Snap.Live)
				w.Snap.Server = k8sfeatures.Server{Version: k8sfeatures.Version{Major: 1, Minor: 36}}
				return w.Desire(plannertest.ToPoolB, plannertest.MaxUnavailable(2))
			},
			want:      []string{"0 recreate w3 NO blocked", "1 recreate w2 NO blocked", "2 recreate w1 NO"},
			wantStall: []int32{2}, wantStallWave: 1, wantMaxUnavail: 1,
		},
		"ordinals.start 5": {
			world: func(t *testing.T) *plannertest.World {
				s := plannertest.MkSet(3)
				s.Spec.Ordinals = &appsv1.StatefulSetOrdinals{Start: 5}
				return plannertest.NewWorld(t, s, plannertest.TwoPools()).Desire(plannertest.NewImage, plannertest.Replicas(4))
			},
			// OrderedReady: scale-up first (8), then the update from the top.
			want:           []string{"5 recreate w4 ok", "6 recreate w3 ok", "7 recreate w2 ok", "8 create w1 ok"},
			wantMaxUnavail: 1,
		},
		"ordinals.start moved: old ordinals deleted, new ones created": {
			world: func(t *testing.T) *plannertest.World {
				return plannertest.NewWorld(t, plannertest.MkSet(2), plannertest.TwoPools()).Desire(func(s *appsv1.StatefulSet) {
					s.Spec.Ordinals = &appsv1.StatefulSetOrdinals{Start: 1}
				})
			},
			want: []string{"0 delete w2 pvcs=retained", "1 unchanged w0 ok", "2 create w1 ok"},
		},
		"scale up OrderedReady with image change: creates one by one, then rolls": {
			world: func(t *testing.T) *plannertest.World {
				return plannertest.NewWorld(t, plannertest.MkSet(3), plannertest.TwoPools()).Desire(plannertest.NewImage, plannertest.Replicas(5))
			},
			want:           []string{"0 recreate w5 ok", "1 recreate w4 ok", "2 recreate w3 ok", "3 create w1 ok", "4 create w2 ok"},
			wantMaxUnavail: 1,
		},
		"scale up Parallel: new ordinals together, then the roll": {
			world: func(t *testing.T) *plannertest.World {
				w := plannertest.NewWorld(t, plannertest.MkSet(3), plannertest.TwoPools())
				plannertest.Parallel(w.Snap.Live)
				return w.Desire(plannertest.NewImage, plannertest.Replicas(5))
			},
			want:           []string{"0 recreate w4 ok", "1 recreate w3 ok", "2 recreate w2 ok", "3 create w1 ok", "4 create w1 ok"},
			wantMaxUnavail: 1,
		},
		"scale down OrderedReady retains PVCs, one at a time": {
			world: func(t *testing.T) *plannertest.World {
				return plannertest.NewWorld(t, plannertest.MkSet(5), plannertest.TwoPools()).Desire(plannertest.Replicas(3))
			},
			want: []string{"0 unchanged w0 ok", "1 unchanged w0 ok", "2 unchanged w0 ok", "3 delete w2 pvcs=retained", "4 delete w1 pvcs=retained"},
		},
		"scale down and image change OrderedReady: deletions first, then the roll": {
			world: func(t *testing.T) *plannertest.World {
				return plannertest.NewWorld(t, plannertest.MkSet(5), plannertest.TwoPools()).Desire(plannertest.NewImage, plannertest.Replicas(3))
			},
			want:           []string{"0 recreate w5 ok", "1 recreate w4 ok", "2 recreate w3 ok", "3 delete w2 pvcs=retained", "4 delete w1 pvcs=retained"},
			wantMaxUnavail: 1,
		},
		"new StatefulSet: ordinals created one per wave on fresh PVCs": {
			world: func(t *testing.T) *plannertest.World {
				w := plannertest.NewWorld(t, plannertest.MkSet(3), plannertest.TwoPools())
				d := w.Snap.Live.DeepCopy()
				d.Status = appsv1.StatefulSetStatus{}
				d.Spec.Template.Spec.NodeSelector = map[string]string{plannertest.PoolKey: "pool-b"}
				return &plannertest.World{Snap: planner.Snapshot{Desired: d, Nodes: w.Snap.Nodes, StorageClasses: w.Snap.StorageClasses}}
			},
			want: []string{"0 create w1 ok", "1 create w2 ok", "2 create w3 ok"},
			check: func(t *testing.T, w *plannertest.World, p *Plan) {
				patch, _ := planner.RevisionPatch(w.Snap.Desired)
				if want := planner.RevisionName(plannertest.SetName, planner.HashRevision(patch, 0)); p.UpdateRevision != want || p.TemplateChanged {
					t.Errorf("UpdateRevision %s (want %s) TemplateChanged %v", p.UpdateRevision, want, p.TemplateChanged)
				}
			},
		},
		"scale down Parallel with whenScaled Delete: together, PVCs deleted": {
			world: func(t *testing.T) *plannertest.World {
				w := plannertest.NewWorld(t, plannertest.MkSet(5), plannertest.TwoPools())
				plannertest.Parallel(w.Snap.Live)
				return w.Desire(plannertest.Replicas(3), whenScaledDelete)
			},
			want: []string{"0 unchanged w0 ok", "1 unchanged w0 ok", "2 unchanged w0 ok", "3 delete w1 pvcs=deleted", "4 delete w1 pvcs=deleted"},
		},
		"scale up onto retained PVCs pinned to a pool the template left": {
			world: func(t *testing.T) *plannertest.World {
				w := plannertest.NewWorld(t, plannertest.MkSet(3), plannertest.TwoPools())
				w.AddBoundClaim("data-olap-3", plannertest.Vct("data", 100), plannertest.NodeName("pool-a", 0))
				return w.Desire(plannertest.Replicas(4))
			},
			want: []string{"0 unchanged w0 ok", "1 unchanged w0 ok", "2 unchanged w0 ok", "3 create w1 ok"},
			check: func(t *testing.T, w *plannertest.World, p *Plan) {
				if diff := cmp.Diff([]planner.Volume{{Claim: "data", PVC: "data-olap-3", PV: "pv-data-olap-3", PinnedNode: "gke-olap-pool-a-0"}}, p.Ordinals[3].Volumes); diff != "" {
					t.Errorf("volumes (-want +got):\n%s", diff)
				}
			},
		},
		"OnDelete scale up creates at the new revision, no roll": {
			world: func(t *testing.T) *plannertest.World {
				w := plannertest.NewWorld(t, plannertest.MkSet(2), plannertest.TwoPools())
				plannertest.OnDelete(w.Snap.Live)
				return w.Desire(plannertest.NewImage, plannertest.Replicas(3))
			},
			want: []string{"0 stale w0 ok", "1 stale w0 ok", "2 create w1 ok"},
		},
		// A cordon comes and goes between a plan and its apply: the ordinals are planned without
		// it (as a saved plan must apply after it), and Held says what it stops now.
		"cordoned pinned node holds that ordinal, the plan does not change": {
			world: func(t *testing.T) *plannertest.World {
				w := plannertest.NewWorld(t, plannertest.MkSet(3), plannertest.TwoPools()).Desire(plannertest.NewImage)
				w.Node(plannertest.NodeName("pool-a", 1)).Spec.Unschedulable = true
				return w
			},
			want:           []string{"0 recreate w3 ok", "1 recreate w2 ok", "2 recreate w1 ok"},
			wantMaxUnavail: 1,
			check: func(t *testing.T, w *plannertest.World, p *Plan) {
				want := []HeldOrdinal{{Ordinal: 1, Pod: "olap-1", Action: ActionRecreate,
					Nodes:  []planner.NodeWait{{Node: plannertest.NodeName("pool-a", 1), Reason: "is cordoned (spec.unschedulable)"}},
					Reason: "0/6 nodes are available: 1 node(s) were unschedulable, 2 node(s) didn't match PersistentVolume's node affinity, 3 node(s) didn't match Pod's node affinity/selector."}}
				if diff := cmp.Diff(want, p.Held); diff != "" {
					t.Errorf("held (-want +got):\n%s", diff)
				}
			},
		},
		"not-ready pinned node holds that ordinal": {
			world: func(t *testing.T) *plannertest.World {
				w := plannertest.NewWorld(t, plannertest.MkSet(3), plannertest.TwoPools()).Desire(plannertest.NewImage)
				w.Node(plannertest.NodeName("pool-a", 2)).Spec.Taints = []corev1.Taint{{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoSchedule}}
				return w
			},
			want:           []string{"0 recreate w3 ok", "1 recreate w2 ok", "2 recreate w1 ok"},
			wantMaxUnavail: 1,
			check: func(t *testing.T, w *plannertest.World, p *Plan) {
				if len(p.Held) != 1 || p.Held[0].Ordinal != 2 || len(p.Held[0].Nodes) != 1 ||
					p.Held[0].Nodes[0].Reason != "has taint node.kubernetes.io/not-ready:NoSchedule" {
					t.Errorf("held: %+v", p.Held)
				}
			},
		},
		"NoExecute taint blocks, PreferNoSchedule does not": {
			world: func(t *testing.T) *plannertest.World {
				w := plannertest.NewWorld(t, plannertest.MkSet(3), plannertest.TwoPools()).Desire(plannertest.NewImage)
				w.Node(plannertest.NodeName("pool-a", 2)).Spec.Taints = []corev1.Taint{{Key: "maintenance", Value: "x", Effect: corev1.TaintEffectNoExecute}}
				w.Node(plannertest.NodeName("pool-a", 1)).Spec.Taints = []corev1.Taint{{Key: "soft", Effect: corev1.TaintEffectPreferNoSchedule}}
				return w
			},
			want:      []string{"0 recreate w3 ok blocked", "1 recreate w2 ok blocked", "2 recreate w1 NO"},
			wantStall: []int32{2}, wantStallWave: 1, wantMaxUnavail: 1,
			wantReason: map[int32][]string{2: {"1 node(s) had untolerated taint(s)"}},
		},
		"tolerated NoExecute taint does not block": {
			world: func(t *testing.T) *plannertest.World {
				w := plannertest.NewWorld(t, plannertest.MkSet(3), plannertest.TwoPools()).Desire(plannertest.NewImage, func(s *appsv1.StatefulSet) {
					s.Spec.Template.Spec.Tolerations = []corev1.Toleration{{Key: "maintenance", Operator: corev1.TolerationOpExists}}
				})
				w.Node(plannertest.NodeName("pool-a", 2)).Spec.Taints = []corev1.Taint{{Key: "maintenance", Value: "x", Effect: corev1.TaintEffectNoExecute}}
				return w
			},
			want:           []string{"0 recreate w3 ok", "1 recreate w2 ok", "2 recreate w1 ok"},
			wantMaxUnavail: 1,
		},
		"preferred affinity never blocks": {
			world: func(t *testing.T) *plannertest.World {
				return plannertest.NewWorld(t, plannertest.MkSet(3), plannertest.TwoPools()).Desire(func(s *appsv1.StatefulSet) {
					s.Spec.Template.Spec.NodeSelector = nil
					s.Spec.Template.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
						PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{{Weight: 100, Preference: corev1.NodeSelectorTerm{
							MatchExpressions: []corev1.NodeSelectorRequirement{{Key: plannertest.PoolKey, Operator: corev1.NodeSelectorOpIn, Values: []string{"pool-b"}}},
						}}},
					}}
				})
			},
			want:           []string{"0 recreate w3 ok", "1 recreate w2 ok", "2 recreate w1 ok"},
			wantMaxUnavail: 1,
		},
		"PV without node affinity never blocks": {
			world: func(t *testing.T) *plannertest.World {
				w := plannertest.NewWorld(t, plannertest.MkSet(3), plannertest.TwoPools()).Desire(plannertest.ToPoolB)
				for i := range w.Snap.PVs {
					w.Snap.PVs[i].Spec.NodeAffinity = nil
				}
				return w
			},
			want:           []string{"0 recreate w3 ok", "1 recreate w2 ok", "2 recreate w1 ok"},
			wantMaxUnavail: 1,
		},
		"PV pinned to a deleted node": {
			world: func(t *testing.T) *plannertest.World {
				w := plannertest.NewWorld(t, plannertest.MkSet(3), plannertest.TwoPools()).Desire(plannertest.NewImage)
				w.Snap.Nodes = w.Snap.Nodes[1:] // pool-a-0 is gone
				return w
			},
			want:      []string{"0 recreate w3 NO", "1 recreate w2 ok", "2 recreate w1 ok"},
			wantStall: []int32{0}, wantStallWave: 3, wantMaxUnavail: 1,
			wantReason: map[int32][]string{0: {"0/5 nodes are available: 2 node(s) didn't match PersistentVolume's node affinity, 3 node(s) didn't match Pod's node affinity/selector."}},
		},
		"multiple claim templates: each new PVC is checked on its own, as the scheduler does": {
			// VolumeBinding compares each claim with the node's CSIStorageCapacity; two claims of
			// one class that only fit one at a time pass (TopoLVM then fails the second).
			world: func(t *testing.T) *plannertest.World {
				s := plannertest.MkSet(3)
				s.Spec.VolumeClaimTemplates = append(s.Spec.VolumeClaimTemplates, plannertest.Vct("cache", 100))
				nodes := append(plannertest.MkPool("pool-a", 3, 150), plannertest.MkPool("pool-b", 3, 150)...)
				return plannertest.NewWorld(t, s, nodes).Desire(plannertest.Replicas(4))
			},
			want: []string{"0 unchanged w0 ok", "1 unchanged w0 ok", "2 unchanged w0 ok", "3 create w1 ok"},
		},
		"multiple claim templates fit when capacity suffices": {
			world: func(t *testing.T) *plannertest.World {
				s := plannertest.MkSet(3)
				s.Spec.VolumeClaimTemplates = append(s.Spec.VolumeClaimTemplates, plannertest.Vct("cache", 100))
				return plannertest.NewWorld(t, s, plannertest.TwoPools()).Desire(plannertest.Replicas(4))
			},
			want: []string{"0 unchanged w0 ok", "1 unchanged w0 ok", "2 unchanged w0 ok", "3 create w1 ok"},
			check: func(t *testing.T, w *plannertest.World, p *Plan) {
				if got := len(p.Ordinals[0].Volumes); got != 2 {
					t.Errorf("ordinal 0 has %d volumes, want 2", got)
				}
			},
		},
		"capacity taken by earlier new ordinals of the same apply": {
			world: func(t *testing.T) *plannertest.World {
				return plannertest.NewWorld(t, plannertest.MkSet(1), append(plannertest.MkPool("pool-a", 3, 150), plannertest.MkPool("pool-b", 3, 1000)...)).Desire(plannertest.Replicas(5))
			},
			want:      []string{"0 unchanged w0 ok", "1 create w1 ok", "2 create w2 ok", "3 create w3 ok", "4 create w4 NO"},
			wantStall: []int32{4}, wantStallWave: 4,
			wantReason: map[int32][]string{4: {"0/6 nodes are available: 3 node(s) did not have enough free storage, 3 node(s) didn't match Pod's node affinity/selector."}},
		},
		"capacity shortage from CSIStorageCapacity": {
			world: func(t *testing.T) *plannertest.World {
				w := plannertest.NewWorld(t, plannertest.MkSet(3), plannertest.TwoPools()).Desire(plannertest.Replicas(4))
				for _, n := range w.Snap.Nodes {
					w.Snap.Capacities = append(w.Snap.Capacities, storagev1.CSIStorageCapacity{
						ObjectMeta:       metav1.ObjectMeta{Name: "csisc-" + n.Name, Namespace: "topolvm-system"},
						StorageClassName: plannertest.SCName,
						NodeTopology:     &metav1.LabelSelector{MatchLabels: map[string]string{stsutil.LabelTopoLVMNode: n.Name}},
						Capacity:         resource.NewQuantity(10*plannertest.Gib, resource.BinarySI),
					})
				}
				return w
			},
			want:      []string{"0 unchanged w0 ok", "1 unchanged w0 ok", "2 unchanged w0 ok", "3 create w1 NO"},
			wantStall: []int32{3}, wantStallWave: 1,
			wantReason: map[int32][]string{3: {"3 node(s) did not have enough free storage"}},
		},
		"Pod Pending today blocks an OrderedReady roll and counts as unavailable": {
			world: func(t *testing.T) *plannertest.World {
				w := plannertest.NewWorld(t, plannertest.MkSet(3), plannertest.TwoPools())
				// ordinal 1 was left Pending by an earlier stalled edit: its Pod
				// wants pool-b but its PV is pinned to pool-a-1.
				w.Snap.Pods = w.Snap.Pods[:1]
				w.Snap.PVCs, w.Snap.PVs = w.Snap.PVCs[:1], w.Snap.PVs[:1]
				w.AddBoundClaim("data-olap-1", plannertest.Vct("data", 100), plannertest.NodeName("pool-a", 1))
				w.AddPod(w.Snap.Live, 2, plannertest.NodeName("pool-a", 2), w.Snap.Live.Status.UpdateRevision, true)
				pending := w.Snap.Live.DeepCopy()
				plannertest.ToPoolB(pending)
				w.AddPod(pending, 1, "", w.Snap.Live.Status.UpdateRevision, false)
				return w.Desire(plannertest.NewImage)
			},
			want:      []string{"0 recreate w3 ok blocked", "1 recreate w2 ok blocked", "2 recreate w1 ok blocked"},
			wantStall: []int32{1}, wantMaxUnavail: 1,
			wantReason: nil,
			check: func(t *testing.T, w *plannertest.World, p *Plan) {
				if !strings.Contains(p.Stall.Reason, "ordinal 1: Pod olap-1 is Pending today") || !strings.Contains(p.Stall.Reason, "didn't match PersistentVolume's node affinity") {
					t.Errorf("stall reason %q", p.Stall.Reason)
				}
			},
		},
		"after the incident: same manifest again plans the stall, not 'no changes'": {
			world:     func(t *testing.T) *plannertest.World { return stalledIncident(t, false) },
			want:      []string{"0 recreate w2 NO blocked", "1 recreate w1 NO blocked", "2 unchanged w0 NO"},
			wantStall: []int32{2}, wantMaxUnavail: 1,
			check: func(t *testing.T, w *plannertest.World, p *Plan) {
				if p.TemplateChanged || !strings.Contains(p.Stall.Reason, "ordinal 2: Pod olap-2 is Pending today") {
					t.Errorf("TemplateChanged=%v stall %q", p.TemplateChanged, p.Stall.Reason)
				}
			},
		},
		"after the incident: reverting under OrderedReady does not unstick ordinal 2 (kubernetes#67250)": {
			world: func(t *testing.T) *plannertest.World { return stalledIncident(t, true) },
			// The controller would recreate ordinal 2 only once it is Ready.
			want:      []string{"0 unchanged w0 ok", "1 unchanged w0 ok", "2 recreate w1 ok blocked"},
			wantStall: []int32{2}, wantMaxUnavail: 1,
		},
		"after the incident: reverting under Parallel recreates ordinal 2 on the old revision": {
			world: func(t *testing.T) *plannertest.World {
				w := stalledIncident(t, true)
				plannertest.Parallel(w.Snap.Live)
				plannertest.Parallel(w.Snap.Desired)
				return w
			},
			want:           []string{"0 unchanged w0 ok", "1 unchanged w0 ok", "2 recreate w1 ok"},
			wantMaxUnavail: 1,
		},
		"revert to an earlier revision reuses its name": {
			world: func(t *testing.T) *plannertest.World {
				old := plannertest.MkSet(3)
				w := plannertest.NewWorld(t, old.DeepCopy(), plannertest.TwoPools())
				plannertest.NewImage(w.Snap.Live)
				cur := plannertest.RevisionFor(t, w.Snap.Live, 2)
				w.Snap.Revisions = append(w.Snap.Revisions, cur)
				w.Snap.Live.Status.CurrentRevision, w.Snap.Live.Status.UpdateRevision = cur.Name, cur.Name
				for i := range w.Snap.Pods {
					w.Snap.Pods[i].Labels[stsutil.LabelControllerRevision] = cur.Name
				}
				return w.Desire(func(s *appsv1.StatefulSet) { s.Spec.Template = old.Spec.Template })
			},
			want:           []string{"0 recreate w3 ok", "1 recreate w2 ok", "2 recreate w1 ok"},
			wantMaxUnavail: 1,
			check: func(t *testing.T, w *plannertest.World, p *Plan) {
				if p.UpdateRevision != w.Snap.Revisions[0].Name {
					t.Errorf("UpdateRevision %s, want the first revision %s", p.UpdateRevision, w.Snap.Revisions[0].Name)
				}
			},
		},
		"PDB exceeded by maxUnavailable 2": {
			world: func(t *testing.T) *plannertest.World {
				w := plannertest.NewWorld(t, plannertest.MkSet(4), plannertest.TwoPools()).Desire(plannertest.NewImage, plannertest.MaxUnavailable(2))
				w.Snap.PDBs = []policyv1.PodDisruptionBudget{{
					ObjectMeta: metav1.ObjectMeta{Name: "olap", Namespace: plannertest.NS},
					Spec:       policyv1.PodDisruptionBudgetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "olap"}}},
					Status:     policyv1.PodDisruptionBudgetStatus{DisruptionsAllowed: 1},
				}}
				return w
			},
			// OrderedReady: 3 and 2 deleted; 2 recreated first, then 3, then 1 and 0.
			want:           []string{"0 recreate w2 ok", "1 recreate w2 ok", "2 recreate w1 ok", "3 recreate w1 ok"},
			wantMaxUnavail: 2,
			check: func(t *testing.T, w *plannertest.World, p *Plan) {
				if diff := cmp.Diff([]string{"olap"}, p.Disruption.PDBsExceeded); diff != "" {
					t.Errorf("PDBsExceeded (-want +got):\n%s", diff)
				}
			},
		},
		"claim growth re-creates the object orphaning its Pods and expands the PVCs": {
			world: func(t *testing.T) *plannertest.World {
				w := plannertest.NewWorld(t, plannertest.MkSet(3), plannertest.TwoPools()).Desire(func(s *appsv1.StatefulSet) {
					s.Spec.VolumeClaimTemplates[0].Spec.Resources.Requests[corev1.ResourceStorage] = *resource.NewQuantity(200*plannertest.Gib, resource.BinarySI)
				})
				w.Snap.StorageClasses[0].AllowVolumeExpansion = ptr.To(true)
				w.Snap.Immutable = &planner.ImmutableChange{Fields: []string{"spec"}, Message: "spec: Forbidden: updates to statefulset spec for fields other than ..."}
				return w
			},
			want:           []string{"0 unchanged w0 ok", "1 unchanged w0 ok", "2 unchanged w0 ok"},
			wantMaxUnavail: 0,
			check: func(t *testing.T, w *plannertest.World, p *Plan) {
				if p.Replace == nil || p.Replace.Mode != RecreateOrphan {
					t.Fatalf("Replace %+v, want orphan re-creation", p.Replace)
				}
				if diff := cmp.Diff([]string{"data-olap-0", "data-olap-1", "data-olap-2"}, p.Replace.Readopted); diff != "" {
					t.Errorf("Readopted (-want +got):\n%s", diff)
				}
				var grown []string
				for _, e := range p.Replace.Expansions {
					grown = append(grown, fmt.Sprintf("%s %d->%d on %s", e.PVC, e.From/plannertest.Gib, e.To/plannertest.Gib, e.Node))
				}
				want := []string{"data-olap-0 100->200 on gke-olap-pool-a-0", "data-olap-1 100->200 on gke-olap-pool-a-1", "data-olap-2 100->200 on gke-olap-pool-a-2"}
				if diff := cmp.Diff(want, grown); diff != "" {
					t.Errorf("Expansions (-want +got):\n%s", diff)
				}
				if len(p.Replace.Problems) != 0 || !strings.Contains(p.Replace.Explanation, "PVCs expanded in place") {
					t.Errorf("problems %q, explanation %q", p.Replace.Problems, p.Replace.Explanation)
				}
			},
		},
		"claim growth grows a scaled-down ordinal's retained claim too": {
			world: retainedClaimGrowth("gke-olap-pool-a-2", 200),
			want:  []string{"0 unchanged w0 ok", "1 unchanged w0 ok"},
			check: func(t *testing.T, w *plannertest.World, p *Plan) {
				var grown []string
				for _, e := range p.Replace.Expansions {
					grown = append(grown, fmt.Sprintf("%s %d->%d retained=%v", e.PVC, e.From/plannertest.Gib, e.To/plannertest.Gib, e.Retained))
				}
				want := []string{"data-olap-0 100->200 retained=false", "data-olap-1 100->200 retained=false", "data-olap-2 100->200 retained=true"}
				if diff := cmp.Diff(want, grown); diff != "" || len(p.Replace.Kept) != 0 || len(p.Replace.Problems) != 0 {
					t.Errorf("Expansions (-want +got):\n%s\nkept %+v problems %q", diff, p.Replace.Kept, p.Replace.Problems)
				}
			},
		},
		"claim growth keeps a retained claim whose node is gone, and says so": {
			world: retainedClaimGrowth("gke-olap-pool-a-9", 200),
			want:  []string{"0 unchanged w0 ok", "1 unchanged w0 ok"},
			check: func(t *testing.T, w *plannertest.World, p *Plan) {
				if len(p.Replace.Expansions) != 2 || len(p.Replace.Problems) != 0 || len(p.Replace.Kept) != 1 ||
					p.Replace.Kept[0].PVC != "data-olap-2" || !strings.Contains(p.Replace.Kept[0].Why, "node gke-olap-pool-a-9 no longer exists") {
					t.Fatalf("expansions %+v kept %+v problems %q", p.Replace.Expansions, p.Replace.Kept, p.Replace.Problems)
				}
				if !strings.Contains(p.Replace.Explanation, "data-olap-2 keeps 100Gi (its volume's node gke-olap-pool-a-9 no longer exists)") {
					t.Errorf("explanation %q", p.Replace.Explanation)
				}
			},
		},
		"claim growth keeps a retained claim the node has no room for; the set's own claims grow": {
			world: retainedClaimGrowth("gke-olap-pool-a-0", 700),
			want:  []string{"0 unchanged w0 ok", "1 unchanged w0 ok"},
			check: func(t *testing.T, w *plannertest.World, p *Plan) {
				var grown []string
				for _, e := range p.Replace.Expansions {
					grown = append(grown, e.PVC)
				}
				if diff := cmp.Diff([]string{"data-olap-0", "data-olap-1"}, grown); diff != "" || len(p.Replace.Problems) != 0 || len(p.Replace.Kept) != 1 ||
					!strings.Contains(p.Replace.Kept[0].Why, "node gke-olap-pool-a-0 has only 1000Gi free") {
					t.Fatalf("expansions (-want +got):\n%s\nkept %+v problems %q", diff, p.Replace.Kept, p.Replace.Problems)
				}
			},
		},
		"claim growth needs allowVolumeExpansion": {
			world: func(t *testing.T) *plannertest.World {
				w := plannertest.NewWorld(t, plannertest.MkSet(1), plannertest.TwoPools()).Desire(func(s *appsv1.StatefulSet) {
					s.Spec.VolumeClaimTemplates[0].Spec.Resources.Requests[corev1.ResourceStorage] = *resource.NewQuantity(200*plannertest.Gib, resource.BinarySI)
				})
				w.Snap.Immutable = &planner.ImmutableChange{Fields: []string{"spec"}}
				return w
			},
			want: []string{"0 unchanged w0 ok"},
			check: func(t *testing.T, w *plannertest.World, p *Plan) {
				if len(p.Replace.Problems) != 1 || !strings.Contains(p.Replace.Problems[0], "does not allow volume expansion") {
					t.Errorf("problems %q", p.Replace.Problems)
				}
			},
		},
		"claim growth beyond a node's free capacity": {
			world: func(t *testing.T) *plannertest.World {
				w := plannertest.NewWorld(t, plannertest.MkSet(1), plannertest.TwoPools()).Desire(func(s *appsv1.StatefulSet) {
					s.Spec.VolumeClaimTemplates[0].Spec.Resources.Requests[corev1.ResourceStorage] = *resource.NewQuantity(1200*plannertest.Gib, resource.BinarySI)
				})
				w.Snap.StorageClasses[0].AllowVolumeExpansion = ptr.To(true)
				w.Snap.Immutable = &planner.ImmutableChange{Fields: []string{"spec"}}
				return w
			},
			want: []string{"0 unchanged w0 ok"},
			check: func(t *testing.T, w *plannertest.World, p *Plan) {
				if len(p.Replace.Problems) != 1 || !strings.Contains(p.Replace.Problems[0], "node gke-olap-pool-a-0 has only 1000Gi free for storage class topolvm-ssd") {
					t.Errorf("problems %q", p.Replace.Problems)
				}
			},
		},
		"claim template shrink is refused": {
			world: func(t *testing.T) *plannertest.World {
				w := plannertest.NewWorld(t, plannertest.MkSet(1), plannertest.TwoPools()).Desire(func(s *appsv1.StatefulSet) {
					s.Spec.VolumeClaimTemplates[0].Spec.Resources.Requests[corev1.ResourceStorage] = *resource.NewQuantity(50*plannertest.Gib, resource.BinarySI)
				})
				w.Snap.StorageClasses[0].AllowVolumeExpansion = ptr.To(true)
				w.Snap.Immutable = &planner.ImmutableChange{Fields: []string{"spec"}}
				return w
			},
			want: []string{"0 unchanged w0 ok"},
			check: func(t *testing.T, w *plannertest.World, p *Plan) {
				if len(p.Replace.Problems) != 1 || !strings.Contains(p.Replace.Problems[0], "PVCs cannot shrink") {
					t.Errorf("problems %q", p.Replace.Problems)
				}
			},
		},
		"selector change re-creates the object with its Pods": {
			world: func(t *testing.T) *plannertest.World {
				w := plannertest.NewWorld(t, plannertest.MkSet(3), plannertest.TwoPools()).Desire(func(s *appsv1.StatefulSet) {
					s.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "olap", "tier": "hot"}}
					s.Spec.Template.Labels["tier"] = "hot"
				})
				w.Snap.Immutable = &planner.ImmutableChange{Fields: []string{"spec"}, Message: "spec: Forbidden: updates to statefulset spec for fields other than ..."}
				return w
			},
			want:           []string{"0 recreate w1 ok", "1 recreate w2 ok", "2 recreate w3 ok"},
			wantMaxUnavail: 3,
			check: func(t *testing.T, w *plannertest.World, p *Plan) {
				if p.Replace == nil || p.Replace.Mode != RecreateForeground {
					t.Fatalf("Replace %+v, want foreground", p.Replace)
				}
				if diff := cmp.Diff([]string{"data-olap-0", "data-olap-1", "data-olap-2"}, p.Replace.Readopted); diff != "" {
					t.Errorf("Readopted (-want +got):\n%s", diff)
				}
				if !strings.Contains(p.Replace.Explanation, "adopted again by name") {
					t.Errorf("explanation %q", p.Replace.Explanation)
				}
			},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			w := tc.world(t)
			p, err := PlanRollout(w.Final())
			if err != nil {
				t.Fatal(err)
			}
			checkInvariants(t, w.Snap, p)
			if diff := cmp.Diff(tc.want, summary(p)); diff != "" {
				t.Errorf("ordinals (-want +got):\n%s", diff)
			}
			var gotStall []int32
			gotWave := 0
			if p.Stall != nil {
				gotStall, gotWave = p.Stall.Ordinals, p.Stall.Wave
			}
			if diff := cmp.Diff(tc.wantStall, gotStall); diff != "" {
				t.Errorf("stall ordinals (-want +got):\n%s", diff)
			}
			if gotWave != tc.wantStallWave {
				t.Errorf("stall wave %d, want %d", gotWave, tc.wantStallWave)
			}
			if p.Disruption.Unbounded != (tc.wantStall != nil) {
				t.Errorf("Unbounded %v with stall %v", p.Disruption.Unbounded, tc.wantStall)
			}
			if p.Disruption.MaxUnavailable != tc.wantMaxUnavail {
				t.Errorf("MaxUnavailable %d, want %d", p.Disruption.MaxUnavailable, tc.wantMaxUnavail)
			}
			for o, subs := range tc.wantReason {
				var reason string
				for _, op := range p.Ordinals {
					if op.Ordinal == o {
						reason = op.Reason
					}
				}
				for _, sub := range subs {
					if !strings.Contains(reason, sub) {
						t.Errorf("ordinal %d reason %q lacks %q", o, reason, sub)
					}
				}
			}
			if tc.check != nil {
				tc.check(t, w, p)
			}
		})
	}
}

func TestBuildDestroy(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		policy appsv1.PersistentVolumeClaimRetentionPolicyType
		want   []string
	}{
		"whenDeleted Retain": {appsv1.RetainPersistentVolumeClaimRetentionPolicyType, []string{"0 delete w1 pvcs=retained", "1 delete w1 pvcs=retained"}},
		"whenDeleted Delete": {appsv1.DeletePersistentVolumeClaimRetentionPolicyType, []string{"0 delete w1 pvcs=deleted", "1 delete w1 pvcs=deleted"}},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s := plannertest.MkSet(2)
			s.Spec.PersistentVolumeClaimRetentionPolicy.WhenDeleted = tc.policy
			w := plannertest.NewWorld(t, s, plannertest.TwoPools())
			p, err := PlanRollout(w.Final())
			if err != nil {
				t.Fatal(err)
			}
			checkInvariants(t, w.Snap, p)
			if diff := cmp.Diff(tc.want, summary(p)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// stalledIncident is the cluster after the incident's apply: the live set
// wants pool-b, ordinals 0 and 1 still run the old revision on pool-a, ordinal
// 2 was recreated at the new revision and is Pending (its PV is on pool-a-2).
// The desired set is the same manifest, or the old one when revert is true.
func stalledIncident(t *testing.T, revert bool) *plannertest.World {
	t.Helper()
	w := plannertest.NewWorld(t, plannertest.MkSet(3), plannertest.TwoPools())
	old := w.Snap.Live.DeepCopy()
	plannertest.ToPoolB(w.Snap.Live)
	w.Snap.Live.Generation = 2
	rev := plannertest.RevisionFor(t, w.Snap.Live, 2)
	w.Snap.Revisions = append(w.Snap.Revisions, rev)
	w.Snap.Live.Status.UpdateRevision = rev.Name
	w.Snap.Live.Status.ObservedGeneration = 2
	w.Snap.Pods = w.Snap.Pods[:2]
	w.AddPod(w.Snap.Live, 2, "", rev.Name, false)
	w.AddBoundClaim("data-olap-2", plannertest.Vct("data", 100), plannertest.NodeName("pool-a", 2))
	if revert {
		return w.Desire(func(s *appsv1.StatefulSet) { s.Spec.Template = old.Spec.Template })
	}
	return w.Desire()
}
