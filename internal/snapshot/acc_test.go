package snapshot_test

// Acceptance tests: each scenario plans a change with snapshot.Read +
// rollout.PlanRollout, applies it to the sandbox (real API server, StatefulSet
// controller, scheduler, TopoLVM simulator) and asserts the controllers did
// exactly what the plan said: which ordinals were recreated, which are
// Pending, where the rollout stalls, and the revision name.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"cloud.google.com/go/container/apiv1/containerpb"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	storagev1 "k8s.io/api/storage/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/olapgke/terraform-provider-olapgke/internal/acctest"
	"github.com/olapgke/terraform-provider-olapgke/internal/gke"
	olapkube "github.com/olapgke/terraform-provider-olapgke/internal/kube"
	"github.com/olapgke/terraform-provider-olapgke/internal/planner"
	"github.com/olapgke/terraform-provider-olapgke/internal/planner/rollout"
	"github.com/olapgke/terraform-provider-olapgke/internal/provider"
	"github.com/olapgke/terraform-provider-olapgke/internal/snapshot"
	"github.com/olapgke/terraform-provider-olapgke/internal/stsutil"
)

func TestMain(m *testing.M) { acctest.Main(m) }

const (
	accPoolKey      = "cloud.google.com/gke-nodepool"
	accStorageClass = "topolvm-provisioner" // the sandbox's TopoLVM StorageClass
	accTimeout      = 60 * time.Second
	// quietWindow is how long a scenario watches the Pods after the predicted
	// end state to prove the controller does nothing more (a stall is the
	// absence of events, so it can only be observed over a window).
	quietWindow = 3 * time.Second
)

var poolBOnce sync.Once

// ensurePoolB adds node pool pool-b (3 nodes, 2 Local SSDs) through the GKE
// emulator, as a user would, and waits for its nodes to be Ready.
func ensurePoolB(t *testing.T, env *acctest.Env) {
	t.Helper()
	var err error
	poolBOnce.Do(func() {
		ctx := context.Background()
		var c interface {
			GKE(context.Context) (gke.API, error)
		}
		c, err = provider.ClientsFromEnvironment(ctx, "acctest")
		if err != nil {
			return
		}
		var api gke.API
		if api, err = c.GKE(ctx); err != nil {
			return
		}
		ref := gke.ClusterRef{Project: env.Vars["GOOGLE_PROJECT"], Location: env.Vars["OLAPGKE_LOCATION"], Cluster: env.Vars["OLAPGKE_CLUSTER"]}
		if _, gerr := api.GetNodePool(ctx, ref, "pool-b"); errors.Is(gerr, gke.ErrNotFound) {
			err = api.CreateNodePool(ctx, ref, &containerpb.NodePool{
				Name: "pool-b", InitialNodeCount: 3,
				Config: &containerpb.NodeConfig{MachineType: "n2-standard-8", DiskSizeGb: 100, LocalNvmeSsdBlockConfig: &containerpb.LocalNvmeSsdBlockConfig{LocalSsdCount: 2}},
			})
		} else {
			err = gerr
		}
	})
	if err != nil {
		t.Fatalf("adding pool-b: %v", err)
	}
	pollUntil(t, "pool-b has 3 Ready nodes", func(ctx context.Context) (bool, error) {
		nodes, err := env.Kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: accPoolKey + "=pool-b"})
		if err != nil {
			return false, err
		}
		ready := 0
		for i := range nodes.Items {
			if stsutil.NodeReady(&nodes.Items[i]) == corev1.ConditionTrue {
				ready++
			}
		}
		return ready == 3, nil
	})
}

func pollUntil(t *testing.T, what string, cond wait.ConditionWithContextFunc) {
	t.Helper()
	if err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, accTimeout, true, cond); err != nil {
		t.Fatalf("waiting until %s: %v", what, err)
	}
}

func accNamespace(t *testing.T, kube kubernetes.Interface, name string) string {
	t.Helper()
	ns := strings.ToLower(strings.NewReplacer("_", "-", "/", "-").Replace(name))
	if len(ns) > 50 {
		ns = ns[:50]
	}
	ns = strings.Trim(ns, "-")
	_, err := kube.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = kube.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{})
	})
	return ns
}

