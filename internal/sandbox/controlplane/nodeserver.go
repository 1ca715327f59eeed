package controlplane

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/klog/v2"
)

// The nodes' kubelet endpoint (pods/log, and whatever else the API server asks a kubelet).
//
// Nodes have made-up InternalIPs (the GKE emulator's 10.128.0.0/16, KWOK's own) and nothing
// listens there. The API server reaches them as GKE's reaches its nodes, through its egress
// selector: kube-apiserver --egress-selector-config-file with egress "cluster" over an HTTP
// CONNECT proxy (GKE runs Konnectivity: the API server tunnels to the konnectivity-server,
// whose agents on the nodes dial the kubelet). The API server dials every kubelet, Pod and
// Service of the cluster through it (k8s.io/kubernetes v1.37.2 pkg/kubelet/client/
// kubelet_client.go makeTransport, cmd/kube-apiserver/app/server.go the proxy transport;
// k8s.io/apiserver v0.37.2 pkg/server/egressselector/egress_selector.go
// tcpHTTPConnectConnector: TLS with a client certificate, then "CONNECT host:port").
//
// The proxy (serveEgressProxy) sends every CONNECT to a kubelet port (10250, the port every
// sandbox node reports in status.daemonEndpoints) to one in-process TLS server, which serves
// NodeHandler; anything else it dials as is, as an agent on the node network would. Nothing
// runs per node: a node's serving certificate is issued on its first connection.
//
// TLS as on a cluster whose kubelets have serving certificates from the cluster CA (GKE's do:
// kubelet serving certificate rotation): the API server verifies the kubelet's certificate
// (--kubelet-certificate-authority; without it the kubelet client skips verification,
// kubelet_client.go transportConfig "if !cfg.HasCA() { Insecure = true }") and presents
// kubeadm's apiserver-kubelet-client certificate (--kubelet-client-certificate), which the
// node server requires and verifies against the CA as a kubelet does with --client-ca-file.
// Divergence: a kubelet then asks the API server to authorize the request
// (SubjectAccessReview on nodes/log, webhook authorization mode); the node server does not.

// KubeletPort is the kubelet's port (status.daemonEndpoints.kubeletEndpoint.port).
const KubeletPort = "10250"

// egressSelectorConfig is the API server's --egress-selector-config-file: egress "cluster"
// over HTTPConnect on TCP with TLS (k8s.io/apiserver pkg/apis/apiserver/v1beta1
// EgressSelectorConfiguration; validation: pkg/server/egressselector/config.go
// validateTCPConnection requires tlsConfig with a client certificate for https).
const egressSelectorConfig = `apiVersion: apiserver.k8s.io/v1beta1
kind: EgressSelectorConfiguration
egressSelections:
- name: cluster
  connection:
    proxyProtocol: HTTPConnect
    transport:
      tcp:
        url: https://%s
        tlsConfig:
          caBundle: %s
          clientCert: %s
          clientKey: %s
`

// nodeServer is the egress proxy and the one kubelet endpoint behind it.
type nodeServer struct {
	pki     *pki
	proxy   net.Listener // TLS
	handler atomic.Pointer[http.Handler]
	conns   chan net.Conn // kubelet connections (TLS, not yet handshaken) for srv
	srv     *http.Server
	closed  chan struct{}
	once    sync.Once
}

// newNodeServer listens for the egress proxy on loopback and writes the API server's egress
// selector configuration into dir: its path.
func newNodeServer(p *pki, dir string) (*nodeServer, string, error) {
	pool := x509.NewCertPool()
	pool.AddCert(p.caCert)
	l, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{
		Certificates: []tls.Certificate{p.EgressProxyCert},
		ClientAuth:   tls.RequireAndVerifyClientCert,
		ClientCAs:    pool,
		MinVersion:   tls.VersionTLS12,
	})
	if err != nil {
		return nil, "", fmt.Errorf("listen for the egress proxy: %w", err)
	}
	path := filepath.Join(dir, "egress-selector.yaml")
	cfg := fmt.Sprintf(egressSelectorConfig, l.Addr().String(), p.CAFile, p.KubeletClientCert, p.KubeletClientKey)
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		l.Close()
		return nil, "", err
	}
	s := &nodeServer{pki: p, proxy: l, conns: make(chan net.Conn), closed: make(chan struct{})}
	s.srv = &http.Server{
		Handler:           http.HandlerFunc(s.serveHTTP),
		ReadHeaderTimeout: 32 * time.Second,
		IdleTimeout:       90 * time.Second,
		// Failed handshakes and the like into the sandbox's log, not stderr.
		ErrorLog: klog.NewStandardLogger("WARNING"),
	}
	return s, path, nil
}

