package snapshot

import (
	"context"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	"github.com/olapgke/terraform-provider-olapgke/internal/planner"
)

func testSet(replicas int32) *appsv1.StatefulSet {
	return &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: "olap", Namespace: "olap"},
		Spec: appsv1.StatefulSetSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "olap"}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "olap"}}},
		},
	}
}

func world(ordinals int) []runtime.Object {
	set := testSet(int32(ordinals))
	objs := []runtime.Object{set,
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "other-0", Namespace: "olap", Labels: map[string]string{"app": "other"}}},
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}},
	}
	for o := 0; o < ordinals; o++ {
		objs = append(objs,
			&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("olap-%d", o), Namespace: "olap", Labels: map[string]string{"app": "olap"}}},
			&corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("data-olap-%d", o), Namespace: "olap"}, Spec: corev1.PersistentVolumeClaimSpec{VolumeName: fmt.Sprintf("pv-%d", o)}},
			&corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("pv-%d", o)}},
		)
	}
	return objs
}

func TestReadRequestCountIndependentOfOrdinals(t *testing.T) {
	t.Parallel()
	counts := map[int]int{}
	for _, n := range []int{3, 30} {
		kube := fake.NewClientset(world(n)...)
		s, err := Read(context.Background(), kube, testSet(int32(n)), "olap", "olap")
		if err != nil {
			t.Fatal(err)
		}
		if s.Live == nil || s.Live.Name != "olap" {
			t.Fatalf("live set not found: %+v", s.Live)
		}
		if len(s.Pods) != n || len(s.PVCs) != n || len(s.PVs) != n || len(s.Nodes) != 1 {
			t.Errorf("%d ordinals: got %d pods, %d pvcs, %d pvs, %d nodes", n, len(s.Pods), len(s.PVCs), len(s.PVs), len(s.Nodes))
		}
		for _, a := range kube.Actions() {
			if a.GetVerb() == "get" && a.GetResource().Resource == "version" {
				continue
			}
			if a.GetVerb() != "list" {
				t.Errorf("unexpected %s %s", a.GetVerb(), a.GetResource().Resource)
			}
		}
		counts[n] = len(kube.Actions())
	}
	if counts[3] != counts[30] || counts[3] != 12 {
		t.Errorf("requests per Read: %v, want 12 for any number of ordinals (version, set, Pods, revisions, PVCs, PVs, Nodes, StorageClasses, capacities, CSIDrivers, CSINodes, PDBs)", counts)
	}
}

func TestReadWithoutLiveSet(t *testing.T) {
	t.Parallel()
	kube := fake.NewClientset()
	s, err := Read(context.Background(), kube, testSet(3), "olap", "olap")
	if err != nil {
		t.Fatal(err)
	}
	if s.Live != nil || s.Desired == nil {
		t.Errorf("live %v desired %v", s.Live, s.Desired)
	}
}