// accSet is the OLAP StatefulSet as a user writes it (not defaulted).
func accSet(ns string, replicas int32) *appsv1.StatefulSet {
	return &appsv1.StatefulSet{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "StatefulSet"},
		ObjectMeta: metav1.ObjectMeta{Name: "hist", Namespace: ns},
		Spec: appsv1.StatefulSetSpec{
			Replicas:    ptr.To(replicas),
			ServiceName: "hist",
			Selector:    &metav1.LabelSelector{MatchLabels: map[string]string{"app": "hist"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "hist"}},
				Spec: corev1.PodSpec{
					// The sandbox honours the grace period like a kubelet;
					// 0 keeps each wave short.
					TerminationGracePeriodSeconds: ptr.To[int64](0),
					NodeSelector:                  map[string]string{accPoolKey: "pool-a"},
					Containers: []corev1.Container{{
						Name: "hist", Image: "olap/historical:1",
						VolumeMounts: []corev1.VolumeMount{{Name: "cache", MountPath: "/cache"}},
					}},
				},
			},
			VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{
				ObjectMeta: metav1.ObjectMeta{Name: "cache"},
				Spec: corev1.PersistentVolumeClaimSpec{
					AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
					StorageClassName: ptr.To(accStorageClass),
					Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("10Gi")}},
				},
			}},
		},
	}
}

// apply writes set with server-side apply (field manager olapgke), for real.
func apply(t *testing.T, kube kubernetes.Interface, set *appsv1.StatefulSet) {
	t.Helper()
	body, err := json.Marshal(set)
	if err != nil {
		t.Fatal(err)
	}
	_, err = kube.AppsV1().StatefulSets(set.Namespace).Patch(context.Background(), set.Name, types.ApplyPatchType, body, metav1.PatchOptions{FieldManager: snapshot.FieldManager, Force: ptr.To(true)})
	if err != nil {
		t.Fatalf("applying StatefulSet: %v", err)
	}
}

// createReady applies set and waits until every Pod is Ready and the rollout complete.
func createReady(t *testing.T, kube kubernetes.Interface, set *appsv1.StatefulSet) {
	t.Helper()
	apply(t, kube, set)
	pollUntil(t, "the StatefulSet is Ready", func(ctx context.Context) (bool, error) {
		live, err := kube.AppsV1().StatefulSets(set.Namespace).Get(ctx, set.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		s := live.Status
		return s.ObservedGeneration >= live.Generation && s.ReadyReplicas == *set.Spec.Replicas &&
			s.UpdatedReplicas == *set.Spec.Replicas && s.CurrentRevision == s.UpdateRevision && s.UpdateRevision != "", nil
	})
}

// plan dry-runs desired and plans it against a fresh snapshot.
func plan(t *testing.T, kube kubernetes.Interface, desired *appsv1.StatefulSet) (*rollout.Plan, *planner.Snapshot) {
	t.Helper()
	ctx := context.Background()
	defaulted, imm, err := snapshot.DryRunApply(ctx, kube, desired, "", true)
	if err != nil {
		t.Fatalf("dry run: %v", err)
	}
	s, err := snapshot.Read(ctx, kube, defaulted, desired.Namespace, desired.Name)
	if err != nil {
		t.Fatalf("snapshot: %v", err)
	}
	s.Immutable = imm
	p, err := rollout.PlanRollout(*s)
	if err != nil {
		t.Fatalf("plan: %v", err)
	}
	for _, o := range p.Ordinals {
		t.Logf("plan: ordinal %d %s wave %d schedulable=%v blocked=%v nopod=%v %s", o.Ordinal, o.Action, o.Wave, o.Schedulable, o.Blocked, o.NoPod, o.Reason)
	}
	return p, s
}

func podsByOrdinal(t *testing.T, kube kubernetes.Interface, ns string) map[int32]corev1.Pod {
	t.Helper()
	list, err := kube.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: "app=hist"})
	if err != nil {
		t.Fatal(err)
	}
	out := map[int32]corev1.Pod{}
	for _, p := range list.Items {
		if _, dup := out[stsutil.OrdinalOf(p.Name)]; dup {
			t.Errorf("two Pods for ordinal %d", stsutil.OrdinalOf(p.Name))
		}
		out[stsutil.OrdinalOf(p.Name)] = p
	}
	return out
}

func isReady(p corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return p.Status.Phase == corev1.PodRunning && c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func unschedulable(p corev1.Pod) (string, bool) {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
			return c.Message, true
		}
	}
	return "", false
}

