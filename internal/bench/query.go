package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/olapgke/terraform-provider-olapgke/internal/fixture"
)

// QueryResult is `terraform query` of `list "olapgke_statefulset"` (include_resource = true)
// over namespaces holding N StatefulSets on TopoLVM storage (0 replicas: the list and each
// result's import and Read are measured, not Pods), for each N.
type QueryResult struct {
	Cells []QueryCell
	Err   string
}

// QueryCell is one N.
type QueryCell struct {
	Sets     int
	Listed   int
	Wall     time.Duration
	CPU      time.Duration
	Requests Requests
}

// PerSet is the API requests per listed StatefulSet at the largest N.
func (q QueryResult) PerSet() float64 {
	if len(q.Cells) == 0 || q.Cells[len(q.Cells)-1].Listed == 0 {
		return 0
	}
	c := q.Cells[len(q.Cells)-1]
	return float64(c.Requests.Total()) / float64(c.Listed)
}

// QueryScenario creates the StatefulSets (namespace query-<N>) and runs the query per N.
func QueryScenario(ctx context.Context, sb *Sandbox, proxy *Proxy, tfBin, providerDir, dir string, sizes []int, logf func(string, ...any)) QueryResult {
	var r QueryResult
	fail := func(format string, a ...any) QueryResult {
		r.Err = fmt.Sprintf(format, a...)
		logf("query: %s", r.Err)
		return r
	}
	token := sb.Token()
	for _, n := range sizes {
		ns := fmt.Sprintf("query-%d", n)
		if err := ensureNamespace(ctx, sb.Kube, ns); err != nil {
			return fail("%v", err)
		}
		for i := range n {
			set := fixture.Historical{Namespace: ns, Name: fmt.Sprintf("hist-%03d", i), Replicas: 0, Pool: "pool-a",
				Claim: Claim, StorageClass: StorageClass, Size: "1Gi"}.StatefulSet()
			if _, err := sb.Kube.AppsV1().StatefulSets(ns).Create(ctx, set, metav1.CreateOptions{}); err != nil {
				return fail("creating StatefulSet %s/%s: %v", ns, set.Name, err)
			}
		}
		qdir := filepath.Join(dir, ns)
		if err := os.MkdirAll(qdir, 0o755); err != nil {
			return fail("%v", err)
		}
		main := fmt.Sprintf(tfHeader, ProviderSource, fmt.Sprintf("    host  = %q\n    token = %q", proxy.URL, token))
		// limit: Terraform lists 100 results per list block unless told otherwise.
		query := fmt.Sprintf("list \"olapgke_statefulset\" \"all\" {\n  provider         = olapgke\n  include_resource = true\n  limit            = %d\n  config {\n    namespace = %q\n  }\n}\n", 2*n, ns)
		if err := writeFile(filepath.Join(qdir, "main.tf"), main); err != nil {
			return fail("%v", err)
		}
		if err := writeFile(filepath.Join(qdir, "all.tfquery.hcl"), query); err != nil {
			return fail("%v", err)
		}
		proxy.Take()
		tf := &Terraform{Bin: tfBin, Dir: qdir, ProviderDir: providerDir, Env: sb.Env}
		q, err := tf.Exec(ctx, "", "query", "-json")
		reqs := proxy.Take()
		if err != nil || q.ExitCode != 0 {
			return fail("terraform query over %d StatefulSets: exit %d, %v\n%s", n, q.ExitCode, err, tail(q.Output, 40))
		}
		listed := strings.Count(q.Output, `"type":"list_resource_found"`)
		r.Cells = append(r.Cells, QueryCell{Sets: n, Listed: listed, Wall: q.Wall, CPU: q.CPU, Requests: reqs})
		logf("query over %d StatefulSets: %d listed, wall %s, %d requests", n, listed, q.Wall.Round(time.Millisecond), reqs.Total())
	}
	return r
}
