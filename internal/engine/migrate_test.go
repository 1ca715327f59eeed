package engine

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"

	"github.com/olapgke/terraform-provider-olapgke/internal/planner"
	"github.com/olapgke/terraform-provider-olapgke/internal/planner/gates"
	"github.com/olapgke/terraform-provider-olapgke/internal/planner/migration"
)

// The watcher's events feed planner.JudgeWait: the latest ProvisioningFailed event of the
// ordinal's current PVC (by UID) is quoted, not one of an earlier PVC of the same name.
func TestMigrationWatcherProvisioningFailedMatchesCurrentPVCByUID(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ev := func(name, uid, msg string, at time.Time) *corev1.Event {
		return &corev1.Event{
			ObjectMeta:     metav1.ObjectMeta{Namespace: "olap", Name: name},
			InvolvedObject: corev1.ObjectReference{Kind: "PersistentVolumeClaim", Namespace: "olap", Name: "cache-hist-2", UID: typesUID(uid)},
			Reason:         "ProvisioningFailed", Message: msg, LastTimestamp: metav1.NewTime(at),
		}
	}
	t0 := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	pod := waitPod(func(p *corev1.Pod) { p.Status.Phase = corev1.PodPending })
	kube := fake.NewClientset(
		&appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: "olap", Name: "hist"}},
		pod, waitPVC(),
		ev("e-old", "old", "old PVC failed", t0.Add(time.Minute)),
		ev("e-new-1", "pvc-new", "first failure", t0),
		ev("e-new-2", "pvc-new", "no enough space left on VG: free=0, requested=10737418240", t0.Add(time.Second)),
	)
	w, err := newMigrationWatcher(ctx, kube, "olap", "hist", labels.Everything())
	if err != nil {
		t.Fatal(err)
	}
	defer w.stop()
	s, set, err := w.snapshot()
	if err != nil || set == nil {
		t.Fatalf("snapshot: set %v, err %v", set, err)
	}
	m := &migrator{run: MigrationRun{Name: "hist", UnschedulableGrace: 20 * time.Second}, w: w}
	r := &ordinalRun{o: 2}
	st := migration.Step{Kind: migration.StepWait, Reason: "waiting for PVC cache-hist-2 to be bound"}
	if d, err := m.failFast(s, r, st, t0); err != nil || d != 20*time.Second {
		t.Fatalf("first sight: d=%s err=%v, want 20s of grace", d, err)
	}
	_, err = m.failFast(s, r, st, t0.Add(20*time.Second))
	var me *MigrationError
	if !errors.As(err, &me) || me.Cause != planner.CauseProvisioningFailed ||
		me.Quote != "no enough space left on VG: free=0, requested=10737418240" {
		t.Fatalf("got %v, want the latest event of the current PVC", err)
	}
}

func TestWithoutAndJoin(t *testing.T) {
	t.Parallel()
	if d := cmp.Diff([]int32{3, 0}, without([]int32{3, 2, 1, 0}, []int32{1, 2})); d != "" {
		t.Error(d)
	}
	if got := migration.JoinOrdinals([]int32{2, 1}); got != "2, 1" {
		t.Errorf("join = %q", got)
	}
}

type typesUID = types.UID

