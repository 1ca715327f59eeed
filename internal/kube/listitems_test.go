package kube

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
)

// encode is a list as the API server sends it, in the media type asked: client-go's own
// encoder (the protobuf one writes the "k8s\x00" envelope the server writes).
func encode(t *testing.T, obj runtime.Object, gv schema.GroupVersion, mediaType string) []byte {
	t.Helper()
	info, ok := runtime.SerializerInfoForMediaType(scheme.Codecs.SupportedMediaTypes(), mediaType)
	if !ok {
		t.Fatalf("no serializer for %s", mediaType)
	}
	b, err := runtime.Encode(scheme.Codecs.EncoderForVersion(info.Serializer, gv), obj)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func richNodes(n int) *corev1.NodeList {
	l := &corev1.NodeList{ListMeta: metav1.ListMeta{ResourceVersion: "42"}}
	for i := range n {
		l.Items = append(l.Items, corev1.Node{
			ObjectMeta: metav1.ObjectMeta{
				Name: fmt.Sprintf("gke-olap-pool-a-%03d", i), UID: "uid", ResourceVersion: "7",
				Labels:      map[string]string{"cloud.google.com/gke-nodepool": "pool-a", "topology.kubernetes.io/zone": "us-central1-a"},
				Annotations: map[string]string{"capacity.topolvm.io/ssd": "402653184000"},
				ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubelet", Operation: metav1.ManagedFieldsOperationUpdate,
					FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(`{"f:status":{}}`)}},
			},
			Spec: corev1.NodeSpec{Taints: []corev1.Taint{{Key: "olapgke.io/evacuating", Value: "pool-a", Effect: corev1.TaintEffectNoSchedule}}},
			Status: corev1.NodeStatus{
				Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("7910m"), corev1.ResourceMemory: resource.MustParse("27Gi")},
				Conditions:  []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady"}},
			},
		})
	}
	return l
}

// server answers every request with the next of answers (the last one repeats) and counts them.
func server(t *testing.T, answers ...func(http.ResponseWriter, *http.Request)) (*kubernetes.Clientset, *atomic.Int32) {
	t.Helper()
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		i := int(calls.Add(1)) - 1
		answers[min(i, len(answers)-1)](w, r)
	}))
	t.Cleanup(srv.Close)
	cs, err := kubernetes.NewForConfig(&rest.Config{Host: srv.URL, ContentConfig: rest.ContentConfig{ContentType: runtime.ContentTypeProtobuf}})
	if err != nil {
		t.Fatal(err)
	}
	return cs, &calls
}

func body(contentType string, b []byte) func(http.ResponseWriter, *http.Request) {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", contentType)
		_, _ = w.Write(b)
	}
}

func listNodes(ctx context.Context, cs kubernetes.Interface) ([]corev1.Node, error) {
	return ListItems[corev1.Node](ctx, cs.CoreV1().RESTClient(), "nodes", "", func(ctx context.Context, opts metav1.ListOptions) ([]corev1.Node, error) {
		l, err := cs.CoreV1().Nodes().List(ctx, opts)
		if err != nil {
			return nil, err
		}
		return l.Items, nil
	})
}

// noManagedFields is items with their managedFields dropped (copies; items is not changed).
func noManagedFields[T any](items []T) []T {
	out := make([]T, len(items))
	for i := range items {
		out[i] = items[i]
		if o, ok := any(&out[i]).(metav1.Object); ok {
			o.SetManagedFields(nil)
		}
	}
	return out
}

