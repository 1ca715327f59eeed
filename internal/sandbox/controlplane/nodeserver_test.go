package controlplane

import (
	"bufio"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
)

// TestNodeServer_TunnelsKubeletConnections plays the API server's side (k8s.io/apiserver
// egressselector tcpHTTPConnectConnector, then the kubelet client's TLS): the proxy wants the
// client certificate, a CONNECT to a node's kubelet port reaches the handler over TLS with a
// certificate for that node's address from the sandbox CA, and the endpoint wants the client
// certificate too.
func TestNodeServer_TunnelsKubeletConnections(t *testing.T) {
	dir := t.TempDir()
	p, err := generatePKI(dir)
	if err != nil {
		t.Fatal(err)
	}
	s, cfgPath, err := newNodeServer(p, dir)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := os.ReadFile(cfgPath)
	if err != nil || !strings.Contains(string(cfg), "url: https://"+s.proxy.Addr().String()) {
		t.Fatalf("egress selector configuration: %v\n%s", err, cfg)
	}
	s.setHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "%s from %s", r.URL.Path, r.TLS.PeerCertificates[0].Subject.CommonName)
	}))
	go func() { _ = s.run(t.Context()) }()

	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(p.CACertPEM)
	client, err := tls.LoadX509KeyPair(p.KubeletClientCert, p.KubeletClientKey)
	if err != nil {
		t.Fatal(err)
	}
	// connect tunnels to target through the proxy (with or without the client certificate)
	// and speaks TLS to it, verifying serverName.
	connect := func(target, serverName string, withCert bool) (string, error) {
		var certs []tls.Certificate
		if withCert {
			certs = []tls.Certificate{client}
		}
		c, err := tls.Dial("tcp", s.proxy.Addr().String(), &tls.Config{RootCAs: pool, Certificates: certs})
		if err != nil {
			return "", err
		}
		defer c.Close()
		fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", target)
		res, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			return "", err
		}
		if res.StatusCode != 200 {
			return "", fmt.Errorf("CONNECT: %s", res.Status)
		}
		tc := tls.Client(c, &tls.Config{RootCAs: pool, ServerName: serverName, Certificates: certs})
		fmt.Fprintf(tc, "GET /containerLogs/ns/pod/c HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", target)
		res, err = http.ReadResponse(bufio.NewReader(tc), nil)
		if err != nil {
			return "", err
		}
		defer res.Body.Close()
		b, err := io.ReadAll(res.Body)
		return string(b), err
	}
	got, err := connect("10.128.0.9:"+KubeletPort, "10.128.0.9", true)
	if want := "/containerLogs/ns/pod/c from kube-apiserver-kubelet-client"; err != nil || got != want {
		t.Errorf("through the proxy: %q, %v; want %q", got, err, want)
	}
	got, err = connect("gke-node-a:"+KubeletPort, "gke-node-a", true)
	if err != nil || !strings.HasPrefix(got, "/containerLogs/") {
		t.Errorf("to a node's host name: %q, %v", got, err)
	}
	if _, err := connect("10.128.0.9:"+KubeletPort, "10.128.0.10", true); err == nil {
		t.Errorf("a node's certificate verified for another address")
	}
	if _, err := connect("10.128.0.9:"+KubeletPort, "10.128.0.9", false); err == nil {
		t.Errorf("the proxy took a client without a certificate")
	}
	// Not a kubelet: dialled as is.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		if c, err := l.Accept(); err == nil {
			_, _ = c.Write([]byte("direct"))
			c.Close()
		}
	}()
	c, err := tls.Dial("tcp", s.proxy.Addr().String(), &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{client}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", l.Addr())
	br := bufio.NewReader(c)
	res, err := http.ReadResponse(br, nil)
	if err != nil || res.StatusCode != 200 {
		t.Fatalf("CONNECT to a non-kubelet port: %v %v", res, err)
	}
	if b, _ := io.ReadAll(br); string(b) != "direct" {
		t.Errorf("non-kubelet port: read %q", b)
	}
}