// oneOrdinalOnPoolA is StatefulSet olap/hist with one Ready Pod on node a1
// (pool a), its PVC bound to a PV pinned to a1, and a template that asks for
// pool b (node b1): ordinal 0 must move.
func oneOrdinalOnPoolA() []runtime.Object {
	node := func(name, pool string) *corev1.Node {
		alloc := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8"), corev1.ResourceMemory: resource.MustParse("32Gi"), corev1.ResourcePods: resource.MustParse("110")}
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"pool": pool, "kubernetes.io/hostname": name}},
			Status: corev1.NodeStatus{Allocatable: alloc, Capacity: alloc,
				Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}}}
	}
	sc := "topolvm-provisioner"
	set := &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: "olap", Name: "hist", UID: "set-uid", Generation: 1},
		Spec: appsv1.StatefulSetSpec{
			Replicas: new(int32(1)),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "hist"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "hist"}},
				Spec:       corev1.PodSpec{NodeSelector: map[string]string{"pool": "b"}, Containers: []corev1.Container{{Name: "c", Image: "x"}}},
			},
			VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Name: "cache"},
				Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: &sc}}},
			UpdateStrategy: appsv1.StatefulSetUpdateStrategy{Type: appsv1.OnDeleteStatefulSetStrategyType},
		},
		Status: appsv1.StatefulSetStatus{ObservedGeneration: 1, Replicas: 1, ReadyReplicas: 1, CurrentRevision: "hist-1", UpdateRevision: "hist-1"},
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "olap", Name: "hist-0", UID: "pod-uid",
			Labels: map[string]string{"app": "hist", appsv1.ControllerRevisionHashLabelKey: "hist-1"}},
		Spec: corev1.PodSpec{NodeName: "a1", Volumes: []corev1.Volume{{Name: "cache",
			VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "cache-hist-0"}}}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}},
	}
	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: "olap", Name: "cache-hist-0", UID: "pvc-uid",
			Annotations: map[string]string{"volume.kubernetes.io/selected-node": "a1", "pv.kubernetes.io/bind-completed": "yes"}},
		Spec:   corev1.PersistentVolumeClaimSpec{StorageClassName: &sc, VolumeName: "pv-0"},
		Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound},
	}
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: "pv-0"},
		Spec: corev1.PersistentVolumeSpec{StorageClassName: sc,
			PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: "topolvm.io", VolumeHandle: "pv-0"}},
			ClaimRef:               &corev1.ObjectReference{Namespace: "olap", Name: "cache-hist-0", UID: "pvc-uid"},
			NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
				MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "topology.topolvm.io/node", Operator: corev1.NodeSelectorOpIn, Values: []string{"a1"}}}}}}}},
	}
	wffc := storagev1.VolumeBindingWaitForFirstConsumer
	class := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: sc}, Provisioner: "topolvm.io", VolumeBindingMode: &wffc}
	return []runtime.Object{set, pod, pvc, pv, class, node("a1", "a"), node("b1", "b")}
}

// After the PVC delete is accepted, the Pod delete follows in the same look at
// the state, without waiting for the informer to report the terminating PVC.
// The fake API server here accepts deletes but keeps the objects and sends no
// event (as finalizers would, without the deletionTimestamp update), so only
// the executor's own expectation can lead it to the Pod delete.
func TestMigratePodDeleteFollowsPVCDeleteWithoutAnEvent(t *testing.T) {
	t.Parallel()
	kube := fake.NewClientset(oneOrdinalOnPoolA()...)
	var deletes []string
	var mu sync.Mutex
	kube.PrependReactor("delete", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
		mu.Lock()
		defer mu.Unlock()
		deletes = append(deletes, a.GetResource().Resource+"/"+a.(k8stesting.DeleteAction).GetName())
		return true, nil, nil // accepted; the object stays and no event follows
	})

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := Migrate(ctx, kube, MigrationRun{
		Namespace: "olap", Name: "hist", Ordinals: []int32{0}, Claims: []string{"cache"},
		Resync:         time.Hour, // no re-read without an event
		OrdinalTimeout: 2 * time.Second,
		Log:            func(l string) { t.Log(l) },
	})
	var me *MigrationError
	if !errors.As(err, &me) || !me.Timeout {
		t.Fatalf("Migrate: %v, want a timeout (the Pod is never removed)", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if d := cmp.Diff([]string{"persistentvolumeclaims/cache-hist-0", "pods/hist-0"}, deletes); d != "" {
		t.Fatalf("deletes (-want +got):\n%s", d)
	}
}

func TestExpectDeleted(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 30, 3, 0, 0, 0, time.UTC)
	s := &planner.Snapshot{
		PVCs: []corev1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Name: "a", UID: "a"}}, {ObjectMeta: metav1.ObjectMeta{Name: "b", UID: "b"}}},
		Pods: []corev1.Pod{{ObjectMeta: metav1.ObjectMeta{Name: "p", UID: "p"}}},
	}
	if !expectPVCDeleted(s, "a", false, now) || s.PVCs[0].DeletionTimestamp == nil || !s.PVCs[0].DeletionTimestamp.Time.Equal(now) {
		t.Fatalf("PVC a not marked terminating: %+v", s.PVCs[0].ObjectMeta)
	}
	if expectPVCDeleted(s, "a", false, now) {
		t.Error("a second delete of a terminating PVC changed the snapshot")
	}
	if !expectPVCDeleted(s, "b", true, now) || len(s.PVCs) != 1 || s.PVCs[0].Name != "a" {
		t.Fatalf("PVC b (NotFound) not removed: %v", s.PVCs)
	}
	if expectPVCDeleted(s, "zzz", false, now) || expectPodDeleted(s, "zzz", true, now) {
		t.Error("unknown UID changed the snapshot")
	}
	if !expectPodDeleted(s, "p", false, now) || s.Pods[0].DeletionTimestamp == nil {
		t.Fatal("Pod not marked terminating")
	}
	if !expectPodDeleted(s, "p", true, now) || len(s.Pods) != 0 {
		t.Fatal("Pod not removed")
	}
}

