package schedsim

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/informers"
	"k8s.io/kubernetes/pkg/scheduler/apis/config/latest"
	internalcache "k8s.io/kubernetes/pkg/scheduler/backend/cache"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
	schedmetrics "k8s.io/kubernetes/pkg/scheduler/metrics"
)

// Documents why DefaultProfile() drops DynamicResources: with the unmodified
// default profile and no SharedDRAManager, PreFilter of *any* pod panics
// (nil draManager in preFilterExtendedResources, DRAExtendedResource is GA).
func TestPitfallUnmodifiedDefaultProfilePanicsWithoutDRAManager(t *testing.T) {
	initMetrics.Do(schedmetrics.InitMetrics)
	cfg, err := latest.Default()
	if err != nil {
		t.Fatal(err)
	}
	n := mkNode("n0", "8", "8Gi")
	snap := internalcache.NewSnapshot(nil, []*corev1.Node{&n})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f, err := frameworkruntime.NewFramework(ctx, plugins.NewInTreeRegistry(), &cfg.Profiles[0],
		frameworkruntime.WithInformerFactory(informers.NewSharedInformerFactory(nil, 0)),
		frameworkruntime.WithSnapshotSharedLister(snap))
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if r := recover(); r == nil {
			t.Fatal("expected a nil-pointer panic from DynamicResources.PreFilter")
		}
	}()
	f.RunPreFilterPlugins(ctx, framework.NewCycleState(), normalizePod(mkPod("p", "1", "")))
}
