package reliability

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

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
	"github.com/olapgke/terraform-provider-olapgke/internal/stsutil"
)

// The migration moves every ordinal from pool-a to pool-b.
func TestMain(m *testing.M) {
	// Every Local-SSD node's set-up carves the thin pools of the thin classes here (rel-fast),
	// 100 GiB each: lvmd exits "Thin pool not found" on a node without them, also on the nodes
	// of pools the tests create.
	if err := os.Setenv("OLAPGKE_SANDBOX_THIN_POOLS", "pool-rel-fast=107374182400"); err != nil {
		panic(err)
	}
	acctest.MainWithWorld(m, acctest.TwoPoolWorld)
}

const (
	// EnvReliability enables the slow suites (make reliability).
	EnvReliability = "OLAPGKE_RELIABILITY"
	claimName      = "cache"
	storageClass   = "topolvm-provisioner"
	setName        = "hist"
)

// slow skips a test unless the slow suites were asked for: OLAPGKE_RELIABILITY=1 runs them in
// full (make reliability), OLAPGKE_RELIABILITY=fast one seed or phase of each (make
// reliability-fast, in CI).
func slow(t *testing.T) {
	t.Helper()
	if os.Getenv(EnvReliability) == "" {
		t.Skipf("slow reliability suite: set %s=1 (make reliability) or fast (make reliability-fast)", EnvReliability)
	}
}

// fast reports whether only one seed or phase of each slow suite runs.
func fast() bool { return os.Getenv(EnvReliability) == "fast" }

// firstIfFast returns all, or only its first element in the fast subset.
func firstIfFast[T any](all []T) []T {
	if fast() && len(all) > 1 {
		return all[:1]
	}
	return all
}

// result logs a line `make reliability` collects into RELIABILITY.md.
func result(t *testing.T, format string, args ...any) {
	t.Helper()
	t.Logf("RESULT %s: %s", t.Name(), fmt.Sprintf(format, args...))
}

// ---- terraform CLI driver: acctest.TF ------------------------------------------------------

type tf = acctest.TF

func newTF(t *testing.T, config string) *tf { return acctest.NewTF(t, config) }

func clearError(t *testing.T, out string) string { return acctest.ClearError(t, out) }

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// ---- StatefulSet fixture --------------------------------------------------------------------

// set is a StatefulSet "hist" created with client-go in its own namespace: OnDelete, Parallel,
// one claim "cache" per ordinal, 1s termination grace (the sandbox honours grace periods).
type set struct {
	kube kubernetes.Interface
	ns   string
	n    int32
	pods map[int32]string // original Pod UIDs
	pvcs map[int32]string // original PVC UIDs
}

func newSet(t *testing.T, kube kubernetes.Interface, ns string, replicas int32, pool string) *set {
	t.Helper()
	ctx := t.Context()
	if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating namespace %s: %v", ns, err)
	}
	t.Cleanup(func() { _ = kube.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{}) })
	sts := fixture.Historical{Namespace: ns, Name: setName, Replicas: replicas, Pool: pool,
		Claim: claimName, StorageClass: storageClass, Size: "1Gi"}.StatefulSet()
	if _, err := kube.AppsV1().StatefulSets(ns).Create(ctx, sts, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating StatefulSet: %v", err)
	}
	s := &set{kube: kube, ns: ns, n: replicas, pods: map[int32]string{}, pvcs: map[int32]string{}}
	s.waitOn(t, pool, nil)
	for o := range replicas {
		p, c := s.get(t, o)
		s.pods[o], s.pvcs[o] = string(p.UID), string(c.UID)
	}
	return s
}

func (s *set) get(t *testing.T, o int32) (*corev1.Pod, *corev1.PersistentVolumeClaim) {
	t.Helper()
	p, err := s.kube.CoreV1().Pods(s.ns).Get(t.Context(), stsutil.PodName(setName, o), metav1.GetOptions{})
	must(t, err)
	c, err := s.kube.CoreV1().PersistentVolumeClaims(s.ns).Get(t.Context(), stsutil.ClaimPVCName(claimName, setName, o), metav1.GetOptions{})
	must(t, err)
	return p, c
}