// expect is what the plan predicts for the cluster once the controller has
// done everything it will do.
type expect struct {
	recreated map[int32]bool // new Pod UID
	pending   map[int32]bool // recreated and never schedules
	absent    map[int32]bool // deleted and not recreated
	// noPod: the plan's NoPod ordinals. The controller deletes them and, on
	// the path the planner follows, never recreates them; see
	// rollout.OrdinalPlan.NoPod for the race in which it recreates one Pending.
	noPod map[int32]bool
}

func predicted(p *rollout.Plan) expect {
	e := expect{recreated: map[int32]bool{}, pending: map[int32]bool{}, absent: map[int32]bool{}, noPod: map[int32]bool{}}
	for _, o := range p.Ordinals {
		switch {
		case o.Action == rollout.ActionDelete && o.Wave > 0 && !o.Blocked:
			e.absent[o.Ordinal] = true
		case o.NoPod:
			e.noPod[o.Ordinal] = true
		case (o.Action == rollout.ActionRecreate || o.Action == rollout.ActionCreate) && !o.Blocked:
			e.recreated[o.Ordinal] = true
			if !o.Schedulable {
				e.pending[o.Ordinal] = true
			}
		}
	}
	return e
}

// assertHappened waits until the cluster is in the predicted end state, then
// watches the Pods for quietWindow and fails on any further change (the
// stall point holds), and checks the revision names.
func assertHappened(t *testing.T, kube kubernetes.Interface, ns string, p *rollout.Plan, before map[int32]corev1.Pod, schedulerSays string) {
	t.Helper()
	e := predicted(p)
	var last string
	var raced []int32 // NoPod ordinals the controller recreated Pending (the race)
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, accTimeout, true, func(ctx context.Context) (bool, error) {
		raced = raced[:0]
		now := podsByOrdinal(t, kube, ns)
		for _, o := range p.Ordinals {
			pod, exists := now[o.Ordinal]
			old, existed := before[o.Ordinal]
			switch {
			case e.absent[o.Ordinal]:
				if exists {
					last = fmt.Sprintf("ordinal %d still has a Pod", o.Ordinal)
					return false, nil
				}
			case e.noPod[o.Ordinal]:
				// Either end state of the controller's race: no Pod, or a new one
				// at the planned revision that never schedules.
				if !exists {
					break
				}
				_, pending := unschedulable(pod)
				if (existed && pod.UID == old.UID) || pod.Labels[appsv1.ControllerRevisionHashLabelKey] != o.Revision || !pending {
					last = fmt.Sprintf("ordinal %d has a Pod that is not a new Pending one at revision %s", o.Ordinal, o.Revision)
					return false, nil
				}
				raced = append(raced, o.Ordinal)
			case e.recreated[o.Ordinal]:
				if !exists || (existed && pod.UID == old.UID) {
					last = fmt.Sprintf("ordinal %d not recreated yet", o.Ordinal)
					return false, nil
				}
				if pod.Labels[appsv1.ControllerRevisionHashLabelKey] != o.Revision {
					last = fmt.Sprintf("ordinal %d at revision %s, planned %s", o.Ordinal, pod.Labels[appsv1.ControllerRevisionHashLabelKey], o.Revision)
					return false, nil
				}
				if e.pending[o.Ordinal] {
					if _, ok := unschedulable(pod); !ok {
						last = fmt.Sprintf("ordinal %d not (yet) Unschedulable", o.Ordinal)
						return false, nil
					}
				} else if !isReady(pod) {
					last = fmt.Sprintf("ordinal %d not Ready yet", o.Ordinal)
					return false, nil
				}
			default:
				if existed && (!exists || pod.UID != old.UID) {
					return false, fmt.Errorf("ordinal %d was recreated or deleted, the plan said %s (blocked=%v)", o.Ordinal, o.Action, o.Blocked)
				}
			}
		}
		return true, nil
	})
	if err != nil {
		t.Fatalf("the controllers did not do what the plan predicted: %v (last: %s)", err, last)
	}
	for _, o := range raced {
		t.Logf("ordinal %d: the controller recreated the Pod (Pending) before it saw the lower ordinal's deletion", o)
	}
	// With nothing to recreate (OnDelete) the wait above ends at once: let the controller observe
	// the new generation before reading its update revision.
	var live *appsv1.StatefulSet
	pollUntil(t, "the controller observed the new generation", func(ctx context.Context) (bool, error) {
		var err error
		live, err = kube.AppsV1().StatefulSets(ns).Get(ctx, "hist", metav1.GetOptions{})
		return err == nil && live.Status.ObservedGeneration >= live.Generation, err
	})
	if live.Status.UpdateRevision != p.UpdateRevision {
		t.Errorf("controller's updateRevision %s, planner's %s", live.Status.UpdateRevision, p.UpdateRevision)
	}
	// The end state must hold: no Pod event at all during the window.
	ctx, cancel := context.WithTimeout(context.Background(), quietWindow)
	defer cancel()
	list, err := kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w, err := kube.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	for ev := range w.ResultChan() {
		if ev.Type == watch.Added || ev.Type == watch.Deleted {
			pod, _ := ev.Object.(*corev1.Pod)
			if pod != nil {
				t.Errorf("after the predicted end state: %s Pod %s", ev.Type, pod.Name)
			}
		}
	}
	if st := rollout.Rollout(live, podList(podsByOrdinal(t, kube, ns))); p.Stall != nil {
		if !st.Stalled() {
			t.Errorf("planner predicted a stall at %v but Rollout sees none: %+v", p.Stall.Ordinals, st)
		}
		for _, s := range st.Stuck {
			if e.pending[s.Ordinal] && !strings.Contains(s.Message, schedulerSays) {
				t.Errorf("ordinal %d: scheduler says %q, want %q", s.Ordinal, s.Message, schedulerSays)
			}
		}
	}
}

