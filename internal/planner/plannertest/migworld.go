package plannertest

import (
	"fmt"
	"time"

	"github.com/olapgke/terraform-provider-olapgke/internal/planner"
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

// MigWorld builds migration snapshots: pools of nodes with TopoLVM capacity,
// a StatefulSet "hist" in namespace "olap" with claim "cache" (10Gi,
// StorageClass topolvm-provisioner), Pods Ready on pool-a with PVs pinned.
type MigWorld struct {
	S   planner.Snapshot
	Now time.Time
}

var MigT0 = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

const (
	MigNS    = "olap"
	MigSet   = "hist"
	MigClaim = "cache"
	MigSC    = "topolvm-provisioner"
	MigRevA  = "hist-aaaa"
	MigRevB  = "hist-bbbb"
)

func NewMigWorld(replicas int32, pool string) *MigWorld {
	w := &MigWorld{Now: MigT0}
	for _, p := range []string{"pool-a", "pool-b"} {
		for i := 0; i < 3; i++ {
			w.AddNode(fmt.Sprintf("gke-olap-%s-%d", p, i), p, "700Gi")
		}
	}
	w.S.StorageClasses = []storagev1.StorageClass{{
		ObjectMeta:  metav1.ObjectMeta{Name: MigSC},
		Provisioner: "topolvm.io",
		Parameters:  map[string]string{stsutil.ParamDeviceClass: "ssd"},
	}}
	set := &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: MigNS, Name: MigSet, UID: "set-uid", Generation: 2},
		Spec: appsv1.StatefulSetSpec{
			Replicas:       ptr.To(replicas),
			UpdateStrategy: appsv1.StatefulSetUpdateStrategy{Type: appsv1.OnDeleteStatefulSetStrategyType},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "hist"}},
				Spec:       corev1.PodSpec{NodeSelector: map[string]string{stsutil.LabelNodePool: pool}},
			},
			VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{
				ObjectMeta: metav1.ObjectMeta{Name: MigClaim},
				Spec: corev1.PersistentVolumeClaimSpec{
					StorageClassName: ptr.To(MigSC),
					Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{
						corev1.ResourceStorage: resource.MustParse("10Gi")}},
				},
			}},
		},
		Status: appsv1.StatefulSetStatus{ObservedGeneration: 2, CurrentRevision: MigRevA, UpdateRevision: MigRevA},
	}
	w.S.Live = set
	for o := int32(0); o < replicas; o++ {
		node := fmt.Sprintf("gke-olap-pool-a-%d", o%3)
		w.AddOrdinal(o, node, MigRevA, fmt.Sprintf("a%d", o))
	}
	return w
}

func (w *MigWorld) AddNode(name, pool, capacity string) {
	w.S.Nodes = append(w.S.Nodes, corev1.Node{ObjectMeta: metav1.ObjectMeta{
		Name:        name,
		Labels:      map[string]string{stsutil.LabelNodePool: pool, stsutil.LabelTopoLVMNode: name, "kubernetes.io/hostname": name},
		Annotations: map[string]string{stsutil.AnnotationCapacityPrefix + "ssd": CapacityBytes(capacity)},
	}})
}

func (w *MigWorld) Node(name string) *corev1.Node {
	for i := range w.S.Nodes {
		if w.S.Nodes[i].Name == name {
			return &w.S.Nodes[i]
		}
	}
	panic(name)
}

// AddOrdinal adds a Ready Pod on node at rev, with its PVC bound to a PV
// pinned to node; gen distinguishes UIDs of successive generations.
func (w *MigWorld) AddOrdinal(o int32, node, rev, gen string) {
	w.AddPVC(o, node, gen)
	w.AddPod(o, node, rev, gen, true)
}