func TestWakeUpFilters(t *testing.T) {
	t.Parallel()
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "n", Labels: map[string]string{"pool": "a"}, ResourceVersion: "1"},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue,
			LastHeartbeatTime: metav1.NewTime(time.Unix(100, 0))}}},
	}
	heartbeat := node.DeepCopy()
	heartbeat.ResourceVersion = "2"
	heartbeat.Status.Conditions[0].LastHeartbeatTime = metav1.NewTime(time.Unix(110, 0))
	notReady := heartbeat.DeepCopy()
	notReady.Status.Conditions[0].Status = corev1.ConditionUnknown
	cordoned := node.DeepCopy()
	cordoned.Spec.Unschedulable = true
	relabelled := node.DeepCopy()
	relabelled.Labels["pool"] = "b"
	for name, c := range map[string]struct {
		old, cur any
		want     bool
	}{
		"heartbeat": {node, heartbeat, false},
		"not ready": {heartbeat, notReady, true},
		"cordoned":  {node, cordoned, true},
		"labels":    {node, relabelled, true},
		"added":     {nil, node, true},
		"tombstone": {nil, cache.DeletedFinalStateUnknown{Key: "n", Obj: node}, true},
	} {
		if got := nodeChangeMatters(c.old, c.cur); got != c.want {
			t.Errorf("node %s: %v, want %v", name, got, c.want)
		}
	}
	pv := func(ns string) *corev1.PersistentVolume {
		p := &corev1.PersistentVolume{}
		if ns != "" {
			p.Spec.ClaimRef = &corev1.ObjectReference{Namespace: ns, Name: "c"}
		}
		return p
	}
	for _, c := range []struct {
		obj  any
		want bool
	}{{pv("olap"), true}, {pv("other"), false}, {pv(""), true}, {nil, false}, {cache.DeletedFinalStateUnknown{}, true}} {
		if got := pvMayMatter(c.obj, "olap"); got != c.want {
			t.Errorf("pvMayMatter(%+v) = %v, want %v", c.obj, got, c.want)
		}
	}
}

