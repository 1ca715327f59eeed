package migration_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"cloud.google.com/go/container/apiv1/containerpb"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/retry"

	"github.com/olapgke/terraform-provider-olapgke/internal/acctest"
	"github.com/olapgke/terraform-provider-olapgke/internal/fixture"
	"github.com/olapgke/terraform-provider-olapgke/internal/gke"
	"github.com/olapgke/terraform-provider-olapgke/internal/provider"
	"github.com/olapgke/terraform-provider-olapgke/internal/stsutil"
)

func TestMain(m *testing.M) { acctest.Main(m) }

const (
	labelPool    = stsutil.LabelNodePool
	storageClass = "topolvm-provisioner"
	claimName    = "cache"
)

var poolOnce sync.Map // pool name -> *sync.Once

// ensurePool creates a node pool in the sandbox through the GKE emulator
// (n2-standard-8, 2 raw-block Local SSDs) and waits until its nodes are
// Ready and schedulable with TopoLVM capacity published.
func ensurePool(t *testing.T, env *acctest.Env, name string, nodes int32) {
	t.Helper()
	o, _ := poolOnce.LoadOrStore(name, &sync.Once{})
	var err error
	o.(*sync.Once).Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		c, e := provider.ClientsFromEnvironment(ctx, "acctest")
		if e != nil {
			err = e
			return
		}
		api, e := c.GKE(ctx)
		if e != nil {
			err = e
			return
		}
		ref := gke.ClusterRef{Project: env.Vars["GOOGLE_PROJECT"], Location: env.Vars["OLAPGKE_LOCATION"], Cluster: env.Vars["OLAPGKE_CLUSTER"]}
		if _, e := api.GetNodePool(ctx, ref, name); e == nil {
			return
		}
		err = api.CreateNodePool(ctx, ref, &containerpb.NodePool{
			Name: name, InitialNodeCount: nodes,
			Config: &containerpb.NodeConfig{MachineType: "n2-standard-8", DiskSizeGb: 100,
				LocalNvmeSsdBlockConfig: &containerpb.LocalNvmeSsdBlockConfig{LocalSsdCount: 2}},
		})
	})
	if err != nil {
		t.Fatalf("creating node pool %s through the GKE emulator: %v", name, err)
	}
	waitPoolReady(t, env, name, nodes)
}

// waitPoolReady waits until pool has at least nodes nodes and the sandbox answers that every one
// can take TopoLVM volumes (acctest.Env.PoolReady: Ready, uncordoned, TopoLVM registered, its
// CSIStorageCapacity published): the scheduler and the plan read CSIStorageCapacity, which real
// TopoLVM publishes after the node's annotation and CSI registration, possibly first as a stale
// 0; until then a plan waits for TopoLVM instead of judging capacity. The answer is the
// sandbox's, not the planner's the tests judge. It logs each reason it waited for, so a later
// plan that still waits can be told from one that judged.
func waitPoolReady(t *testing.T, env *acctest.Env, name string, nodes int32) {
	t.Helper()
	last := ""
	err := wait.PollUntilContextTimeout(t.Context(), 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		r, err := env.PoolReady(ctx, name)
		if err != nil {
			return false, err
		}
		why := ""
		for _, n := range r.Nodes {
			if !n.Ready {
				why = n.Reason
				break
			}
		}
		if why == "" && len(r.Nodes) < int(nodes) {
			why = fmt.Sprintf("%d of %d nodes", len(r.Nodes), nodes)
		}
		if why != last && why != "" {
			t.Logf("pool %s not ready yet: %s", name, why)
		}
		last = why
		return why == "" && r.Ready, nil
	})
	if err != nil {
		t.Fatalf("nodes of pool %s not Ready with TopoLVM ready (last: %s): %v", name, last, err)
	}
}

func hasCapacity(n *corev1.Node) bool {
	for k := range n.Annotations {
		if strings.HasPrefix(k, stsutil.AnnotationCapacityPrefix) {
			return true
		}
	}
	return false
}

// setFixture is a StatefulSet created with client-go in its own namespace.
type setFixture struct {
	env  *acctest.Env
	ns   string
	name string
	n    int32
	// original Pod UIDs and PV names per ordinal, before the migration.
	podUIDs map[int32]string
	pvs     map[int32]string
}

