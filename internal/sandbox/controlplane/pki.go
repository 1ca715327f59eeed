package controlplane

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
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
	servingDER, err := signServingCert(caCert, caKey, servingKey.Public())
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
		CACertPEM:     caPEM,
		ServingCert:   filepath.Join(dir, "apiserver.crt"),
		ServingKey:    filepath.Join(dir, "apiserver.key"),
		SAKey:         filepath.Join(dir, "sa.key"),
		TokenAuthFile: filepath.Join(dir, "tokens.csv"),
		Token:         token,
	}
	files := map[string][]byte{
		filepath.Join(dir, "ca.crt"): caPEM,
		p.ServingCert:                append(servingPEM, caPEM...),
		p.ServingKey:                 servingKeyPEM,
		p.SAKey:                      saKeyPEM,
		// token,user,uid,"group1,group2"
		p.TokenAuthFile: []byte(fmt.Sprintf("%s,%s,%s,\"system:masters\"\n", token, adminUser, adminUser)),
	}
	for path, data := range files {
		if err := os.WriteFile(path, data, 0o600); err != nil {
			return nil, err
		}
	}
	return p, nil
}

func signServingCert(ca *x509.Certificate, caKey crypto.Signer, pub crypto.PublicKey) ([]byte, error) {
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: "olapgke-sandbox-apiserver"},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(365 * 24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:     []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc"},
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1"), net.IPv6loopback, net.ParseIP("10.96.0.1")},
	}
	return x509.CreateCertificate(rand.Reader, tmpl, ca, pub, caKey)
}

func randomToken() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return hex.EncodeToString(b), nil
}
