// Package moduleacc holds the acceptance tests of modules/olap-historical driven through the real
// terraform CLI on the sandbox: the routine ("day-2") changes a team makes every week, each of
// which must succeed on the first apply, leave the next plan empty and disrupt only what it
// needs (asserted on Pod and PVC UIDs and on a watch of every deletion).
package moduleacc

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/olapgke/terraform-provider-olapgke/internal/acctest"
	"github.com/olapgke/terraform-provider-olapgke/internal/stsutil"
)

func TestMain(m *testing.M) { acctest.Main(m) }

const claimName = "cache"

// vars are the module inputs a step changes.
type vars struct {
	name       string // module name: StatefulSet and node pool prefix ("hist" when empty)
	image      string
	env        map[string]string
	cpu        string
	replicas   int
	cacheSize  string
	activePool string
}

func (v vars) setName() string {
	if v.name == "" {
		return "hist"
	}
	return v.name
}

func (v vars) config(ns string) string {
	var env []string
	for k, val := range v.env {
		env = append(env, fmt.Sprintf("%q = %q", k, val))
	}
	sort.Strings(env)
	resources := "{}"
	if v.cpu != "" {
		resources = fmt.Sprintf(`{ requests = { cpu = %q } }`, v.cpu)
	}
	return fmt.Sprintf(`
module "historical" {
  source = %q

  name       = %q
  namespace  = %q
  image      = %q
  env        = { %s }
  resources  = %s
  replicas   = %d
  cache_size = %q
  device_class = {
    name      = "%s-thin"
    type      = "thin"
    thin_pool = { name = "moduleacc-pool", overprovision_ratio = 4, size_percent = 50 }
    force_destroy = true
  }
  # Creates the thin pool on every Local-SSD node (the sandbox plays the script's effect). Every
  # test names the same pool: the tests run one after the other on one sandbox, whose nodes keep
  # the pools an earlier test's bootstrap made, and a class naming a pool the nodes' bootstrap
  # report lacks is refused at plan (Thin Pool Not Found) until the bootstrap made it.
  volume_group_bootstrap = { image = "olapgke-vg-bootstrap:test" }
  pools = {
    a = { node_count = 3, deletion_protection = false, allow_local_data_loss = true }
    b = { node_count = 3, deletion_protection = false, allow_local_data_loss = true }
  }
  active_pool                      = %q
  termination_grace_period_seconds = 1
  pod_management_policy            = "Parallel"
  migration                        = { ordinal_timeout = "3m", timeout = "15m" }
}
`, filepath.Join(acctest.RepoRoot(), "modules", "olap-historical"), v.setName(), ns, v.image, strings.Join(env, ", "),
		resources, v.replicas, v.cacheSize, ns, v.activePool)
}

// world is one namespace with the module applied, the UIDs of every ordinal's Pod and PVC after
// the last step, and a watch of every Pod and PVC deletion and Pod readiness.
type world struct {
	t    *testing.T
	kube kubernetes.Interface
	ns   string
	tf   *acctest.TF
	v    vars
	mon  *monitor
}

func newWorld(t *testing.T, ns string, v vars) *world {
	env := acctest.Sandbox(t)
	acctest.PreCheck(t)
	ctx := t.Context()
	if _, err := env.Kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	w := &world{t: t, kube: env.Kube, ns: ns, v: v, tf: acctest.NewTF(t, v.config(ns))}
	if out, err := w.tf.Run("get"); err != nil {
		t.Fatalf("terraform get: %v\n%s", err, out)
	}
	t.Cleanup(func() {
		if out, err := w.tf.Run("destroy", "-auto-approve"); err != nil {
			t.Logf("destroy: %v\n%s", err, out)
		}
	})
	w.mon = watch(t, env.Kube, ns)
	return w
}

// use makes t the test that world's checks report to, until the returned func restores the
// previous one (for subtests).
func (w *world) use(t *testing.T) func() {
	prev := w.t
	w.t = t
	return func() { w.t = prev }
}

// step applies v, which must succeed at once, then checks the next plan is empty.
func (w *world) step(v vars) string {
	w.t.Helper()
	w.mon.reset()
	return w.apply(v)
}