// A PodDisruptionBudget that allows no disruption holds the move back (no
// delete at all) until the disruption controller allows one; if it never
// does, the migration stops before touching anything, naming the budget.
func TestMigrateWaitsForPodDisruptionBudget(t *testing.T) {
	t.Parallel()
	pdb := &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Namespace: "olap", Name: "hist-pdb", Generation: 1},
		Spec:       policyv1.PodDisruptionBudgetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "hist"}}},
		Status:     policyv1.PodDisruptionBudgetStatus{ObservedGeneration: 1, DisruptionsAllowed: 0, CurrentHealthy: 1, DesiredHealthy: 1},
	}
	run := MigrationRun{Namespace: "olap", Name: "hist", Ordinals: []int32{0}, Claims: []string{"cache"}, OrdinalTimeout: time.Second}

	t.Run("never allowed", func(t *testing.T) {
		t.Parallel()
		kube := fake.NewClientset(append(oneOrdinalOnPoolA(), pdb.DeepCopy())...)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		err := Migrate(ctx, kube, run)
		if !IsPrecondition(err) || !strings.Contains(err.Error(), "PodDisruptionBudget olap/hist-pdb allows 0 disruption(s)") {
			t.Fatalf("Migrate: %v, want a precondition error naming the budget", err)
		}
		for _, a := range kube.Actions() {
			if a.GetVerb() == "delete" {
				t.Errorf("deleted while the budget allowed nothing: %v", a)
			}
		}
	})

	t.Run("allowed later", func(t *testing.T) {
		t.Parallel()
		kube := fake.NewClientset(append(oneOrdinalOnPoolA(), pdb.DeepCopy())...)
		var deletes []string
		var mu sync.Mutex
		kube.PrependReactor("delete", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
			mu.Lock()
			defer mu.Unlock()
			deletes = append(deletes, a.GetResource().Resource)
			return true, nil, nil
		})
		waiting := make(chan struct{})
		var once sync.Once
		r := run
		r.OrdinalTimeout = 20 * time.Second
		r.Log = func(l string) {
			if strings.Contains(l, "waiting: PodDisruptionBudget") {
				once.Do(func() { close(waiting) })
			}
		}
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		done := make(chan error, 1)
		go func() { done <- Migrate(ctx, kube, r) }()
		select {
		case <-waiting:
		case err := <-done:
			t.Fatalf("Migrate returned before waiting for the budget: %v", err)
		case <-time.After(20 * time.Second):
			t.Fatal("Migrate never reported waiting for the budget")
		}
		mu.Lock()
		if len(deletes) != 0 {
			t.Errorf("deleted before the budget allowed it: %v", deletes)
		}
		mu.Unlock()
		allowed := pdb.DeepCopy()
		allowed.Status.DisruptionsAllowed, allowed.Status.DesiredHealthy = 1, 0 // the budget was lowered
		if _, err := kube.PolicyV1().PodDisruptionBudgets("olap").UpdateStatus(ctx, allowed, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 20*time.Second, true, func(context.Context) (bool, error) {
			mu.Lock()
			defer mu.Unlock()
			return len(deletes) == 2, nil
		}); err != nil {
			t.Fatalf("no PVC and Pod delete after the budget allowed one: %v", deletes)
		}
		cancel()
		t.Logf("migration ended: %v", <-done)
	})
}

// Credentials that may not watch something the migration reads stop it at
// once with the API server's words, instead of an informer retrying until
// the apply times out.
func TestMigrateStopsOnForbiddenWatch(t *testing.T) {
	t.Parallel()
	kube := fake.NewClientset(oneOrdinalOnPoolA()...)
	kube.PrependWatchReactor("poddisruptionbudgets", func(k8stesting.Action) (bool, watch.Interface, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: "policy", Resource: "poddisruptionbudgets"}, "",
			errors.New(`User "system:serviceaccount:olapgke-system:terraform" cannot watch resource "poddisruptionbudgets"`))
	})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	start := time.Now()
	err := Migrate(ctx, kube, MigrationRun{Namespace: "olap", Name: "hist", Ordinals: []int32{0}, Claims: []string{"cache"}})
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), `cannot watch resource "poddisruptionbudgets"`) {
		t.Fatalf("Migrate: %v, want the Forbidden error", err)
	}
	if el := time.Since(start); el > 10*time.Second {
		t.Errorf("took %s to give up", el)
	}
	for _, a := range kube.Actions() {
		if a.GetVerb() == "delete" {
			t.Errorf("deleted without being able to watch: %v", a)
		}
	}
}

// With require_others_ready, an ordinal that is down outside the batch is refused at once, not
// after waiting ordinal_timeout for a budget it alone holds at zero.
func TestMigrateRefusesOthersNotReadyBeforeWaitingForBudget(t *testing.T) {
	t.Parallel()
	objs := oneOrdinalOnPoolA()
	set := objs[0].(*appsv1.StatefulSet)
	set.Spec.Replicas = new(int32(2))
	down := objs[1].(*corev1.Pod).DeepCopy()
	down.Name, down.UID = "hist-1", "pod-1-uid"
	down.Status = corev1.PodStatus{Phase: corev1.PodPending}
	pdb := &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Namespace: "olap", Name: "hist-pdb", Generation: 1},
		Spec:       policyv1.PodDisruptionBudgetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "hist"}}},
		Status:     policyv1.PodDisruptionBudgetStatus{ObservedGeneration: 1, DisruptionsAllowed: 0, CurrentHealthy: 1, DesiredHealthy: 2},
	}
	kube := fake.NewClientset(append(objs, down, pdb)...)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	start := time.Now()
	err := Migrate(ctx, kube, MigrationRun{Namespace: "olap", Name: "hist", Ordinals: []int32{0}, Claims: []string{"cache"},
		RequireOthersReady: true, OrdinalTimeout: 20 * time.Second})
	if !IsPrecondition(err) || !strings.Contains(err.Error(), "must be Running and Ready") || !strings.Contains(err.Error(), "ordinal 1") {
		t.Fatalf("Migrate: %v, want the others-not-ready precondition", err)
	}
	if el := time.Since(start); el > 10*time.Second {
		t.Errorf("refused after %s: it waited for the budget first", el)
	}
}

