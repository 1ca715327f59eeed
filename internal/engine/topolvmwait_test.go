package engine

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	"github.com/olapgke/terraform-provider-olapgke/internal/planner/migration"
)

// freshTargetNode is oneOrdinalOnPoolA with TopoLVM's capacity tracking on (CSIDriver
// storageCapacity true) and target node b1 registered (topology label) but without a
// CSIStorageCapacity yet: external-provisioner has not polled since it came up. The claim
// asks for 10Gi.
func freshTargetNode() []runtime.Object {
	objs := oneOrdinalOnPoolA()
	for _, o := range objs {
		switch x := o.(type) {
		case *corev1.Node:
			x.Labels["topology.topolvm.io/node"] = x.Name
		case *appsv1.StatefulSet: // a claim without a size has no capacity to check
			x.Spec.VolumeClaimTemplates[0].Spec.Resources.Requests = corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("10Gi")}
		}
	}
	return append(objs, &storagev1.CSIDriver{ObjectMeta: metav1.ObjectMeta{Name: "topolvm.io"},
		Spec: storagev1.CSIDriverSpec{StorageCapacity: ptr.To(true), AttachRequired: ptr.To(false)}})
}

func publishedCapacity(node string) *storagev1.CSIStorageCapacity {
	return &storagev1.CSIStorageCapacity{
		ObjectMeta:       metav1.ObjectMeta{Namespace: "topolvm-system", Name: "csisc-" + node},
		NodeTopology:     &metav1.LabelSelector{MatchLabels: map[string]string{"topology.topolvm.io/node": node}},
		StorageClassName: "topolvm-provisioner",
		Capacity:         ptr.To(resource.MustParse("700Gi")),
	}
}

func TestMigrateWaitsForTopoLVMOnTargetNodes(t *testing.T) {
	t.Parallel()
	run := MigrationRun{Namespace: "olap", Name: "hist", Ordinals: []int32{0}, Claims: []string{"cache"},
		Actions: map[int32]migration.MigrationAction{0: migration.MigrationMove}}

	t.Run("never ready: precondition error naming the node, nothing deleted", func(t *testing.T) {
		t.Parallel()
		kube := fake.NewClientset(freshTargetNode()...)
		r := run
		r.OrdinalTimeout = time.Second
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		err := Migrate(ctx, kube, r)
		if !IsPrecondition(err) || !strings.Contains(err.Error(), "TopoLVM to be ready on the target nodes b1 (no CSIStorageCapacity of StorageClass topolvm-provisioner") {
			t.Fatalf("Migrate: %v, want a precondition error naming b1", err)
		}
		for _, a := range kube.Actions() {
			if a.GetVerb() == "delete" {
				t.Errorf("deleted while TopoLVM was not ready on the target: %v", a)
			}
		}
	})

	t.Run("ready later: moves on the capacity's event", func(t *testing.T) {
		t.Parallel()
		kube := fake.NewClientset(freshTargetNode()...)
		var deletes []string
		var mu sync.Mutex
		kube.PrependReactor("delete", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
			mu.Lock()
			defer mu.Unlock()
			deletes = append(deletes, a.GetResource().Resource)
			return true, nil, nil
		})
		waiting := make(chan struct{})
		var once sync.Once
		r := run
		r.OrdinalTimeout = 20 * time.Second
		r.Resync = time.Hour // only the CSIStorageCapacity event can end the wait
		r.Log = func(l string) {
			if strings.Contains(l, "waiting: TopoLVM to be ready on the target nodes b1") {
				once.Do(func() { close(waiting) })
			}
		}
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		done := make(chan error, 1)
		go func() { done <- Migrate(ctx, kube, r) }()
		select {
		case <-waiting:
		case err := <-done:
			t.Fatalf("Migrate returned before waiting for TopoLVM: %v", err)
		case <-time.After(20 * time.Second):
			t.Fatal("Migrate never reported waiting for TopoLVM")
		}
		mu.Lock()
		if len(deletes) != 0 {
			t.Errorf("deleted before TopoLVM was ready: %v", deletes)
		}
		mu.Unlock()
		if _, err := kube.StorageV1().CSIStorageCapacities("topolvm-system").Create(ctx, publishedCapacity("b1"), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 20*time.Second, true, func(context.Context) (bool, error) {
			mu.Lock()
			defer mu.Unlock()
			return len(deletes) == 2, nil
		}); err != nil {
			t.Fatalf("no PVC and Pod delete after the capacity was published: %v", deletes)
		}
		cancel()
		t.Logf("migration ended: %v", <-done)
	})
}
