// Package plannertest holds the test fixtures shared by the planner packages' tests (kernel,
// rollout, migration): a live StatefulSet on two node pools (World), the migration's world
// (MigWorld), TopoLVM objects (WithTopoLVM) and the drifts a plan must be stable under. Tests
// only; no product code imports it.
package plannertest

import (
	"fmt"
	"testing"

	"github.com/olapgke/terraform-provider-olapgke/internal/planner"
	"github.com/olapgke/terraform-provider-olapgke/internal/stsutil"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

const (
	NS      = "olap"
	SetName = "olap"
	PoolKey = "cloud.google.com/gke-nodepool"
	SCName  = "topolvm-ssd"
	Gib     = int64(1) << 30
	setUID  = types.UID("uid-olap")
)

func NodeName(pool string, i int) string { return fmt.Sprintf("gke-olap-%s-%d", pool, i) }

func mkNode(pool string, i int, freeGiB int64) corev1.Node {
	name := NodeName(pool, i)
	return corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:        name,
			Labels:      map[string]string{PoolKey: pool, stsutil.LabelTopoLVMNode: name, "kubernetes.io/hostname": name},
			Annotations: map[string]string{stsutil.AnnotationCapacityPrefix + "ssd": fmt.Sprint(freeGiB * Gib)},
		},
	}
}

func MkPool(pool string, n int, freeGiB int64) []corev1.Node {
	var out []corev1.Node
	for i := 0; i < n; i++ {
		out = append(out, mkNode(pool, i, freeGiB))
	}
	return out
}

func StorageClass() storagev1.StorageClass {
	return storagev1.StorageClass{
		ObjectMeta:  metav1.ObjectMeta{Name: SCName, Annotations: map[string]string{planner.AnnotationDefaultClass: "true"}},
		Provisioner: "topolvm.io",
		Parameters:  map[string]string{stsutil.ParamDeviceClass: "ssd"},
	}
}

func Vct(name string, sizeGiB int64) corev1.PersistentVolumeClaim {
	return corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			StorageClassName: ptr.To(SCName),
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: *resource.NewQuantity(sizeGiB*Gib, resource.BinarySI)}},
		},
	}
}

// MkSet returns a defaulted-looking StatefulSet on pool-a.
func MkSet(replicas int32) *appsv1.StatefulSet {
	return &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: SetName, Namespace: NS, UID: setUID, Generation: 1},
		Spec: appsv1.StatefulSetSpec{
			Replicas:            ptr.To(replicas),
			Selector:            &metav1.LabelSelector{MatchLabels: map[string]string{"app": "olap"}},
			ServiceName:         "olap",
			PodManagementPolicy: appsv1.OrderedReadyPodManagement,
			UpdateStrategy: appsv1.StatefulSetUpdateStrategy{
				Type:          appsv1.RollingUpdateStatefulSetStrategyType,
				RollingUpdate: &appsv1.RollingUpdateStatefulSetStrategy{Partition: ptr.To[int32](0), MaxUnavailable: ptr.To(intstr.FromInt32(1))},
			},
			PersistentVolumeClaimRetentionPolicy: &appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{
				WhenDeleted: appsv1.RetainPersistentVolumeClaimRetentionPolicyType,
				WhenScaled:  appsv1.RetainPersistentVolumeClaimRetentionPolicyType,
			},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "olap"}},
				Spec: corev1.PodSpec{
					NodeSelector: map[string]string{PoolKey: "pool-a"},
					Containers:   []corev1.Container{{Name: "olap", Image: "olap:1"}},
				},
			},
			VolumeClaimTemplates: []corev1.PersistentVolumeClaim{Vct("data", 100)},
		},
	}
}

func OnDelete(s *appsv1.StatefulSet) {
	s.Spec.UpdateStrategy = appsv1.StatefulSetUpdateStrategy{Type: appsv1.OnDeleteStatefulSetStrategyType}
}

func ToPoolB(s *appsv1.StatefulSet) {
	s.Spec.Template.Spec.NodeSelector = map[string]string{PoolKey: "pool-b"}
}

func NewImage(s *appsv1.StatefulSet) { s.Spec.Template.Spec.Containers[0].Image = "olap:2" }

// World is a live StatefulSet whose Pods all run Ready at its revision, each
// ordinal on node pool-a-<i mod nodes> with PVs pinned there.
type World struct {
	Snap planner.Snapshot
}