// TestListItemsDecodesAsClientGo: the items decoded one at a time from the server's protobuf are
// those client-go's typed client decodes from the same body but for their managedFields, for a
// rich list, an empty one and a namespaced one, and the request is the LIST the typed client
// makes.
func TestListItemsDecodesAsClientGo(t *testing.T) {
	ctx := context.Background()
	for _, n := range []int{0, 1, 50} {
		want := richNodes(n)
		pb := encode(t, want, corev1.SchemeGroupVersion, runtime.ContentTypeProtobuf)
		var path, accept string
		cs, calls := server(t, func(w http.ResponseWriter, r *http.Request) {
			if path == "" {
				path, accept = r.URL.Path, r.Header.Get("Accept") // ListItems' request
			}
			body(runtime.ContentTypeProtobuf, pb)(w, r)
		})
		got, err := listNodes(ctx, cs)
		if err != nil {
			t.Fatalf("%d nodes: %v", n, err)
		}
		typed, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if n > 0 && len(typed.Items[0].ManagedFields) == 0 {
			t.Fatal("the test's nodes have no managedFields to drop")
		}
		if len(got) != n || !apiequality.Semantic.DeepEqual(got, noManagedFields(typed.Items)) || (n > 0 && !apiequality.Semantic.DeepEqual(got, noManagedFields(want.Items))) {
			t.Fatalf("%d nodes: ListItems decoded %d items, not those of client-go (%d) without managedFields", n, len(got), len(typed.Items))
		}
		if cap(got) > 3*n+1 {
			t.Fatalf("%d nodes in a slice of capacity %d: the capacity hint is off", n, cap(got))
		}
		if path != "/api/v1/nodes" || accept != runtime.ContentTypeProtobuf || calls.Load() != 2 {
			t.Fatalf("%d nodes: ListItems asked for %s (Accept %q), %d requests for two LISTs", n, path, accept, calls.Load())
		}
	}

	pods := &corev1.PodList{Items: []corev1.Pod{{ObjectMeta: metav1.ObjectMeta{Namespace: "olap", Name: "olap-0"},
		Spec: corev1.PodSpec{NodeName: "n1", Containers: []corev1.Container{{Name: "c", Image: "druid"}}}}}}
	var path string
	cs, _ := server(t, func(w http.ResponseWriter, r *http.Request) {
		path = r.URL.Path
		body(runtime.ContentTypeProtobuf, encode(t, pods, corev1.SchemeGroupVersion, runtime.ContentTypeProtobuf))(w, r)
	})
	got, err := ListItems[corev1.Pod](ctx, cs.CoreV1().RESTClient(), "pods", "olap", nil)
	if err != nil || path != "/api/v1/namespaces/olap/pods" || !apiequality.Semantic.DeepEqual(got, pods.Items) {
		t.Fatalf("namespaced list: %v at %s, %d items", err, path, len(got))
	}
}

// TestListItemsFallsBackAndRetries: a JSON answer goes to the typed client, a transient error is
// retried, a refusal is returned, and a fake clientset (no REST client) uses the typed client.
func TestListItemsFallsBackAndRetries(t *testing.T) {
	ctx := context.Background()
	old := TransientBackoff
	TransientBackoff.Duration = 0
	t.Cleanup(func() { TransientBackoff = old })
	want := richNodes(3)
	pb := encode(t, want, corev1.SchemeGroupVersion, runtime.ContentTypeProtobuf)
	js := encode(t, want, corev1.SchemeGroupVersion, runtime.ContentTypeJSON)
	status := func(code int, reason metav1.StatusReason) func(http.ResponseWriter, *http.Request) {
		st := &metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusFailure, Code: int32(code), Reason: reason, Message: string(reason)}
		return func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", runtime.ContentTypeJSON)
			w.WriteHeader(code)
			_, _ = w.Write(encode(t, st, metav1.SchemeGroupVersion, runtime.ContentTypeJSON))
		}
	}

	cs, calls := server(t, body(runtime.ContentTypeJSON, js))
	if got, err := listNodes(ctx, cs); err != nil || !apiequality.Semantic.DeepEqual(got, noManagedFields(want.Items)) || calls.Load() != 2 {
		t.Errorf("JSON answer: %v, %d items in %d requests; want the typed client's 3 (without managedFields) in 2", err, len(got), calls.Load())
	}
	cs, calls = server(t, status(http.StatusServiceUnavailable, metav1.StatusReasonServiceUnavailable), body(runtime.ContentTypeProtobuf, pb))
	if got, err := listNodes(ctx, cs); err != nil || len(got) != 3 || calls.Load() != 2 {
		t.Errorf("503 then the list: %v, %d items in %d requests; want 3 in 2", err, len(got), calls.Load())
	}
	cs, calls = server(t, status(http.StatusForbidden, metav1.StatusReasonForbidden))
	if _, err := listNodes(ctx, cs); err == nil || calls.Load() != 1 {
		t.Errorf("403: %v after %d requests; want the refusal after 1", err, calls.Load())
	}
	fc := fake.NewClientset(&want.Items[0])
	if got, err := listNodes(ctx, fc); err != nil || len(got) != 1 || !apiequality.Semantic.DeepEqual(got, noManagedFields(want.Items[:1])) {
		t.Errorf("fake clientset: %v, %d items; want the first node without managedFields", err, len(got))
	}
}

