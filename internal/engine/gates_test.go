package engine

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/clock"

	"github.com/olapgke/terraform-provider-olapgke/internal/planner/gates"
	"github.com/olapgke/terraform-provider-olapgke/internal/stsutil"
)

// gateWorld is a fake cluster with StatefulSet olap/hist and its Pod hist-1 on node-b, and a
// migrator over it whose log is kept.
type gateWorld struct {
	kube *fake.Clientset
	m    *migrator
	mu   sync.Mutex
	logs []string
}

func newGateWorld(t *testing.T, gates ...gates.Gate) *gateWorld {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "olap", Name: "hist-1", UID: "pod-uid"},
		Spec: corev1.PodSpec{NodeName: "node-b"}, Status: corev1.PodStatus{PodIP: "10.1.0.7"}}
	g := &gateWorld{kube: fake.NewClientset(&appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: "olap", Name: "hist"}}, pod)}
	w, err := newMigrationWatcher(ctx, g.kube, "olap", "hist", labels.Everything())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.stop)
	g.m = &migrator{kube: g.kube, w: w, pending: map[int32]bool{}, total: 1,
		run: MigrationRun{Namespace: "olap", Name: "hist", Gates: gates, Clock: clock.RealClock{}, Log: func(s string) {
			g.mu.Lock()
			defer g.mu.Unlock()
			g.logs = append(g.logs, s)
		}}}
	return g
}

func (g *gateWorld) log() string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return strings.Join(g.logs, "\n")
}

// TestAwaitGatesHTTP: a 5xx, a slow answer and a "not yet" body are all "not yet"; the gate passes
// on the answer it waits for, with the placeholders filled and the secret header sent but never
// logged.
func TestAwaitGatesHTTP(t *testing.T) {
	t.Parallel()
	var calls atomic.Int32
	var sawPath, sawHeader atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sawPath.Store(r.URL.Path)
		sawHeader.Store(r.Header.Get("X-Token"))
		switch calls.Add(1) {
		case 1:
			http.Error(w, "coordinator starting", http.StatusServiceUnavailable)
		case 2:
			time.Sleep(1500 * time.Millisecond) // longer than the request timeout (1 s)
			_, _ = w.Write([]byte(`{"left": 0}`))
		case 3:
			_, _ = w.Write([]byte(`{"left": 12}`))
		default:
			_, _ = w.Write([]byte(`{"left": 0}`))
		}
	}))
	defer srv.Close()
	g := newGateWorld(t, gates.Gate{Name: "loaded", Timeout: 30 * time.Second, Interval: 10 * time.Millisecond,
		HTTP: &gates.HTTPGate{URL: srv.URL + "/load/{pod}/{node}", Method: "GET", ExpectStatus: 200,
			Headers: map[string]string{"X-Token": "s3cret-{ordinal}"}, ExpectJSONPath: "$.left", ExpectValue: "0"}})
	res, err := g.m.awaitGates(t.Context(), 1, 1)
	if err != nil {
		t.Fatalf("awaitGates: %v\nlog:\n%s", err, g.log())
	}
	if len(res) != 1 || res[0].Name != "loaded" || res[0].Polls != 4 || res[0].Duration < time.Second {
		t.Fatalf("results %+v, want one gate passed on the 4th poll after the slow answer", res)
	}
	if p, h := sawPath.Load(), sawHeader.Load(); p != "/load/hist-1/node-b" || h != "s3cret-1" {
		t.Fatalf("server saw path %v and header %v", p, h)
	}
	log := g.log()
	for _, want := range []string{"HTTP 503: coordinator starting", "no answer within 1s", `$.left is "12", want "0"`, "gate loaded passed"} {
		if !strings.Contains(log, want) {
			t.Errorf("log does not mention %q:\n%s", want, log)
		}
	}
	if strings.Contains(log, "s3cret") {
		t.Fatalf("log shows the header value:\n%s", log)
	}
}