// apply is step without resetting the monitor.
func (w *world) apply(v vars) string {
	w.t.Helper()
	w.v = v
	w.tf.Write(v.config(w.ns))
	out, err := w.tf.Apply()
	if err != nil {
		w.t.Fatalf("apply of %+v failed on the first try: %v\n%s", v, err, out)
	}
	for _, bad := range acctest.ProviderBugTexts {
		if strings.Contains(out, bad) {
			w.t.Fatalf("apply printed %q:\n%s", bad, out)
		}
	}
	w.tf.PlanEmpty()
	return out
}

// claimResize is one entry of olapgke_statefulset's claim_resizes in a plan's JSON.
type claimResize struct {
	Name       string `json:"name"`
	Retained   bool   `json:"retained"`
	SizeBefore string `json:"size_before"`
	SizeAfter  string `json:"size_after"`
	Fate       string `json:"fate"`
	Reason     string `json:"reason"`
}

// claimResizes plans the written config and returns the module StatefulSet's planned
// claim_resizes by PVC name.
func (w *world) claimResizes() map[string]claimResize {
	w.t.Helper()
	if out, err := w.tf.Run("plan", "-out=resize.tfplan"); err != nil {
		w.t.Fatalf("plan: %v\n%s", err, out)
	}
	js, err := w.tf.Run("show", "-json", "resize.tfplan")
	if err != nil {
		w.t.Fatalf("show: %v\n%s", err, js)
	}
	var plan struct {
		ResourceChanges []struct {
			Address string `json:"address"`
			Change  struct {
				After struct {
					ClaimResizes []claimResize `json:"claim_resizes"`
				} `json:"after"`
			} `json:"change"`
		} `json:"resource_changes"`
	}
	if err := json.Unmarshal([]byte(js[strings.Index(js, "{"):]), &plan); err != nil {
		w.t.Fatalf("decoding the plan: %v", err)
	}
	out := map[string]claimResize{}
	for _, rc := range plan.ResourceChanges {
		if rc.Address == "module.historical.olapgke_statefulset.this" {
			for _, r := range rc.Change.After.ClaimResizes {
				out[r.Name] = r
			}
			return out
		}
	}
	w.t.Fatalf("the plan has no module.historical.olapgke_statefulset.this")
	return nil
}

// snapshot records the Pod and PVC UIDs of every ordinal in range, all Ready.
func (w *world) snapshot() (pods, pvcs map[int32]string) {
	w.t.Helper()
	pods, pvcs = map[int32]string{}, map[int32]string{}
	for o := int32(0); o < int32(w.v.replicas); o++ {
		p, err := w.kube.CoreV1().Pods(w.ns).Get(w.t.Context(), stsutil.PodName(w.v.setName(), o), metav1.GetOptions{})
		if err != nil {
			w.t.Fatalf("ordinal %d: %v", o, err)
		}
		if !stsutil.PodReady(p) {
			w.t.Fatalf("ordinal %d: Pod %s not Ready after the apply", o, p.Name)
		}
		c, err := w.kube.CoreV1().PersistentVolumeClaims(w.ns).Get(w.t.Context(), stsutil.ClaimPVCName(claimName, w.v.setName(), o), metav1.GetOptions{})
		if err != nil {
			w.t.Fatalf("ordinal %d: %v", o, err)
		}
		pods[o], pvcs[o] = string(p.UID), string(c.UID)
	}
	return pods, pvcs
}

// monitor records, in order, every Pod and PVC deletion and every Pod that becomes Ready.
type monitor struct {
	mu     sync.Mutex
	events []event
}

type event struct {
	kind    string // "pod-deleted", "pvc-deleted", "pod-ready"
	ordinal int32
	uid     string
	at      time.Time
}

