package faultproxy

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// upstream is a minimal API-server stand-in for the proxy's own tests: it answers Pod GET,
// PATCH and a watch that streams until the client goes away, and records the Authorization
// header it received.
type upstream struct {
	srv  *httptest.Server
	mu   sync.Mutex
	auth []string
}

func newUpstream(t *testing.T) *upstream {
	u := &upstream{}
	pod := func() []byte {
		b, _ := json.Marshal(&corev1.Pod{TypeMeta: metav1.TypeMeta{Kind: "Pod", APIVersion: "v1"},
			ObjectMeta: metav1.ObjectMeta{Name: "web-0", Namespace: "ns", ResourceVersion: "7"}})
		return b
	}
	u.srv = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u.mu.Lock()
		u.auth = append(u.auth, r.Header.Get("Authorization"))
		u.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Query().Get("watch") == "true" {
			w.WriteHeader(http.StatusOK)
			w.(http.Flusher).Flush()
			<-r.Context().Done()
			return
		}
		_, _ = w.Write(pod())
	}))
	t.Cleanup(u.srv.Close)
	return u
}

func (u *upstream) config() *rest.Config {
	return &rest.Config{Host: u.srv.URL, BearerToken: "upstream-admin-token",
		TLSClientConfig: rest.TLSClientConfig{CAData: certPEM(u.srv)}}
}

func certPEM(s *httptest.Server) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: s.Certificate().Raw})
}

func certPool(t *testing.T, caPEM []byte) *tls.Config {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		t.Fatal("proxy CA is not PEM")
	}
	return &tls.Config{RootCAs: pool}
}

func start(t *testing.T, u *upstream, cfg Config) (*Proxy, kubernetes.Interface) {
	t.Helper()
	p, err := New(u.config(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	c, err := kubernetes.NewForConfig(&rest.Config{Host: p.URL, BearerToken: "caller-token",
		TLSClientConfig: rest.TLSClientConfig{CAData: p.CAPEM}})
	if err != nil {
		t.Fatal(err)
	}
	return p, c
}

func only(k Kind) map[Kind]float64 { return map[Kind]float64{k: 1} }

func TestTooManyRequestsIsRetriedAndBounded(t *testing.T) {
	t.Parallel()
	u := newUpstream(t)
	p, c := start(t, u, Config{Seed: 1, MaxFaults: 2, Rates: only(TooManyRequests), RetryAfter: time.Second})
	begin := time.Now()
	if _, err := c.CoreV1().Pods("ns").Get(t.Context(), "web-0", metav1.GetOptions{}); err != nil {
		t.Fatalf("GET through two 429s: %v", err)
	}
	if got := len(p.Events()); got != 2 {
		t.Errorf("faults injected = %d, want 2 (MaxFaults)", got)
	}
	if d := time.Since(begin); d < 2*time.Second {
		t.Errorf("client returned after %s: Retry-After: 1 twice was not honoured", d)
	}
	if p.Summary() != "429-retry-after=2" {
		t.Errorf("Summary = %q", p.Summary())
	}
}

func TestErrorsReachTheCallerAsAPIErrors(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		kind  Kind
		call  func(context.Context, kubernetes.Interface) error
		check func(error) bool
	}{
		"500": {InternalError, func(ctx context.Context, c kubernetes.Interface) error {
			_, err := c.CoreV1().Pods("ns").Get(ctx, "web-0", metav1.GetOptions{})
			return err
		}, apierrors.IsInternalError},
		"409 on patch": {Conflict, func(ctx context.Context, c kubernetes.Interface) error {
			_, err := c.CoreV1().Pods("ns").Patch(ctx, "web-0", types.MergePatchType, []byte(`{}`), metav1.PatchOptions{})
			return err
		}, apierrors.IsConflict},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			u := newUpstream(t)
			p, c := start(t, u, Config{Seed: 2, MaxFaults: 1, Rates: only(tc.kind)})
			err := tc.call(t.Context(), c)
			if !tc.check(err) {
				t.Fatalf("error %v (%T) is not a %s", err, err, tc.kind)
			}
			if err := tc.call(t.Context(), c); err != nil {
				t.Fatalf("second call after MaxFaults: %v", err)
			}
			if len(p.Events()) != 1 {
				t.Errorf("events %v", p.Events())
			}
		})
	}
}

func TestConflictOnlyOnWrites(t *testing.T) {
	t.Parallel()
	u := newUpstream(t)
	p, c := start(t, u, Config{Seed: 3, MaxFaults: 10, Rates: only(Conflict)})
	if _, err := c.CoreV1().Pods("ns").Get(t.Context(), "web-0", metav1.GetOptions{}); err != nil {
		t.Fatalf("GET got a fault meant for writes: %v", err)
	}
	if _, err := c.CoreV1().Pods("ns").Apply(t.Context(), corev1ac.Pod("web-0", "ns"), metav1.ApplyOptions{FieldManager: "t"}); err != nil {
		t.Fatalf("server-side apply got a transient conflict: %v", err)
	}
	if len(p.Events()) != 0 {
		t.Errorf("events on a read or an apply patch: %v", p.Events())
	}
}