// Scheduler messages (v1.37.2) for the two ways a planned Pod never schedules.
const (
	pvAffinityMessage = "didn't match PersistentVolume's node affinity"
	capacityMessage   = "did not have enough free storage"
)

func podList(m map[int32]corev1.Pod) []corev1.Pod {
	var out []corev1.Pod
	for _, p := range m {
		out = append(out, p)
	}
	return out
}

func ordinalsWith(p *rollout.Plan, f func(rollout.OrdinalPlan) bool) []int32 {
	var out []int32
	for _, o := range p.Ordinals {
		if f(o) {
			out = append(out, o.Ordinal)
		}
	}
	return out
}

// TestAccSnapshot_listsDecodeAsClientGo: the snapshot decodes its LISTs item by item
// (kube.ListItems); on the real API server's bytes (its own protobuf list encoding) that gives
// exactly the objects client-go's decoder gives but for their managedFields, which it drops,
// for every kind the snapshot lists.
func TestAccSnapshot_listsDecodeAsClientGo(t *testing.T) {
	env := acctest.Sandbox(t)
	ns := accNamespace(t, env.Kube, t.Name())
	createReady(t, env.Kube, accSet(ns, 2))
	one := intstr.FromInt32(1)
	if _, err := env.Kube.PolicyV1().PodDisruptionBudgets(ns).Create(context.Background(), &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: "hist"},
		Spec:       policyv1.PodDisruptionBudgetSpec{MaxUnavailable: &one, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "hist"}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	core, storage := env.Kube.CoreV1().RESTClient(), env.Kube.StorageV1().RESTClient()
	sameDecoding[corev1.Node](t, core, "nodes", "", &corev1.NodeList{}, func(l runtime.Object) any { return l.(*corev1.NodeList).Items })
	sameDecoding[corev1.Pod](t, core, "pods", "", &corev1.PodList{}, func(l runtime.Object) any { return l.(*corev1.PodList).Items })
	sameDecoding[corev1.PersistentVolume](t, core, "persistentvolumes", "", &corev1.PersistentVolumeList{}, func(l runtime.Object) any { return l.(*corev1.PersistentVolumeList).Items })
	sameDecoding[corev1.PersistentVolumeClaim](t, core, "persistentvolumeclaims", ns, &corev1.PersistentVolumeClaimList{}, func(l runtime.Object) any { return l.(*corev1.PersistentVolumeClaimList).Items })
	sameDecoding[storagev1.StorageClass](t, storage, "storageclasses", "", &storagev1.StorageClassList{}, func(l runtime.Object) any { return l.(*storagev1.StorageClassList).Items })
	sameDecoding[storagev1.CSIStorageCapacity](t, storage, "csistoragecapacities", "", &storagev1.CSIStorageCapacityList{}, func(l runtime.Object) any { return l.(*storagev1.CSIStorageCapacityList).Items })
	sameDecoding[storagev1.CSIDriver](t, storage, "csidrivers", "", &storagev1.CSIDriverList{}, func(l runtime.Object) any { return l.(*storagev1.CSIDriverList).Items })
	sameDecoding[storagev1.CSINode](t, storage, "csinodes", "", &storagev1.CSINodeList{}, func(l runtime.Object) any { return l.(*storagev1.CSINodeList).Items })
	sameDecoding[policyv1.PodDisruptionBudget](t, env.Kube.PolicyV1().RESTClient(), "poddisruptionbudgets", ns, &policyv1.PodDisruptionBudgetList{}, func(l runtime.Object) any { return l.(*policyv1.PodDisruptionBudgetList).Items })
}

