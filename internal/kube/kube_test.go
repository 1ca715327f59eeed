package kube

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"cloud.google.com/go/container/apiv1/containerpb"
	"golang.org/x/oauth2"
	"k8s.io/client-go/kubernetes"
)

// countingSource hands out a new token per call, like a refreshing source would.
type countingSource struct{ n atomic.Int32 }

func (s *countingSource) Token() (*oauth2.Token, error) {
	s.n.Add(1)
	return &oauth2.Token{AccessToken: "tok-" + strconv.Itoa(int(s.n.Load())), TokenType: "Bearer"}, nil
}

// versionServer is a TLS server answering /version for the expected bearer token prefix.
func versionServer(t *testing.T, wantPrefix string) (*httptest.Server, []byte) {
	t.Helper()
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasPrefix(r.Header.Get("Authorization"), "Bearer "+wantPrefix) {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		if !strings.HasPrefix(r.UserAgent(), "terraform-provider-olapgke/") {
			http.Error(w, "bad user agent "+r.UserAgent(), http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"major":"1","minor":"37","gitVersion":"v1.37.2"}`))
	}))
	t.Cleanup(srv.Close)
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	return srv, ca
}

func TestFromGKEUsesEndpointCAAndToken(t *testing.T) {
	srv, ca := versionServer(t, "tok-")
	cluster := &containerpb.Cluster{
		Name:       "c",
		Endpoint:   strings.TrimPrefix(srv.URL, "https://"),
		MasterAuth: &containerpb.MasterAuth{ClusterCaCertificate: base64.StdEncoding.EncodeToString(ca)},
	}
	ts := &countingSource{}
	cfg, err := FromGKE(cluster, ts, "terraform-provider-olapgke/test")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.QPS != QPS || cfg.Burst != Burst || cfg.BearerToken != "" {
		t.Fatalf("unexpected config %s", cfg)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	v, err := cs.Discovery().ServerVersion()
	if err != nil || v.GitVersion != "v1.37.2" {
		t.Fatalf("ServerVersion = %v, %v", v, err)
	}
	if ts.n.Load() == 0 {
		t.Fatal("token source never asked for a token")
	}

	// Another server's CA must fail TLS verification: the CA is really used.
	cluster.MasterAuth.ClusterCaCertificate = base64.StdEncoding.EncodeToString(selfSignedPEM(t))
	cfg, err = FromGKE(cluster, ts, "terraform-provider-olapgke/test")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kubernetes.NewForConfigOrDie(cfg).Discovery().ServerVersion(); err == nil {
		t.Fatal("ServerVersion succeeded with the wrong CA")
	}
}

// selfSignedPEM is a fresh CA certificate unrelated to httptest's (which all servers share).
func selfSignedPEM(t *testing.T) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "other-ca"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

func TestFromGKEErrors(t *testing.T) {
	t.Parallel()
	ts := &countingSource{}
	tests := map[string]struct {
		cluster *containerpb.Cluster
		want    string
	}{
		"no endpoint":   {&containerpb.Cluster{Name: "c", Status: containerpb.Cluster_PROVISIONING}, "no endpoint yet (status PROVISIONING)"},
		"no CA":         {&containerpb.Cluster{Name: "c", Endpoint: "1.2.3.4"}, "no masterAuth.clusterCaCertificate"},
		"CA not base64": {&containerpb.Cluster{Name: "c", Endpoint: "1.2.3.4", MasterAuth: &containerpb.MasterAuth{ClusterCaCertificate: "%%%"}}, "not base64"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, err := FromGKE(tc.cluster, ts, "")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error = %v, want %q", err, tc.want)
			}
		})
	}
}

func TestFromExplicitHostTokenAndKubeconfig(t *testing.T) {
	srv, ca := versionServer(t, "static-token")

	for name, caValue := range map[string]string{"pem": string(ca), "base64": base64.StdEncoding.EncodeToString(ca)} {
		cfg, err := FromExplicit(Explicit{Host: srv.URL, Token: "static-token", ClusterCACertificate: caValue}, "terraform-provider-olapgke/test")
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		cs := kubernetes.NewForConfigOrDie(cfg)
		if _, err := cs.Discovery().ServerVersion(); err != nil {
			t.Fatalf("%s: ServerVersion: %v", name, err)
		}
	}

	kubeconfig := filepath.Join(t.TempDir(), "config")
	data := `apiVersion: v1
kind: Config
clusters:
- name: sb
  cluster: {server: "` + srv.URL + `", certificate-authority-data: "` + base64.StdEncoding.EncodeToString(ca) + `"}
users:
- name: u
  user: {token: static-token}
- name: wrong
  user: {token: nope}
contexts:
- name: good
  context: {cluster: sb, user: u}
- name: bad
  context: {cluster: sb, user: wrong}
current-context: bad
`
	if err := os.WriteFile(kubeconfig, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := FromExplicit(Explicit{ConfigPath: kubeconfig, ConfigContext: "good"}, "terraform-provider-olapgke/test")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kubernetes.NewForConfigOrDie(cfg).Discovery().ServerVersion(); err != nil {
		t.Fatalf("context good: %v", err)
	}
	if _, err := FromExplicit(Explicit{ConfigPath: kubeconfig, ConfigContext: "missing"}, ""); err == nil || !strings.Contains(err.Error(), "missing") {
		t.Fatalf("missing context error = %v", err)
	}
	if _, err := FromExplicit(Explicit{Host: srv.URL, ClusterCACertificate: "not a cert"}, ""); err == nil {
		t.Fatal("want error for a bad CA")
	}
}