func TestWatchExpiredIs410(t *testing.T) {
	t.Parallel()
	u := newUpstream(t)
	_, c := start(t, u, Config{Seed: 4, MaxFaults: 1, Rates: only(WatchExpired)})
	w, err := c.CoreV1().Pods("ns").Watch(t.Context(), metav1.ListOptions{ResourceVersion: "1"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	select {
	case ev := <-w.ResultChan():
		if ev.Type != watch.Error {
			t.Fatalf("event %s, want ERROR", ev.Type)
		}
		if err := apierrors.FromObject(ev.Object); !apierrors.IsResourceExpired(err) && !apierrors.IsGone(err) {
			t.Fatalf("ERROR event %v is not 410 Expired", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no event from an expired watch")
	}
}

func TestWatchDroppedEnds(t *testing.T) {
	t.Parallel()
	u := newUpstream(t)
	_, c := start(t, u, Config{Seed: 5, MaxFaults: 1, Rates: only(WatchDropped), WatchDropAfter: 200 * time.Millisecond})
	w, err := c.CoreV1().Pods("ns").Watch(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	select {
	case _, open := <-w.ResultChan():
		if open {
			t.Fatal("dropped watch delivered an event instead of closing")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("dropped watch still open after 10s")
	}
}

func TestResetAndSlow(t *testing.T) {
	t.Parallel()
	u := newUpstream(t)
	p, err := New(u.config(), Config{Seed: 6, MaxFaults: 1, Rates: only(Reset)})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	pool := certPool(t, p.CAPEM)
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: pool, DisableKeepAlives: true}}
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, p.URL+"/api/v1/namespaces/ns/pods", strings.NewReader("{}"))
	if _, err := hc.Do(req); err == nil {
		t.Fatal("request through a reset connection succeeded")
	} else if !strings.Contains(err.Error(), "reset") && !strings.Contains(err.Error(), "EOF") {
		t.Errorf("error %v is neither a reset nor EOF", err)
	}

	s, err := New(u.config(), Config{Seed: 7, MaxFaults: 1, Rates: only(Slow), SlowDelay: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	begin := time.Now()
	resp, err := hc.Get(s.URL + "/api/v1/namespaces/ns/pods/web-0")
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if d := time.Since(begin); d < 300*time.Millisecond {
		t.Errorf("slow fault answered after %s", d)
	}
}

func TestCallerCredentialsOnly(t *testing.T) {
	t.Parallel()
	u := newUpstream(t)
	_, c := start(t, u, Config{})
	if _, err := c.CoreV1().Pods("ns").Get(t.Context(), "web-0", metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	if len(u.auth) != 1 || u.auth[0] != "Bearer caller-token" {
		t.Fatalf("upstream saw Authorization %q, want only the caller's token", u.auth)
	}
}

func TestLoopbackOnly(t *testing.T) {
	t.Parallel()
	if _, err := New(&rest.Config{Host: "https://10.1.2.3:6443"}, Config{}); err == nil || !strings.Contains(err.Error(), "loopback") {
		t.Errorf("proxy to 10.1.2.3: err = %v", err)
	}
	if _, err := NewGRPC("192.168.0.1:443", GRPCConfig{}); err == nil || !strings.Contains(err.Error(), "loopback") {
		t.Errorf("gRPC proxy to 192.168.0.1: err = %v", err)
	}
}

func TestSeedIsReproducible(t *testing.T) {
	t.Parallel()
	run := func() []Kind {
		p := &Proxy{cfg: withDefaults(Config{MaxFaults: 100, Rates: map[Kind]float64{TooManyRequests: 0.2, Slow: 0.2}})}
		p.rng = newRNG(42)
		p.enabled = true
		var got []Kind
		for range 50 {
			r := httptest.NewRequest(http.MethodGet, "/api/v1/pods", nil)
			got = append(got, p.pick(r))
		}
		return got
	}
	a, b := run(), run()
	n := 0
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("request %d: %q vs %q with the same seed", i, a[i], b[i])
		}
		if a[i] != "" {
			n++
		}
	}
	if n == 0 || n == 50 {
		t.Errorf("%d of 50 requests faulted at rates 0.2+0.2", n)
	}
}

func TestGRPCProxyForwardsAndInjects(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	up := grpc.NewServer()
	healthpb.RegisterHealthServer(up, health.NewServer())
	go func() { _ = up.Serve(ln) }()
	defer up.Stop()

	g, err := NewGRPC(ln.Addr().String(), GRPCConfig{Seed: 1, MaxFaults: 1, Rates: map[codes.Code]float64{codes.Unavailable: 1}})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	conn, err := grpc.NewClient(g.Addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn.Close() }()
	hc := healthpb.NewHealthClient(conn)
	_, err = hc.Check(t.Context(), &healthpb.HealthCheckRequest{})
	if status.Code(err) != codes.Unavailable {
		t.Fatalf("first call: %v, want Unavailable", err)
	}
	resp, err := hc.Check(t.Context(), &healthpb.HealthCheckRequest{})
	if err != nil || resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("second call: %v %v, want SERVING through the proxy", resp, err)
	}
	// Unknown service errors come back from upstream unchanged.
	_, err = hc.Check(t.Context(), &healthpb.HealthCheckRequest{Service: "nope"})
	if status.Code(err) != codes.NotFound {
		t.Errorf("unknown service: %v, want NotFound from upstream", err)
	}
	if g.Summary() != "Check:Unavailable=1" {
		t.Errorf("Summary = %q", g.Summary())
	}
}