// newSet creates namespace ns and StatefulSet "hist" (OnDelete, pool, claim
// cache of size) and waits until every Pod is Ready with a bound PV.
func newSet(t *testing.T, env *acctest.Env, ns string, replicas int32, pool, size string) *setFixture {
	t.Helper()
	return newSetAs(t, env, ns, replicas, pool, size, "")
}

// newSetAs is newSet with the StatefulSet created by field manager manager (client-go's default
// when empty), as an operator would.
func newSetAs(t *testing.T, env *acctest.Env, ns string, replicas int32, pool, size, manager string) *setFixture {
	t.Helper()
	ctx := t.Context()
	kube := env.Kube
	if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating namespace %s: %v", ns, err)
	}
	t.Cleanup(func() {
		_ = kube.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{})
	})
	set := fixture.Historical{Namespace: ns, Name: "hist", Replicas: replicas, Pool: pool,
		Claim: claimName, StorageClass: storageClass, Size: size}.StatefulSet()
	if _, err := kube.AppsV1().StatefulSets(ns).Create(ctx, set, metav1.CreateOptions{FieldManager: manager}); err != nil {
		t.Fatalf("creating StatefulSet: %v", err)
	}
	f := &setFixture{env: env, ns: ns, name: "hist", n: replicas, podUIDs: map[int32]string{}, pvs: map[int32]string{}}
	f.waitPlaced(t, pool)
	for o := int32(0); o < replicas; o++ {
		p, pvc := f.get(t, o)
		f.podUIDs[o] = string(p.UID)
		f.pvs[o] = pvc.Spec.VolumeName
	}
	return f
}

func (f *setFixture) get(t *testing.T, o int32) (*corev1.Pod, *corev1.PersistentVolumeClaim) {
	t.Helper()
	p, err := f.env.Kube.CoreV1().Pods(f.ns).Get(t.Context(), stsutil.PodName(f.name, o), metav1.GetOptions{})
	if err != nil {
		t.Fatalf("ordinal %d: %v", o, err)
	}
	c, err := f.env.Kube.CoreV1().PersistentVolumeClaims(f.ns).Get(t.Context(), stsutil.ClaimPVCName(claimName, f.name, o), metav1.GetOptions{})
	if err != nil {
		t.Fatalf("ordinal %d: %v", o, err)
	}
	return p, c
}

// placed reports whether ordinal o runs Ready on pool with its PV pinned to its node.
func placed(ctx context.Context, kube kubernetes.Interface, ns, set string, o int32, pool string) (bool, string, error) {
	p, err := kube.CoreV1().Pods(ns).Get(ctx, stsutil.PodName(set, o), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return false, "no Pod", nil
	} else if err != nil {
		return false, "", err
	}
	if p.Spec.NodeName == "" || !stsutil.PodReady(p) || p.DeletionTimestamp != nil {
		return false, "Pod not Ready: " + p.Status.String(), nil
	}
	n, err := kube.CoreV1().Nodes().Get(ctx, p.Spec.NodeName, metav1.GetOptions{})
	if err != nil {
		return false, "", err
	}
	if n.Labels[labelPool] != pool {
		return false, "Pod on node " + n.Name + " of pool " + n.Labels[labelPool], nil
	}
	c, err := kube.CoreV1().PersistentVolumeClaims(ns).Get(ctx, stsutil.ClaimPVCName(claimName, set, o), metav1.GetOptions{})
	if err != nil || c.Spec.VolumeName == "" {
		return false, "PVC not bound", client(err)
	}
	pv, err := kube.CoreV1().PersistentVolumes().Get(ctx, c.Spec.VolumeName, metav1.GetOptions{})
	if err != nil {
		return false, "", err
	}
	pinned := ""
	if pv.Spec.NodeAffinity != nil && pv.Spec.NodeAffinity.Required != nil {
		for _, term := range pv.Spec.NodeAffinity.Required.NodeSelectorTerms {
			for _, e := range term.MatchExpressions {
				if e.Key == stsutil.LabelTopoLVMNode && len(e.Values) == 1 {
					pinned = e.Values[0]
				}
			}
		}
	}
	if pinned != n.Name {
		return false, fmt.Sprintf("PV %s pinned to %q, Pod on %s", pv.Name, pinned, n.Name), nil
	}
	return true, "", nil
}

