package sandboxtest

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

const (
	poolLabel    = "cloud.google.com/gke-nodepool"
	topolvmNode  = "topology.topolvm.io/node"
	storageClass = "topolvm-provisioner"
	// The scheduler's own words in v1.37 (kubernetes/kubernetes#129887).
	pvAffinityMsg = "didn't match PersistentVolume's node affinity"
)

func newNamespace(t *testing.T) string {
	t.Helper()
	name := strings.ToLower(strings.ReplaceAll(t.Name(), "_", "-"))
	if len(name) > 50 {
		name = name[:50]
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: name + "-"}}
	got, err := kube.CoreV1().Namespaces().Create(t.Context(), ns, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create namespace: %v", err)
	}
	poll(t, 30*time.Second, "default ServiceAccount in "+got.Name, func(ctx context.Context) (bool, error) {
		_, err := kube.CoreV1().ServiceAccounts(got.Name).Get(ctx, "default", metav1.GetOptions{})
		return err == nil, err
	})
	return got.Name
}

func statefulSet(name, pool string, strategy appsv1.StatefulSetUpdateStrategyType, size string) *appsv1.StatefulSet {
	labels := map[string]string{"app": name}
	sc := storageClass
	grace := int64(1)
	return &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1.StatefulSetSpec{
			Replicas:       new(int32(3)),
			Selector:       &metav1.LabelSelector{MatchLabels: labels},
			ServiceName:    name,
			UpdateStrategy: appsv1.StatefulSetUpdateStrategy{Type: strategy},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					NodeSelector:                  map[string]string{poolLabel: pool},
					TerminationGracePeriodSeconds: &grace,
					Containers: []corev1.Container{{
						Name:         "db",
						Image:        "registry.k8s.io/pause:3.10",
						VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}},
					}},
				},
			},
			VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{
				ObjectMeta: metav1.ObjectMeta{Name: "data"},
				Spec: corev1.PersistentVolumeClaimSpec{
					AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
					StorageClassName: &sc,
					Resources: corev1.VolumeResourceRequirements{
						Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(size)},
					},
				},
			}},
		},
	}
}

func createReadySet(t *testing.T, ns string, sts *appsv1.StatefulSet) *appsv1.StatefulSet {
	t.Helper()
	if _, err := kube.AppsV1().StatefulSets(ns).Create(t.Context(), sts, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create StatefulSet: %v", err)
	}
	var got *appsv1.StatefulSet
	poll(t, 60*time.Second, "StatefulSet "+sts.Name+" ready", func(ctx context.Context) (bool, error) {
		s, err := kube.AppsV1().StatefulSets(ns).Get(ctx, sts.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		got = s
		return s.Status.ObservedGeneration == s.Generation && s.Status.ReadyReplicas == *s.Spec.Replicas &&
			s.Status.UpdatedReplicas == *s.Spec.Replicas && s.Status.CurrentRevision == s.Status.UpdateRevision, nil
	})
	return got
}

func getPod(t *testing.T, ns, name string) *corev1.Pod {
	t.Helper()
	p, err := kube.CoreV1().Pods(ns).Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get Pod %s: %v", name, err)
	}
	return p
}

// pvNode is the node a TopoLVM PV is pinned to by its required node affinity.
func pvNode(pv *corev1.PersistentVolume) (string, error) {
	if pv.Spec.NodeAffinity == nil || pv.Spec.NodeAffinity.Required == nil {
		return "", fmt.Errorf("PV %s has no required node affinity", pv.Name)
	}
	for _, term := range pv.Spec.NodeAffinity.Required.NodeSelectorTerms {
		for _, e := range term.MatchExpressions {
			if e.Key == topolvmNode && e.Operator == corev1.NodeSelectorOpIn && len(e.Values) == 1 {
				return e.Values[0], nil
			}
		}
	}
	return "", fmt.Errorf("PV %s node affinity has no %s In [node] term: %+v", pv.Name, topolvmNode, pv.Spec.NodeAffinity.Required)
}

func isReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func podUIDs(t *testing.T, ns, app string) map[string]types.UID {
	t.Helper()
	pods, err := kube.CoreV1().Pods(ns).List(t.Context(), metav1.ListOptions{LabelSelector: "app=" + app})
	if err != nil {
		t.Fatalf("list Pods: %v", err)
	}
	out := map[string]types.UID{}
	for _, p := range pods.Items {
		out[p.Name] = p.UID
	}
	return out
}

// A 3-replica StatefulSet with a TopoLVM claim template becomes Ready, each PV
// pinned to its Pod's node; a deleted Pod comes back on the same node with
// the same claim and volume.
func TestStatefulSet_PinnedVolumesAndPodRestart(t *testing.T) {
	ns := newNamespace(t)
	createReadySet(t, ns, statefulSet("db", "pool-a", appsv1.RollingUpdateStatefulSetStrategyType, "10Gi"))

	pvcUID := map[int]types.UID{}
	for i := range 3 {
		pod := getPod(t, ns, fmt.Sprintf("db-%d", i))
		node, err := kube.CoreV1().Nodes().Get(t.Context(), pod.Spec.NodeName, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("get node of %s: %v", pod.Name, err)
		}
		if node.Labels[poolLabel] != "pool-a" {
			t.Errorf("Pod %s runs on %s in pool %q, want pool-a", pod.Name, node.Name, node.Labels[poolLabel])
		}
		pvc, err := kube.CoreV1().PersistentVolumeClaims(ns).Get(t.Context(), fmt.Sprintf("data-db-%d", i), metav1.GetOptions{})
		if err != nil {
			t.Fatalf("get PVC: %v", err)
		}
		if pvc.Status.Phase != corev1.ClaimBound {
			t.Fatalf("PVC %s is %s, want Bound", pvc.Name, pvc.Status.Phase)
		}
		pvcUID[i] = pvc.UID
		pv, err := kube.CoreV1().PersistentVolumes().Get(t.Context(), pvc.Spec.VolumeName, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("get PV: %v", err)
		}
		if pv.Spec.CSI == nil || pv.Spec.CSI.Driver != "topolvm.io" {
			t.Errorf("PV %s is not a topolvm.io CSI volume: %+v", pv.Name, pv.Spec.PersistentVolumeSource)
		}
		pinned, err := pvNode(pv)
		if err != nil {
			t.Fatal(err)
		}
		if pinned != pod.Spec.NodeName {
			t.Errorf("PV %s of Pod %s is pinned to %s, Pod runs on %s", pv.Name, pod.Name, pinned, pod.Spec.NodeName)
		}
	}

	old := getPod(t, ns, "db-1")
	if err := kube.CoreV1().Pods(ns).Delete(t.Context(), "db-1", metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete Pod db-1: %v", err)
	}
	var back *corev1.Pod
	poll(t, 60*time.Second, "db-1 recreated and Ready", func(ctx context.Context) (bool, error) {
		p, err := kube.CoreV1().Pods(ns).Get(ctx, "db-1", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		back = p
		return p.UID != old.UID && p.DeletionTimestamp == nil && isReady(p), nil
	})
	if back.Spec.NodeName != old.Spec.NodeName {
		t.Errorf("db-1 came back on %s, was on %s (its PV is pinned there)", back.Spec.NodeName, old.Spec.NodeName)
	}
	pvc, err := kube.CoreV1().PersistentVolumeClaims(ns).Get(t.Context(), "data-db-1", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get PVC: %v", err)
	}
	if pvc.UID != pvcUID[1] {
		t.Errorf("db-1 came back with a new PVC (uid %s, was %s)", pvc.UID, pvcUID[1])
	}
	if !usesClaim(back, "data-db-1") {
		t.Errorf("recreated db-1 does not mount PVC data-db-1: %+v", back.Spec.Volumes)
	}
}

func usesClaim(p *corev1.Pod, claim string) bool {
	for _, v := range p.Spec.Volumes {
		if v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.ClaimName == claim {
			return true
		}
	}
	return false
}

func moveTemplateTo(t *testing.T, ns, name, pool string) {
	t.Helper()
	patch := fmt.Sprintf(`{"spec":{"template":{"spec":{"nodeSelector":{%q:%q}}}}}`, poolLabel, pool)
	if _, err := kube.AppsV1().StatefulSets(ns).Patch(t.Context(), name, types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatalf("patch nodeSelector to %s: %v", pool, err)
	}
}

// The seed incident: under RollingUpdate, moving the template to pool-b makes
// the controller recreate only the highest ordinal, which cannot schedule
// because its PV is pinned to a pool-a node; the rollout stalls there.
func TestStatefulSet_IncidentRollingUpdateStalls(t *testing.T) {
	ns := newNamespace(t)
	createReadySet(t, ns, statefulSet("db", "pool-a", appsv1.RollingUpdateStatefulSetStrategyType, "10Gi"))
	before := podUIDs(t, ns, "db")
	moveTemplateTo(t, ns, "db", "pool-b")

	var msg string
	poll(t, 60*time.Second, "db-2 recreated and unschedulable", func(ctx context.Context) (bool, error) {
		p, err := kube.CoreV1().Pods(ns).Get(ctx, "db-2", metav1.GetOptions{})
		if err != nil {
			return false, nil // deleted, not yet recreated
		}
		if p.UID == before["db-2"] {
			return false, nil
		}
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
				msg = c.Message
				return true, nil
			}
		}
		return false, nil
	})
	if !strings.Contains(msg, pvAffinityMsg) {
		t.Errorf("db-2 unschedulable message = %q, want it to contain %q", msg, pvAffinityMsg)
	}
	p := getPod(t, ns, "db-2")
	if p.Spec.NodeName != "" || p.Status.Phase != corev1.PodPending {
		t.Errorf("db-2: node %q phase %s, want unscheduled and Pending", p.Spec.NodeName, p.Status.Phase)
	}
	if !usesClaim(p, "data-db-2") {
		t.Errorf("recreated db-2 does not keep PVC data-db-2")
	}

	holds(t, 3*time.Second, "rollout stalls with ordinals 0 and 1 untouched", func(ctx context.Context) error {
		now := podUIDs(t, ns, "db")
		for _, n := range []string{"db-0", "db-1"} {
			if now[n] != before[n] {
				return fmt.Errorf("%s was recreated (uid %s -> %s)", n, before[n], now[n])
			}
		}
		s, err := kube.AppsV1().StatefulSets(ns).Get(ctx, "db", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if s.Status.CurrentRevision == s.Status.UpdateRevision {
			return fmt.Errorf("rollout completed (revision %s)", s.Status.UpdateRevision)
		}
		if s.Status.UpdatedReplicas > 1 || s.Status.ReadyReplicas > 2 {
			return fmt.Errorf("rollout progressed: updated=%d ready=%d", s.Status.UpdatedReplicas, s.Status.ReadyReplicas)
		}
		return nil
	})
}

