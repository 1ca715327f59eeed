// Package faultproxy is a fault-injecting loopback reverse proxy for reliability tests. It sits
// between the provider and the sandbox's Kubernetes API server (HTTP, TLS re-terminated with a
// test certificate) and injects, at configured rates, the faults a real control plane produces:
// 429 Too Many Requests with Retry-After, 500 and 503, 409 conflicts on writes, dropped watches,
// expired watches (an ERROR event with 410 Gone "too old resource version"), slow responses and
// connection resets. GRPC does the same for the GKE emulator's gRPC API.
//
// Faults are drawn from a seeded RNG (reproducible per seed up to request interleaving) and are
// bounded by MaxFaults, so a run always ends. Both ends must be on the loopback interface.
//
// net/http/httputil.ReverseProxy does the proxying; the Kubernetes error bodies are real
// metav1.Status objects built by apimachinery's errors package, so client-go classifies them
// exactly as it would the API server's.
package faultproxy

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
)

// Kind names a fault.
type Kind string

// The faults the proxy injects.
const (
	TooManyRequests Kind = "429-retry-after"   // 429 with Retry-After (client-go waits and retries)
	InternalError   Kind = "500"               // 500 without Retry-After (returned to the caller)
	Unavailable     Kind = "503-retry-after"   // 503 with Retry-After
	Conflict        Kind = "409-conflict"      // 409 Conflict on PUT and non-apply PATCH (stale resourceVersion)
	WatchDropped    Kind = "watch-dropped"     // watch stream cut after WatchDropAfter
	WatchExpired    Kind = "watch-expired-410" // watch answered with an ERROR event, 410 Gone
	Slow            Kind = "slow"              // response delayed by SlowDelay
	Reset           Kind = "connection-reset"  // TCP connection reset before any response
)

// Kinds lists every fault kind in a stable order.
var Kinds = []Kind{TooManyRequests, InternalError, Unavailable, Conflict, WatchDropped, WatchExpired, Slow, Reset}

// Config sets fault rates (probability per eligible request, 0..1) and bounds.
type Config struct {
	// Seed seeds the RNG that decides which request gets which fault.
	Seed uint64
	// MaxFaults bounds the number of faults injected over the proxy's life (0: none).
	MaxFaults int
	// Rates per fault kind. A request gets at most one fault; kinds are tried in Kinds order.
	Rates map[Kind]float64
	// RetryAfter is the Retry-After of 429 and 503 answers (default 1s; whole seconds).
	RetryAfter time.Duration
	// SlowDelay is the delay of a Slow fault (default 2s).
	SlowDelay time.Duration
	// WatchDropAfter is how long a dropped watch streams before it is cut (default 500ms).
	WatchDropAfter time.Duration
	// Eligible, if set, limits faults to the requests it accepts (others pass untouched).
	Eligible func(*http.Request) bool
}

// Event is one injected fault.
type Event struct {
	Kind   Kind
	Method string
	Path   string
	Watch  bool
}

// Proxy is a running HTTPS fault proxy. Point a client at URL with CAPEM as its CA.
type Proxy struct {
	// URL is https://127.0.0.1:PORT.
	URL string
	// CAPEM is the PEM certificate the proxy serves (self-signed; use it as the CA).
	CAPEM []byte

	cfg      Config
	srv      *httptest.Server
	rp       *httputil.ReverseProxy
	upstream *url.URL

	mu       sync.Mutex
	rng      *rand.Rand
	enabled  bool
	events   []Event
	requests int
}