// onPool reports whether ordinal o runs Ready on a node of pool.
func (s *set) onPool(ctx context.Context, o int32, pool string) (bool, error) {
	p, err := s.kube.CoreV1().Pods(s.ns).Get(ctx, stsutil.PodName(setName, o), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return false, nil
	} else if err != nil {
		return false, err
	}
	if p.Spec.NodeName == "" || p.DeletionTimestamp != nil || !stsutil.PodReady(p) {
		return false, nil
	}
	n, err := s.kube.CoreV1().Nodes().Get(ctx, p.Spec.NodeName, metav1.GetOptions{})
	if err != nil {
		return false, err
	}
	return n.Labels[stsutil.LabelNodePool] == pool, nil
}

// waitOn waits until the given ordinals (nil: all) run Ready on pool.
func (s *set) waitOn(t *testing.T, pool string, ordinals []int32) {
	t.Helper()
	if ordinals == nil {
		for o := range s.n {
			ordinals = append(ordinals, o)
		}
	}
	err := wait.PollUntilContextTimeout(t.Context(), 200*time.Millisecond, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		for _, o := range ordinals {
			if ok, err := s.onPool(ctx, o, pool); !ok || err != nil {
				return false, err
			}
		}
		return true, nil
	})
	if err != nil {
		t.Fatalf("ordinals %v of %s/%s not Ready on %s: %v", ordinals, s.ns, setName, pool, err)
	}
}

// switchPool points the template at pool (OnDelete: no Pod changes) and waits until the
// controller observed it.
func (s *set) switchPool(t *testing.T, pool string) {
	t.Helper()
	ctx := t.Context()
	sets := s.kube.AppsV1().StatefulSets(s.ns)
	must(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := sets.Get(ctx, setName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		cur = cur.DeepCopy()
		cur.Spec.Template.Spec.NodeSelector = map[string]string{stsutil.LabelNodePool: pool}
		_, err = sets.Update(ctx, cur, metav1.UpdateOptions{})
		return err
	}))
	must(t, wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		cur, err := sets.Get(ctx, setName, metav1.GetOptions{})
		return err == nil && cur.Status.ObservedGeneration >= cur.Generation, err
	}))
}

// checkFinal checks, by UID, that moved ordinals have a new Pod and PVC and run on pool, and
// that the others kept their original Pod and PVC.
func (s *set) checkFinal(t *testing.T, pool string, moved []int32) {
	t.Helper()
	s.waitOn(t, pool, moved)
	isMoved := map[int32]bool{}
	for _, o := range moved {
		isMoved[o] = true
	}
	for o := range s.n {
		p, c := s.get(t, o)
		same := string(p.UID) == s.pods[o] && string(c.UID) == s.pvcs[o]
		switch {
		case isMoved[o] && (string(p.UID) == s.pods[o] || string(c.UID) == s.pvcs[o]):
			t.Errorf("ordinal %d was to move but kept Pod UID %s / PVC UID %s", o, p.UID, c.UID)
		case !isMoved[o] && !same:
			t.Errorf("ordinal %d was not to move but its Pod or PVC changed: Pod %s (was %s), PVC %s (was %s)", o, p.UID, s.pods[o], c.UID, s.pvcs[o])
		}
	}
}

// ---- invariant monitor ----------------------------------------------------------------------

