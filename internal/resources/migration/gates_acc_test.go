package migration_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/retry"

	"github.com/olapgke/terraform-provider-olapgke/internal/acctest"
	"github.com/olapgke/terraform-provider-olapgke/internal/stsutil"
)

// gateServer is a loopback stand-in for an application's load status (Druid's coordinator
// loadstatus, a ClickHouse replication-delay check) that the test controls: for each Pod it
// answers 503, then a slow answer, then "5 segments left", until the test opens it. Requests
// without the secret token get 401, so a gate that passes proves the header was sent.
type gateServer struct {
	*httptest.Server
	secret string
	mu     sync.Mutex
	open   map[string]time.Time // pod -> when the test opened it
	polls  map[string]int
}

func newGateServer(t *testing.T, secret string) *gateServer {
	s := &gateServer{secret: secret, open: map[string]time.Time{}, polls: map[string]int{}}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Token") != s.secret {
			http.Error(w, "bad token", http.StatusUnauthorized)
			return
		}
		pod := strings.TrimPrefix(r.URL.Path, "/load/")
		s.mu.Lock()
		s.polls[pod]++
		n := s.polls[pod]
		_, open := s.open[pod]
		s.mu.Unlock()
		switch {
		case open:
			_, _ = w.Write([]byte(`{"left": 0}`))
		case n == 1:
			http.Error(w, "coordinator busy", http.StatusServiceUnavailable)
		case n == 2:
			time.Sleep(2 * time.Second) // slower than the request timeout (1 s)
			_, _ = w.Write([]byte(`{"left": 0}`))
		default:
			_, _ = w.Write([]byte(`{"left": 5}`))
		}
	}))
	t.Cleanup(s.Close)
	return s
}

// openAfter opens pod once the server has answered it n times, and returns when it did.
func (s *gateServer) openAfter(ctx context.Context, pod string, n int) (time.Time, error) {
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 5*time.Minute, true, func(context.Context) (bool, error) {
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.polls[pod] >= n, nil
	})
	if err != nil {
		return time.Time{}, fmt.Errorf("pod %s polled %d times, want %d: %w", pod, s.pollsOf(pod), n, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	at := time.Now()
	s.open[pod] = at
	return at, nil
}

func (s *gateServer) pollsOf(pod string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.polls[pod]
}

func testAccMigrationConfig_gates(ns, url, timeout string, withCondition bool) string {
	cond := ""
	if withCondition {
		cond = `
  gate {
    name     = "loaded-condition"
    interval = "500ms"
    timeout  = "3m"
    pod_condition {
      type = "example.com/loaded"
    }
  }`
	}
	// The secret header: write-only from an ephemeral variable (never in plan or state) where the
	// CLI supports it, else read from the environment at apply (headers_from_env).
	variable, headers := `
variable "token" {
  type      = string
  sensitive = true
  ephemeral = true
}
`, `headers          = { "X-Token" = var.token }`
	if !acctest.CLIWriteOnly() {
		variable, headers = "", `headers_from_env = { "X-Token" = "OLAPGKE_TEST_GATE_TOKEN" }`
	}
	return fmt.Sprintf(variable+`
resource "olapgke_statefulset_migration" "hist" {
  namespace       = %q
  statefulset     = "hist"
  ordinal_timeout = "3m"

  gate {
    name     = "segments-loaded"
    interval = "500ms"
    timeout  = %q
    http {
      url              = "%s/load/{pod}"
      %s
      expect_json_path = "$.left"
      expect_value     = "0"
    }
  }%s
}
`, ns, timeout, url, headers, cond)
}

// touchMonitor records when each original PVC or Pod of an ordinal was first deleted (its
// deletionTimestamp seen, or gone), and calls onReady once for each new Pod that is Ready.
type touchMonitor struct {
	mu      sync.Mutex
	touched map[int32]time.Time
}

func (f *setFixture) touches(t *testing.T, onReady func(*corev1.Pod)) *touchMonitor {
	m := &touchMonitor{touched: map[int32]time.Time{}}
	orig := map[string]int32{}
	for o := int32(0); o < f.n; o++ {
		p, c := f.get(t, o)
		orig[string(p.UID)], orig[string(c.UID)] = o, o
	}
	readySeen := map[string]bool{}
	record := func(obj any, gone bool) {
		if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = d.Obj
		}
		mo, ok := obj.(metav1.Object)
		if !ok {
			return
		}
		o, isOrig := orig[string(mo.GetUID())]
		m.mu.Lock()
		defer m.mu.Unlock()
		if isOrig && (gone || mo.GetDeletionTimestamp() != nil) {
			if _, seen := m.touched[o]; !seen {
				m.touched[o] = time.Now()
			}
			return
		}
		if p, ok := obj.(*corev1.Pod); ok && !isOrig && !gone && p.DeletionTimestamp == nil && stsutil.PodReady(p) && !readySeen[string(p.UID)] {
			readySeen[string(p.UID)] = true
			if onReady != nil {
				go onReady(p.DeepCopy())
			}
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	factory := informers.NewSharedInformerFactoryWithOptions(f.env.Kube, 0, informers.WithNamespace(f.ns))
	h := cache.ResourceEventHandlerFuncs{
		UpdateFunc: func(_, n any) { record(n, false) },
		DeleteFunc: func(o any) { record(o, true) },
	}
	_, _ = factory.Core().V1().Pods().Informer().AddEventHandler(h)
	_, _ = factory.Core().V1().PersistentVolumeClaims().Informer().AddEventHandler(h)
	factory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())
	t.Cleanup(func() { cancel(); factory.Shutdown() })
	return m
}

func (m *touchMonitor) at(o int32) (time.Time, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	t, ok := m.touched[o]
	return t, ok
}

// setPodCondition sets condition typ=True on pod (as an agent in the Pod would).
func setPodCondition(ctx context.Context, env *acctest.Env, pod *corev1.Pod, typ corev1.PodConditionType) error {
	pods := env.Kube.CoreV1().Pods(pod.Namespace)
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		p, err := pods.Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		p = p.DeepCopy()
		p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: typ, Status: corev1.ConditionTrue,
			LastTransitionTime: metav1.Now(), Reason: "SegmentsLoaded"})
		_, err = pods.UpdateStatus(ctx, p, metav1.UpdateOptions{})
		return err
	})
}