func watch(t *testing.T, kube kubernetes.Interface, ns string) *monitor {
	m := &monitor{}
	f := informers.NewSharedInformerFactoryWithOptions(kube, 0, informers.WithNamespace(ns))
	ready := map[string]bool{}
	rec := func(kind, name string, uid string) {
		o := stsutil.OrdinalOf(name)
		m.mu.Lock()
		defer m.mu.Unlock()
		m.events = append(m.events, event{kind: kind, ordinal: o, uid: uid, at: time.Now()})
	}
	podReady := func(obj any) {
		p, ok := obj.(*corev1.Pod)
		if !ok || !stsutil.PodReady(p) || p.DeletionTimestamp != nil {
			return
		}
		m.mu.Lock()
		seen := ready[string(p.UID)]
		ready[string(p.UID)] = true
		m.mu.Unlock()
		if !seen {
			rec("pod-ready", p.Name, string(p.UID))
		}
	}
	gone := func(kind string) func(obj any) {
		return func(obj any) {
			if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			if mo, ok := obj.(metav1.Object); ok {
				rec(kind, mo.GetName(), string(mo.GetUID()))
			}
		}
	}
	if _, err := f.Core().V1().Pods().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: podReady, UpdateFunc: func(_, cur any) { podReady(cur) }, DeleteFunc: gone("pod-deleted"),
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Core().V1().PersistentVolumeClaims().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		DeleteFunc: gone("pvc-deleted"),
	}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(func() { cancel(); f.Shutdown() })
	f.Start(ctx.Done())
	f.WaitForCacheSync(ctx.Done())
	return m
}

func (m *monitor) reset() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.events = nil
}

func (m *monitor) list() []event {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]event(nil), m.events...)
}

// restartedOnceInTurn checks that each ordinal's Pod was deleted exactly once (the old UID),
// that no PVC was deleted, and that every ordinal's new Pod was Ready before the next ordinal's
// Pod was deleted (one at a time).
func (w *world) restartedOnceInTurn(before map[int32]string) {
	w.t.Helper()
	evs := w.mon.list()
	deleted := map[int32]int{}
	var order []int32
	for _, e := range evs {
		switch e.kind {
		case "pvc-deleted":
			w.t.Errorf("PVC of ordinal %d deleted (uid %s): a restart must keep it", e.ordinal, e.uid)
		case "pod-deleted":
			if e.uid != before[e.ordinal] {
				w.t.Errorf("ordinal %d: Pod uid %s deleted, not the one before the change (%s)", e.ordinal, e.uid, before[e.ordinal])
			}
			deleted[e.ordinal]++
			order = append(order, e.ordinal)
		}
	}
	for o := range before {
		if deleted[o] != 1 {
			w.t.Errorf("ordinal %d: its Pod was deleted %d times, want once", o, deleted[o])
		}
	}
	// One at a time: between two Pod deletions, the first ordinal's new Pod became Ready.
	for i := 1; i < len(order); i++ {
		prev := order[i-1]
		var delPrev, delNext, readyPrev time.Time
		for _, e := range evs {
			switch {
			case e.kind == "pod-deleted" && e.ordinal == prev:
				delPrev = e.at
			case e.kind == "pod-deleted" && e.ordinal == order[i]:
				delNext = e.at
			case e.kind == "pod-ready" && e.ordinal == prev && !delPrev.IsZero() && readyPrev.IsZero():
				readyPrev = e.at
			}
		}
		if readyPrev.IsZero() || readyPrev.After(delNext) {
			w.t.Errorf("ordinal %d was deleted before ordinal %d was Ready again (events %+v)", order[i], prev, evs)
		}
	}
}

// noDeletions checks the step deleted no Pod and no PVC.
func (w *world) noDeletions() {
	w.t.Helper()
	for _, e := range w.mon.list() {
		if e.kind != "pod-ready" {
			w.t.Errorf("%s ordinal %d (uid %s): this change must not delete anything", e.kind, e.ordinal, e.uid)
		}
	}
}

func (w *world) pvcSizes() map[int32]string {
	w.t.Helper()
	out := map[int32]string{}
	for o := int32(0); o < int32(w.v.replicas); o++ {
		c, err := w.kube.CoreV1().PersistentVolumeClaims(w.ns).Get(w.t.Context(), stsutil.ClaimPVCName(claimName, w.v.setName(), o), metav1.GetOptions{})
		if err != nil {
			w.t.Fatal(err)
		}
		q := c.Status.Capacity[corev1.ResourceStorage]
		out[o] = q.String()
	}
	return out
}