// Under OnDelete the same edit recreates nothing.
func TestStatefulSet_IncidentOnDeleteRecreatesNothing(t *testing.T) {
	ns := newNamespace(t)
	createReadySet(t, ns, statefulSet("db", "pool-a", appsv1.OnDeleteStatefulSetStrategyType, "10Gi"))
	before := podUIDs(t, ns, "db")
	moveTemplateTo(t, ns, "db", "pool-b")

	poll(t, 30*time.Second, "controller observed the edit", func(ctx context.Context) (bool, error) {
		s, err := kube.AppsV1().StatefulSets(ns).Get(ctx, "db", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return s.Status.ObservedGeneration == s.Generation && s.Status.UpdateRevision != s.Status.CurrentRevision, nil
	})
	holds(t, 3*time.Second, "no Pod recreated under OnDelete", func(ctx context.Context) error {
		now := podUIDs(t, ns, "db")
		for n, uid := range before {
			if now[n] != uid {
				return fmt.Errorf("%s was recreated (uid %s -> %s)", n, uid, now[n])
			}
		}
		return nil
	})
	for n := range before {
		if p := getPod(t, ns, n); !isReady(p) {
			t.Errorf("%s is not Ready after the OnDelete edit", n)
		}
	}
}

// Capacity shortage is not a silent success: a Pod with two 500Gi claims
// passes the scheduler's per-claim capacity check on a node with 740Gi free
// (2 x 375Gi Local SSDs minus 10Gi spare), the provisioner then has room for
// only one, reports ProvisioningFailed for the other, and the Pod stays Pending.
func TestCapacityShortage_ProvisioningFailedAndPending(t *testing.T) {
	ns := newNamespace(t)
	sc := storageClass
	var vols []corev1.Volume
	for _, c := range []string{"big-a", "big-b"} {
		pvc := &corev1.PersistentVolumeClaim{
			ObjectMeta: metav1.ObjectMeta{Name: c},
			Spec: corev1.PersistentVolumeClaimSpec{
				AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				StorageClassName: &sc,
				Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("500Gi")}},
			},
		}
		if _, err := kube.CoreV1().PersistentVolumeClaims(ns).Create(t.Context(), pvc, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create PVC %s: %v", c, err)
		}
		vols = append(vols, corev1.Volume{Name: c, VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: c}}})
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "hungry"},
		Spec: corev1.PodSpec{
			NodeSelector: map[string]string{poolLabel: "pool-a"},
			Containers:   []corev1.Container{{Name: "c", Image: "registry.k8s.io/pause:3.10"}},
			Volumes:      vols,
		},
	}
	if _, err := kube.CoreV1().Pods(ns).Create(t.Context(), pod, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create Pod: %v", err)
	}
	var failed string
	poll(t, 60*time.Second, "ProvisioningFailed event", func(ctx context.Context) (bool, error) {
		evs, err := kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "reason=ProvisioningFailed"})
		if err != nil {
			return false, err
		}
		for _, e := range evs.Items {
			if e.InvolvedObject.Kind == "PersistentVolumeClaim" {
				failed = e.InvolvedObject.Name + ": " + e.Message
				return true, nil
			}
		}
		return false, nil
	})
	t.Logf("ProvisioningFailed on %s", failed)
	holds(t, 2*time.Second, "Pod stays Pending", func(ctx context.Context) error {
		p, err := kube.CoreV1().Pods(ns).Get(ctx, "hungry", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if p.Status.Phase != corev1.PodPending || isReady(p) {
			return fmt.Errorf("Pod is %s (ready=%v), want Pending", p.Status.Phase, isReady(p))
		}
		return nil
	})
}