// With require_others_ready, an ordinal outside the batch that is only coming up where the
// template places it (an earlier apply moved it to b1 and was stopped before its new Pod was
// Ready) is waited for, with nothing deleted meanwhile; once it is Ready the batch starts. If it
// never becomes Ready, the run stops before deleting anything, naming it.
func TestMigrateWaitsForOthersComingUp(t *testing.T) {
	t.Parallel()
	objects := func() []runtime.Object {
		objs := oneOrdinalOnPoolA()
		objs[0].(*appsv1.StatefulSet).Spec.Replicas = new(int32(2))
		pod := objs[1].(*corev1.Pod).DeepCopy()
		pod.Name, pod.UID, pod.Spec.NodeName = "hist-1", "pod-1-uid", "b1"
		pod.Spec.Volumes[0].PersistentVolumeClaim.ClaimName = "cache-hist-1"
		pod.Status.Conditions = nil // Running, not Ready: loading its data
		pvc := objs[2].(*corev1.PersistentVolumeClaim).DeepCopy()
		pvc.Name, pvc.UID, pvc.Spec.VolumeName = "cache-hist-1", "pvc-1-uid", "pv-1"
		pv := objs[3].(*corev1.PersistentVolume).DeepCopy()
		pv.Name, pv.Spec.ClaimRef.Name, pv.Spec.ClaimRef.UID = "pv-1", "cache-hist-1", "pvc-1-uid"
		pv.Spec.NodeAffinity.Required.NodeSelectorTerms[0].MatchExpressions[0].Values = []string{"b1"}
		for _, o := range objs {
			if n, ok := o.(*corev1.Node); ok {
				n.Labels["topology.topolvm.io/node"] = n.Name // TopoLVM registered: the PVs' pins match
			}
		}
		return append(objs, pod, pvc, pv)
	}
	run := MigrationRun{Namespace: "olap", Name: "hist", Ordinals: []int32{0}, Claims: []string{"cache"}, RequireOthersReady: true}

	t.Run("never Ready", func(t *testing.T) {
		t.Parallel()
		kube := fake.NewClientset(objects()...)
		r := run
		r.OrdinalTimeout = time.Second
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		err := Migrate(ctx, kube, r)
		if !IsPrecondition(err) || !strings.Contains(err.Error(), "still waiting after 1s") || !strings.Contains(err.Error(), "ordinal 1: Pod hist-1 is not Ready") {
			t.Fatalf("Migrate: %v, want a precondition error after waiting for ordinal 1", err)
		}
		for _, a := range kube.Actions() {
			if a.GetVerb() == "delete" {
				t.Errorf("deleted while ordinal 1 was not Ready: %v", a)
			}
		}
	})

	t.Run("Ready later", func(t *testing.T) {
		t.Parallel()
		kube := fake.NewClientset(objects()...)
		var deletes []string
		var mu sync.Mutex
		kube.PrependReactor("delete", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
			mu.Lock()
			defer mu.Unlock()
			deletes = append(deletes, a.GetResource().Resource)
			return true, nil, nil
		})
		waiting := make(chan struct{})
		var once sync.Once
		r := run
		r.OrdinalTimeout = 20 * time.Second
		r.Log = func(l string) {
			if strings.Contains(l, "waiting: ordinals that are not moved to be Running and Ready: ordinal 1") {
				once.Do(func() { close(waiting) })
			}
		}
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		done := make(chan error, 1)
		go func() { done <- Migrate(ctx, kube, r) }()
		select {
		case <-waiting:
		case err := <-done:
			t.Fatalf("Migrate returned before waiting for ordinal 1: %v", err)
		case <-time.After(20 * time.Second):
			t.Fatal("Migrate never reported waiting for ordinal 1")
		}
		mu.Lock()
		if len(deletes) != 0 {
			t.Errorf("deleted before ordinal 1 was Ready: %v", deletes)
		}
		mu.Unlock()
		p, err := kube.CoreV1().Pods("olap").Get(ctx, "hist-1", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
		if _, err := kube.CoreV1().Pods("olap").UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 20*time.Second, true, func(context.Context) (bool, error) {
			mu.Lock()
			defer mu.Unlock()
			return len(deletes) == 2, nil
		}); err != nil {
			t.Fatalf("no PVC and Pod delete after ordinal 1 was Ready: %v", deletes)
		}
		cancel()
		t.Logf("migration ended: %v", <-done)
	})
}

