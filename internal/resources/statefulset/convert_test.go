package statefulset

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-go/tftypes"
)

func mustDecode(t *testing.T, s string) any {
	t.Helper()
	v, err := decodeJSON([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestJSONRoundTrip(t *testing.T) {
	t.Parallel()
	cases := map[string]string{
		"ints stay ints":     `{"spec":{"replicas":3,"minReadySeconds":10,"updateStrategy":{"rollingUpdate":{"partition":2,"maxUnavailable":"50%"}}}}`,
		"big int exact":      `{"n":9007199254740993}`,
		"float kept":         `{"cpu":0.5}`,
		"nested arrays":      `{"containers":[{"name":"a","ports":[{"containerPort":8080}]},{"name":"b","args":["x","y"]}]}`,
		"bools and strings":  `{"a":true,"b":false,"c":""}`,
		"empty collections":  `{"a":{},"b":[]}`,
		"heterogeneous list": `{"a":[1,"x",{"k":"v"}]}`,
	}
	for name, in := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			want := mustDecode(t, in)
			d, err := jsonToDynamic(ctx, want, nil)
			if err != nil {
				t.Fatal(err)
			}
			got, err := dynamicToJSON(ctx, d)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Fatalf("round trip (-want +got):\n%s", diff)
			}
			b, _ := json.Marshal(got)
			if diff := cmp.Diff(string(mustMarshal(t, want)), string(b)); diff != "" {
				t.Fatalf("JSON text (-want +got):\n%s", diff)
			}
		})
	}
}

func mustMarshal(t *testing.T, v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestDynamicFromHCLShapes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	// An HCL object with a list(string) and a map(number), as tolist()/tomap() produce.
	obj := tftypes.NewValue(tftypes.Object{AttributeTypes: map[string]tftypes.Type{
		"args":   tftypes.List{ElementType: tftypes.String},
		"limits": tftypes.Map{ElementType: tftypes.Number},
		"unset":  tftypes.String,
	}}, map[string]tftypes.Value{
		"args":   tftypes.NewValue(tftypes.List{ElementType: tftypes.String}, []tftypes.Value{tftypes.NewValue(tftypes.String, "a")}),
		"limits": tftypes.NewValue(tftypes.Map{ElementType: tftypes.Number}, map[string]tftypes.Value{"n": tftypes.NewValue(tftypes.Number, 4)}),
		"unset":  tftypes.NewValue(tftypes.String, nil),
	})
	av, err := types.DynamicType.ValueFromTerraform(ctx, obj)
	if err != nil {
		t.Fatal(err)
	}
	got, err := dynamicToJSON(ctx, av.(types.Dynamic))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"args": []any{"a"}, "limits": map[string]any{"n": json.Number("4")}, "unset": nil}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]any{"args": []any{"a"}, "limits": map[string]any{"n": json.Number("4")}}, stripNulls(got)); diff != "" {
		t.Fatalf("stripNulls (-want +got):\n%s", diff)
	}
	// Converting back with the original type as hint keeps list and map types (no spurious diff).
	back, err := jsonToDynamic(ctx, got, obj.Type())
	if err != nil {
		t.Fatal(err)
	}
	if !back.Equal(av) {
		t.Fatalf("hinted conversion changed the value: got %s want %s", back, av)
	}
}

func TestDynamicUnknown(t *testing.T) {
	t.Parallel()
	if _, err := dynamicToJSON(context.Background(), types.DynamicUnknown()); !errors.Is(err, errNotKnown) {
		t.Fatalf("unknown manifest: got %v, want errNotKnown", err)
	}
	// A value unknown deep inside (an image from another resource) is errNotKnown too, with
	// its path: ModifyPlan tells it from a bad manifest by errors.Is, not by the message.
	obj := tftypes.NewValue(tftypes.Object{AttributeTypes: map[string]tftypes.Type{"image": tftypes.String}},
		map[string]tftypes.Value{"image": tftypes.NewValue(tftypes.String, tftypes.UnknownValue)})
	_, err := tfToJSON(obj, tftypes.NewAttributePath())
	if !errors.Is(err, errNotKnown) || !strings.Contains(err.Error(), "image") {
		t.Fatalf("nested unknown: got %v, want errNotKnown at image", err)
	}
}