func client(err error) error {
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// waitPlaced waits until every ordinal runs Ready on pool with its PV pinned there.
func (f *setFixture) waitPlaced(t *testing.T, pool string) {
	t.Helper()
	var last string
	err := wait.PollUntilContextTimeout(t.Context(), 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		for o := int32(0); o < f.n; o++ {
			ok, why, err := placed(ctx, f.env.Kube, f.ns, f.name, o, pool)
			if err != nil || !ok {
				last = fmt.Sprintf("ordinal %d: %s", o, why)
				return false, err
			}
		}
		return true, nil
	})
	if err != nil {
		t.Fatalf("StatefulSet %s/%s not placed on %s: %v (%s)", f.ns, f.name, pool, err, last)
	}
}

// checkMoved checks ordinals moved: Ready on pool with a new PV pinned there,
// a new Pod UID, and the old PV gone.
func (f *setFixture) checkMoved(t *testing.T, pool string, ordinals ...int32) {
	t.Helper()
	ctx := t.Context()
	for _, o := range ordinals {
		ok, why, err := placed(ctx, f.env.Kube, f.ns, f.name, o, pool)
		if err != nil || !ok {
			t.Errorf("ordinal %d not on %s: %s %v", o, pool, why, err)
			continue
		}
		p, _ := f.get(t, o)
		if string(p.UID) == f.podUIDs[o] {
			t.Errorf("ordinal %d: Pod UID %s unchanged", o, p.UID)
		}
		old := f.pvs[o]
		err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			_, err := f.env.Kube.CoreV1().PersistentVolumes().Get(ctx, old, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return true, nil
			}
			return false, err
		})
		if err != nil {
			t.Errorf("ordinal %d: old PV %s on the old pool not gone: %v", o, old, err)
		}
	}
}

// checkUntouched checks ordinals keep their original Pod UID and PV.
func (f *setFixture) checkUntouched(t *testing.T, ordinals ...int32) {
	t.Helper()
	for _, o := range ordinals {
		p, c := f.get(t, o)
		if string(p.UID) != f.podUIDs[o] || c.Spec.VolumeName != f.pvs[o] {
			t.Errorf("ordinal %d was touched: Pod UID %s (was %s), PV %s (was %s)", o, p.UID, f.podUIDs[o], c.Spec.VolumeName, f.pvs[o])
		}
	}
}

// switchPool points the template at pool (OnDelete: no Pod changes) and
// waits until the controller observed it.
func (f *setFixture) switchPool(t *testing.T, pool string) {
	t.Helper()
	f.switchPoolAs(t, pool, "")
}

// switchPoolAs is switchPool written by field manager manager (client-go's default when empty),
// as an operator writes the StatefulSet after a change of its custom resource.
func (f *setFixture) switchPoolAs(t *testing.T, pool, manager string) {
	t.Helper()
	ctx := t.Context()
	sets := f.env.Kube.AppsV1().StatefulSets(f.ns)
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		s, err := sets.Get(ctx, f.name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		s = s.DeepCopy()
		s.Spec.Template.Spec.NodeSelector = map[string]string{labelPool: pool}
		_, err = sets.Update(ctx, s, metav1.UpdateOptions{FieldManager: manager})
		return err
	})
	if err != nil {
		t.Fatalf("switching template to %s: %v", pool, err)
	}
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		s, err := sets.Get(ctx, f.name, metav1.GetOptions{})
		return err == nil && s.Status.ObservedGeneration >= s.Generation, err
	})
	if err != nil {
		t.Fatalf("controller did not observe the template change: %v", err)
	}
}