// New starts a proxy on 127.0.0.1 in front of the API server that upstream describes. The proxy
// forwards each request with the caller's own Authorization header (so RBAC applies to the
// caller, not to upstream's credentials); upstream supplies the address and CA only.
func New(upstream *rest.Config, cfg Config) (*Proxy, error) {
	u, err := url.Parse(upstream.Host)
	if err != nil {
		return nil, fmt.Errorf("API server address %q: %w", upstream.Host, err)
	}
	if u.Scheme == "" {
		u, err = url.Parse("https://" + upstream.Host)
		if err != nil {
			return nil, err
		}
	}
	if err := requireLoopback(u.Hostname()); err != nil {
		return nil, err
	}
	// Only TLS settings from upstream: no bearer token, no auth wrapper, so the caller's
	// credentials are the only ones that reach the API server.
	tlsOnly := &rest.Config{Host: upstream.Host, TLSClientConfig: rest.TLSClientConfig{
		CAData: upstream.CAData, CAFile: upstream.CAFile, Insecure: upstream.Insecure, ServerName: upstream.ServerName,
	}}
	rt, err := rest.TransportFor(tlsOnly)
	if err != nil {
		return nil, fmt.Errorf("transport to %s: %w", upstream.Host, err)
	}
	p := &Proxy{cfg: withDefaults(cfg), upstream: u, rng: newRNG(cfg.Seed), enabled: true}
	p.rp = &httputil.ReverseProxy{
		Rewrite:       func(r *httputil.ProxyRequest) { r.SetURL(u); r.Out.Host = u.Host },
		Transport:     rt,
		FlushInterval: -1, // watches stream
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
				return // a dropped watch or a caller that went away
			}
			w.WriteHeader(http.StatusBadGateway)
		},
	}
	p.srv = httptest.NewUnstartedServer(http.HandlerFunc(p.serve))
	p.srv.StartTLS() // listens on 127.0.0.1; HTTP/1.1 only, so Hijack works for resets
	p.URL = p.srv.URL
	p.CAPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: p.srv.Certificate().Raw})
	return p, nil
}

func withDefaults(c Config) Config {
	if c.RetryAfter <= 0 {
		c.RetryAfter = time.Second
	}
	if c.SlowDelay <= 0 {
		c.SlowDelay = 2 * time.Second
	}
	if c.WatchDropAfter <= 0 {
		c.WatchDropAfter = 500 * time.Millisecond
	}
	return c
}

// requireLoopback refuses hosts that are not loopback addresses (or "localhost").
func requireLoopback(host string) error {
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	return fmt.Errorf("faultproxy only proxies to loopback addresses, not %q", host)
}

// SetEnabled turns fault injection on or off (requests are always forwarded).
func (p *Proxy) SetEnabled(on bool) {
	p.mu.Lock()
	p.enabled = on
	p.mu.Unlock()
}

// Events returns the faults injected so far.
func (p *Proxy) Events() []Event {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]Event(nil), p.events...)
}

// Requests is the number of requests the proxy has seen.
func (p *Proxy) Requests() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.requests
}

// Summary counts the injected faults per kind, e.g. "409-conflict=3 slow=1".
func (p *Proxy) Summary() string { return Summarize(p.Events()) }

// Summarize counts events per kind in a stable order.
func Summarize(events []Event) string {
	counts := map[Kind]int{}
	for _, e := range events {
		counts[e.Kind]++
	}
	var parts []string
	for _, k := range Kinds {
		if counts[k] > 0 {
			parts = append(parts, fmt.Sprintf("%s=%d", k, counts[k]))
		}
	}
	sort.Strings(parts)
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, " ")
}

// Close stops the proxy and cuts open connections.
func (p *Proxy) Close() {
	p.srv.CloseClientConnections()
	p.srv.Close()
}

func isWatch(r *http.Request) bool {
	w := r.URL.Query().Get("watch")
	return r.Method == http.MethodGet && (w == "true" || w == "1")
}

// conflictable: requests the API server can answer with a transient 409 "the object has been
// modified": updates (resourceVersion) and patches other than server-side apply (whose 409s are
// field-manager conflicts, a configuration matter). Not DELETE: with a UID precondition (what
// olapgke sends) the API server answers 409 only when the object was replaced, and the engine
// relies on exactly that; an injected 409 on an unchanged object would test a server that does
// not exist.
func conflictable(r *http.Request) bool {
	switch r.Method {
	case http.MethodPut:
		return true
	case http.MethodPatch:
		return !strings.HasPrefix(r.Header.Get("Content-Type"), "application/apply-patch")
	}
	return false
}

// applicable reports whether kind k can be injected into r.
func applicable(k Kind, r *http.Request) bool {
	switch k {
	case Conflict:
		return conflictable(r)
	case WatchDropped, WatchExpired:
		return isWatch(r)
	case Slow, Reset, TooManyRequests, InternalError, Unavailable:
		return true
	}
	return false
}

// pick decides the fault for r (or "" for none) and records it.
func (p *Proxy) pick(r *http.Request) Kind {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.requests++
	if !p.enabled || len(p.events) >= p.cfg.MaxFaults {
		return ""
	}
	if p.cfg.Eligible != nil && !p.cfg.Eligible(r) {
		return ""
	}
	for _, k := range Kinds {
		rate := p.cfg.Rates[k]
		if rate <= 0 || !applicable(k, r) {
			continue
		}
		if p.rng.Float64() < rate {
			p.events = append(p.events, Event{Kind: k, Method: r.Method, Path: r.URL.Path, Watch: isWatch(r)})
			return k
		}
	}
	return ""
}