// TestAwaitGatesTimeout: a gate that never passes fails within its timeout, quoting the last answer,
// and stops the other gates.
func TestAwaitGatesTimeout(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "still loading 3 segments", http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	g := newGateWorld(t,
		gates.Gate{Name: "never", Timeout: 300 * time.Millisecond, Interval: 20 * time.Millisecond,
			HTTP: &gates.HTTPGate{URL: srv.URL, Method: "GET", ExpectStatus: 200}},
		gates.Gate{Name: "cond", Timeout: time.Hour, Interval: 20 * time.Millisecond,
			PodCondition: &gates.PodConditionGate{Type: "example.com/loaded", Status: corev1.ConditionTrue}})
	start := time.Now()
	_, err := g.m.awaitGates(t.Context(), 1, 1)
	var ge *GateError
	if !errors.As(err, &ge) || !ge.Timeout || ge.Ordinal != 1 || !strings.Contains(ge.Answer, "still loading 3 segments") ||
		!strings.HasPrefix(ge.Gate, "never:") || ge.Polls < 2 {
		t.Fatalf("got %v (%+v), want the timed-out gate quoting the last answer", err, ge)
	}
	if el := time.Since(start); el > 30*time.Second {
		t.Fatalf("took %s: the failing gate did not stop the hour-long one", el)
	}
}

// TestAwaitGatesPodCondition: the gate passes once the Pod's condition says so (watched).
func TestAwaitGatesPodCondition(t *testing.T) {
	t.Parallel()
	g := newGateWorld(t, gates.Gate{Name: "cond", Timeout: 30 * time.Second, Interval: 20 * time.Millisecond,
		PodCondition: &gates.PodConditionGate{Type: "example.com/loaded", Status: corev1.ConditionTrue}})
	done := make(chan error, 1)
	go func() {
		_, err := g.m.awaitGates(t.Context(), 1, 1)
		done <- err
	}()
	select {
	case err := <-done:
		t.Fatalf("passed before the condition was set: %v", err)
	case <-time.After(200 * time.Millisecond):
	}
	pod, err := g.kube.CoreV1().Pods("olap").Get(t.Context(), "hist-1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pod.Status.Conditions = append(pod.Status.Conditions, corev1.PodCondition{Type: "example.com/loaded", Status: corev1.ConditionTrue})
	if _, err := g.kube.CoreV1().Pods("olap").UpdateStatus(t.Context(), pod, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("awaitGates: %v\n%s", err, g.log())
	}
}

// TestMarkGatesPending: the annotation lists what is pending, and disappears when nothing is.
func TestMarkGatesPending(t *testing.T) {
	t.Parallel()
	g := newGateWorld(t, gates.Gate{Name: "g"})
	annotation := func() (string, bool) {
		set, err := g.kube.AppsV1().StatefulSets("olap").Get(t.Context(), "hist", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		v, ok := set.Annotations[stsutil.AnnotationGatesPending]
		return v, ok
	}
	steps := []struct {
		ordinals []int32
		add      bool
		want     string
		present  bool
	}{
		{[]int32{2, 1}, true, "1,2", true},
		{[]int32{1}, false, "2", true},
		{[]int32{0}, true, "0,2", true},
		{[]int32{0, 2}, false, "", false},
	}
	for i, st := range steps {
		if err := g.m.markGatesPending(t.Context(), st.ordinals, st.add); err != nil {
			t.Fatal(err)
		}
		if v, ok := annotation(); v != st.want || ok != st.present {
			t.Fatalf("step %d: annotation %q (present %v), want %q (present %v)", i, v, ok, st.want, st.present)
		}
	}
	// Without gates nothing is written.
	g.m.run.Gates = nil
	if err := g.m.markGatesPending(t.Context(), []int32{3}, true); err != nil {
		t.Fatal(err)
	}
	if _, ok := annotation(); ok {
		t.Fatal("a migration without gates wrote the annotation")
	}
}