// The env file carries what the provider needs, and the access token is
// accepted by the API server as a bearer token of a cluster admin.
func TestEnvFile(t *testing.T) {
	want := map[string]string{
		"OLAPGKE_CONTAINER_INSECURE": "true",
		"GOOGLE_PROJECT":             "sandbox",
		"OLAPGKE_LOCATION":           "us-central1-a",
		"OLAPGKE_CLUSTER":            "olap",
	}
	for k, v := range want {
		if envVars[k] != v {
			t.Errorf("env %s = %q, want %q", k, envVars[k], v)
		}
	}
	for _, k := range []string{"OLAPGKE_CONTAINER_ENDPOINT", "GOOGLE_OAUTH_ACCESS_TOKEN", "KUBECONFIG"} {
		if envVars[k] == "" {
			t.Errorf("env %s is empty", k)
		}
	}
	rc, err := clientcmd.BuildConfigFromFlags("", envVars["KUBECONFIG"])
	if err != nil {
		t.Fatalf("kubeconfig from env: %v", err)
	}
	// Loopback: the API server would gzip every watch flush (controlplane.WriteKubeconfig).
	if !rc.DisableCompression {
		t.Errorf("kubeconfig %s: disable-compression is not set", envVars["KUBECONFIG"])
	}
	rc.BearerToken = envVars["GOOGLE_OAUTH_ACCESS_TOKEN"]
	asToken, err := kubernetes.NewForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	review, err := asToken.AuthenticationV1().SelfSubjectReviews().Create(t.Context(), &authnv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("self subject review: %v", err)
	}
	groups := strings.Join(review.Status.UserInfo.Groups, ",")
	if !strings.Contains(groups, "system:masters") {
		t.Errorf("kubeconfig user groups = %s, want system:masters", groups)
	}
}