func gatesPendingAnnotation(t *testing.T, f *setFixture) string {
	t.Helper()
	s, err := f.env.Kube.AppsV1().StatefulSets(f.ns).Get(t.Context(), f.name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return s.Annotations[stsutil.AnnotationGatesPending]
}

const gateSecret = "tok-7f3c9a1e5d2b" // the X-Token header value: must appear nowhere

// gateSetup starts what every gate test needs: StatefulSet hist (2 ordinals on pool-a, template
// moved to pool-b), the gate server, and a terraform working directory tracing to a log.
func gateSetup(t *testing.T, ns, timeout string, withCondition bool) (*setFixture, *gateServer, *acctest.TF) {
	env := acctest.Sandbox(t)
	acctest.PreCheck(t)
	ensurePool(t, env, "pool-b", 3)
	f := newSet(t, env, ns, 2, "pool-a", "1Gi")
	f.switchPool(t, "pool-b")
	srv := newGateServer(t, gateSecret)
	tf := acctest.NewTF(t, testAccMigrationConfig_gates(f.ns, srv.URL, timeout, withCondition))
	tf.Env["TF_VAR_token"] = gateSecret
	tf.Env["OLAPGKE_TEST_GATE_TOKEN"] = gateSecret
	tf.Env["TF_LOG"] = "TRACE"
	tf.Env["TF_LOG_PATH"] = filepath.Join(t.TempDir(), "trace.log")
	t.Cleanup(func() {
		if out, err := tf.Run("destroy", "-auto-approve"); err != nil {
			t.Errorf("destroy: %v\n%s", err, out)
		}
	})
	return f, srv, tf
}

// TestAccStatefulSetMigration_GatesHoldTheNextOrdinal: with an HTTP gate (503, a slow answer,
// "5 segments left") and a Pod condition gate, ordinal 0's PVC and Pod are untouched until
// ordinal 1's gates passed, on a watch timeline; the plan shows the gates; completed records
// them; the secret header is in no state, plan, output or trace log.
func TestAccStatefulSetMigration_GatesHoldTheNextOrdinal(t *testing.T) {
	f, srv, tf := gateSetup(t, "mig-gates", "3m", true)

	out, err := tf.Run("plan")
	if err != nil {
		t.Fatalf("plan: %v\n%s", err, out)
	}
	for _, want := range []string{
		fmt.Sprintf(`segments-loaded: GET %s/load/hist-1 answers 200 with $.left = \"0\"`, srv.URL),
		"loaded-condition: Pod hist-0 has condition example.com/loaded=True",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the plan does not show %q:\n%s", want, out)
		}
	}

	// The test's "agent": each new Pod gets its loaded condition a moment after it is Ready
	// (after the HTTP gate opened), and the HTTP gate opens after 4 answers.
	ctx := t.Context()
	var mu sync.Mutex
	opened := map[int32]time.Time{}
	mon := f.touches(t, func(p *corev1.Pod) {
		if _, err := srv.openAfter(ctx, p.Name, 4); err != nil {
			t.Error(err)
			return
		}
		if err := setPodCondition(ctx, f.env, p, "example.com/loaded"); err != nil {
			t.Errorf("setting the condition on %s: %v", p.Name, err)
			return
		}
		var o int32
		_, _ = fmt.Sscanf(p.Name, "hist-%d", &o)
		mu.Lock()
		opened[o] = time.Now() // both gates pass from here on
		mu.Unlock()
	})
	if out, err := tf.Apply(); err != nil {
		t.Fatalf("apply: %v\n%s", err, out)
	}
	f.checkMoved(t, "pool-b", 1, 0)

	mu.Lock()
	gates1, ok1 := opened[1]
	mu.Unlock()
	touched0, ok0 := mon.at(0)
	if !ok1 || !ok0 {
		t.Fatalf("timeline incomplete: ordinal 1's gates opened %v (%v), ordinal 0 first touched %v (%v)", gates1, ok1, touched0, ok0)
	}
	if !touched0.After(gates1) {
		t.Errorf("ordinal 0 was touched at %s, before ordinal 1's gates passed at %s", touched0.Format(time.StampMilli), gates1.Format(time.StampMilli))
	}
	if n := srv.pollsOf("hist-1"); n < 5 {
		t.Errorf("ordinal 1's HTTP gate was polled %d times, want at least 5 (4 not-yet answers, then the pass)", n)
	}
	if a := gatesPendingAnnotation(t, f); a != "" {
		t.Errorf("pending-gates annotation %q left after the gates passed", a)
	}
	show, err := tf.Run("state", "show", res)
	if err != nil {
		t.Fatalf("state show: %v\n%s", err, show)
	}
	if strings.Count(show, `name    = "segments-loaded"`) != 2 || strings.Count(show, `name    = "loaded-condition"`) != 2 {
		t.Errorf("completed does not record both gates for both ordinals:\n%s", show)
	}
	tf.PlanEmpty()
	tf.NoSecrets(gateSecret)
}

