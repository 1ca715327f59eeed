package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"cloud.google.com/go/container/apiv1/containerpb"
	"google.golang.org/protobuf/encoding/protojson"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/olapgke/terraform-provider-olapgke/internal/sandbox/gke"
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
	hs := httptest.NewServer(controlHandler(srv))
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
