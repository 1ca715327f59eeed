package planner

import (
	"fmt"
	"testing"

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
	ns      = "olap"
	setName = "olap"
	poolKey = "cloud.google.com/gke-nodepool"
	scName  = "topolvm-ssd"
	gib     = int64(1) << 30
	setUID  = types.UID("uid-olap")
)

func nodeName(pool string, i int) string { return fmt.Sprintf("gke-olap-%s-%d", pool, i) }

func mkNode(pool string, i int, freeGiB int64) corev1.Node {
	name := nodeName(pool, i)
	return corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:        name,
			Labels:      map[string]string{poolKey: pool, stsutil.LabelTopoLVMNode: name, "kubernetes.io/hostname": name},
			Annotations: map[string]string{stsutil.AnnotationCapacityPrefix + "ssd": fmt.Sprint(freeGiB * gib)},
		},
	}
}

func mkPool(pool string, n int, freeGiB int64) []corev1.Node {
	var out []corev1.Node
	for i := 0; i < n; i++ {
		out = append(out, mkNode(pool, i, freeGiB))
	}
	return out
}

func storageClass() storagev1.StorageClass {
	return storagev1.StorageClass{
		ObjectMeta:  metav1.ObjectMeta{Name: scName, Annotations: map[string]string{AnnotationDefaultClass: "true"}},
		Provisioner: "topolvm.io",
		Parameters:  map[string]string{stsutil.ParamDeviceClass: "ssd"},
	}
}

func vct(name string, sizeGiB int64) corev1.PersistentVolumeClaim {
	return corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			StorageClassName: ptr.To(scName),
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: *resource.NewQuantity(sizeGiB*gib, resource.BinarySI)}},
		},
	}
}

// mkSet returns a defaulted-looking StatefulSet on pool-a.
func mkSet(replicas int32) *appsv1.StatefulSet {
	return &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: setName, Namespace: ns, UID: setUID, Generation: 1},
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
					NodeSelector: map[string]string{poolKey: "pool-a"},
					Containers:   []corev1.Container{{Name: "olap", Image: "olap:1"}},
				},
			},
			VolumeClaimTemplates: []corev1.PersistentVolumeClaim{vct("data", 100)},
		},
	}
}

func onDelete(s *appsv1.StatefulSet) {
	s.Spec.UpdateStrategy = appsv1.StatefulSetUpdateStrategy{Type: appsv1.OnDeleteStatefulSetStrategyType}
}

func toPoolB(s *appsv1.StatefulSet) {
	s.Spec.Template.Spec.NodeSelector = map[string]string{poolKey: "pool-b"}
}

func newImage(s *appsv1.StatefulSet) { s.Spec.Template.Spec.Containers[0].Image = "olap:2" }

// world is a live StatefulSet whose Pods all run Ready at its revision, each
// ordinal on node pool-a-<i mod nodes> with PVs pinned there.
type world struct {
	snap Snapshot
}

func revisionFor(t testing.TB, set *appsv1.StatefulSet, number int64) appsv1.ControllerRevision {
	t.Helper()
	patch, err := RevisionPatch(set)
	if err != nil {
		t.Fatal(err)
	}
	return appsv1.ControllerRevision{
		ObjectMeta: metav1.ObjectMeta{
			Name: RevisionName(set.Name, HashRevision(patch, 0)), Namespace: set.Namespace,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "StatefulSet", Name: set.Name, UID: set.UID, Controller: ptr.To(true)}},
		},
		Data:     runtime.RawExtension{Raw: patch},
		Revision: number,
	}
}

func newWorld(t testing.TB, live *appsv1.StatefulSet, nodes []corev1.Node) *world {
	t.Helper()
	rev := revisionFor(t, live, 1)
	live.Status = appsv1.StatefulSetStatus{ObservedGeneration: 1, CurrentRevision: rev.Name, UpdateRevision: rev.Name, CollisionCount: ptr.To[int32](0)}
	w := &world{snap: Snapshot{
		Live:           live,
		Revisions:      []appsv1.ControllerRevision{rev},
		Nodes:          nodes,
		StorageClasses: []storagev1.StorageClass{storageClass()},
	}}
	var poolA []string
	for _, n := range nodes {
		if n.Labels[poolKey] == "pool-a" {
			poolA = append(poolA, n.Name)
		}
	}
	start := startOf(live)
	for i := 0; i < replicasOf(live); i++ {
		w.addPod(live, start+i, poolA[i%len(poolA)], rev.Name, true)
	}
	return w
}

