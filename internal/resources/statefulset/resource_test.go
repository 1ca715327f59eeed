package statefulset

import (
	"context"
	"strings"
	"testing"
)

func TestParseManifest(t *testing.T) {
	t.Parallel()
	cases := map[string]struct {
		in, ns, err string
	}{
		"namespace defaults":  {in: `{"apiVersion":"apps/v1","kind":"StatefulSet","metadata":{"name":"h"},"spec":{"serviceName":"h","replicas":3}}`, ns: "default"},
		"namespace kept":      {in: `{"apiVersion":"apps/v1","kind":"StatefulSet","metadata":{"name":"h","namespace":"olap"},"spec":{}}`, ns: "olap"},
		"wrong kind":          {in: `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"h"}}`, err: "apps/v1 StatefulSet only"},
		"no name":             {in: `{"apiVersion":"apps/v1","kind":"StatefulSet","metadata":{}}`, err: "no metadata.name"},
		"not an object":       {in: `["x"]`, err: "not an object"},
		"null fields dropped": {in: `{"apiVersion":"apps/v1","kind":"StatefulSet","metadata":{"name":"h","labels":null},"spec":{"minReadySeconds":null}}`, ns: "default"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			d, err := jsonToDynamic(ctx, mustDecode(t, tc.in), nil)
			if err != nil {
				t.Fatal(err)
			}
			m, err := parseManifest(ctx, d)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if m.Namespace != tc.ns || m.Obj["metadata"].(map[string]any)["namespace"] != tc.ns {
				t.Fatalf("namespace = %q / %v, want %q", m.Namespace, m.Obj["metadata"], tc.ns)
			}
			if _, ok := m.Obj["metadata"].(map[string]any)["labels"]; ok {
				t.Fatal("null labels were sent")
			}
			if spec, _ := m.Obj["spec"].(map[string]any); spec != nil {
				if _, ok := spec["minReadySeconds"]; ok {
					t.Fatal("null minReadySeconds was sent")
				}
			}
		})
	}
}
