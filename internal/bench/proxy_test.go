package bench

import (
	"encoding/pem"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/client-go/rest"
)

func TestRequestKey(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct{ method, url, want string }{
		"list nodes":      {"GET", "/api/v1/nodes", "LIST /api/v1/nodes"},
		"list pods in ns": {"GET", "/api/v1/namespaces/ns/pods?labelSelector=a%3Db", "LIST /api/v1/namespaces/ns/pods"},
		"get one pod":     {"GET", "/api/v1/namespaces/ns/pods/web-0", "GET /api/v1/namespaces/ns/pods/web-0"},
		"get namespace":   {"GET", "/api/v1/namespaces/ns", "GET /api/v1/namespaces/ns"},
		"list namespaces": {"GET", "/api/v1/namespaces", "LIST /api/v1/namespaces"},
		"group list":      {"GET", "/apis/apps/v1/namespaces/ns/controllerrevisions", "LIST /apis/apps/v1/namespaces/ns/controllerrevisions"},
		"watch":           {"GET", "/api/v1/namespaces/ns/pods?watch=true", "WATCH /api/v1/namespaces/ns/pods"},
		"dry run":         {"PATCH", "/apis/apps/v1/namespaces/ns/statefulsets/web?dryRun=All", "PATCH(dry-run) /apis/apps/v1/namespaces/ns/statefulsets/web"},
		"discovery":       {"GET", "/apis", "GET /apis"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			r := httptest.NewRequest(tc.method, tc.url, nil)
			if got := RequestKey(r); got != tc.want {
				t.Errorf("RequestKey(%s %s) = %q, want %q", tc.method, tc.url, got, tc.want)
			}
		})
	}
}

// TestProxyCountsAndForwards runs the proxy in front of a TLS server (as the API server is) and
// checks the request reaches it with the caller's token, the answer comes back, and Take counts.
func TestProxyCountsAndForwards(t *testing.T) {
	t.Parallel()
	var gotAuth string
	up := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotAuth = r.Header.Get("Authorization")
		_, _ = io.WriteString(w, "ok "+r.URL.Path)
	}))
	defer up.Close()
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: up.Certificate().Raw})
	p, err := NewProxy(&rest.Config{Host: up.URL, TLSClientConfig: rest.TLSClientConfig{CAData: ca}})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = p.Close() }()
	for _, path := range []string{"/api/v1/nodes", "/api/v1/nodes", "/api/v1/namespaces/ns/pods/web-0"} {
		req, _ := http.NewRequest("GET", p.URL+path, nil)
		req.Header.Set("Authorization", "Bearer tok")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if string(body) != "ok "+path {
			t.Errorf("GET %s through the proxy: body %q", path, body)
		}
	}
	if gotAuth != "Bearer tok" {
		t.Errorf("upstream saw Authorization %q, want the caller's bearer token", gotAuth)
	}
	want := Requests{"LIST /api/v1/nodes": 2, "GET /api/v1/namespaces/ns/pods/web-0": 1}
	if diff := cmp.Diff(want, p.Take()); diff != "" {
		t.Errorf("counts (-want +got):\n%s", diff)
	}
	if n := p.Take().Total(); n != 0 {
		t.Errorf("after Take, %d requests counted, want 0", n)
	}
}

func TestParseTimings(t *testing.T) {
	t.Parallel()
	log := []byte(`2026-11-30T00:40:01.123Z [DEBUG] provider.terraform-provider-olapgke: olapgke plan timing: @caller=/x/plan.go:60 @module=olapgke ms=123.456 ordinals=200 statefulset=bench/olap timestamp=...
2026-11-30T00:40:02.000Z [DEBUG] provider.terraform-provider-olapgke: other line ms=9
2026-11-30T00:40:03.000Z [DEBUG] provider.terraform-provider-olapgke: olapgke plan timing: cpu_ms=5.5 ms=7 ordinals=10
2026-11-30T00:40:04.000Z [DEBUG] provider.terraform-provider-olapgke: olapgke plan timing: ordinals=10 ms=8 cpu_ms=6.25`)
	ms, cpu := ParseTimings(log)
	if diff := cmp.Diff([]float64{123.456, 7, 8}, ms); diff != "" {
		t.Errorf("ParseTimings ms (-want +got):\n%s", diff)
	}
	// cpu_ms is not read as ms, and a line without it adds no CPU value.
	if diff := cmp.Diff([]float64{5.5, 6.25}, cpu); diff != "" {
		t.Errorf("ParseTimings cpu_ms (-want +got):\n%s", diff)
	}
}

// The phases line's fields come in any order (terraform-plugin-log writes a map); another
// line's fields on the same log must not leak into it.
func TestParsePhases(t *testing.T) {
	t.Parallel()
	log := []byte(`2026-12-06T05:14:56.000Z [DEBUG] provider.terraform-provider-olapgke: olapgke plan phases: planner_ms=896.358 snapshot_ms=1904.361 tf_rpc=PlanResourceChange dry_run_ms=6.802 nodes=5000
2026-12-06T05:14:56.100Z [DEBUG] provider.terraform-provider-olapgke: olapgke plan timing: ms=2930.614 ordinals=1000
2026-12-06T05:14:57.000Z [DEBUG] provider.terraform-provider-olapgke: olapgke plan phases: dry_run_ms=5 planner_cpu_ms=410 snapshot_ms=838.5 snapshot_cpu_ms=301.5 planner_ms=1036
2026-12-06T05:14:58.000Z [DEBUG] provider.terraform-provider-olapgke: other planner_ms=1`)
	want := []PlanPhases{{DryRun: 6.802, Snapshot: 1904.361, Planner: 896.358}, {DryRun: 5, Snapshot: 838.5, Planner: 1036, SnapshotCPU: 301.5, PlannerCPU: 410}}
	if diff := cmp.Diff(want, ParsePhases(log)); diff != "" {
		t.Errorf("ParsePhases (-want +got):\n%s", diff)
	}
	if got := phasesText(append(want, PlanPhases{DryRun: 9, Snapshot: 700, Planner: 400})); got != "; of it the snapshot's reads 838 ms, the planner 896 ms, the dry run 7 ms, medians" {
		t.Errorf("phasesText = %q", got)
	}
	// The CPU medians count only the lines that carry CPU times.
	if got := cpuPhasesText(append(want, PlanPhases{SnapshotCPU: 280, PlannerCPU: 390}, PlanPhases{SnapshotCPU: 320, PlannerCPU: 420})); got != "; of it the snapshot's reads 302 ms, the planner 410 ms" {
		t.Errorf("cpuPhasesText = %q", got)
	}
	if got := cpuPhasesText(want[:1]); got != "" {
		t.Errorf("cpuPhasesText without CPU fields = %q, want none", got)
	}
}