// monitor watches the set's Pods and PVCs (directly, not through any fault proxy) for a whole
// test and records violations of the migration invariants:
//
//   - a deletion of an ordinal's Pod or PVC starts its move; while one ordinal's move is in
//     progress no other ordinal's Pod or PVC may be deleted (max_unavailable = 1);
//   - ordinals outside `planned` are never touched; a finished ordinal is never touched again;
//   - an ordinal has a Ready Pod at every moment outside its own move (started by its first
//     deletion, finished when its new Pod is Ready).
type monitor struct {
	s       *set
	planned map[int32]bool
	cancel  context.CancelFunc

	mu         sync.Mutex
	started    map[int32]time.Time
	finished   map[int32]time.Time
	deleted    map[string]bool // UIDs whose deletion was recorded
	created    map[string]bool // UIDs of new Pods seen while their ordinal moved
	deletions  []string
	violations []string
	onEvent    func(kind string, o int32) // optional hook for interruption tests (called without mu)
}

func (s *set) watch(t *testing.T, planned []int32, hook func(kind string, o int32)) *monitor {
	t.Helper()
	m := &monitor{s: s, planned: map[int32]bool{}, started: map[int32]time.Time{}, finished: map[int32]time.Time{}, onEvent: hook,
		deleted: map[string]bool{}, created: map[string]bool{}}
	for _, o := range planned {
		m.planned[o] = true
	}
	ctx, cancel := context.WithCancel(context.Background())
	m.cancel = cancel
	t.Cleanup(cancel)
	f := informers.NewSharedInformerFactoryWithOptions(s.kube, 0, informers.WithNamespace(s.ns))
	pods, pvcs := f.Core().V1().Pods().Informer(), f.Core().V1().PersistentVolumeClaims().Informer()
	_, _ = pods.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { m.pod(o, false) },
		UpdateFunc: func(_, o any) { m.pod(o, false) },
		DeleteFunc: func(o any) { m.pod(o, true) },
	})
	_, _ = pvcs.AddEventHandler(cache.ResourceEventHandlerFuncs{
		UpdateFunc: func(_, o any) { m.pvc(o, false) },
		DeleteFunc: func(o any) { m.pvc(o, true) },
	})
	f.Start(ctx.Done())
	f.WaitForCacheSync(ctx.Done())
	return m
}

func unwrap[T any](obj any) (T, bool) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	v, ok := obj.(T)
	return v, ok
}

// ordinalOf parses "<prefix><ordinal>".
func ordinalOf(name, prefix string) (int32, bool) {
	var o int32
	if !strings.HasPrefix(name, prefix) {
		return 0, false
	}
	if _, err := fmt.Sscanf(strings.TrimPrefix(name, prefix), "%d", &o); err != nil {
		return 0, false
	}
	return o, true
}

// deleting records that a Pod or PVC of ordinal o is being deleted; call with mu held.
func (m *monitor) deleting(kind, name, uid string, o int32, original bool, detail string) {
	now := time.Now()
	m.deletions = append(m.deletions, fmt.Sprintf("%s %s %s UID %s (ordinal %d, original %v) %s", now.Format("15:04:05.000"), kind, name, uid, o, original, detail))
	switch {
	case !m.planned[o]:
		m.violations = append(m.violations, fmt.Sprintf("%s %s (UID %s) of ordinal %d deleted, but ordinal %d was not planned to move", kind, name, uid, o, o))
		return
	case !m.finished[o].IsZero():
		m.violations = append(m.violations, fmt.Sprintf("%s %s (UID %s) of ordinal %d deleted after ordinal %d had finished its move", kind, name, uid, o, o))
		return
	}
	for other, at := range m.started {
		if other != o && m.finished[other].IsZero() {
			m.violations = append(m.violations, fmt.Sprintf("%s %s of ordinal %d deleted while ordinal %d's move (started %s) was still in progress", kind, name, o, other, at.Format("15:04:05.000")))
		}
	}
	if m.started[o].IsZero() {
		if !original {
			m.violations = append(m.violations, fmt.Sprintf("%s %s of ordinal %d deleted but it is not the original and the ordinal's move had not started", kind, name, o))
		}
		m.started[o] = now
	}
}