// sameDecoding reads one LIST of resource in protobuf and requires kube.DecodeItems to find in
// the body the items client-go's decoder finds, without their managedFields (into is the list
// type; items its Items). Each must have some, or the check would prove nothing; the API server
// records managedFields on every object written, so some must have been dropped.
func sameDecoding[T any, PT interface {
	*T
	Unmarshal([]byte) error
}](t *testing.T, rc rest.Interface, resource, namespace string, into runtime.Object, items func(runtime.Object) any) {
	t.Helper()
	body, err := rc.Get().NamespaceIfScoped(namespace, namespace != "").Resource(resource).
		SetHeader("Accept", "application/vnd.kubernetes.protobuf").DoRaw(context.Background())
	if err != nil {
		t.Fatalf("listing %s: %v", resource, err)
	}
	if _, _, err := scheme.Codecs.UniversalDeserializer().Decode(body, nil, into); err != nil {
		t.Fatalf("client-go decoding %s: %v", resource, err)
	}
	got, err := olapkube.DecodeItems[T, PT](bytes.NewReader(body))
	if err != nil {
		t.Fatalf("DecodeItems of %s: %v", resource, err)
	}
	want := items(into).([]T)
	if len(want) == 0 {
		t.Fatalf("the sandbox has no %s: the comparison would prove nothing", resource)
	}
	dropped := 0
	for i := range want {
		o := any(&want[i]).(metav1.Object)
		dropped += len(o.GetManagedFields())
		o.SetManagedFields(nil)
	}
	if dropped == 0 {
		t.Fatalf("no %s has managedFields: dropping them is not tested", resource)
	}
	if !apiequality.Semantic.DeepEqual(got, want) {
		t.Fatalf("%s: DecodeItems found %d items, client-go %d, and they differ", resource, len(got), len(want))
	}
}

func TestAccPlanner_revisionHashMatchesController(t *testing.T) {
	env := acctest.Sandbox(t)
	ns := accNamespace(t, env.Kube, t.Name())
	set := accSet(ns, 2)
	createReady(t, env.Kube, set)
	p, s := plan(t, env.Kube, set)
	if p.UpdateRevision != s.Live.Status.UpdateRevision {
		t.Fatalf("planner names the live template %s, the controller %s", p.UpdateRevision, s.Live.Status.UpdateRevision)
	}
	if p.TemplateChanged || len(ordinalsWith(p, func(o rollout.OrdinalPlan) bool { return o.Action != rollout.ActionUnchanged })) != 0 {
		t.Errorf("an unchanged manifest plans changes: %+v", p.Ordinals)
	}
	// And for a second revision, hashed before the controller sees it.
	changed := accSet(ns, 2)
	changed.Spec.Template.Spec.Containers[0].Image = "olap/historical:2"
	changed.Spec.Template.Annotations = map[string]string{"olap/comment": "a <b> & c"}
	p2, _ := plan(t, env.Kube, changed)
	before := podsByOrdinal(t, env.Kube, ns)
	apply(t, env.Kube, changed)
	assertHappened(t, env.Kube, ns, p2, before, pvAffinityMessage)
	// Revert: the controller reuses the first revision's name.
	p3, _ := plan(t, env.Kube, set)
	if p3.UpdateRevision != p.UpdateRevision {
		t.Errorf("revert plans revision %s, want the earlier %s", p3.UpdateRevision, p.UpdateRevision)
	}
	before = podsByOrdinal(t, env.Kube, ns)
	apply(t, env.Kube, set)
	assertHappened(t, env.Kube, ns, p3, before, pvAffinityMessage)
}