// TestAccStatefulSetMigration_GateTimeoutResumesAtGate: a gate that never passes stops the apply
// within its timeout quoting the last answer; the next ordinal is untouched; the re-apply waits
// for the gate again without deleting anything of the gated ordinal, then moves the next one.
func TestAccStatefulSetMigration_GateTimeoutResumesAtGate(t *testing.T) {
	f, srv, tf := gateSetup(t, "mig-gate-timeout", "6s", false)

	out, err := tf.Apply()
	if err == nil {
		t.Fatalf("apply passed, want the gate to stop it:\n%s", out)
	}
	flat := strings.Join(strings.Fields(strings.ReplaceAll(out, "│", " ")), " ")
	for _, want := range []string{"Gate Did Not Pass", "within its timeout", `$.left is "5", want "0"`, "segments-loaded"} {
		if !strings.Contains(flat, want) {
			t.Errorf("the error does not mention %q:\n%s", want, out)
		}
	}
	f.checkMoved(t, "pool-b", 1)
	f.checkUntouched(t, 0)
	if a := gatesPendingAnnotation(t, f); a != "1" {
		t.Fatalf("pending-gates annotation %q, want \"1\"", a)
	}
	gated, gatedPVC := f.get(t, 1)

	// The plan resumes at the gate, then moves ordinal 0.
	if out, err := tf.Run("plan", "-out", "resume.tfplan"); err != nil {
		t.Fatalf("plan: %v\n%s", err, out)
	}
	js, err := tf.Run("show", "-json", "resume.tfplan")
	if err != nil {
		t.Fatalf("show: %v\n%s", err, js)
	}
	if !regexp.MustCompile(`"action":"gate",[^}]*"ordinal":1,`).MatchString(js) || !regexp.MustCompile(`"action":"move",[^}]*"ordinal":0,`).MatchString(js) {
		t.Errorf("the plan does not show ordinal 1's gate and ordinal 0's move:\n%s", js)
	}
	srv.mu.Lock()
	srv.open["hist-1"] = time.Now()
	srv.mu.Unlock()
	go func() { _, _ = srv.openAfter(t.Context(), "hist-0", 3) }()
	if out, err := tf.Apply(); err != nil {
		t.Fatalf("re-apply: %v\n%s", err, out)
	}
	if p, c := f.get(t, 1); p.UID != gated.UID || c.UID != gatedPVC.UID {
		t.Errorf("ordinal 1 was replaced again: Pod %s -> %s, PVC %s -> %s", gated.UID, p.UID, gatedPVC.UID, c.UID)
	}
	f.checkMoved(t, "pool-b", 1, 0)
	if a := gatesPendingAnnotation(t, f); a != "" {
		t.Errorf("pending-gates annotation %q left", a)
	}
	tf.PlanEmpty()
	tf.NoSecrets(gateSecret)
}