// A planned restart never deletes a PVC: when the live state asks for a move
// by the time the ordinal's turn comes (here the template selects pool b, the
// PV is pinned to a1 on pool a), the run stops before deleting anything.
// With the template on the Pod's own pool and a new revision, only the Pod is
// deleted.
func TestMigratePlannedRestartNeverDeletesPVC(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		mutate  func(set *appsv1.StatefulSet)
		deletes []string
		wantErr string
	}{
		"live state needs a move": {
			mutate:  func(*appsv1.StatefulSet) {},
			wantErr: "ordinal 0 cannot be restarted in place",
		},
		"same pool, new revision": {
			mutate: func(set *appsv1.StatefulSet) {
				set.Spec.Template.Spec.NodeSelector = map[string]string{"pool": "a"}
				set.Status.UpdateRevision = "hist-2"
			},
			deletes: []string{"pods/hist-0"},
			wantErr: "timeout",
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			objs := oneOrdinalOnPoolA()
			tc.mutate(objs[0].(*appsv1.StatefulSet))
			for _, o := range objs {
				if n, ok := o.(*corev1.Node); ok {
					n.Labels["topology.topolvm.io/node"] = n.Name
				}
			}
			kube := fake.NewClientset(objs...)
			var deletes []string
			var mu sync.Mutex
			kube.PrependReactor("delete", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
				mu.Lock()
				defer mu.Unlock()
				deletes = append(deletes, a.GetResource().Resource+"/"+a.(k8stesting.DeleteAction).GetName())
				return true, nil, nil
			})
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			err := Migrate(ctx, kube, MigrationRun{
				Namespace: "olap", Name: "hist", Ordinals: []int32{0}, Claims: []string{"cache"},
				Actions: map[int32]migration.MigrationAction{0: migration.MigrationRestart},
				Resync:  50 * time.Millisecond, OrdinalTimeout: time.Second,
				Log: func(l string) { t.Log(l) },
			})
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("Migrate: %v, want an error mentioning %q", err, tc.wantErr)
			}
			mu.Lock()
			defer mu.Unlock()
			if d := cmp.Diff(tc.deletes, deletes); d != "" {
				t.Fatalf("deletes (-want +got):\n%s", d)
			}
		})
	}
}

// restartSet is oneOrdinalOnPoolA grown to n ordinals on node a1 whose template stays on pool a
// at a new revision (hist-2): every ordinal is restarted in place, keeping its PVC.
func restartSet(n int32) []runtime.Object {
	objs := oneOrdinalOnPoolA()
	set := objs[0].(*appsv1.StatefulSet)
	set.Spec.Replicas = new(n)
	set.Spec.Template.Spec.NodeSelector = map[string]string{"pool": "a"}
	set.Status.Replicas, set.Status.ReadyReplicas, set.Status.UpdateRevision = n, n, "hist-2"
	pod, pvc, pv := objs[1].(*corev1.Pod), objs[2].(*corev1.PersistentVolumeClaim), objs[3].(*corev1.PersistentVolume)
	for o := int32(1); o < n; o++ {
		p, c, v := pod.DeepCopy(), pvc.DeepCopy(), pv.DeepCopy()
		p.Name, p.UID = fmt.Sprintf("hist-%d", o), types.UID(fmt.Sprintf("pod-%d-uid", o))
		c.Name, c.UID, c.Spec.VolumeName = fmt.Sprintf("cache-hist-%d", o), types.UID(fmt.Sprintf("pvc-%d-uid", o)), fmt.Sprintf("pv-%d", o)
		p.Spec.Volumes[0].PersistentVolumeClaim.ClaimName = c.Name
		v.Name, v.Spec.ClaimRef.Name, v.Spec.ClaimRef.UID = c.Spec.VolumeName, c.Name, c.UID
		objs = append(objs, p, c, v)
	}
	for _, o := range objs {
		if n, ok := o.(*corev1.Node); ok {
			n.Labels["topology.topolvm.io/node"] = n.Name
		}
	}
	return objs
}