func TestAccPlanner_incidentRollingUpdate(t *testing.T) {
	env := acctest.Sandbox(t)
	ensurePoolB(t, env)
	ns := accNamespace(t, env.Kube, t.Name())
	createReady(t, env.Kube, accSet(ns, 3))
	desired := accSet(ns, 3)
	desired.Spec.Template.Spec.NodeSelector[accPoolKey] = "pool-b"
	p, _ := plan(t, env.Kube, desired)
	if p.Stall == nil || fmt.Sprint(p.Stall.Ordinals) != "[2]" {
		t.Fatalf("want a stall at ordinal 2, got %+v", p.Stall)
	}
	if p.Ordinals[2].Reason != "0/6 nodes are available: 3 node(s) didn't match PersistentVolume's node affinity, 3 node(s) didn't match Pod's node affinity/selector." {
		t.Errorf("reason %q", p.Ordinals[2].Reason)
	}
	before := podsByOrdinal(t, env.Kube, ns)
	apply(t, env.Kube, desired)
	assertHappened(t, env.Kube, ns, p, before, pvAffinityMessage)
}

func TestAccPlanner_incidentOnDelete(t *testing.T) {
	env := acctest.Sandbox(t)
	ensurePoolB(t, env)
	ns := accNamespace(t, env.Kube, t.Name())
	set := accSet(ns, 3)
	set.Spec.UpdateStrategy = appsv1.StatefulSetUpdateStrategy{Type: appsv1.OnDeleteStatefulSetStrategyType}
	createReady(t, env.Kube, set)
	desired := set.DeepCopy()
	desired.Spec.Template.Spec.NodeSelector[accPoolKey] = "pool-b"
	p, _ := plan(t, env.Kube, desired)
	if got := ordinalsWith(p, func(o rollout.OrdinalPlan) bool { return o.Action == rollout.ActionStranded && o.Schedulable }); len(got) != 3 || p.Stall != nil {
		t.Fatalf("want 3 stale unschedulable ordinals and no stall, got %v stall %+v", got, p.Stall)
	}
	before := podsByOrdinal(t, env.Kube, ns)
	apply(t, env.Kube, desired)
	assertHappened(t, env.Kube, ns, p, before, pvAffinityMessage)
	// The stale verdict: deleting the Pod (keeping its PVC) brings it back Pending.
	if err := env.Kube.CoreV1().Pods(ns).Delete(context.Background(), "hist-1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	pollUntil(t, "hist-1 is back and Unschedulable", func(ctx context.Context) (bool, error) {
		pod, err := env.Kube.CoreV1().Pods(ns).Get(ctx, "hist-1", metav1.GetOptions{})
		if apierrors.IsNotFound(err) || (err == nil && pod.UID == before[1].UID) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		_, ok := unschedulable(*pod)
		return ok, nil
	})
}

func TestAccPlanner_partition(t *testing.T) {
	env := acctest.Sandbox(t)
	ns := accNamespace(t, env.Kube, t.Name())
	set := accSet(ns, 3)
	set.Spec.UpdateStrategy = appsv1.StatefulSetUpdateStrategy{Type: appsv1.RollingUpdateStatefulSetStrategyType, RollingUpdate: &appsv1.RollingUpdateStatefulSetStrategy{Partition: ptr.To[int32](2)}}
	createReady(t, env.Kube, set)
	desired := set.DeepCopy()
	desired.Spec.Template.Spec.Containers[0].Image = "olap/historical:2"
	p, _ := plan(t, env.Kube, desired)
	if got := ordinalsWith(p, func(o rollout.OrdinalPlan) bool { return o.Action == rollout.ActionRecreate }); fmt.Sprint(got) != "[2]" {
		t.Fatalf("recreated %v, want [2]", got)
	}
	before := podsByOrdinal(t, env.Kube, ns)
	apply(t, env.Kube, desired)
	assertHappened(t, env.Kube, ns, p, before, pvAffinityMessage)
}

func TestAccPlanner_maxUnavailable(t *testing.T) {
	for name, policy := range map[string]appsv1.PodManagementPolicyType{"parallel": appsv1.ParallelPodManagement, "ordered": appsv1.OrderedReadyPodManagement} {
		t.Run(name, func(t *testing.T) {
			env := acctest.Sandbox(t)
			ensurePoolB(t, env)
			ns := accNamespace(t, env.Kube, t.Name())
			set := accSet(ns, 3)
			set.Spec.PodManagementPolicy = policy
			set.Spec.UpdateStrategy = appsv1.StatefulSetUpdateStrategy{Type: appsv1.RollingUpdateStatefulSetStrategyType, RollingUpdate: &appsv1.RollingUpdateStatefulSetStrategy{MaxUnavailable: ptr.To(intstr.FromInt32(2))}}
			createReady(t, env.Kube, set)
			desired := set.DeepCopy()
			desired.Spec.Template.Spec.NodeSelector[accPoolKey] = "pool-b"
			p, _ := plan(t, env.Kube, desired)
			// Before 1.37 MaxUnavailableStatefulSet is off: the server drops the field and
			// the controller deletes one Pod at a time.
			want := int32(2)
			if v := acctest.KubernetesVersion(); v != "" && v != "1.37" {
				want = 1
			}
			if p.Stall == nil || p.Disruption.MaxUnavailable != want {
				t.Fatalf("want a stall with %d unavailable, got %+v %+v", want, p.Stall, p.Disruption)
			}
			before := podsByOrdinal(t, env.Kube, ns)
			apply(t, env.Kube, desired)
			assertHappened(t, env.Kube, ns, p, before, pvAffinityMessage)
		})
	}
}

