package planner

import (
	"fmt"
	"time"

	"github.com/olapgke/terraform-provider-olapgke/internal/stsutil"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// migWorld builds migration snapshots: pools of nodes with TopoLVM capacity,
// a StatefulSet "hist" in namespace "olap" with claim "cache" (10Gi,
// StorageClass topolvm-provisioner), Pods Ready on pool-a with PVs pinned.
type migWorld struct {
	s   Snapshot
	now time.Time
}

var migT0 = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

const (
	migNS    = "olap"
	migSet   = "hist"
	migClaim = "cache"
	migSC    = "topolvm-provisioner"
	migRevA  = "hist-aaaa"
	migRevB  = "hist-bbbb"
)

func newMigWorld(replicas int32, pool string) *migWorld {
	w := &migWorld{now: migT0}
	for _, p := range []string{"pool-a", "pool-b"} {
		for i := 0; i < 3; i++ {
			w.addNode(fmt.Sprintf("gke-olap-%s-%d", p, i), p, "700Gi")
		}
	}
	w.s.StorageClasses = []storagev1.StorageClass{{
		ObjectMeta:  metav1.ObjectMeta{Name: migSC},
		Provisioner: "topolvm.io",
		Parameters:  map[string]string{stsutil.ParamDeviceClass: "ssd"},
	}}
	set := &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: migNS, Name: migSet, UID: "set-uid", Generation: 2},
		Spec: appsv1.StatefulSetSpec{
			Replicas:       ptr.To(replicas),
			UpdateStrategy: appsv1.StatefulSetUpdateStrategy{Type: appsv1.OnDeleteStatefulSetStrategyType},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "hist"}},
				Spec:       corev1.PodSpec{NodeSelector: map[string]string{stsutil.LabelNodePool: pool}},
			},
			VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{
				ObjectMeta: metav1.ObjectMeta{Name: migClaim},
				Spec: corev1.PersistentVolumeClaimSpec{
					StorageClassName: ptr.To(migSC),
					Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{
						corev1.ResourceStorage: resource.MustParse("10Gi")}},
				},
			}},
		},
		Status: appsv1.StatefulSetStatus{ObservedGeneration: 2, CurrentRevision: migRevA, UpdateRevision: migRevA},
	}
	w.s.Live = set
	for o := int32(0); o < replicas; o++ {
		node := fmt.Sprintf("gke-olap-pool-a-%d", o%3)
		w.addOrdinal(o, node, migRevA, fmt.Sprintf("a%d", o))
	}
	return w
}

func (w *migWorld) addNode(name, pool, capacity string) {
	w.s.Nodes = append(w.s.Nodes, corev1.Node{ObjectMeta: metav1.ObjectMeta{
		Name:        name,
		Labels:      map[string]string{stsutil.LabelNodePool: pool, stsutil.LabelTopoLVMNode: name, "kubernetes.io/hostname": name},
		Annotations: map[string]string{stsutil.AnnotationCapacityPrefix + "ssd": capacityBytes(capacity)},
	}})
}

func (w *migWorld) node(name string) *corev1.Node {
	for i := range w.s.Nodes {
		if w.s.Nodes[i].Name == name {
			return &w.s.Nodes[i]
		}
	}
	panic(name)
}

// addOrdinal adds a Ready Pod on node at rev, with its PVC bound to a PV
// pinned to node; gen distinguishes UIDs of successive generations.
func (w *migWorld) addOrdinal(o int32, node, rev, gen string) {
	w.addPVC(o, node, gen)
	w.addPod(o, node, rev, gen, true)
}