func (w *world) addPod(set *appsv1.StatefulSet, o int, node, rev string, ready bool) {
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
			w.addBoundClaim(claim, v, node)
		}
	}
	w.snap.Pods = append(w.snap.Pods, pod)
}

func (w *world) addBoundClaim(claim string, v corev1.PersistentVolumeClaim, node string) {
	pvName := "pv-" + claim
	w.snap.PVCs = append(w.snap.PVCs, corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: claim, Namespace: ns},
		Spec:       corev1.PersistentVolumeClaimSpec{StorageClassName: v.Spec.StorageClassName, Resources: v.Spec.Resources, VolumeName: pvName},
		Status:     corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound},
	})
	w.snap.PVs = append(w.snap.PVs, corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: pvName},
		Spec: corev1.PersistentVolumeSpec{
			StorageClassName: scName,
			ClaimRef:         &corev1.ObjectReference{Namespace: ns, Name: claim},
			NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
				MatchExpressions: []corev1.NodeSelectorRequirement{{Key: stsutil.LabelTopoLVMNode, Operator: corev1.NodeSelectorOpIn, Values: []string{node}}},
			}}}},
		},
	})
}

func (w *world) desire(mut ...func(*appsv1.StatefulSet)) *world {
	d := w.snap.Live.DeepCopy()
	d.Status = appsv1.StatefulSetStatus{}
	for _, m := range mut {
		m(d)
	}
	w.snap.Desired = d
	return w
}

func (w *world) node(name string) *corev1.Node {
	for i := range w.snap.Nodes {
		if w.snap.Nodes[i].Name == name {
			return &w.snap.Nodes[i]
		}
	}
	return nil
}

// summary renders a plan compactly: "<ordinal> <action> w<wave> ok|NO [blocked] [nopod] [pvcs]".
func summary(p *Plan) []string {
	var out []string
	for _, o := range p.Ordinals {
		s := fmt.Sprintf("%d %s w%d", o.Ordinal, o.Action, o.Wave)
		if o.Action != ActionDelete {
			if o.Schedulable {
				s += " ok"
			} else {
				s += " NO"
			}
		}
		if o.Blocked {
			s += " blocked"
		}
		if o.NoPod {
			s += " nopod"
		}
		if o.PVCsAfter != "" {
			s += " pvcs=" + o.PVCsAfter
		}
		out = append(out, s)
	}
	return out
}

// checkInvariants: one entry (so one Pod) per ordinal, ascending; ordinals
// outside old ∪ new range ∪ existing Pods never appear; only deletions
// outside the desired range; untouched actions have wave 0.
func checkInvariants(t *testing.T, s Snapshot, p *Plan) {
	t.Helper()
	allowed := map[int32]bool{}
	addRange := func(set *appsv1.StatefulSet) {
		if set == nil {
			return
		}
		for o := startOf(set); o < startOf(set)+replicasOf(set); o++ {
			allowed[int32(o)] = true
		}
	}
	addRange(s.Desired)
	addRange(s.Live)
	for _, pod := range s.Pods {
		allowed[stsutil.OrdinalOf(pod.Name)] = true
	}
	prev := int32(-1)
	for _, o := range p.Ordinals {
		if o.Ordinal <= prev {
			t.Errorf("ordinal %d listed twice or out of order", o.Ordinal)
		}
		prev = o.Ordinal
		if !allowed[o.Ordinal] {
			t.Errorf("ordinal %d is outside the old and new range and has no Pod", o.Ordinal)
		}
		if s.Desired != nil {
			in := int(o.Ordinal) >= startOf(s.Desired) && int(o.Ordinal) < startOf(s.Desired)+replicasOf(s.Desired)
			if in == (o.Action == ActionDelete) {
				t.Errorf("ordinal %d: action %s does not fit the desired range", o.Ordinal, o.Action)
			}
		}
		if (o.Action == ActionUnchanged || o.Action == ActionStale || o.Action == ActionStranded) && o.Wave != 0 {
			t.Errorf("ordinal %d: %s with wave %d", o.Ordinal, o.Action, o.Wave)
		}
		if o.Blocked && p.Stall == nil {
			t.Errorf("ordinal %d blocked without a stall", o.Ordinal)
		}
		if o.Pod != fmt.Sprintf("%s-%d", setName, o.Ordinal) {
			t.Errorf("ordinal %d: pod name %q", o.Ordinal, o.Pod)
		}
		if !o.Schedulable && o.Reason == "" {
			t.Errorf("ordinal %d: unschedulable without a reason", o.Ordinal)
		}
	}
}