func TestDryRunApply(t *testing.T) {
	t.Parallel()
	gr := schema.GroupKind{Group: "apps", Kind: "StatefulSet"}
	forbidden := apierrors.NewInvalid(gr, "olap", field.ErrorList{
		field.Forbidden(field.NewPath("spec"), "updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', 'updateStrategy', 'revisionHistoryLimit', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden"),
	})
	immutable := apierrors.NewInvalid(gr, "olap", field.ErrorList{
		field.Invalid(field.NewPath("spec", "volumeClaimTemplates"), "[...]", "field is immutable"),
	})
	badManifest := apierrors.NewInvalid(gr, "olap", field.ErrorList{
		field.Invalid(field.NewPath("spec", "template", "metadata", "labels"), map[string]string{"app": "x"}, "`selector` does not match template `labels`"),
	})
	tests := map[string]struct {
		patchErr      error
		wantImmutable *planner.ImmutableChange
		wantErr       bool
		wantVerbs     []string
	}{
		"in-place update": {wantVerbs: []string{"patch"}},
		"immutable change": {
			patchErr:      forbidden,
			wantImmutable: &planner.ImmutableChange{Fields: []string{"spec"}, Message: forbidden.Error()},
			wantVerbs:     []string{"patch", "create"},
		},
		"field is immutable (1.37 volumeClaimTemplates)": {
			patchErr:      immutable,
			wantImmutable: &planner.ImmutableChange{Fields: []string{"spec.volumeClaimTemplates"}, Message: immutable.Error()},
			wantVerbs:     []string{"patch", "create"},
		},
		"bad manifest": {patchErr: badManifest, wantErr: true, wantVerbs: []string{"patch"}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			kube := fake.NewClientset()
			var patchOpts metav1.PatchOptions
			kube.PrependReactor("patch", "statefulsets", func(a k8stesting.Action) (bool, runtime.Object, error) {
				patchOpts = a.(k8stesting.PatchActionImpl).PatchOptions
				if tc.patchErr != nil {
					return true, nil, tc.patchErr
				}
				out := testSet(3)
				out.Spec.RevisionHistoryLimit = ptr.To[int32](10)
				return true, out, nil
			})
			var created *appsv1.StatefulSet
			kube.PrependReactor("create", "statefulsets", func(a k8stesting.Action) (bool, runtime.Object, error) {
				ca := a.(k8stesting.CreateActionImpl)
				if diff := cmp.Diff([]string{metav1.DryRunAll}, ca.CreateOptions.DryRun); diff != "" {
					t.Errorf("create without dry run: %s", diff)
				}
				created = ca.GetObject().(*appsv1.StatefulSet).DeepCopy()
				out := created.DeepCopy()
				out.Name = out.GenerateName + "x7k2q"
				out.UID = "tmp"
				out.Spec.RevisionHistoryLimit = ptr.To[int32](10)
				return true, out, nil
			})
			got, imm, err := DryRunApply(context.Background(), kube, testSet(3), "", true)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err %v, wantErr %v", err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.wantImmutable, imm); diff != "" {
				t.Errorf("immutable (-want +got):\n%s", diff)
			}
			var verbs []string
			for _, a := range kube.Actions() {
				verbs = append(verbs, a.GetVerb())
			}
			if diff := cmp.Diff(tc.wantVerbs, verbs); diff != "" {
				t.Errorf("verbs (-want +got):\n%s", diff)
			}
			if patchOpts.FieldManager != FieldManager || patchOpts.Force == nil || !*patchOpts.Force || len(patchOpts.DryRun) != 1 {
				t.Errorf("patch options %+v", patchOpts)
			}
			if tc.wantErr {
				if !apierrors.IsInvalid(err) {
					t.Errorf("error %v lost the API server's status", err)
				}
				return
			}
			if got == nil || got.Name != "olap" || got.UID != "" || got.Spec.RevisionHistoryLimit == nil {
				t.Errorf("defaulted object %+v", got)
			}
			if tc.wantImmutable != nil && (created == nil || created.Name != "" || created.GenerateName != "olap-") {
				t.Errorf("replacement dry run did not use a generated name: %+v", created)
			}
		})
	}
}

func TestReadRetriesTransientErrors(t *testing.T) {
	t.Parallel()
	// Nodes: two 503s, then the real answer. PVs: always 500. PDBs: 403.
	failures := func(kube *fake.Clientset, resource string, n int, err error) *int {
		calls := 0
		kube.PrependReactor("list", resource, func(k8stesting.Action) (bool, runtime.Object, error) {
			calls++
			if n < 0 || calls <= n {
				return true, nil, err
			}
			return false, nil, nil
		})
		return &calls
	}
	unavailable := apierrors.NewServiceUnavailable("etcd leader changed")

	kube := fake.NewClientset(world(3)...)
	nodeCalls := failures(kube, "nodes", 2, unavailable)
	s, err := Read(context.Background(), kube, testSet(3), "olap", "olap")
	if err != nil || len(s.Nodes) != 1 || *nodeCalls != 3 {
		t.Fatalf("two 503s then success: err %v, %d nodes, %d calls (want nil, 1, 3)", err, len(s.Nodes), *nodeCalls)
	}

	kube = fake.NewClientset(world(3)...)
	pvCalls := failures(kube, "persistentvolumes", -1, apierrors.NewInternalError(fmt.Errorf("boom")))
	if _, err := Read(context.Background(), kube, testSet(3), "olap", "olap"); !apierrors.IsInternalError(err) || *pvCalls != 4 {
		t.Fatalf("persistent 500: err %v after %d calls, want the 500 after 4", err, *pvCalls)
	}

	kube = fake.NewClientset(world(3)...)
	pdbCalls := failures(kube, "poddisruptionbudgets", -1, apierrors.NewForbidden(schema.GroupResource{Group: "policy", Resource: "poddisruptionbudgets"}, "", fmt.Errorf("RBAC")))
	if _, err := Read(context.Background(), kube, testSet(3), "olap", "olap"); !apierrors.IsForbidden(err) || *pdbCalls != 1 {
		t.Fatalf("403: err %v after %d calls, want it at once", err, *pdbCalls)
	}
}