func (w *migWorld) addPVC(o int32, node, gen string) {
	pvcName := stsutil.ClaimPVCName(migClaim, migSet, o)
	pvName := "pvc-" + gen + "-" + fmt.Sprint(o)
	pvc := corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: migNS, Name: pvcName, UID: types.UID("pvc-uid-" + gen)},
		Spec:       corev1.PersistentVolumeClaimSpec{StorageClassName: ptr.To(migSC)},
	}
	if node != "" {
		pvc.Spec.VolumeName = pvName
		w.s.PVs = append(w.s.PVs, corev1.PersistentVolume{
			ObjectMeta: metav1.ObjectMeta{Name: pvName},
			Spec: corev1.PersistentVolumeSpec{
				StorageClassName:              migSC,
				PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimDelete,
				Capacity:                      corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("10Gi")},
				ClaimRef:                      &corev1.ObjectReference{Namespace: migNS, Name: pvcName, UID: pvc.UID},
				NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
					MatchExpressions: []corev1.NodeSelectorRequirement{{Key: stsutil.LabelTopoLVMNode, Operator: corev1.NodeSelectorOpIn, Values: []string{node}}},
				}}}},
			},
		})
	}
	w.removePVC(o)
	w.s.PVCs = append(w.s.PVCs, pvc)
}

func (w *migWorld) addPod(o int32, node, rev, gen string, ready bool) {
	name := stsutil.PodName(migSet, o)
	w.removePod(o)
	p := corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: migNS, Name: name, UID: types.UID("pod-uid-" + gen),
			Labels: map[string]string{"app": "hist", stsutil.LabelControllerRevision: rev}},
		Spec: corev1.PodSpec{NodeName: node, Volumes: []corev1.Volume{{Name: migClaim, VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: stsutil.ClaimPVCName(migClaim, migSet, o)}}}}},
		Status: corev1.PodStatus{Phase: corev1.PodPending},
	}
	if ready {
		p.Status.Phase = corev1.PodRunning
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue,
			LastTransitionTime: metav1.NewTime(w.now.Add(-time.Minute))}}
	}
	w.s.Pods = append(w.s.Pods, p)
}

func (w *migWorld) pod(o int32) *corev1.Pod {
	for i := range w.s.Pods {
		if w.s.Pods[i].Name == stsutil.PodName(migSet, o) {
			return &w.s.Pods[i]
		}
	}
	return nil
}

func (w *migWorld) pvc(o int32) *corev1.PersistentVolumeClaim {
	for i := range w.s.PVCs {
		if w.s.PVCs[i].Name == stsutil.ClaimPVCName(migClaim, migSet, o) {
			return &w.s.PVCs[i]
		}
	}
	return nil
}

func (w *migWorld) removePod(o int32) {
	out := w.s.Pods[:0]
	for _, p := range w.s.Pods {
		if p.Name != stsutil.PodName(migSet, o) {
			out = append(out, p)
		}
	}
	w.s.Pods = out
}

func (w *migWorld) removePVC(o int32) {
	out := w.s.PVCs[:0]
	for _, p := range w.s.PVCs {
		if p.Name != stsutil.ClaimPVCName(migClaim, migSet, o) {
			out = append(out, p)
		}
	}
	w.s.PVCs = out
}

// switchTemplate changes the live template to pool and bumps the update
// revision, as the statefulset resource + controller would.
func (w *migWorld) switchTemplate(pool string) {
	w.s.Live.Spec.Template.Spec.NodeSelector = map[string]string{stsutil.LabelNodePool: pool}
	w.s.Live.Status.UpdateRevision = migRevB
}

func (w *migWorld) terminate(obj *metav1.ObjectMeta) {
	t := metav1.NewTime(w.now)
	obj.DeletionTimestamp = &t
}

func (w *migWorld) addPDB(allowed int32) {
	w.s.PDBs = append(w.s.PDBs, policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Namespace: migNS, Name: "hist"},
		Spec:       policyv1.PodDisruptionBudgetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "hist"}}},
		Status:     policyv1.PodDisruptionBudgetStatus{DisruptionsAllowed: allowed, CurrentHealthy: 3, DesiredHealthy: 3 - allowed},
	})
}

type typesUID = types.UID

func capacityBytes(s string) string {
	q := resource.MustParse(s)
	return fmt.Sprint(q.Value())
}