func TestAccPlanner_scaleDownDeletesPVCs(t *testing.T) {
	env := acctest.Sandbox(t)
	ns := accNamespace(t, env.Kube, t.Name())
	set := accSet(ns, 3)
	set.Spec.PersistentVolumeClaimRetentionPolicy = &appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{WhenScaled: appsv1.DeletePersistentVolumeClaimRetentionPolicyType, WhenDeleted: appsv1.RetainPersistentVolumeClaimRetentionPolicyType}
	createReady(t, env.Kube, set)
	desired := set.DeepCopy()
	desired.Spec.Replicas = ptr.To[int32](1)
	p, _ := plan(t, env.Kube, desired)
	if got := ordinalsWith(p, func(o rollout.OrdinalPlan) bool {
		return o.Action == rollout.ActionDelete && o.PVCsAfter == rollout.PVCsDeleted
	}); fmt.Sprint(got) != "[1 2]" {
		t.Fatalf("deleted with PVCs %v, want [1 2]", got)
	}
	before := podsByOrdinal(t, env.Kube, ns)
	apply(t, env.Kube, desired)
	assertHappened(t, env.Kube, ns, p, before, pvAffinityMessage)
	pollUntil(t, "the PVCs of ordinals 1 and 2 are gone", func(ctx context.Context) (bool, error) {
		pvcs, err := env.Kube.CoreV1().PersistentVolumeClaims(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		return len(pvcs.Items) == 1 && pvcs.Items[0].Name == "cache-hist-0", nil
	})
}

func TestAccPlanner_immutableChange(t *testing.T) {
	env := acctest.Sandbox(t)
	ns := accNamespace(t, env.Kube, t.Name())
	set := accSet(ns, 2)
	createReady(t, env.Kube, set)
	desired := set.DeepCopy()
	desired.Spec.VolumeClaimTemplates[0].Spec.Resources.Requests[corev1.ResourceStorage] = resource.MustParse("20Gi")
	p, s := plan(t, env.Kube, desired)
	if s.Immutable == nil || p.Replace == nil {
		t.Fatalf("the API server's refusal was not detected: immutable %+v replace %+v", s.Immutable, p.Replace)
	}
	if fmt.Sprint(p.Replace.Readopted) != "[cache-hist-0 cache-hist-1]" {
		t.Errorf("readopted %v", p.Replace.Readopted)
	}
	if s.Desired == nil || s.Desired.Name != "hist" || s.Desired.Spec.RevisionHistoryLimit == nil {
		t.Errorf("replacement not defaulted by the server: %+v", s.Desired)
	}
	// A bad manifest is an error with the server's message, not a replacement.
	bad := set.DeepCopy()
	bad.Spec.Template.Labels = map[string]string{"app": "other"}
	if _, imm, err := snapshot.DryRunApply(context.Background(), env.Kube, bad, "", true); err == nil || imm != nil {
		t.Errorf("bad manifest: err %v immutable %+v", err, imm)
	}
}

func TestAccPlanner_capacityShortage(t *testing.T) {
	env := acctest.Sandbox(t)
	ns := accNamespace(t, env.Kube, t.Name())
	// Size the volume so that each pool-a node holds exactly one.
	nodes, err := env.Kube.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{LabelSelector: accPoolKey + "=pool-a"})
	if err != nil || len(nodes.Items) != 3 {
		t.Fatalf("pool-a nodes: %v %v", len(nodes.Items), err)
	}
	var minFree int64 = -1
	for _, n := range nodes.Items {
		q, err := resource.ParseQuantity(n.Annotations[stsutil.AnnotationCapacityPrefix+"ssd"])
		if err != nil {
			t.Fatalf("node %s has no TopoLVM capacity annotation: %v", n.Name, err)
		}
		if minFree < 0 || q.Value() < minFree {
			minFree = q.Value()
		}
	}
	size := resource.NewQuantity(minFree*6/10/(1<<30)*(1<<30), resource.BinarySI)
	set := accSet(ns, 1)
	set.Spec.VolumeClaimTemplates[0].Spec.Resources.Requests[corev1.ResourceStorage] = *size
	createReady(t, env.Kube, set)
	desired := set.DeepCopy()
	desired.Spec.Replicas = ptr.To[int32](4)
	p, _ := plan(t, env.Kube, desired)
	if p.Stall == nil || fmt.Sprint(p.Stall.Ordinals) != "[3]" || !strings.Contains(p.Stall.Reason, "did not have enough free storage") {
		t.Fatalf("want a stall at ordinal 3 for capacity, got %+v", p.Stall)
	}
	before := podsByOrdinal(t, env.Kube, ns)
	apply(t, env.Kube, desired)
	assertHappened(t, env.Kube, ns, p, before, capacityMessage)
}

