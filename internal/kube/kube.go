// Package kube builds Kubernetes REST configs for olapgke: from the provider's kubernetes {}
// block (host + token + CA, or a kubeconfig file and context), or, by default, from the GKE
// cluster itself (GetCluster endpoint and CA, requests authorised with a refreshing Google
// OAuth2 token; no gcloud, no exec plugin, no kubeconfig on the runner).
package kube

import (
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"

	"cloud.google.com/go/container/apiv1/containerpb"
	"golang.org/x/oauth2"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// Client-side rate limits: well above client-go's 5/10 defaults, because a plan lists several
// kinds and an apply watches while it acts, but low enough to stay polite to a shared server.
const (
	QPS   = 50
	Burst = 100
)

// Explicit is the provider's kubernetes {} block after env fallbacks.
type Explicit struct {
	Host                 string
	Token                string
	ClusterCACertificate string // PEM, or base64 of PEM
	ConfigPath           string // one path or a list separated by the OS list separator
	ConfigContext        string
}

// IsSet reports whether any field is set (otherwise the GKE path is used).
func (e Explicit) IsSet() bool {
	return e.Host != "" || e.Token != "" || e.ClusterCACertificate != "" || e.ConfigPath != "" || e.ConfigContext != ""
}

// FromExplicit builds a REST config from the kubernetes {} block.
func FromExplicit(e Explicit, userAgent string) (*rest.Config, error) {
	var cfg *rest.Config
	switch {
	case e.ConfigPath != "":
		rules := &clientcmd.ClientConfigLoadingRules{Precedence: filepath.SplitList(e.ConfigPath)}
		overrides := &clientcmd.ConfigOverrides{CurrentContext: e.ConfigContext}
		c, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, overrides).ClientConfig()
		if err != nil {
			return nil, fmt.Errorf("loading kubeconfig %s (context %q): %w", e.ConfigPath, e.ConfigContext, err)
		}
		cfg = c
	case e.Host != "":
		cfg = &rest.Config{Host: e.Host, BearerToken: e.Token}
		if e.ClusterCACertificate != "" {
			ca, err := pemData(e.ClusterCACertificate)
			if err != nil {
				return nil, fmt.Errorf("kubernetes.cluster_ca_certificate: %w", err)
			}
			cfg.CAData = ca
		}
	default:
		return nil, errors.New("the kubernetes block needs host or config_path")
	}
	Tune(cfg, userAgent)
	return cfg, nil
}

// FromGKE builds a REST config for a GKE cluster: https://<endpoint>, the cluster CA from
// masterAuth.clusterCaCertificate, and ts's tokens as bearer tokens (refreshed as they expire).
func FromGKE(cluster *containerpb.Cluster, ts oauth2.TokenSource, userAgent string) (*rest.Config, error) {
	endpoint := cluster.GetEndpoint()
	if endpoint == "" {
		return nil, fmt.Errorf("GKE cluster %q has no endpoint yet (status %s)", cluster.GetName(), cluster.GetStatus())
	}
	if ts == nil {
		return nil, errors.New("no Google token source for the GKE cluster")
	}
	ca64 := cluster.GetMasterAuth().GetClusterCaCertificate()
	if ca64 == "" {
		return nil, fmt.Errorf("GKE cluster %q has no masterAuth.clusterCaCertificate", cluster.GetName())
	}
	ca, err := base64.StdEncoding.DecodeString(ca64)
	if err != nil {
		return nil, fmt.Errorf("GKE cluster %q: masterAuth.clusterCaCertificate is not base64: %w", cluster.GetName(), err)
	}
	host := endpoint
	if !strings.Contains(host, "://") {
		host = "https://" + host
	}
	cfg := &rest.Config{Host: host, TLSClientConfig: rest.TLSClientConfig{CAData: ca}}
	// oauth2.Transport adds "Authorization: Bearer <token>" per request and refreshes through
	// ts; client-go has no built-in Google token source since the gcp auth plugin was removed.
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		return &oauth2.Transport{Source: ts, Base: rt}
	}
	Tune(cfg, userAgent)
	return cfg, nil
}

// Tune sets olapgke's QPS, burst and user agent.
func Tune(cfg *rest.Config, userAgent string) {
	cfg.QPS, cfg.Burst = QPS, Burst
	if userAgent != "" {
		cfg.UserAgent = userAgent
	}
}

// pemData accepts PEM or base64-encoded PEM.
func pemData(v string) ([]byte, error) {
	v = strings.TrimSpace(v)
	if strings.HasPrefix(v, "-----BEGIN") {
		return []byte(v + "\n"), nil
	}
	b, err := base64.StdEncoding.DecodeString(v)
	if err != nil || !strings.HasPrefix(strings.TrimSpace(string(b)), "-----BEGIN") {
		return nil, errors.New("neither PEM nor base64-encoded PEM")
	}
	return b, nil
}