// TestAccStatefulSetMigration_GateResumesAfterSIGKILL: terraform and the provider are killed while
// ordinal 1's gate is being polled; the next apply waits for that gate (nothing of ordinal 1 is
// deleted again) before it touches ordinal 0.
func TestAccStatefulSetMigration_GateResumesAfterSIGKILL(t *testing.T) {
	f, srv, tf := gateSetup(t, "mig-gate-kill", "3m", false)

	first, out1 := tf.Cmd(t.Context(), "apply", "-auto-approve")
	must(t, first.Start())
	done := make(chan error, 1)
	go func() { done <- first.Wait() }()
	err := wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, 5*time.Minute, true, func(context.Context) (bool, error) {
		select {
		case err := <-done:
			return false, fmt.Errorf("apply ended before its gate wait: %v", err)
		default:
		}
		return srv.pollsOf("hist-1") >= 3, nil
	})
	if err != nil {
		_ = syscall.Kill(-first.Process.Pid, syscall.SIGKILL)
		t.Fatalf("%v\n%s", err, out1)
	}
	must(t, syscall.Kill(-first.Process.Pid, syscall.SIGKILL))
	t.Logf("killed during ordinal 1's gate wait: %v", <-done)
	f.checkMoved(t, "pool-b", 1)
	f.checkUntouched(t, 0)
	if a := gatesPendingAnnotation(t, f); a != "1" {
		t.Fatalf("pending-gates annotation %q, want \"1\"", a)
	}
	gated, gatedPVC := f.get(t, 1)
	mon := f.touches(t, nil)

	openedAt := make(chan time.Time, 1)
	go func() {
		at, err := srv.openAfter(t.Context(), "hist-1", srv.pollsOf("hist-1")+2)
		if err == nil {
			openedAt <- at
		}
		_, _ = srv.openAfter(t.Context(), "hist-0", 3)
	}()
	if out, err := tf.Apply(); err != nil {
		t.Fatalf("apply after SIGKILL: %v\n%s", err, out)
	}
	if p, c := f.get(t, 1); p.UID != gated.UID || c.UID != gatedPVC.UID {
		t.Errorf("ordinal 1 was replaced again: Pod %s -> %s, PVC %s -> %s", gated.UID, p.UID, gatedPVC.UID, c.UID)
	}
	f.checkMoved(t, "pool-b", 1, 0)
	select {
	case at := <-openedAt:
		if t0, ok := mon.at(0); !ok || !t0.After(at) {
			t.Errorf("ordinal 0 touched at %v (%v), before ordinal 1's gate passed at %v", t0, ok, at)
		}
	default:
		t.Error("ordinal 1's gate was not polled again after the SIGKILL")
	}
	tf.PlanEmpty()
	tf.NoSecrets(gateSecret)
}