func mapsEqual(a, b map[int32]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// TestAccModule_DayTwo walks the changes a team makes every week through modules/olap-historical
// on one sandbox: image bump, env var and CPU request (every Pod restarted once, one at a time,
// no PVC replaced), scale 3 -> 4 -> 3, cache 50Gi -> 60Gi (0 Pods restarted, every PVC 60Gi), and
// the node pool switch (every ordinal moved, with a new PVC pinned on the target pool).
func TestAccModule_DayTwo(t *testing.T) {
	v := vars{image: "olap/historical:1", replicas: 3, cacheSize: "50Gi", activePool: "a"}
	w := newWorld(t, "daytwo", v)
	w.step(v)
	pods, pvcs := w.snapshot()

	for _, change := range []struct {
		name string
		mut  func(*vars)
	}{
		{"image bump", func(v *vars) { v.image = "olap/historical:2" }},
		{"env var", func(v *vars) { v.env = map[string]string{"DRUID_XMX": "4g"} }},
		{"cpu request", func(v *vars) { v.cpu = "250m" }},
	} {
		t.Run(change.name, func(t *testing.T) {
			defer w.use(t)()
			nv := w.v
			change.mut(&nv)
			out := w.step(nv)
			if !strings.Contains(out, "restart") {
				t.Errorf("apply output does not mention the restarts:\n%s", out)
			}
			w.restartedOnceInTurn(pods)
			newPods, newPVCs := w.snapshot()
			if !mapsEqual(pvcs, newPVCs) {
				t.Errorf("PVC UIDs changed: before %v, after %v", pvcs, newPVCs)
			}
			for o, uid := range newPods {
				if uid == pods[o] {
					t.Errorf("ordinal %d: Pod not restarted", o)
				}
			}
			pods = newPods
		})
	}

	t.Run("scale 3 to 4 to 3", func(t *testing.T) {
		defer w.use(t)()
		nv := w.v
		nv.replicas = 4
		w.step(nv)
		w.noDeletions()
		p4, c4 := w.snapshot()
		for o := int32(0); o < 3; o++ {
			if p4[o] != pods[o] || c4[o] != pvcs[o] {
				t.Errorf("ordinal %d touched by the scale-up", o)
			}
		}
		nv.replicas = 3
		w.step(nv)
		p3, c3 := w.snapshot()
		if !mapsEqual(p3, pods) || !mapsEqual(c3, pvcs) {
			t.Errorf("scale-down touched ordinals 0-2: pods %v -> %v, pvcs %v -> %v", pods, p3, pvcs, c3)
		}
		for _, e := range w.mon.list() {
			if e.kind == "pvc-deleted" {
				t.Errorf("PVC of ordinal %d deleted by the scale-down (whenScaled: Retain keeps it)", e.ordinal)
			}
		}
	})

	t.Run("cache 50Gi to 60Gi", func(t *testing.T) {
		defer w.use(t)()
		nv := w.v
		nv.cacheSize = "60Gi"
		// The plan's claim_resizes names every claim the growth resizes, the retained one of
		// ordinal 3 included (issue 41: PVC fate in the plan JSON covers retained claims).
		w.tf.Write(nv.config(w.ns))
		resizes := w.claimResizes()
		for o := int32(0); o <= 3; o++ {
			name := stsutil.ClaimPVCName(claimName, w.v.setName(), o)
			r, ok := resizes[name]
			switch {
			case !ok:
				t.Errorf("the plan's claim_resizes lacks %s: %v", name, resizes)
			case r.Fate != "grows" || r.SizeBefore != "50Gi" || r.SizeAfter != "60Gi" || r.Retained != (o == 3):
				t.Errorf("claim_resizes[%s] = %+v, want grows 50Gi -> 60Gi, retained %v", name, r, o == 3)
			}
		}
		if len(resizes) != 4 {
			t.Errorf("claim_resizes has %d entries, want 4: %v", len(resizes), resizes)
		}
		out := w.step(nv)
		if !strings.Contains(out, "StatefulSet Object Will Be Re-created") && !strings.Contains(out, "re-created") {
			t.Logf("apply output:\n%s", out)
		}
		w.noDeletions()
		p, c := w.snapshot()
		if !mapsEqual(p, pods) || !mapsEqual(c, pvcs) {
			t.Errorf("growth restarted Pods or replaced PVCs: pods %v -> %v, pvcs %v -> %v", pods, p, pvcs, c)
		}
		want := resource.MustParse("60Gi")
		for o, s := range w.pvcSizes() {
			if s != want.String() {
				t.Errorf("ordinal %d: PVC capacity %s, want %s", o, s, want.String())
			}
		}
		// The claim the scale-down retained (whenScaled: Retain) grows too, so ordinal 3 comes
		// back on a 60Gi cache: its request and its volume are 60Gi; the filesystem grows when
		// a Pod mounts it again (FileSystemResizePending), and the plan named it.
		retained := stsutil.ClaimPVCName(claimName, w.v.setName(), 3)
		if !strings.Contains(strings.Join(strings.Fields(out), " "), retained) {
			t.Errorf("the apply output does not name the retained claim %s:\n%s", retained, out)
		}
		rc, err := w.kube.CoreV1().PersistentVolumeClaims(w.ns).Get(t.Context(), retained, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("retained claim %s: %v", retained, err)
		}
		if q := rc.Spec.Resources.Requests[corev1.ResourceStorage]; q.Cmp(want) != 0 {
			t.Errorf("retained claim %s requests %s, want %s", retained, q.String(), want.String())
		}
		pv, err := w.kube.CoreV1().PersistentVolumes().Get(t.Context(), rc.Spec.VolumeName, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("PV of the retained claim %s: %v", retained, err)
		}
		if q := pv.Spec.Capacity[corev1.ResourceStorage]; q.Cmp(want) != 0 {
			t.Errorf("PV %s of the retained claim %s is %s, want %s", pv.Name, retained, q.String(), want.String())
		}
	})

	t.Run("active pool switch", func(t *testing.T) {
		defer w.use(t)()
		nv := w.v
		nv.activePool = "b"
		w.step(nv)
		p, c := w.snapshot()
		for o := int32(0); o < 3; o++ {
			if c[o] == pvcs[o] || p[o] == pods[o] {
				t.Errorf("ordinal %d: not moved (Pod and PVC UIDs unchanged)", o)
			}
			pod, err := w.kube.CoreV1().Pods(w.ns).Get(t.Context(), stsutil.PodName(w.v.setName(), o), metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(pod.Spec.NodeName, "-"+w.v.setName()+"-b-") {
				t.Errorf("ordinal %d runs on %s, not on pool b", o, pod.Spec.NodeName)
			}
		}
	})
}

// TestAccModule_RestartResumesAfterSIGKILL kills terraform (and the provider with it) right after
// the migration deleted the first Pod of an image bump; the next apply resumes and finishes:
// every Pod restarted once, no PVC replaced, next plan empty.
func TestAccModule_RestartResumesAfterSIGKILL(t *testing.T) {
	v := vars{name: "kill", image: "olap/historical:1", replicas: 3, cacheSize: "10Gi", activePool: "a"}
	w := newWorld(t, "daytwo-kill", v)
	w.step(v)
	pods, pvcs := w.snapshot()

	v.image = "olap/historical:2"
	w.v = v
	w.tf.Write(v.config(w.ns))
	w.mon.reset()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	cmd, out := w.tf.Cmd(ctx, "apply", "-auto-approve")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	killed := make(chan struct{})
	go func() {
		defer close(killed)
		for ctx.Err() == nil {
			for _, e := range w.mon.list() {
				if e.kind == "pod-deleted" {
					_ = cmd.Cancel() // SIGKILL to the process group: terraform and the provider
					return
				}
			}
			select {
			case <-ctx.Done():
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()
	_ = cmd.Wait()
	<-killed
	if cmd.ProcessState.Success() {
		t.Fatalf("apply finished before it was killed:\n%s", out)
	}
	// The local state lock died with the process: apply again, keeping the events of the killed run.
	w.apply(v)
	w.restartedOnceInTurn(pods)
	newPods, newPVCs := w.snapshot()
	if !mapsEqual(pvcs, newPVCs) {
		t.Errorf("PVC UIDs changed: before %v, after %v", pvcs, newPVCs)
	}
	for o, uid := range newPods {
		if uid == pods[o] {
			t.Errorf("ordinal %d: Pod not restarted", o)
		}
	}
}