func TestAccPlanner_ordinalsStart(t *testing.T) {
	env := acctest.Sandbox(t)
	ns := accNamespace(t, env.Kube, t.Name())
	set := accSet(ns, 3)
	set.Spec.Ordinals = &appsv1.StatefulSetOrdinals{Start: 5}
	createReady(t, env.Kube, set)
	desired := set.DeepCopy()
	desired.Spec.Template.Spec.Containers[0].Image = "olap/historical:2"
	desired.Spec.Replicas = ptr.To[int32](4)
	p, _ := plan(t, env.Kube, desired)
	var got []string
	for _, o := range p.Ordinals {
		got = append(got, fmt.Sprintf("%d %s w%d", o.Ordinal, o.Action, o.Wave))
	}
	if want := "[5 recreate w4 6 recreate w3 7 recreate w2 8 create w1]"; fmt.Sprint(got) != want {
		t.Fatalf("plan %v, want %s", got, want)
	}
	before := podsByOrdinal(t, env.Kube, ns)
	apply(t, env.Kube, desired)
	assertHappened(t, env.Kube, ns, p, before, pvAffinityMessage)
}

func TestAccPlanner_cordonedPinnedNode(t *testing.T) {
	env := acctest.Sandbox(t)
	ns := accNamespace(t, env.Kube, t.Name())
	set := accSet(ns, 3)
	createReady(t, env.Kube, set)
	node := podsByOrdinal(t, env.Kube, ns)[1].Spec.NodeName
	cordon := func(on bool) {
		patch := fmt.Sprintf(`{"spec":{"unschedulable":%v}}`, on)
		if _, err := env.Kube.CoreV1().Nodes().Patch(context.Background(), node, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			t.Fatalf("cordon %s=%v: %v", node, on, err)
		}
	}
	cordon(true)
	t.Cleanup(func() { cordon(false) })
	desired := set.DeepCopy()
	desired.Spec.Template.Spec.Containers[0].Image = "olap/historical:2"
	// The plan judges with the cordon lifted (it may be gone by the apply) and names what it
	// holds now; the prediction with the nodes as they are is the one the controller must match.
	p, s := plan(t, env.Kube, desired)
	if p.Stall != nil || len(p.Held) != 1 || p.Held[0].Ordinal != 1 || len(p.Held[0].Nodes) != 1 || p.Held[0].Nodes[0].Node != node ||
		!strings.Contains(p.Held[0].Reason, "1 node(s) were unschedulable, 2 node(s) didn't match PersistentVolume's node affinity") {
		t.Fatalf("want no stall and ordinal 1 held by cordoned node %s, got stall %+v held %+v", node, p.Stall, p.Held)
	}
	now, err := rollout.PlanRolloutNow(*s)
	if err != nil {
		t.Fatal(err)
	}
	if now.Stall == nil || !strings.Contains(now.Stall.Reason, "1 node(s) were unschedulable, 2 node(s) didn't match PersistentVolume's node affinity") {
		t.Fatalf("want a stall naming cordoned node %s with the nodes as they are, got %+v", node, now.Stall)
	}
	before := podsByOrdinal(t, env.Kube, ns)
	apply(t, env.Kube, desired)
	assertHappened(t, env.Kube, ns, now, before, pvAffinityMessage)
}
