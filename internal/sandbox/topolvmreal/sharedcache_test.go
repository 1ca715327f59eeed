package topolvmreal

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	toolscache "k8s.io/client-go/tools/cache"
	fcache "k8s.io/client-go/tools/cache/testing"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// oneInformer is a cache.Cache whose only informer is inf; it counts IndexField calls.
type oneInformer struct {
	cache.Cache
	inf     toolscache.SharedIndexInformer
	indexes *int
}

func (o oneInformer) IndexField(context.Context, client.Object, string, client.IndexerFunc) error {
	*o.indexes++
	return nil
}

// TestAgentCacheIndexesAFieldOnce: every agent's NodeServer indexes the same LogicalVolume field;
// the shared cache gets it once (a second IndexField would fail with "indexer conflict").
func TestAgentCacheIndexesAFieldOnce(t *testing.T) {
	var n int
	shared := &agentShared{cache: oneInformer{indexes: &n}}
	extract := func(client.Object) []string { return nil }
	for range 3 {
		if err := shared.view().IndexField(t.Context(), &corev1.Node{}, "status.volumeID", extract); err != nil {
			t.Fatal(err)
		}
	}
	if err := shared.view().IndexField(t.Context(), &corev1.Pod{}, "status.volumeID", extract); err != nil {
		t.Fatal(err)
	}
	if n != 2 {
		t.Fatalf("IndexField reached the shared cache %d times, want 2 (once per type and field)", n)
	}
}

func (o oneInformer) GetInformer(context.Context, client.Object, ...cache.InformerGetOption) (cache.Informer, error) {
	return o.inf, nil
}

// TestAgentCacheRemovesHandlersWhenTheAgentStops: an agent's controllers add handlers to the
// shared informer through its view; once the agent's manager stops (its cache's Start returns),
// they get no more events, while the informer goes on for the other agents.
func TestAgentCacheRemovesHandlersWhenTheAgentStops(t *testing.T) {
	src := fcache.NewFakeControllerSource()
	inf := toolscache.NewSharedIndexInformer(src, &corev1.Node{}, 0, toolscache.Indexers{})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	go inf.Run(ctx.Done())

	view := (&agentShared{cache: oneInformer{inf: inf}}).view()
	got, err := view.GetInformer(ctx, &corev1.Node{})
	if err != nil {
		t.Fatal(err)
	}
	var agentEvents, otherEvents atomic.Int32
	if _, err := got.AddEventHandler(toolscache.ResourceEventHandlerFuncs{AddFunc: func(any) { agentEvents.Add(1) }}); err != nil {
		t.Fatal(err)
	}
	if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{AddFunc: func(any) { otherEvents.Add(1) }}); err != nil {
		t.Fatal(err)
	}
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		if err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) { return cond(), nil }); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	src.Add(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "a"}})
	waitFor("both handlers see node a", func() bool { return agentEvents.Load() == 1 && otherEvents.Load() == 1 })

	agentCtx, stopAgent := context.WithCancel(ctx)
	stopped := make(chan error, 1)
	go func() { stopped <- view.Start(agentCtx) }()
	stopAgent()
	if err := <-stopped; err != nil {
		t.Fatal(err)
	}
	src.Add(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "b"}})
	waitFor("the other handler sees node b", func() bool { return otherEvents.Load() == 2 })
	if n := agentEvents.Load(); n != 1 {
		t.Fatalf("the stopped agent's handler got %d events, want 1 (node a only)", n)
	}
	if inf.IsStopped() {
		t.Fatal("the agent's stop stopped the shared informer")
	}
}