// TestDecodeItemsCutShort: a body cut at any byte is an error (a transient one once past the
// prefix), or, cut after the list's last byte, the whole list: never a shorter list.
func TestDecodeItemsCutShort(t *testing.T) {
	want := richNodes(3)
	pb := encode(t, want, corev1.SchemeGroupVersion, runtime.ContentTypeProtobuf)
	full := 0
	for i := range len(pb) {
		got, err := DecodeItems[corev1.Node](bytes.NewReader(pb[:i]))
		switch {
		case err == nil && len(got) == len(want.Items):
			full++
		case err == nil:
			t.Fatalf("cut at %d of %d bytes: %d items and no error", i, len(pb), len(got))
		case i >= 4 && !errors.Is(err, io.ErrUnexpectedEOF) && !IsTransient(err):
			t.Fatalf("cut at %d of %d bytes: %v is not transient", i, len(pb), err)
		}
	}
	if got, err := DecodeItems[corev1.Node](bytes.NewReader(pb)); err != nil || len(got) != 3 {
		t.Fatalf("whole body: %v, %d items", err, len(got))
	}
	if full > 8 {
		t.Fatalf("%d cuts decoded as the whole list: only cuts in the envelope's last fields can", full)
	}
}

// TestWithoutManagedFields: an object's bytes without its managedFields decode to the object
// without them, every other field kept (fields before and after them in the metadata, spec and
// status); an object without them, or bytes that are not a message, come back as they are.
func TestWithoutManagedFields(t *testing.T) {
	t.Parallel()
	ts := metav1.NewTime(metav1.Now().Rfc3339Copy().Time)
	pod := corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "olap-3", Namespace: "olap", UID: "u", ResourceVersion: "9", Generation: 2,
			CreationTimestamp: ts, Labels: map[string]string{"app": "hist"}, Annotations: map[string]string{"a": "b"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "olap", UID: "s"}},
			Finalizers:      []string{"f"},
			ManagedFields: []metav1.ManagedFieldsEntry{
				{Manager: "kube-controller-manager", Operation: metav1.ManagedFieldsOperationUpdate, Time: &ts, FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(`{"f:metadata":{}}`)},
				{Manager: "kubelet", Operation: metav1.ManagedFieldsOperationUpdate, Subresource: "status", FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(`{"f:status":{}}`)},
			}},
		Spec:   corev1.PodSpec{NodeName: "n1", Containers: []corev1.Container{{Name: "c", Image: "druid"}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning},
	}
	b, err := pod.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	stripped, _ := withoutManagedFields(b, nil)
	if len(stripped) >= len(b) {
		t.Fatalf("%d bytes without managedFields, %d with", len(stripped), len(b))
	}
	var got corev1.Pod
	if err := got.Unmarshal(stripped); err != nil {
		t.Fatal(err)
	}
	want := pod.DeepCopy()
	want.ManagedFields = nil
	if !apiequality.Semantic.DeepEqual(&got, want) {
		t.Errorf("decoded %+v\nwant %+v", got, want)
	}
	// The scratch buffer is reused: a second object written into it is whole.
	node := richNodes(1).Items[0]
	nb, _ := node.Marshal()
	ns, _ := withoutManagedFields(nb, stripped[:0])
	var gotNode corev1.Node
	if err := gotNode.Unmarshal(ns); err != nil || len(gotNode.ManagedFields) != 0 || gotNode.Name != node.Name || !apiequality.Semantic.DeepEqual(gotNode.Status, node.Status) {
		t.Errorf("node through a reused buffer: %v, %+v", err, gotNode)
	}

	pod.ManagedFields = nil
	plain, _ := pod.Marshal()
	if same, _ := withoutManagedFields(plain, nil); !bytes.Equal(same, plain) || &same[0] != &plain[0] {
		t.Error("an object without managedFields was rewritten")
	}
	for _, junk := range [][]byte{{0x0a, 0x7f}, {0xff}, {}} {
		if same, _ := withoutManagedFields(junk, nil); !bytes.Equal(same, junk) {
			t.Errorf("bytes %x that are not a message came back as %x", junk, same)
		}
	}
}
