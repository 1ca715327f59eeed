// Package bench measures olapgke on the local sandbox for `make bench`: plan cost at scale
// (provider time from its own timing log, API requests counted at a loopback proxy), migration
// time against the cluster's own latency and a kubectl loop, sandbox start-up and memory, and the
// planner's Go benchmark. The driver is cmd/olapgke-bench; results go to BENCHMARKS.md.
package bench

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"sort"
	"strings"
	"sync"

	"k8s.io/client-go/rest"
)

// Proxy is a loopback reverse proxy in front of the API server that counts the requests passing
// through it. The provider is pointed at it with `kubernetes { host = Proxy.URL }`; the proxy
// speaks TLS to the API server with the sandbox's CA and forwards the caller's bearer token.
// client-go's request metrics hook (k8s.io/client-go/tools/metrics) would only see requests made
// in this process, not the provider's, which runs as a Terraform plugin subprocess.
type Proxy struct {
	URL string

	srv *http.Server
	ln  net.Listener

	mu     sync.Mutex
	counts map[string]int
}

// NewProxy starts a proxy on 127.0.0.1 (random port) to the API server cfg describes.
func NewProxy(cfg *rest.Config) (*Proxy, error) {
	upstream, err := url.Parse(cfg.Host)
	if err != nil {
		return nil, fmt.Errorf("API server address %q: %w", cfg.Host, err)
	}
	if upstream.Scheme == "" {
		upstream.Scheme = "https"
	}
	rt, err := rest.TransportFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("transport to %s: %w", cfg.Host, err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Proxy{URL: "http://" + ln.Addr().String(), ln: ln, counts: map[string]int{}}
	rp := &httputil.ReverseProxy{
		Rewrite:       func(r *httputil.ProxyRequest) { r.SetURL(upstream); r.Out.Host = upstream.Host },
		Transport:     rt,
		FlushInterval: -1, // watches stream
	}
	p.srv = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.count(r)
		rp.ServeHTTP(w, r)
	})}
	go func() { _ = p.srv.Serve(ln) }()
	return p, nil
}

// RequestKey names a request by verb and resource path, e.g. "LIST /api/v1/nodes" or
// "GET /api/v1/namespaces/ns/pods/web-0"; a per-object GET therefore shows up as one key per object.
func RequestKey(r *http.Request) string {
	verb := r.Method
	q := r.URL.Query()
	switch {
	case r.Method == http.MethodGet && (q.Get("watch") == "true" || q.Get("watch") == "1"):
		verb = "WATCH"
	case r.Method == http.MethodGet && isCollection(r.URL.Path):
		verb = "LIST"
	case r.Method == http.MethodPatch && q.Get("dryRun") != "":
		verb = "PATCH(dry-run)"
	}
	return verb + " " + r.URL.Path
}

// isCollection reports whether an API path names a collection: /api/v1/pods,
// /api/v1/namespaces/ns/pods, /apis/apps/v1/namespaces/ns/statefulsets.
func isCollection(p string) bool {
	parts := strings.Split(strings.Trim(p, "/"), "/")
	switch {
	case len(parts) >= 2 && parts[0] == "api":
		parts = parts[2:]
	case len(parts) >= 3 && parts[0] == "apis":
		parts = parts[3:]
	default:
		return false
	}
	if len(parts) >= 2 && parts[0] == "namespaces" {
		if len(parts) == 2 {
			return false // GET of one Namespace
		}
		parts = parts[2:]
	}
	return len(parts) == 1
}

func (p *Proxy) count(r *http.Request) {
	k := RequestKey(r)
	p.mu.Lock()
	p.counts[k]++
	p.mu.Unlock()
}

// Take returns the requests counted since the last Take (by key) and starts a new count.
func (p *Proxy) Take() Requests {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := Requests(p.counts)
	p.counts = map[string]int{}
	return out
}

// Close stops the proxy.
func (p *Proxy) Close() error { return p.srv.Close() }

// Requests counts requests by RequestKey.
type Requests map[string]int

// Total is the number of requests.
func (r Requests) Total() int {
	n := 0
	for _, c := range r {
		n += c
	}
	return n
}

// ByVerb sums the counts per verb ("LIST 5, GET 2").
func (r Requests) ByVerb() string {
	verbs := map[string]int{}
	for k, c := range r {
		verbs[strings.SplitN(k, " ", 2)[0]] += c
	}
	var keys []string
	for k := range verbs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s %d", k, verbs[k]))
	}
	return strings.Join(parts, ", ")
}

// Keys lists the request keys with their counts, sorted.
func (r Requests) Keys() []string {
	var out []string
	for k, c := range r {
		out = append(out, fmt.Sprintf("%d x %s", c, k))
	}
	sort.Strings(out)
	return out
}