func (m *monitor) pod(obj any, gone bool) {
	p, ok := unwrap[*corev1.Pod](obj)
	if !ok {
		return
	}
	o, ok := ordinalOf(p.Name, setName+"-")
	if !ok {
		return
	}
	uid := string(p.UID)
	original := uid == m.s.pods[o]
	deleting := gone || p.DeletionTimestamp != nil
	ready := !deleting && p.Spec.NodeName != "" && stsutil.PodReady(p)
	var hooks []string
	m.mu.Lock()
	if deleting && !m.deleted[uid] {
		m.deleted[uid] = true
		m.deleting("Pod", p.Name, uid, o, original, podDetail(p))
		hooks = append(hooks, "pod-deleted")
	}
	inMove := !m.started[o].IsZero() && m.finished[o].IsZero()
	switch {
	case ready && !original && inMove:
		m.finished[o] = time.Now()
		m.deletions = append(m.deletions, fmt.Sprintf("%s Pod %s UID %s (ordinal %d) Ready: %s", m.finished[o].Format("15:04:05.000"), p.Name, uid, o, podDetail(p)))
		hooks = append(hooks, "ready")
	case !ready && !deleting && !original && inMove && !m.created[uid]:
		m.created[uid] = true
		hooks = append(hooks, "pod-created")
	case !ready && !deleting && !inMove:
		m.violations = append(m.violations, fmt.Sprintf("ordinal %d without a Ready Pod outside its move (Pod %s UID %s, phase %s)", o, p.Name, uid, p.Status.Phase))
	}
	m.mu.Unlock()
	if m.onEvent != nil {
		for _, h := range hooks {
			m.onEvent(h, o)
		}
	}
}

// podDetail is what the deletion timeline says of p: its node, phase, and claims.
func podDetail(p *corev1.Pod) string {
	var claims []string
	for _, v := range p.Spec.Volumes {
		if v.PersistentVolumeClaim != nil {
			claims = append(claims, v.PersistentVolumeClaim.ClaimName)
		}
	}
	return fmt.Sprintf("node %q phase %s reason %q ready %v claims %v", p.Spec.NodeName, p.Status.Phase, p.Status.Reason, stsutil.PodReady(p), claims)
}

func (m *monitor) pvc(obj any, gone bool) {
	c, ok := unwrap[*corev1.PersistentVolumeClaim](obj)
	if !ok || (!gone && c.DeletionTimestamp == nil) {
		return
	}
	o, ok := ordinalOf(c.Name, claimName+"-"+setName+"-")
	if !ok {
		return
	}
	uid := string(c.UID)
	m.mu.Lock()
	fire := !m.deleted[uid]
	if fire {
		m.deleted[uid] = true
		m.deleting("PVC", c.Name, uid, o, uid == m.s.pvcs[o], "volume "+c.Spec.VolumeName)
	}
	m.mu.Unlock()
	if fire && m.onEvent != nil {
		m.onEvent("pvc-deleted", o)
	}
}

// verify reports violations and returns the longest move and the per-ordinal move times.
func (m *monitor) verify(t *testing.T) (longest time.Duration, moves map[int32]time.Duration) {
	t.Helper()
	m.cancel()
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, v := range m.violations {
		t.Error("invariant violated: " + v)
	}
	if len(m.violations) > 0 {
		t.Logf("deletions seen:\n%s", strings.Join(m.deletions, "\n"))
	}
	moves = map[int32]time.Duration{}
	for o, s := range m.started {
		if f := m.finished[o]; !f.IsZero() {
			moves[o] = f.Sub(s)
			if moves[o] > longest {
				longest = moves[o]
			}
		} else {
			t.Errorf("ordinal %d's move started at %s and never finished", o, s.Format("15:04:05.000"))
		}
	}
	return longest, moves
}

var createOpts = metav1.CreateOptions{}

func nsObject(name string) *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
}

func deleteNamespace(env *acctest.Env, ns string) {
	_ = env.Kube.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{})
}