func (w *MigWorld) AddPVC(o int32, node, gen string) {
	pvcName := stsutil.ClaimPVCName(MigClaim, MigSet, o)
	pvName := "pvc-" + gen + "-" + fmt.Sprint(o)
	pvc := corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: MigNS, Name: pvcName, UID: types.UID("pvc-uid-" + gen)},
		Spec:       corev1.PersistentVolumeClaimSpec{StorageClassName: ptr.To(MigSC)},
	}
	if node != "" {
		pvc.Spec.VolumeName = pvName
		w.S.PVs = append(w.S.PVs, corev1.PersistentVolume{
			ObjectMeta: metav1.ObjectMeta{Name: pvName},
			Spec: corev1.PersistentVolumeSpec{
				StorageClassName:              MigSC,
				PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimDelete,
				Capacity:                      corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("10Gi")},
				ClaimRef:                      &corev1.ObjectReference{Namespace: MigNS, Name: pvcName, UID: pvc.UID},
				NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
					MatchExpressions: []corev1.NodeSelectorRequirement{{Key: stsutil.LabelTopoLVMNode, Operator: corev1.NodeSelectorOpIn, Values: []string{node}}},
				}}}},
			},
		})
	}
	w.RemovePVC(o)
	w.S.PVCs = append(w.S.PVCs, pvc)
}

func (w *MigWorld) AddPod(o int32, node, rev, gen string, ready bool) {
	name := stsutil.PodName(MigSet, o)
	w.RemovePod(o)
	p := corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: MigNS, Name: name, UID: types.UID("pod-uid-" + gen),
			Labels: map[string]string{"app": "hist", stsutil.LabelControllerRevision: rev}},
		Spec: corev1.PodSpec{NodeName: node, Volumes: []corev1.Volume{{Name: MigClaim, VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: stsutil.ClaimPVCName(MigClaim, MigSet, o)}}}}},
		Status: corev1.PodStatus{Phase: corev1.PodPending},
	}
	if ready {
		p.Status.Phase = corev1.PodRunning
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue,
			LastTransitionTime: metav1.NewTime(w.Now.Add(-time.Minute))}}
	}
	w.S.Pods = append(w.S.Pods, p)
}

func (w *MigWorld) Pod(o int32) *corev1.Pod {
	for i := range w.S.Pods {
		if w.S.Pods[i].Name == stsutil.PodName(MigSet, o) {
			return &w.S.Pods[i]
		}
	}
	return nil
}

func (w *MigWorld) PVC(o int32) *corev1.PersistentVolumeClaim {
	for i := range w.S.PVCs {
		if w.S.PVCs[i].Name == stsutil.ClaimPVCName(MigClaim, MigSet, o) {
			return &w.S.PVCs[i]
		}
	}
	return nil
}

func (w *MigWorld) RemovePod(o int32) {
	out := w.S.Pods[:0]
	for _, p := range w.S.Pods {
		if p.Name != stsutil.PodName(MigSet, o) {
			out = append(out, p)
		}
	}
	w.S.Pods = out
}

func (w *MigWorld) RemovePVC(o int32) {
	out := w.S.PVCs[:0]
	for _, p := range w.S.PVCs {
		if p.Name != stsutil.ClaimPVCName(MigClaim, MigSet, o) {
			out = append(out, p)
		}
	}
	w.S.PVCs = out
}

// SwitchTemplate changes the live template to pool and bumps the update
// revision, as the statefulset resource + controller would.
func (w *MigWorld) SwitchTemplate(pool string) {
	w.S.Live.Spec.Template.Spec.NodeSelector = map[string]string{stsutil.LabelNodePool: pool}
	w.S.Live.Status.UpdateRevision = MigRevB
}

func (w *MigWorld) Terminate(obj *metav1.ObjectMeta) {
	t := metav1.NewTime(w.Now)
	obj.DeletionTimestamp = &t
}

func (w *MigWorld) AddPDB(allowed int32) {
	w.S.PDBs = append(w.S.PDBs, policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Namespace: MigNS, Name: "hist"},
		Spec:       policyv1.PodDisruptionBudgetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "hist"}}},
		Status:     policyv1.PodDisruptionBudgetStatus{DisruptionsAllowed: allowed, CurrentHealthy: 3, DesiredHealthy: 3 - allowed},
	})
}

type TypesUID = types.UID

func CapacityBytes(s string) string {
	q := resource.MustParse(s)
	return fmt.Sprint(q.Value())
}