// orderMonitor watches the set's Pods during an apply and records, each time
// an original Pod starts terminating, which ordinal it was and whether any
// other ordinal's original Pod was gone before its turn. expected is the
// order moves must happen in.
type orderMonitor struct {
	mu         sync.Mutex
	f          *setFixture
	expected   []int32
	seen       []int32
	violations []string
	onDeleted  func(o int32)
	// batch > 1: ordinals move `batch` at a time, in any order within a batch.
	batch int
	// deletedAt: when each original Pod started terminating; readyAt: when
	// each ordinal's first new Pod was seen Ready.
	deletedAt, readyAt map[int32]time.Time
}

// inTurn reports whether ordinal o may be the i-th original Pod deleted.
func (m *orderMonitor) inTurn(i int, o int32) bool {
	b := max(m.batch, 1)
	start := (i / b) * b
	for j := start; j < start+b && j < len(m.expected); j++ {
		if m.expected[j] == o {
			return true
		}
	}
	return false
}

func (f *setFixture) monitor(t *testing.T, expected []int32, onDeleted func(int32)) *orderMonitor {
	m := &orderMonitor{f: f, expected: expected, onDeleted: onDeleted, deletedAt: map[int32]time.Time{}, readyAt: map[int32]time.Time{}}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	factory := informers.NewSharedInformerFactoryWithOptions(f.env.Kube, 0, informers.WithNamespace(f.ns))
	inf := factory.Core().V1().Pods().Informer()
	byUID := map[string]int32{}
	for o, u := range f.podUIDs {
		byUID[u] = o
	}
	check := func(obj any) {
		p, ok := obj.(*corev1.Pod)
		if !ok {
			if d, ok2 := obj.(cache.DeletedFinalStateUnknown); ok2 {
				p, ok = d.Obj.(*corev1.Pod)
			}
			if !ok {
				return
			}
		}
		o, orig := byUID[string(p.UID)]
		if !orig {
			return
		}
		m.mu.Lock()
		defer m.mu.Unlock()
		for _, s := range m.seen {
			if s == o {
				return
			}
		}
		// The window: never more than `batch` ordinals down at once. The informer delivers
		// events in the API server's order, so a Ready the executor waited for is seen first.
		down := 0
		for d := range m.deletedAt {
			if _, up := m.readyAt[d]; !up {
				down++
			}
		}
		if down >= max(m.batch, 1) {
			m.violations = append(m.violations, fmt.Sprintf("original Pod of ordinal %d deleted while %d ordinal(s) were still down (max_unavailable %d)", o, down, max(m.batch, 1)))
		}
		m.seen = append(m.seen, o)
		m.deletedAt[o] = time.Now()
		i := len(m.seen) - 1
		if !m.inTurn(i, o) {
			m.violations = append(m.violations, fmt.Sprintf("original Pod of ordinal %d deleted as move %d, expected order %v (batches of %d)", o, i+1, m.expected, m.batch))
		}
		if m.onDeleted != nil {
			go m.onDeleted(o)
		}
	}
	_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		UpdateFunc: func(_, n any) {
			p := n.(*corev1.Pod)
			if p.DeletionTimestamp != nil {
				check(p)
				return
			}
			if _, orig := byUID[string(p.UID)]; !orig && stsutil.PodReady(p) {
				var o int32
				if _, err := fmt.Sscanf(p.Name[len(f.name)+1:], "%d", &o); err == nil {
					m.mu.Lock()
					if _, ok := m.readyAt[o]; !ok {
						m.readyAt[o] = time.Now()
					}
					m.mu.Unlock()
				}
			}
		},
		DeleteFunc: check,
	})
	factory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())
	return m
}

func (m *orderMonitor) verify(t *testing.T) {
	t.Helper()
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, v := range m.violations {
		t.Error(v)
	}
}

// waitScheduledOnPool blocks until a new Pod of ordinal o (not its original
// UID) is bound to a node of pool (used by failure injection).
func waitScheduledOnPool(ctx context.Context, kube kubernetes.Interface, f *setFixture, o int32, pool string) error {
	return wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 5*time.Minute, true, func(ctx context.Context) (bool, error) {
		p, err := kube.CoreV1().Pods(f.ns).Get(ctx, stsutil.PodName(f.name, o), metav1.GetOptions{})
		if err != nil || string(p.UID) == f.podUIDs[o] || p.Spec.NodeName == "" {
			return false, client(err)
		}
		n, err := kube.CoreV1().Nodes().Get(ctx, p.Spec.NodeName, metav1.GetOptions{})
		return err == nil && n.Labels[labelPool] == pool, err
	})
}