func TestUserFieldDiffs(t *testing.T) {
	t.Parallel()
	cases := map[string]struct {
		want, got string
		paths     []string
	}{
		"server defaults ignored": {
			want: `{"spec":{"replicas":3}}`,
			got:  `{"spec":{"replicas":3,"podManagementPolicy":"OrderedReady"},"status":{}}`,
		},
		"mutated strategy": {
			want:  `{"spec":{"updateStrategy":{"type":"RollingUpdate"}}}`,
			got:   `{"spec":{"updateStrategy":{"type":"OnDelete"}}}`,
			paths: []string{"spec.updateStrategy.type"},
		},
		"quantities canonicalised": {
			want: `{"spec":{"template":{"spec":{"containers":[{"name":"a","resources":{"limits":{"cpu":0.5,"memory":"1Gi","nvidia.com/gpu":1}}}]}}}}`,
			got:  `{"spec":{"template":{"spec":{"containers":[{"name":"a","resources":{"limits":{"cpu":"500m","memory":"1Gi","nvidia.com/gpu":"1"}}}]}}}}`,
		},
		"containers by name": {
			want:  `{"spec":{"template":{"spec":{"containers":[{"name":"a","image":"x:1"},{"name":"b","image":"y:1"}]}}}}`,
			got:   `{"spec":{"template":{"spec":{"containers":[{"name":"sidecar","image":"s"},{"name":"b","image":"y:2"},{"name":"a","image":"x:1"}]}}}}`,
			paths: []string{"spec.template.spec.containers[name=b].image"},
		},
		"missing field": {
			want:  `{"metadata":{"labels":{"app.kubernetes.io/name":"x"}}}`,
			got:   `{"metadata":{"labels":{}}}`,
			paths: []string{`metadata.labels["app.kubernetes.io/name"]`},
		},
		"zero values omitted by the server": {
			want: `{"metadata":{"labels":{}},"spec":{"minReadySeconds":0,"template":{"spec":{"hostNetwork":false,"containers":[{"name":"a","args":[]}]}}}}`,
			got:  `{"spec":{"template":{"spec":{"containers":[{"name":"a"}]}}}}`,
		},
		"scalar list changed length": {
			want:  `{"spec":{"template":{"spec":{"containers":[{"name":"a","args":["a","b"]}]}}}}`,
			got:   `{"spec":{"template":{"spec":{"containers":[{"name":"a","args":["a"]}]}}}}`,
			paths: []string{"spec.template.spec.containers[name=a].args"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var paths []string
			for _, d := range userFieldDiffs(mustDecode(t, tc.want), mustDecode(t, tc.got)) {
				paths = append(paths, d.Path)
			}
			if diff := cmp.Diff(tc.paths, paths); diff != "" {
				t.Fatalf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestMergeLive(t *testing.T) {
	t.Parallel()
	want := mustDecode(t, `{"spec":{"replicas":3,"updateStrategy":{"type":"RollingUpdate","rollingUpdate":{"partition":1}},"template":{"spec":{"containers":[{"name":"a","image":"x:1","resources":{"limits":{"cpu":0.5}}}]}}}}`)
	got := mustDecode(t, `{"spec":{"replicas":3,"updateStrategy":{"type":"OnDelete"},"template":{"spec":{"containers":[{"name":"a","image":"x:2","imagePullPolicy":"Always","resources":{"limits":{"cpu":"500m"}}}]}}},"status":{"replicas":3}}`)
	exp := mustDecode(t, `{"spec":{"replicas":3,"updateStrategy":{"type":"OnDelete"},"template":{"spec":{"containers":[{"name":"a","image":"x:2","resources":{"limits":{"cpu":0.5}}}]}}}}`)
	if diff := cmp.Diff(exp, mergeLive(want, got)); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}
}