func (p *Proxy) serve(w http.ResponseWriter, r *http.Request) {
	switch p.pick(r) {
	case "":
	case TooManyRequests:
		writeStatus(w, apierrors.NewTooManyRequests("injected by faultproxy", p.retryAfter()), p.retryAfter())
		return
	case InternalError:
		writeStatus(w, apierrors.NewInternalError(errors.New("injected by faultproxy")), 0)
		return
	case Unavailable:
		writeStatus(w, apierrors.NewServiceUnavailable("injected by faultproxy"), p.retryAfter())
		return
	case Conflict:
		gr, name := resourceOf(r.URL.Path)
		writeStatus(w, apierrors.NewConflict(gr, name, errors.New("the object has been modified; please apply your changes to the latest version and try again (injected by faultproxy)")), 0)
		return
	case WatchExpired:
		writeExpiredWatch(w)
		return
	case Reset:
		reset(w)
		return
	case Slow:
		select {
		case <-time.After(p.cfg.SlowDelay):
		case <-r.Context().Done():
			return
		}
	case WatchDropped:
		ctx, cancel := context.WithTimeout(r.Context(), p.cfg.WatchDropAfter)
		defer cancel()
		r = r.WithContext(ctx)
	}
	p.rp.ServeHTTP(w, r)
}

func (p *Proxy) retryAfter() int { return int((p.cfg.RetryAfter + time.Second - 1) / time.Second) }

func writeStatus(w http.ResponseWriter, err *apierrors.StatusError, retryAfter int) {
	st := err.Status()
	st.Kind, st.APIVersion = "Status", "v1"
	if retryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(retryAfter))
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(int(st.Code))
	_ = json.NewEncoder(w).Encode(st)
}

// writeExpiredWatch answers a watch the way the API server does when the requested
// resourceVersion was compacted: 200, then one ERROR event carrying a 410 Expired Status.
func writeExpiredWatch(w http.ResponseWriter) {
	st := apierrors.NewResourceExpired("too old resource version: injected by faultproxy").Status()
	st.Kind, st.APIVersion = "Status", "v1"
	raw, _ := json.Marshal(st)
	ev := metav1.WatchEvent{Type: "ERROR"}
	ev.Object.Raw = raw
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_ = json.NewEncoder(w).Encode(ev)
}

// reset closes the client connection with SO_LINGER 0, which sends a TCP RST.
func reset(w http.ResponseWriter) {
	hj, ok := w.(http.Hijacker)
	if !ok {
		panic(http.ErrAbortHandler)
	}
	conn, _, err := hj.Hijack()
	if err != nil {
		return
	}
	if tc, ok := underlyingTCP(conn); ok {
		_ = tc.SetLinger(0)
	}
	_ = conn.Close()
}

func underlyingTCP(c net.Conn) (*net.TCPConn, bool) {
	type netConner interface{ NetConn() net.Conn }
	for range 3 {
		if tc, ok := c.(*net.TCPConn); ok {
			return tc, true
		}
		nc, ok := c.(netConner)
		if !ok {
			return nil, false
		}
		c = nc.NetConn()
	}
	return nil, false
}

// resourceOf extracts group/resource and name from an API path for error messages:
// /api/v1/namespaces/ns/pods/web-0 -> {"" pods} web-0.
func resourceOf(p string) (schema.GroupResource, string) {
	parts := strings.Split(strings.Trim(p, "/"), "/")
	var group string
	switch {
	case len(parts) >= 2 && parts[0] == "api":
		parts = parts[2:]
	case len(parts) >= 3 && parts[0] == "apis":
		group, parts = parts[1], parts[3:]
	default:
		return schema.GroupResource{}, ""
	}
	if len(parts) >= 2 && parts[0] == "namespaces" && len(parts) > 2 {
		parts = parts[2:]
	}
	gr := schema.GroupResource{Group: group}
	if len(parts) > 0 {
		gr.Resource = parts[0]
	}
	name := ""
	if len(parts) > 1 {
		name = parts[1]
	}
	return gr, name
}

func newRNG(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)) }