// cordonPool sets spec.unschedulable on every node of pool.
func cordonPool(ctx context.Context, kube kubernetes.Interface, pool string, on bool) error {
	ns, err := kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: labelPool + "=" + pool})
	if err != nil {
		return err
	}
	for _, n := range ns.Items {
		name := n.Name
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			cur, err := kube.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			cur = cur.DeepCopy()
			cur.Spec.Unschedulable = on
			_, err = kube.CoreV1().Nodes().Update(ctx, cur, metav1.UpdateOptions{})
			return err
		})
		if err != nil {
			return err
		}
	}
	return nil
}

var createOpts = metav1.CreateOptions{}

func nsObject(name string) *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
}

func deleteNamespace(env *acctest.Env, ns string) {
	_ = env.Kube.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{})
}

// moveBack simulates drift: ordinal o is recreated on pool `to` (template
// switched there, its PVC and Pod deleted), then the template goes back to
// `template`. OnDelete: nothing else changes.
func (f *setFixture) moveBack(t *testing.T, o int32, to, template string) {
	t.Helper()
	ctx := t.Context()
	f.switchPool(t, to)
	pvc := stsutil.ClaimPVCName(claimName, f.name, o)
	if err := f.env.Kube.CoreV1().PersistentVolumeClaims(f.ns).Delete(ctx, pvc, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := f.env.Kube.CoreV1().Pods(f.ns).Delete(ctx, stsutil.PodName(f.name, o), metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		ok, _, err := placed(ctx, f.env.Kube, f.ns, f.name, o, to)
		return ok, err
	})
	if err != nil {
		t.Fatalf("ordinal %d did not come back on %s: %v", o, to, err)
	}
	f.switchPool(t, template)
}

// overlapped reports whether the second original Pod was deleted before the
// first moved ordinal's new Pod was Ready (moves ran concurrently).
func (m *orderMonitor) overlapped() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.seen) < 2 {
		return false
	}
	r, ok := m.readyAt[m.seen[0]]
	return ok && m.deletedAt[m.seen[1]].Before(r)
}

// updateTemplate changes the live pod template (OnDelete: nothing restarts) and waits until the
// controller observed it.
func (f *setFixture) updateTemplate(t *testing.T, mutate func(*corev1.PodSpec)) {
	t.Helper()
	ctx := t.Context()
	sets := f.env.Kube.AppsV1().StatefulSets(f.ns)
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		s, err := sets.Get(ctx, f.name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		s = s.DeepCopy()
		mutate(&s.Spec.Template.Spec)
		_, err = sets.Update(ctx, s, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatalf("updating the template: %v", err)
	}
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		s, err := sets.Get(ctx, f.name, metav1.GetOptions{})
		return err == nil && s.Status.ObservedGeneration >= s.Generation, err
	})
	if err != nil {
		t.Fatalf("controller did not observe the template change: %v", err)
	}
}

// watchDeletions records every Pod and PVC deleted in ns from now on.
func watchDeletions(t *testing.T, env *acctest.Env, ns string) func() []string {
	var mu sync.Mutex
	var out []string
	factory := informers.NewSharedInformerFactoryWithOptions(env.Kube, 0, informers.WithNamespace(ns))
	h := func(kind string) cache.ResourceEventHandlerFuncs {
		return cache.ResourceEventHandlerFuncs{DeleteFunc: func(obj any) {
			if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			if m, ok := obj.(metav1.Object); ok {
				mu.Lock()
				out = append(out, kind+"/"+m.GetName())
				mu.Unlock()
			}
		}}
	}
	if _, err := factory.Core().V1().Pods().Informer().AddEventHandler(h("pod")); err != nil {
		t.Fatal(err)
	}
	if _, err := factory.Core().V1().PersistentVolumeClaims().Informer().AddEventHandler(h("pvc")); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(func() { cancel(); factory.Shutdown() })
	factory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())
	return func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), out...)
	}
}