func RevisionFor(t testing.TB, set *appsv1.StatefulSet, number int64) appsv1.ControllerRevision {
	t.Helper()
	patch, err := planner.RevisionPatch(set)
	if err != nil {
		t.Fatal(err)
	}
	return appsv1.ControllerRevision{
		ObjectMeta: metav1.ObjectMeta{
			Name: planner.RevisionName(set.Name, planner.HashRevision(patch, 0)), Namespace: set.Namespace,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "StatefulSet", Name: set.Name, UID: set.UID, Controller: ptr.To(true)}},
		},
		Data:     runtime.RawExtension{Raw: patch},
		Revision: number,
	}
}

func NewWorld(t testing.TB, live *appsv1.StatefulSet, nodes []corev1.Node) *World {
	t.Helper()
	rev := RevisionFor(t, live, 1)
	live.Status = appsv1.StatefulSetStatus{ObservedGeneration: 1, CurrentRevision: rev.Name, UpdateRevision: rev.Name, CollisionCount: ptr.To[int32](0)}
	w := &World{Snap: planner.Snapshot{
		Live:           live,
		Revisions:      []appsv1.ControllerRevision{rev},
		Nodes:          nodes,
		StorageClasses: []storagev1.StorageClass{StorageClass()},
	}}
	var poolA []string
	for _, n := range nodes {
		if n.Labels[PoolKey] == "pool-a" {
			poolA = append(poolA, n.Name)
		}
	}
	start := int(stsutil.Start(live))
	for i := 0; i < int(stsutil.Replicas(live)); i++ {
		w.AddPod(live, start+i, poolA[i%len(poolA)], rev.Name, true)
	}
	return w
}

func (w *World) AddPod(set *appsv1.StatefulSet, o int, node, rev string, ready bool) {
	name := fmt.Sprintf("%s-%d", set.Name, o)
	pod := corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: set.Namespace,
			Labels:          map[string]string{"app": "olap", stsutil.LabelControllerRevision: rev},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "StatefulSet", Name: set.Name, UID: set.UID, Controller: ptr.To(true)}},
		},
		Spec:   *set.Spec.Template.Spec.DeepCopy(),
		Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}},
	}
	pod.Spec.NodeName = node
	if !ready {
		pod.Spec.NodeName = ""
		pod.Status = corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: "Unschedulable", Message: "0/6 nodes are available: 3 node(s) didn't match PersistentVolume's node affinity."}}}
	}
	for _, v := range set.Spec.VolumeClaimTemplates {
		claim := fmt.Sprintf("%s-%s-%d", v.Name, set.Name, o)
		pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: v.Name, VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}})
		if node != "" {
			w.AddBoundClaim(claim, v, node)
		}
	}
	w.Snap.Pods = append(w.Snap.Pods, pod)
}

func (w *World) AddBoundClaim(claim string, v corev1.PersistentVolumeClaim, node string) {
	pvName := "pv-" + claim
	w.Snap.PVCs = append(w.Snap.PVCs, corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: claim, Namespace: NS},
		Spec:       corev1.PersistentVolumeClaimSpec{StorageClassName: v.Spec.StorageClassName, Resources: v.Spec.Resources, VolumeName: pvName},
		Status:     corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound},
	})
	w.Snap.PVs = append(w.Snap.PVs, corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: pvName},
		Spec: corev1.PersistentVolumeSpec{
			StorageClassName: SCName,
			ClaimRef:         &corev1.ObjectReference{Namespace: NS, Name: claim},
			NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
				MatchExpressions: []corev1.NodeSelectorRequirement{{Key: stsutil.LabelTopoLVMNode, Operator: corev1.NodeSelectorOpIn, Values: []string{node}}},
			}}}},
		},
	})
}

func (w *World) Desire(mut ...func(*appsv1.StatefulSet)) *World {
	d := w.Snap.Live.DeepCopy()
	d.Status = appsv1.StatefulSetStatus{}
	for _, m := range mut {
		m(d)
	}
	w.Snap.Desired = d
	return w
}

func (w *World) Node(name string) *corev1.Node {
	for i := range w.Snap.Nodes {
		if w.Snap.Nodes[i].Name == name {
			return &w.Snap.Nodes[i]
		}
	}
	return nil
}
