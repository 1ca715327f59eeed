package schedsim

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

const topolvmKey = "topology.topolvm.io/node"

func q(s string) resource.Quantity { return resource.MustParse(s) }

type nodeOpt func(*corev1.Node)

func mkNode(name, cpu, mem string, opts ...nodeOpt) corev1.Node {
	n := corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
			"kubernetes.io/hostname": name, topolvmKey: name,
		}},
		Status: corev1.NodeStatus{
			Allocatable: corev1.ResourceList{corev1.ResourceCPU: q(cpu), corev1.ResourceMemory: q(mem), corev1.ResourcePods: q("110")},
			Capacity:    corev1.ResourceList{corev1.ResourceCPU: q(cpu), corev1.ResourceMemory: q(mem), corev1.ResourcePods: q("110")},
		},
	}
	for _, o := range opts {
		o(&n)
	}
	return n
}

func withLabel(k, v string) nodeOpt { return func(n *corev1.Node) { n.Labels[k] = v } }
func withTaint(k, v string) nodeOpt {
	return func(n *corev1.Node) {
		n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: k, Value: v, Effect: corev1.TaintEffectNoSchedule})
	}
}
func cordoned() nodeOpt { return func(n *corev1.Node) { n.Spec.Unschedulable = true } }

type podOpt func(*corev1.Pod)

func mkPod(name, cpu, mem string, opts ...podOpt) *corev1.Pod {
	req := corev1.ResourceList{}
	if cpu != "" {
		req[corev1.ResourceCPU] = q(cpu)
	}
	if mem != "" {
		req[corev1.ResourceMemory] = q(mem)
	}
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Labels: map[string]string{}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "c", Image: "x", Resources: corev1.ResourceRequirements{Requests: req},
		}}},
	}
	for _, o := range opts {
		o(p)
	}
	return p
}

func podLabel(k, v string) podOpt { return func(p *corev1.Pod) { p.Labels[k] = v } }
func onNode(n string) podOpt      { return func(p *corev1.Pod) { p.Spec.NodeName = n } }
func priority(v int32) podOpt     { return func(p *corev1.Pod) { p.Spec.Priority = ptr.To(v) } }
func hostPort(port int32) podOpt {
	return func(p *corev1.Pod) {
		p.Spec.Containers[0].Ports = append(p.Spec.Containers[0].Ports, corev1.ContainerPort{ContainerPort: port, HostPort: port, Protocol: corev1.ProtocolTCP})
	}
}
func antiAffinityHostname(k, v string) podOpt {
	return func(p *corev1.Pod) {
		p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
				LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{k: v}},
				TopologyKey:   "kubernetes.io/hostname",
			}},
		}}
	}
}
func spreadZone(maxSkew int32, k, v string) podOpt {
	return func(p *corev1.Pod) {
		p.Spec.TopologySpreadConstraints = append(p.Spec.TopologySpreadConstraints, corev1.TopologySpreadConstraint{
			MaxSkew: maxSkew, TopologyKey: "topology.kubernetes.io/zone", WhenUnsatisfiable: corev1.DoNotSchedule,
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{k: v}},
		})
	}
}
func withPVC(claim string) podOpt {
	return func(p *corev1.Pod) {
		p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: claim, VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}})
	}
}

// topolvm-like storage: WaitForFirstConsumer class backed by a CSI driver
// with storage capacity tracking.
func topolvmStorage() ([]storagev1.StorageClass, []storagev1.CSIDriver) {
	wffc := storagev1.VolumeBindingWaitForFirstConsumer
	sc := storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "topolvm"}, Provisioner: "topolvm.io", VolumeBindingMode: &wffc}
	drv := storagev1.CSIDriver{ObjectMeta: metav1.ObjectMeta{Name: "topolvm.io"}, Spec: storagev1.CSIDriverSpec{StorageCapacity: ptr.To(true)}}
	return []storagev1.StorageClass{sc}, []storagev1.CSIDriver{drv}
}

func capacityFor(node, size string) storagev1.CSIStorageCapacity {
	c := q(size)
	return storagev1.CSIStorageCapacity{
		ObjectMeta:       metav1.ObjectMeta{Name: "cap-" + node, Namespace: "kube-system"},
		NodeTopology:     &metav1.LabelSelector{MatchLabels: map[string]string{topolvmKey: node}},
		StorageClassName: "topolvm",
		Capacity:         &c,
	}
}

func unboundPVC(name, size string) corev1.PersistentVolumeClaim {
	return corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: corev1.PersistentVolumeClaimSpec{
			StorageClassName: ptr.To("topolvm"),
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: q(size)}},
		},
	}
}

// boundPinned returns a PVC bound to a PV whose node affinity pins it to node.
func boundPinned(name, node string) (corev1.PersistentVolumeClaim, corev1.PersistentVolume) {
	pvName := "pv-" + name
	pvc := unboundPVC(name, "1Gi")
	pvc.Spec.VolumeName = pvName
	pvc.Status.Phase = corev1.ClaimBound
	pvc.Annotations = map[string]string{"pv.kubernetes.io/bind-completed": "yes"}
	pv := corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: pvName},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: q("1Gi")},
			AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			StorageClassName:              "topolvm",
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimDelete,
			ClaimRef:                      &corev1.ObjectReference{Kind: "PersistentVolumeClaim", Namespace: "default", Name: name},
			PersistentVolumeSource:        corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: "topolvm.io", VolumeHandle: pvName}},
			NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
				MatchExpressions: []corev1.NodeSelectorRequirement{{Key: topolvmKey, Operator: corev1.NodeSelectorOpIn, Values: []string{node}}},
			}}}},
		},
		Status: corev1.PersistentVolumeStatus{Phase: corev1.VolumeBound},
	}
	return pvc, pv
}

func newSim(t testing.TB, w World, opts ...Options) *Sim {
	t.Helper()
	o := Options{}
	if len(opts) > 0 {
		o = opts[0]
	}
	s, err := NewWithOptions(context.Background(), w, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

func mustPlace(t testing.TB, s *Sim, p *corev1.Pod) string {
	t.Helper()
	n, msg, err := s.Place(p)
	if err != nil {
		t.Fatal(err)
	}
	if n == "" {
		t.Fatalf("pod %s unexpectedly unschedulable: %s", p.Name, msg)
	}
	return n
}

func expectFail(t testing.TB, s *Sim, p *corev1.Pod, want string) {
	t.Helper()
	n, msg, err := s.Place(p)
	if err != nil {
		t.Fatal(err)
	}
	if n != "" {
		t.Fatalf("pod %s unexpectedly placed on %s", p.Name, n)
	}
	if msg != want {
		t.Fatalf("message mismatch\n got: %q\nwant: %q", msg, want)
	}
}

var _ = fmt.Sprintf

func metavObj(name string) metav1.ObjectMeta { return metav1.ObjectMeta{Name: name} }
