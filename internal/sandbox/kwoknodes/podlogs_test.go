package kwoknodes

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

func logPod(name string, annotations map[string]string, state corev1.ContainerState) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, Annotations: annotations},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "copy", Image: "rsync",
			Env: []corev1.EnvVar{{Name: CopyClaimsEnv, Value: "data cache"}}}}},
		Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{Name: "copy", State: state}}},
	}
}

// TestKubeletHandler_ContainerLogs asks the handler as the API server asks a kubelet
// (pod strategy LogLocation's URL) and wants the kubelet's answers.
func TestKubeletHandler_ContainerLogs(t *testing.T) {
	start := time.Date(2026, 12, 6, 1, 0, 0, 0, time.UTC)
	now := start.Add(30 * time.Second)
	running := corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(start)}}
	kube := fake.NewClientset(
		logPod("lit", map[string]string{LogAnnotation: "one\ntwo\nthree"}, running),
		logPod("sink", map[string]string{CopyBytesAnnotation: "1073741824", RunForAnnotation: "100s"}, running),
		logPod("done", map[string]string{CopyBytesAnnotation: "1048576", RunForAnnotation: "10s"},
			corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{FinishedAt: metav1.NewTime(start.Add(10 * time.Second))}}),
		logPod("plain", nil, running),
		logPod("pulling", nil, corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}}),
	)
	srv := httptest.NewServer(KubeletHandler(kube, func() time.Time { return now }))
	defer srv.Close()
	get := func(path string) (int, string) {
		t.Helper()
		res, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	for _, c := range []struct {
		path   string
		status int
		body   string
	}{
		{"/containerLogs/ns/lit/copy", 200, "one\ntwo\nthree"},
		{"/containerLogs/ns/lit/copy?tailLines=1", 200, "three"},
		{"/containerLogs/ns/lit/copy?tail=2", 200, "two\nthree"},
		{"/containerLogs/ns/lit/copy?tail=all", 200, "one\ntwo\nthree"},
		{"/containerLogs/ns/lit/copy?limitBytes=5", 200, "one\nt"},
		{"/containerLogs/ns/lit/copy?timestamps=true&tailLines=1", 200, "2026-12-06T01:00:00.000000000Z three"},
		{"/containerLogs/ns/lit/copy?stream=Stderr", 200, ""},
		// 1 GiB a claim, 50 s a claim: 20.48 MiB/s; 30 s in, 59.99% (rsync floors it).
		{"/containerLogs/ns/sink/copy?tailLines=1", 200, "    644,245,094  59%   20.48MB/s    0:00:20  \n"},
		// Records at 25..30 s, the first of them.
		{"/containerLogs/ns/sink/copy?sinceSeconds=5&timestamps=true&limitBytes=77", 200,
			"2026-12-06T01:00:25.000000000Z     536,870,912  50%   20.48MB/s    0:00:25  \n"},
		{"/containerLogs/ns/done/copy?tailLines=2", 200,
			"      1,048,576 100%  204.80kB/s    0:00:05 (xfr#1, to-chk=0/2)\nTotal transferred file size: 1,048,576 bytes\n"},
		{"/containerLogs/ns/plain/copy", 200, ""},
		{"/containerLogs/ns/nope/copy", 404, `pod "nope" does not exist`},
		{"/containerLogs/ns/sink/nope", 404, `container "nope" not found in pod "sink"`},
		{"/containerLogs/ns/pulling/copy", 400, `container "copy" in pod "pulling" is waiting to start: ContainerCreating`},
		{"/containerLogs/ns/sink/copy?previous=true", 400, `previous terminated container "copy" in pod "sink" not found`},
		{"/containerLogs/ns/sink/copy?tailLines=-1", 422, `{"message": "Invalid request."}`},
		{"/stats/summary", 404, "404 page not found\n"},
	} {
		status, body := get(c.path)
		if status != c.status || body != c.body {
			t.Errorf("GET %s: %d %q, want %d %q", c.path, status, body, c.status, c.body)
		}
	}
	// The whole copy log 30 s into the first claim (50 s a claim): the header and 31 records.
	_, body := get("/containerLogs/ns/sink/copy")
	lines := strings.Split(strings.TrimSuffix(body, "\n"), "\n")
	if len(lines) != 32 || lines[0] != "olapgke-copy: claim data (1 of 2)" {
		t.Errorf("copy log: %d lines:\n%s", len(lines), body)
	}
}
