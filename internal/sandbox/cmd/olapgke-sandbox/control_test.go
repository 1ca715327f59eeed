package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"cloud.google.com/go/container/apiv1/containerpb"
	"google.golang.org/protobuf/encoding/protojson"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/olapgke/terraform-provider-olapgke/internal/sandbox/gke"
	"github.com/olapgke/terraform-provider-olapgke/internal/sandbox/topolvm"
)

func startControlTest(t *testing.T) (*fake.Clientset, *httptest.Server) {
	t.Helper()
	kube := fake.NewClientset()
	srv, err := gke.New(gke.Options{
		Kube: kube, OperationDelay: time.Millisecond, PollInterval: 5 * time.Millisecond,
		Clusters: []gke.ClusterSeed{{Project: "sandbox", Location: "us-central1-a", Name: "olap", Pools: []*containerpb.NodePool{
			{Name: "pool-a", InitialNodeCount: 1, Config: &containerpb.NodeConfig{MachineType: "n2-standard-8"}},
		}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Seed(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	hs := httptest.NewServer(controlHandler(srv, func(ctx context.Context, pool string) (poolReadiness, error) {
		return readPoolReadiness(ctx, kube, "topolvm-system", pool)
	}))
	t.Cleanup(hs.Close)
	return kube, hs
}

type controlAnswer struct {
	code  int
	body  string
	error struct {
		Code    int    `json:"code"`
		Status  string `json:"status"`
		Message string `json:"message"`
	}
}

func post(t *testing.T, url, body string) controlAnswer {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	a := controlAnswer{code: resp.StatusCode, body: string(b)}
	var e struct {
		Error *struct {
			Code    int    `json:"code"`
			Status  string `json:"status"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal([]byte(a.body), &e) == nil && e.Error != nil {
		a.error.Code, a.error.Status, a.error.Message = e.Error.Code, e.Error.Status, e.Error.Message
	}
	return a
}

func TestControlEndpoint(t *testing.T) {
	_, hs := startControlTest(t)

	a := post(t, hs.URL+"/v1/quota", `{"concurrentOperations": 1}`)
	if a.code != http.StatusOK || !strings.Contains(a.body, `"concurrentOperations":1`) {
		t.Fatalf("quota: %d %s", a.code, a.body)
	}
	a = post(t, hs.URL+"/v1/clusters/sandbox/us-central1-a/olap:operation", `{"type": "UPGRADE_MASTER", "seconds": 0.3}`)
	var op containerpb.Operation
	if a.code != http.StatusOK || protojson.Unmarshal([]byte(a.body), &op) != nil || op.GetOperationType() != containerpb.Operation_UPGRADE_MASTER {
		t.Fatalf("cluster operation: %d %s", a.code, a.body)
	}
	// The quota of 1 is held by the upgrade: Google's 429 with GKE's message.
	a = post(t, hs.URL+"/v1/clusters/sandbox/us-central1-a/olap:operation", `{"type": "UPDATE_CLUSTER", "seconds": 1}`)
	if a.code != http.StatusTooManyRequests || a.error.Status != "RESOURCE_EXHAUSTED" || !strings.Contains(a.error.Message, "concurrent operations quota 1") {
		t.Fatalf("second operation at quota 1: %d %s", a.code, a.body)
	}
	a = post(t, hs.URL+"/v1/quota/regional", `{"limits": {"N2_CPUS": 8}}`)
	if a.code != http.StatusOK || !strings.Contains(a.body, `"limits":{"N2_CPUS":8}`) {
		t.Fatalf("regional quota: %d %s", a.code, a.body)
	}
	a = post(t, hs.URL+"/v1/quota", `{"concurrentOperations": 0}`)
	if a.code != http.StatusOK || !strings.Contains(a.body, `"concurrentOperations":100`) {
		t.Fatalf("quota reset: %d %s", a.code, a.body)
	}
	a = post(t, hs.URL+"/v1/clusters/sandbox/us-central1-a/olap:operation", `{"type": "UPDATE_CLUSTER", "seconds": 1}`)
	if a.code != http.StatusBadRequest || a.error.Status != "FAILED_PRECONDITION" || !strings.Contains(a.error.Message, "is currently upgrading cluster olap") {
		t.Fatalf("second operation while upgrading: %d %s", a.code, a.body)
	}

	for name, tc := range map[string]struct {
		path, body string
		code       int
		status     string
	}{
		"bad mode":       {"/v1/nodes/gke-x:recreate", `{"mode": "reboot"}`, http.StatusBadRequest, "INVALID_ARGUMENT"},
		"unknown node":   {"/v1/nodes/gke-x:recreate", `{"mode": "new-name"}`, http.StatusNotFound, "NOT_FOUND"},
		"unknown field":  {"/v1/quota", `{"operations": 1}`, http.StatusBadRequest, "INVALID_ARGUMENT"},
		"unknown type":   {"/v1/clusters/sandbox/us-central1-a/olap:operation", `{"type": "UPGRADE", "seconds": 1}`, http.StatusBadRequest, "INVALID_ARGUMENT"},
		"no duration":    {"/v1/clusters/sandbox/us-central1-a/olap:operation", `{"type": "UPGRADE_MASTER"}`, http.StatusBadRequest, "INVALID_ARGUMENT"},
		"short path":     {"/v1/clusters/olap:operation", `{}`, http.StatusNotFound, "NOT_FOUND"},
		"unknown call":   {"/v1/nodes/gke-x:explode", `{}`, http.StatusNotFound, "NOT_FOUND"},
		"reboot unknown": {"/v1/nodes/gke-x:reboot", `{}`, http.StatusNotFound, "NOT_FOUND"},
		"reboot field":   {"/v1/nodes/gke-x:reboot", `{"mode": "hard"}`, http.StatusBadRequest, "INVALID_ARGUMENT"},
		"unknown prefix": {"/v2/quota", `{}`, http.StatusNotFound, "NOT_FOUND"},
		"disk unknown":   {"/v1/nodes/gke-x:disk", `{"nodefsUsedBytes": 1}`, http.StatusNotFound, "NOT_FOUND"},
		"disk field":     {"/v1/nodes/gke-x:disk", `{"usedBytes": 1}`, http.StatusBadRequest, "INVALID_ARGUMENT"},
		"quota negative": {"/v1/quota/regional", `{"limits": {"CPUS": -1}}`, http.StatusBadRequest, "INVALID_ARGUMENT"},
		"quota field":    {"/v1/quota/regional", `{"CPUS": 8}`, http.StatusBadRequest, "INVALID_ARGUMENT"},
	} {
		a := post(t, hs.URL+tc.path, tc.body)
		if a.code != tc.code || a.error.Status != tc.status || a.error.Code != tc.code {
			t.Errorf("%s: %d %s, want %d %s", name, a.code, a.body, tc.code, tc.status)
		}
	}
}

func TestControlRecreateWaitsForTheOperation(t *testing.T) {
	kube, hs := startControlTest(t)
	nodes, err := kube.CoreV1().Nodes().List(t.Context(), metav1.ListOptions{})
	if err != nil || len(nodes.Items) != 1 {
		t.Fatalf("nodes: %v %v", nodes, err)
	}
	n := nodes.Items[0]
	a := post(t, hs.URL+"/v1/nodes/"+n.Name+":recreate", `{"mode": "same-name"}`)
	var op containerpb.Operation
	if a.code != http.StatusOK || protojson.Unmarshal([]byte(a.body), &op) != nil ||
		op.GetStatus() != containerpb.Operation_DONE || op.GetOperationType() != containerpb.Operation_AUTO_REPAIR_NODES || op.GetError() != nil {
		t.Fatalf("recreate: %d %s", a.code, a.body)
	}
	after, err := kube.CoreV1().Nodes().Get(t.Context(), n.Name, metav1.GetOptions{})
	if err != nil || after.Status.NodeInfo.BootID == n.Status.NodeInfo.BootID || after.Annotations[gke.AnnotationRecreatedAt] == "" {
		t.Fatalf("node after the answer (the endpoint answers once the recreation is done): %v %v", after, err)
	}
}

// TestControlReboot: :reboot answers once the Node shows its new boot ID; the VM's identity
// (instance ID, system UUID, machine ID) and the Node object are kept, and the kubelet's
// Rebooted Event is recorded.
func TestControlReboot(t *testing.T) {
	kube, hs := startControlTest(t)
	nodes, err := kube.CoreV1().Nodes().List(t.Context(), metav1.ListOptions{})
	if err != nil || len(nodes.Items) != 1 {
		t.Fatalf("nodes: %v %v", nodes, err)
	}
	n := nodes.Items[0]
	a := post(t, hs.URL+"/v1/nodes/"+n.Name+":reboot", `{}`)
	var got struct{ Node, PreviousBootID, BootID string }
	if a.code != http.StatusOK || json.Unmarshal([]byte(a.body), &got) != nil || got.Node != n.Name ||
		got.PreviousBootID != n.Status.NodeInfo.BootID || got.BootID == "" || got.BootID == got.PreviousBootID {
		t.Fatalf("reboot: %d %s", a.code, a.body)
	}
	after, err := kube.CoreV1().Nodes().Get(t.Context(), n.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if after.UID != n.UID || after.Status.NodeInfo.BootID != got.BootID ||
		after.Status.NodeInfo.SystemUUID != n.Status.NodeInfo.SystemUUID || after.Status.NodeInfo.MachineID != n.Status.NodeInfo.MachineID ||
		after.Annotations[gke.AnnotationInstanceID] != n.Annotations[gke.AnnotationInstanceID] || after.Annotations[gke.AnnotationRecreatedAt] != "" {
		t.Fatalf("node after a reboot: %+v %v, before %+v %v", after.Status.NodeInfo, after.Annotations, n.Status.NodeInfo, n.Annotations)
	}
	evs, err := kube.CoreV1().Events(metav1.NamespaceDefault).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, e := range evs.Items {
		found = found || e.Reason == "Rebooted" && e.InvolvedObject.Name == n.Name && e.Message == "Node "+n.Name+" has been rebooted, boot id: "+got.BootID
	}
	if !found {
		t.Errorf("no Rebooted Event for %s: %v", n.Name, evs.Items)
	}
}

// TestControlDisk: :disk answers with the node filesystem and the kubelet's thresholds on it.
func TestControlDisk(t *testing.T) {
	kube, hs := startControlTest(t)
	nodes, err := kube.CoreV1().Nodes().List(t.Context(), metav1.ListOptions{})
	if err != nil || len(nodes.Items) != 1 {
		t.Fatalf("nodes: %v %v", nodes, err)
	}
	n := nodes.Items[0]
	a := post(t, hs.URL+"/v1/nodes/"+n.Name+":disk", `{"nodefsUsedBytes": 1073741824, "imagefsUsedBytes": 2147483648}`)
	var got gke.DiskReport
	capacity := n.Status.Capacity["ephemeral-storage"]
	if a.code != http.StatusOK || json.Unmarshal([]byte(a.body), &got) != nil || got.Node != n.Name || got.CapacityBytes != capacity.Value() ||
		got.AvailableBytes != capacity.Value()-3<<30 || len(got.Thresholds) != 1 || got.Thresholds[0].Signal != "nodefs.available" || got.Thresholds[0].Met {
		t.Fatalf("disk: %d %s", a.code, a.body)
	}
}

// TestControlPoolReady: GET /v1/nodepools/{pool}:ready answers, per node of the pool, the
// ready marker's rules plus cordons: not Ready yet; ready once TopoLVM's label and a positive
// CSIStorageCapacity for every topolvm.io StorageClass are there; not ready again when cordoned,
// or when the capacity is published as 0 while the node's annotation says there is space. A pool
// without nodes is not ready; a malformed path is 404.
func TestControlPoolReady(t *testing.T) {
	kube, hs := startControlTest(t)
	ctx := t.Context()
	get := func(path string) (int, poolReadiness) {
		t.Helper()
		res, err := http.Get(hs.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var ans poolReadiness
		if res.StatusCode == http.StatusOK {
			if err := json.NewDecoder(res.Body).Decode(&ans); err != nil {
				t.Fatal(err)
			}
		}
		return res.StatusCode, ans
	}
	check := func(step string, wantReady bool, wantReason string) {
		t.Helper()
		code, ans := get("/v1/nodepools/pool-a:ready")
		if code != http.StatusOK || ans.Pool != "pool-a" || len(ans.Nodes) != 1 {
			t.Fatalf("%s: %d %+v, want 200 with pool-a's one node", step, code, ans)
		}
		if ans.Ready != wantReady || ans.Nodes[0].Ready != wantReady || !strings.Contains(ans.Nodes[0].Reason, wantReason) {
			t.Errorf("%s: %+v, want ready %v, reason containing %q", step, ans, wantReady, wantReason)
		}
	}
	nodes, err := kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: gke.LabelNodePool + "=pool-a"})
	if err != nil || len(nodes.Items) != 1 {
		t.Fatalf("pool-a nodes: %v, %d", err, len(nodes.Items))
	}
	n := nodes.Items[0].DeepCopy()
	n.Status.Conditions = nil
	if _, err := kube.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	check("seeded, no Ready condition", false, "no Ready condition yet")

	n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}
	n.Labels[topolvm.TopologyKey] = n.Name
	n.Annotations[topolvm.DefaultCapacityKey] = "107374182400"
	if n, err = kube.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := kube.StorageV1().StorageClasses().Create(ctx, &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "topolvm"}, Provisioner: topolvm.DriverName}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	check("Ready, StorageClass without capacity", false, "has no CSIStorageCapacity for StorageClass topolvm")
	capacity := func(q string) *storagev1.CSIStorageCapacity {
		v := resource.MustParse(q)
		return &storagev1.CSIStorageCapacity{ObjectMeta: metav1.ObjectMeta{Name: "cap", Namespace: "topolvm-system"}, StorageClassName: "topolvm",
			NodeTopology: &metav1.LabelSelector{MatchLabels: map[string]string{topolvm.TopologyKey: n.Name}}, Capacity: &v}
	}
	if _, err := kube.StorageV1().CSIStorageCapacities("topolvm-system").Create(ctx, capacity("0"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	check("capacity published as 0", false, "says 0 while")
	if _, err := kube.StorageV1().CSIStorageCapacities("topolvm-system").Update(ctx, capacity("100Gi"), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	check("published", true, "")
	n.Spec.Unschedulable = true
	if _, err := kube.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	check("cordoned", false, "is cordoned")

	if code, ans := get("/v1/nodepools/no-such-pool:ready"); code != http.StatusOK || ans.Ready || len(ans.Nodes) != 0 {
		t.Errorf("pool without nodes: %d %+v, want 200, not ready, no nodes", code, ans)
	}
	if code, _ := get("/v1/nodepools/pool-a"); code != http.StatusNotFound {
		t.Errorf("GET /v1/nodepools/pool-a: %d, want 404", code)
	}
}