// setHandler makes h serve the kubelet endpoint (nil: 503 until set).
func (s *nodeServer) setHandler(h http.Handler) { s.handler.Store(&h) }

func (s *nodeServer) serveHTTP(w http.ResponseWriter, r *http.Request) {
	h := s.handler.Load()
	if h == nil || *h == nil {
		http.Error(w, "the sandbox's kubelet endpoint is not up yet", http.StatusServiceUnavailable)
		return
	}
	(*h).ServeHTTP(w, r)
}

// run serves the proxy and the kubelet endpoint until ctx ends.
func (s *nodeServer) run(ctx context.Context) error {
	stop := context.AfterFunc(ctx, s.close)
	defer stop()
	go func() { _ = s.srv.Serve(chanListener{s}) }()
	for {
		c, err := s.proxy.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		go s.tunnel(c)
	}
}

func (s *nodeServer) close() {
	s.once.Do(func() {
		close(s.closed)
		s.proxy.Close()
		s.srv.Close()
	})
}

// tunnel answers one CONNECT, the only request the API server's egress dialer sends on a
// connection (egress_selector.go tunnelHTTPConnect), and then carries the connection.
func (s *nodeServer) tunnel(c net.Conn) {
	br := bufio.NewReader(c)
	_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
	req, err := http.ReadRequest(br)
	if err != nil {
		c.Close()
		return
	}
	_ = c.SetReadDeadline(time.Time{})
	if req.Method != http.MethodConnect {
		fmt.Fprintf(c, "HTTP/1.1 405 Method Not Allowed\r\nContent-Length: 0\r\n\r\n")
		c.Close()
		return
	}
	host, port, err := net.SplitHostPort(req.Host)
	if err != nil {
		fmt.Fprintf(c, "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")
		c.Close()
		return
	}
	conn := &bufferedConn{Conn: c, r: br}
	if port != KubeletPort {
		// Not a kubelet: dial it as a Konnectivity agent would from the node network.
		up, err := net.DialTimeout("tcp", req.Host, 30*time.Second)
		if err != nil {
			fmt.Fprintf(c, "HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n")
			c.Close()
			return
		}
		fmt.Fprintf(c, "HTTP/1.1 200 Connection established\r\n\r\n")
		go func() { _, _ = io.Copy(up, conn); up.Close() }()
		_, _ = io.Copy(c, up)
		c.Close()
		return
	}
	cert, err := s.pki.nodeServingCert(host)
	if err != nil {
		klog.ErrorS(err, "issue a node serving certificate", "host", host)
		fmt.Fprintf(c, "HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n")
		c.Close()
		return
	}
	fmt.Fprintf(c, "HTTP/1.1 200 Connection established\r\n\r\n")
	pool := x509.NewCertPool()
	pool.AddCert(s.pki.caCert)
	tc := tls.Server(conn, &tls.Config{
		Certificates: []tls.Certificate{*cert},
		// The kubelet's --client-ca-file: a client certificate is verified when presented
		// (k8s.io/kubernetes pkg/kubelet/server auth: x509 authenticator); the API server
		// always presents one here, so require it.
		ClientAuth: tls.RequireAndVerifyClientCert,
		ClientCAs:  pool,
		MinVersion: tls.VersionTLS12,
		NextProtos: []string{"http/1.1"},
	})
	select {
	case s.conns <- tc:
	case <-s.closed:
		c.Close()
	}
}

// bufferedConn reads what the CONNECT's reader buffered first.
type bufferedConn struct {
	net.Conn
	r *bufio.Reader
}

func (c *bufferedConn) Read(p []byte) (int, error) { return c.r.Read(p) }

// chanListener hands the tunnelled kubelet connections to the node server's http.Server
// (which does their TLS handshakes: net/http serves a *tls.Conn as HTTPS).
type chanListener struct{ s *nodeServer }

func (l chanListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.s.conns:
		return c, nil
	case <-l.s.closed:
		return nil, errors.New("node server closed")
	}
}

func (l chanListener) Close() error   { return nil }
func (l chanListener) Addr() net.Addr { return l.s.proxy.Addr() }