// playedController plays the StatefulSet controller and the kubelet on a fake API server: a
// deleted Pod is recreated at the update revision (hist-2) on its node, Ready at once, except
// slow, Ready only once held is closed. It returns the Pod deletes so far.
func playedController(kube *fake.Clientset, slow string, held <-chan struct{}) (deletes func() []string) {
	var mu sync.Mutex
	var names []string
	kube.PrependReactor("delete", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		name := a.(k8stesting.DeleteAction).GetName()
		mu.Lock()
		names = append(names, name)
		mu.Unlock()
		old, err := kube.Tracker().Get(corev1.SchemeGroupVersion.WithResource("pods"), "olap", name)
		if err != nil {
			return true, nil, err
		}
		p := old.(*corev1.Pod).DeepCopy()
		go func() {
			gvr := corev1.SchemeGroupVersion.WithResource("pods")
			_ = kube.Tracker().Delete(gvr, "olap", name)
			p.UID, p.ResourceVersion = types.UID(string(p.UID)+"-new"), ""
			p.Labels[appsv1.ControllerRevisionHashLabelKey] = "hist-2"
			ready := p.Status.Conditions
			if name == slow {
				p.Status.Conditions = nil
			}
			_ = kube.Tracker().Create(gvr, p, "olap")
			if name == slow {
				<-held
				p.Status.Conditions = ready
				_ = kube.Tracker().Update(gvr, p, "olap")
			}
		}()
		return true, nil, nil
	})
	return func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(names)
	}
}

// With max_unavailable = 2 the window slides: once ordinal 1 is Ready again, ordinal 2 takes
// its slot while ordinal 0 is still coming up, as the StatefulSet controller's maxUnavailable
// does. Whole batches would hold ordinal 2 until ordinal 0 is Ready.
func TestMigrateSlidesItsWindow(t *testing.T) {
	t.Parallel()
	kube := fake.NewClientset(restartSet(3)...)
	held := make(chan struct{}) // closed: the recreated hist-0 becomes Ready
	deletes := playedController(kube, "hist-0", held)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- Migrate(ctx, kube, MigrationRun{
			Namespace: "olap", Name: "hist", Ordinals: []int32{0, 1, 2}, Claims: []string{"cache"}, Parallelism: 2,
			Actions: map[int32]migration.MigrationAction{0: migration.MigrationRestart, 1: migration.MigrationRestart, 2: migration.MigrationRestart},
			Resync:  50 * time.Millisecond, OrdinalTimeout: 20 * time.Second,
			Log: func(l string) { t.Log(l) },
		})
	}()
	deleted := func(name string) bool { return slices.Contains(deletes(), name) }
	if err := wait.PollUntilContextCancel(ctx, 10*time.Millisecond, true, func(context.Context) (bool, error) {
		select {
		case err := <-done:
			return false, fmt.Errorf("Migrate returned while hist-0 was not Ready: %v", err)
		default:
		}
		return deleted("hist-2"), nil
	}); err != nil {
		t.Fatalf("hist-2 was not deleted while hist-0 was still coming up (deletes %v): %v", deletes(), err)
	}
	close(held)
	if err := <-done; err != nil {
		t.Fatalf("Migrate: %v", err)
	}
	if d := cmp.Diff([]string{"hist-0", "hist-1", "hist-2"}, deletes()); d != "" {
		t.Errorf("Pod deletes (-want +got):\n%s", d)
	}
}

