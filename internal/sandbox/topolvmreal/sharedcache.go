package topolvmreal

import (
	"context"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// agentShared is what every node agent's manager of one process shares: the REST mapper and one
// informer cache. On a cluster each topolvm-node Pod has a manager with its
// own cache of every Node, LogicalVolume and PersistentVolume (TopoLVM v0.41.0
// cmd/topolvm-node/app/run.go: default cache options, nothing filtered per node), so each agent
// sees exactly what the shared cache holds; in one process N copies cost N watches per kind and
// N copies of every object, which does not reach 500 nodes. controller-runtime has no way to
// share one cache between managers (a manager starts the cache it was given), hence agentCache.
type agentShared struct {
	mapper meta.RESTMapper
	cache  cache.Cache

	mu      sync.Mutex
	indexed map[string]bool // "<type>/<field>" indexes added to cache
}

// newAgentShared builds the shared cache; run starts it.
func newAgentShared(cfg *rest.Config) (*agentShared, error) {
	// rest.HTTPClientFor sends a user agent only when the config names one (client-go's
	// RESTClientFor and controller-runtime's manager default it, this client is built directly):
	// without it the agents' watches went out as "Go-http-client/1.1".
	cfg = rest.CopyConfig(cfg)
	cfg.UserAgent = rest.DefaultKubernetesUserAgent() + "/topolvm-node"
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, err
	}
	mapper, err := apiutil.NewDynamicRESTMapper(cfg, hc)
	if err != nil {
		return nil, err
	}
	c, err := cache.New(cfg, cache.Options{HTTPClient: hc, Scheme: scheme, Mapper: mapper,
		// Nothing in topolvm-node reads managed fields, most of a Node's metadata: not cached.
		DefaultTransform: cache.TransformStripManagedFields()})
	if err != nil {
		return nil, err
	}
	return &agentShared{mapper: mapper, cache: c}, nil
}

// run runs the shared cache's informers until ctx ends.
func (s *agentShared) run(ctx context.Context) error { return s.cache.Start(ctx) }

// view is one agent's cache: the shared one, whose informers the agent's manager must not start
// or stop, with the event handlers the agent's controllers add removed when the agent stops (a
// stopped controller-runtime Kind source leaves its handler on the informer).
func (s *agentShared) view() *agentCache {
	return &agentCache{Cache: s.cache, shared: s}
}

type agentCache struct {
	cache.Cache
	shared *agentShared

	mu   sync.Mutex
	regs []registration
}

type registration struct {
	inf toolscache.SharedIndexInformer
	h   toolscache.ResourceEventHandlerRegistration
}

var _ cache.Cache = (*agentCache)(nil)

// Start is the manager starting its cache: the shared informers already run, so it only waits
// for the agent's end and then removes the agent's handlers.
func (c *agentCache) Start(ctx context.Context) error {
	<-ctx.Done()
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, r := range c.regs {
		_ = r.inf.RemoveEventHandler(r.h)
	}
	c.regs = nil
	return nil
}

// GetInformer returns the shared informer, recording the handlers added through it.
func (c *agentCache) GetInformer(ctx context.Context, obj client.Object, opts ...cache.InformerGetOption) (cache.Informer, error) {
	inf, err := c.Cache.GetInformer(ctx, obj, opts...)
	if err != nil {
		return nil, err
	}
	return c.track(inf), nil
}

// GetInformerForKind is GetInformer by group-version-kind.
func (c *agentCache) GetInformerForKind(ctx context.Context, gvk schema.GroupVersionKind, opts ...cache.InformerGetOption) (cache.Informer, error) {
	inf, err := c.Cache.GetInformerForKind(ctx, gvk, opts...)
	if err != nil {
		return nil, err
	}
	return c.track(inf), nil
}

// IndexField adds a field index to the shared cache once per object type and field: every agent
// runs the same TopoLVM code, which indexes the same fields with the same function (a second
// IndexField of a field fails with "indexer conflict").
func (c *agentCache) IndexField(ctx context.Context, obj client.Object, field string, extract client.IndexerFunc) error {
	s := c.shared
	key := fmt.Sprintf("%T/%s", obj, field)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.indexed[key] {
		return nil
	}
	if err := c.Cache.IndexField(ctx, obj, field, extract); err != nil {
		return err
	}
	if s.indexed == nil {
		s.indexed = map[string]bool{}
	}
	s.indexed[key] = true
	return nil
}

// RemoveInformer would stop an informer every agent uses: an agent never owns one.
func (c *agentCache) RemoveInformer(context.Context, client.Object) error { return nil }

func (c *agentCache) track(inf cache.Informer) cache.Informer {
	sii, ok := inf.(toolscache.SharedIndexInformer)
	if !ok {
		return inf // not a client-go informer: nothing to track (never the case with cache.New)
	}
	return &trackedInformer{SharedIndexInformer: sii, view: c}
}

// trackedInformer records every handler registration in its agent's view.
type trackedInformer struct {
	toolscache.SharedIndexInformer
	view *agentCache
}

func (t *trackedInformer) record(h toolscache.ResourceEventHandlerRegistration, err error) (toolscache.ResourceEventHandlerRegistration, error) {
	if err == nil {
		t.view.mu.Lock()
		t.view.regs = append(t.view.regs, registration{inf: t.SharedIndexInformer, h: h})
		t.view.mu.Unlock()
	}
	return h, err
}

func (t *trackedInformer) AddEventHandler(h toolscache.ResourceEventHandler) (toolscache.ResourceEventHandlerRegistration, error) {
	return t.record(t.SharedIndexInformer.AddEventHandler(h))
}

func (t *trackedInformer) AddEventHandlerWithResyncPeriod(h toolscache.ResourceEventHandler, p time.Duration) (toolscache.ResourceEventHandlerRegistration, error) {
	return t.record(t.SharedIndexInformer.AddEventHandlerWithResyncPeriod(h, p))
}

func (t *trackedInformer) AddEventHandlerWithOptions(h toolscache.ResourceEventHandler, o toolscache.HandlerOptions) (toolscache.ResourceEventHandlerRegistration, error) {
	return t.record(t.SharedIndexInformer.AddEventHandlerWithOptions(h, o))
}
