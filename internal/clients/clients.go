// Package clients holds the API clients every olapgke resource uses. The provider builds one
// *Clients in Configure and hands it to resources and data sources as provider data. Clients are
// built lazily on first use, so a plan whose provider configuration is not yet known (cluster
// created in the same run) still works: Deferred reports that case and resources skip live checks.
package clients

import (
	"context"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/olapgke/terraform-provider-olapgke/internal/diagnostics"
	"github.com/olapgke/terraform-provider-olapgke/internal/gke"
)

// Clients is the provider data. The zero value is not usable; build it with New.
type Clients struct {
	// Project, Location and Cluster identify the GKE cluster (provider defaults).
	Project  string
	Location string
	Cluster  string

	// PollInterval is the interval used for GKE operation polling and any poll fallback.
	PollInterval time.Duration

	deferred bool

	// Builders run until one succeeds: a failed build (API server not up yet, cancelled
	// request) is retried on the next call instead of poisoning the provider instance.
	restMu sync.Mutex
	restFn func(ctx context.Context) (*rest.Config, error)
	rest   *rest.Config

	gkeMu sync.Mutex
	gkeFn func(ctx context.Context) (gke.API, error)
	gke   gke.API

	intents plannedSets
}

// Options configure New.
type Options struct {
	Project, Location, Cluster string
	PollInterval               time.Duration
	// Deferred is true when some provider configuration was unknown at plan time.
	Deferred bool
	// REST builds the Kubernetes REST config (called until it succeeds once).
	REST func(ctx context.Context) (*rest.Config, error)
	// GKE builds the GKE API client (called until it succeeds once).
	GKE func(ctx context.Context) (gke.API, error)
}

// New returns Clients that build their connections on first use (and again after a failure).
func New(o Options) *Clients {
	if o.PollInterval <= 0 {
		o.PollInterval = 2 * time.Second
	}
	return &Clients{
		Project: o.Project, Location: o.Location, Cluster: o.Cluster,
		PollInterval: o.PollInterval, deferred: o.Deferred,
		restFn: o.REST, gkeFn: o.GKE,
	}
}

// Deferred reports whether provider configuration was unknown when the provider was configured.
func (c *Clients) Deferred() bool { return c == nil || c.deferred }

// REST returns the Kubernetes REST config (a copy callers may modify).
func (c *Clients) REST(ctx context.Context) (*rest.Config, error) {
	c.restMu.Lock()
	defer c.restMu.Unlock()
	if c.rest == nil {
		cfg, err := c.restFn(ctx)
		if err != nil {
			return nil, err
		}
		c.rest = cfg
	}
	return rest.CopyConfig(c.rest), nil
}

// Kube returns a typed Kubernetes clientset. It speaks protobuf, as the Kubernetes components do
// for built-in types (kube-controller-manager's and kube-scheduler's --kube-api-content-type
// default): a plan LISTs every Node, Pod, CSINode and CSIStorageCapacity of the cluster, and
// protobuf is several times cheaper than JSON to encode (the API server) and decode (here).
// Patches keep their own content types (server-side apply's YAML/JSON), and an answer in JSON
// (a proxy's error, a webhook's) is still read: the decoder follows the response's type.
func (c *Clients) Kube(ctx context.Context) (kubernetes.Interface, error) {
	cfg, err := c.REST(ctx)
	if err != nil {
		return nil, err
	}
	cfg.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
	cfg.ContentType = runtime.ContentTypeProtobuf
	return kubernetes.NewForConfig(cfg)
}

// Dynamic returns a dynamic Kubernetes client.
func (c *Clients) Dynamic(ctx context.Context) (dynamic.Interface, error) {
	cfg, err := c.REST(ctx)
	if err != nil {
		return nil, err
	}
	return dynamic.NewForConfig(cfg)
}

// GKE returns the GKE API client.
func (c *Clients) GKE(ctx context.Context) (gke.API, error) {
	c.gkeMu.Lock()
	defer c.gkeMu.Unlock()
	if c.gke == nil {
		g, err := c.gkeFn(ctx)
		if err != nil {
			return nil, err
		}
		c.gke = g
	}
	return c.gke, nil
}

// FromProviderData is the body of every resource's and data source's Configure: it returns the
// provider's *Clients, nil when the provider is not configured yet (ProviderData nil), and adds
// an error diagnostic when the data is of another type.
func FromProviderData(data any, diags *diag.Diagnostics) *Clients {
	if data == nil {
		return nil
	}
	c, ok := data.(*Clients)
	if !ok {
		diags.Append(diagnostics.UnexpectedProviderData(data))
		return nil
	}
	return c
}