// The window never holds more ordinals than a PodDisruptionBudget allows by the live Pods,
// even while the budget's status still counts a Pod the executor has just deleted.
func TestPDBBlocksCountsLivePods(t *testing.T) {
	t.Parallel()
	objs := restartSet(3)
	pdb := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Namespace: "olap", Name: "hist", Generation: 1},
		Spec: policyv1.PodDisruptionBudgetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "hist"}}},
		// The controller's last count: 3 healthy, 2 desired, 1 allowed.
		Status: policyv1.PodDisruptionBudgetStatus{ObservedGeneration: 1, CurrentHealthy: 3, DesiredHealthy: 2, DisruptionsAllowed: 1, ExpectedPods: 3}}
	s := &planner.Snapshot{Live: objs[0].(*appsv1.StatefulSet), PDBs: []policyv1.PodDisruptionBudget{*pdb}}
	for _, o := range objs {
		if p, ok := o.(*corev1.Pod); ok {
			s.Pods = append(s.Pods, *p)
		}
	}
	if why := migration.NewMigration(s).PDBBlocks([]int32{1}); why != "" {
		t.Fatalf("all three Ready, one allowed: %s", why)
	}
	s.Pods[0].DeletionTimestamp = &metav1.Time{Time: time.Now()} // hist-0 deleted; the status has not caught up
	if why := migration.NewMigration(s).PDBBlocks([]int32{1}); !strings.Contains(why, "allows 0 disruption(s)") {
		t.Fatalf("hist-0 deleted, status stale: %q, want a block at 0 allowed", why)
	}
	// A budget over more Pods than the set has (5 expected, 3 replicas): the snapshot cannot
	// count the others, so the status stands.
	s.PDBs[0].Status.ExpectedPods, s.PDBs[0].Status.CurrentHealthy, s.PDBs[0].Status.DesiredHealthy = 5, 5, 4
	if why := migration.NewMigration(s).PDBBlocks([]int32{1}); why != "" {
		t.Fatalf("a budget over other workloads too, 1 allowed by its status: %q", why)
	}
}

// With gates the window is a batch: ordinals 0 and 1 restart together, and ordinal 2 starts only
// after both are done and passed their gates: not when ordinal 0 is done while 1 is still coming
// up (as without gates), and not before the gates pass.
func TestMigrateWithGatesMovesInBatches(t *testing.T) {
	t.Parallel()
	kube := fake.NewClientset(restartSet(3)...)
	held := make(chan struct{}) // closed: the recreated hist-1 becomes Ready
	deletes := playedController(kube, "hist-1", held)
	var open atomic.Bool
	var polled atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		polled.Add(1)
		if !open.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	defer srv.Close()
	deleted := func(name string) bool { return slices.Contains(deletes(), name) }
	zeroDone := make(chan struct{})
	var once sync.Once
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- Migrate(ctx, kube, MigrationRun{
			Namespace: "olap", Name: "hist", Ordinals: []int32{0, 1, 2}, Claims: []string{"cache"}, Parallelism: 2,
			Actions: map[int32]migration.MigrationAction{0: migration.MigrationRestart, 1: migration.MigrationRestart, 2: migration.MigrationRestart},
			Resync:  20 * time.Millisecond, OrdinalTimeout: 20 * time.Second,
			Gates: []gates.Gate{{Name: "loaded", Timeout: 20 * time.Second, Interval: 20 * time.Millisecond,
				HTTP: &gates.HTTPGate{URL: srv.URL, Method: http.MethodGet, ExpectStatus: http.StatusOK}}},
			Log: func(l string) {
				t.Log(l)
				if strings.Contains(l, "Pod hist-0") && strings.Contains(l, "Ready on node") {
					once.Do(func() { close(zeroDone) })
				}
			},
		})
	}()
	select {
	case <-zeroDone:
	case err := <-done:
		t.Fatalf("Migrate returned before ordinal 0 was done: %v", err)
	case <-ctx.Done():
		t.Fatal("ordinal 0 never done")
	}
	// Ordinal 0 is done, 1 still coming up: without gates 2 would take 0's slot now.
	if err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 500*time.Millisecond, true, func(context.Context) (bool, error) {
		return deleted("hist-2"), nil
	}); err == nil {
		t.Fatal("hist-2 deleted while ordinal 1 of its batch was still coming up")
	}
	close(held)
	// The batch is done: its gate is polled while closed, and 2 still waits.
	if err := wait.PollUntilContextCancel(ctx, 10*time.Millisecond, true, func(context.Context) (bool, error) {
		return polled.Load() >= 5, nil
	}); err != nil {
		t.Fatal("the batch's gate was never polled")
	}
	if deleted("hist-2") {
		t.Fatal("hist-2 deleted before the batch's gates passed")
	}
	open.Store(true)
	if err := <-done; err != nil {
		t.Fatalf("Migrate: %v", err)
	}
	if d := cmp.Diff([]string{"hist-0", "hist-1", "hist-2"}, deletes()); d != "" {
		t.Errorf("Pod deletes (-want +got):\n%s", d)
	}
}
