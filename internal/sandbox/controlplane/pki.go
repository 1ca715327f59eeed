package controlplane

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"sync"
	"time"

	"k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/keyutil"
)

// pki holds the files the API server is started with and what clients need
// to trust it. Everything is generated fresh for each start.
type pki struct {
	CACertPEM     []byte
	ServingCert   string // path, PEM
	ServingKey    string // path, PEM
	SAKey         string // path, ECDSA private key used to sign and verify service account tokens
	TokenAuthFile string // path, static token file
	Token         string // bearer token of a user in system:masters

	// CAFile is the CA certificate's path (--kubelet-certificate-authority: the API server
	// verifies the node servers' certificates with it).
	CAFile string
	// KubeletClientCert and KubeletClientKey (paths, PEM) are the API server's client
	// certificate towards kubelets (--kubelet-client-certificate, --kubelet-client-key) and
	// towards the egress proxy (EgressSelectorConfiguration tlsConfig).
	KubeletClientCert, KubeletClientKey string
	// EgressProxyCert is the egress proxy's serving certificate (127.0.0.1).
	EgressProxyCert tls.Certificate

	caCert *x509.Certificate
	caKey  crypto.Signer
	// nodeCerts caches nodeServingCert's certificates by node address.
	nodeCerts sync.Map
}

const adminUser = "olapgke-sandbox-admin"

func generatePKI(dir string) (*pki, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	caCert, err := cert.NewSelfSignedCACert(cert.Config{CommonName: "olapgke-sandbox-ca"}, caKey)
	if err != nil {
		return nil, fmt.Errorf("create CA: %w", err)
	}
	caPEM, err := cert.EncodeCertificates(caCert)
	if err != nil {
		return nil, err
	}

	servingKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	// client-go's cert helpers only make self-signed pairs; the serving
	// certificate must chain to a CA we can hand out through GetCluster.
	servingDER, err := signCert(caCert, caKey, servingKey.Public(), apiServerCertTemplate())
	if err != nil {
		return nil, err
	}
	servingCert, err := x509.ParseCertificate(servingDER)
	if err != nil {
		return nil, err
	}
	servingPEM, err := cert.EncodeCertificates(servingCert)
	if err != nil {
		return nil, err
	}
	servingKeyPEM, err := keyutil.MarshalPrivateKeyToPEM(servingKey)
	if err != nil {
		return nil, err
	}
	saKeyPEM, err := keyutil.MakeEllipticPrivateKeyPEM()
	if err != nil {
		return nil, err
	}
	token, err := randomToken()
	if err != nil {
		return nil, err
	}

	p := &pki{
		CACertPEM:         caPEM,
		ServingCert:       filepath.Join(dir, "apiserver.crt"),
		ServingKey:        filepath.Join(dir, "apiserver.key"),
		SAKey:             filepath.Join(dir, "sa.key"),
		TokenAuthFile:     filepath.Join(dir, "tokens.csv"),
		Token:             token,
		CAFile:            filepath.Join(dir, "ca.crt"),
		KubeletClientCert: filepath.Join(dir, "kubelet-client.crt"),
		KubeletClientKey:  filepath.Join(dir, "kubelet-client.key"),
		caCert:            caCert,
		caKey:             caKey,
	}
	// The API server's client certificate towards kubelets: kubeadm's apiserver-kubelet-client
	// (CN kube-apiserver-kubelet-client, a client certificate signed by the cluster CA; kubeadm
	// cmd/kubeadm/app/phases/certs/certlist.go KubeadmCertKubeletClient).
	clientKey, clientPEM, err := p.issue(&x509.Certificate{
		Subject:     pkix.Name{CommonName: "kube-apiserver-kubelet-client", Organization: []string{"system:masters"}},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	})
	if err != nil {
		return nil, err
	}
	proxyKey, proxyPEM, err := p.issue(&x509.Certificate{
		Subject:     pkix.Name{CommonName: "olapgke-sandbox-egress-proxy"},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
	})
	if err != nil {
		return nil, err
	}
	if p.EgressProxyCert, err = tls.X509KeyPair(proxyPEM, proxyKey); err != nil {
		return nil, err
	}
	files := map[string][]byte{
		filepath.Join(dir, "ca.crt"): caPEM,
		p.ServingCert:                append(servingPEM, caPEM...),
		p.ServingKey:                 servingKeyPEM,
		p.SAKey:                      saKeyPEM,
		// token,user,uid,"group1,group2"
		p.TokenAuthFile:     []byte(fmt.Sprintf("%s,%s,%s,\"system:masters\"\n", token, adminUser, adminUser)),
		p.KubeletClientCert: clientPEM,
		p.KubeletClientKey:  clientKey,
	}
	for path, data := range files {
		if err := os.WriteFile(path, data, 0o600); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// apiServerCertTemplate is the API server's serving certificate.
func apiServerCertTemplate() *x509.Certificate {
	return &x509.Certificate{
		Subject:     pkix.Name{CommonName: "olapgke-sandbox-apiserver"},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:    []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc"},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1"), net.IPv6loopback, net.ParseIP("10.96.0.1")},
	}
}

// signCert signs tmpl (subject, key usages and names) for pub with the CA, valid a year.
func signCert(ca *x509.Certificate, caKey crypto.Signer, pub crypto.PublicKey, tmpl *x509.Certificate) ([]byte, error) {
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return nil, err
	}
	now := time.Now()
	tmpl.SerialNumber = serial
	tmpl.NotBefore = now.Add(-time.Hour)
	tmpl.NotAfter = now.Add(365 * 24 * time.Hour)
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment
	return x509.CreateCertificate(rand.Reader, tmpl, ca, pub, caKey)
}

// issue makes a fresh ECDSA key and a certificate for it from tmpl, signed by the CA: the
// key's and the certificate's PEM.
func (p *pki) issue(tmpl *x509.Certificate) (keyPEM, certPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	der, err := signCert(p.caCert, p.caKey, key.Public(), tmpl)
	if err != nil {
		return nil, nil, err
	}
	if keyPEM, err = keyutil.MarshalPrivateKeyToPEM(key); err != nil {
		return nil, nil, err
	}
	certPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	return keyPEM, certPEM, nil
}

// nodeServingCert is the serving certificate of the kubelet at host (a node's address, as the
// API server dials it). A kubelet's serving certificate from the kubernetes.io/kubelet-serving
// signer is O=system:nodes, CN=system:node:<node name>, with the node's addresses as SANs
// (k8s.io/kubernetes pkg/kubelet/certificate/kubelet.go NewKubeletServerCertificateManager);
// here the proxy knows the address, not the node, so the CN names the address. Issued on a
// node's first connection and kept: a world's start-up issues none.
func (p *pki) nodeServingCert(host string) (*tls.Certificate, error) {
	if c, ok := p.nodeCerts.Load(host); ok {
		return c.(*tls.Certificate), nil
	}
	tmpl := &x509.Certificate{
		Subject:     pkix.Name{CommonName: "system:node:" + host, Organization: []string{"system:nodes"}},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	if ip := net.ParseIP(host); ip != nil {
		tmpl.IPAddresses = []net.IP{ip}
	} else {
		tmpl.DNSNames = []string{host}
	}
	keyPEM, certPEM, err := p.issue(tmpl)
	if err != nil {
		return nil, err
	}
	c, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, err
	}
	actual, _ := p.nodeCerts.LoadOrStore(host, &c)
	return actual.(*tls.Certificate), nil
}

func randomToken() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return hex.EncodeToString(b), nil
}
