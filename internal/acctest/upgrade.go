package acctest

import (
	"context"
	"math/big"
	"testing"

	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"github.com/hashicorp/terraform-plugin-go/tftypes"

	"github.com/olapgke/terraform-provider-olapgke/internal/provider"
)

// UpgradeState sends Terraform's UpgradeResourceState RPC for resource type typeName to the
// provider, with rawJSON as the JSON state written at schema version, and returns the upgraded
// state as plain Go values (objects as maps, lists as slices, numbers as float64), after
// checking it conforms to the current schema. It fails the test on any diagnostic.
func UpgradeState(t *testing.T, typeName string, version int64, rawJSON string) map[string]any {
	t.Helper()
	return upgradeState(t, typeName, version, rawJSON, false)
}

// DecodeState is UpgradeState for a state written at the current schema version (Terraform sends
// every stored state through UpgradeResourceState, also one written before attributes were added
// without a version change).
func DecodeState(t *testing.T, typeName string, version int64, rawJSON string) map[string]any {
	t.Helper()
	return upgradeState(t, typeName, version, rawJSON, true)
}

func upgradeState(t *testing.T, typeName string, version int64, rawJSON string, current bool) map[string]any {
	t.Helper()
	ctx := context.Background()
	srv, err := ProtoV6ProviderFactories[provider.TypeName]()
	if err != nil {
		t.Fatal(err)
	}
	schemas, err := srv.GetProviderSchema(ctx, &tfprotov6.GetProviderSchemaRequest{})
	if err != nil {
		t.Fatal(err)
	}
	s, ok := schemas.ResourceSchemas[typeName]
	if !ok {
		t.Fatalf("the provider has no resource %s", typeName)
	}
	if !current && s.Version <= version {
		t.Fatalf("%s is at schema version %d, not above %d", typeName, s.Version, version)
	}
	if current && s.Version != version {
		t.Fatalf("%s is at schema version %d, not %d", typeName, s.Version, version)
	}
	resp, err := srv.UpgradeResourceState(ctx, &tfprotov6.UpgradeResourceStateRequest{
		TypeName: typeName, Version: version, RawState: &tfprotov6.RawState{JSON: []byte(rawJSON)},
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range resp.Diagnostics {
		t.Errorf("UpgradeResourceState: %s: %s: %s", d.Severity, d.Summary, d.Detail)
	}
	if t.Failed() {
		t.FailNow()
	}
	v, err := resp.UpgradedState.Unmarshal(s.ValueType())
	if err != nil {
		t.Fatalf("the upgraded state does not conform to the schema: %v", err)
	}
	out, ok := goValue(t, v).(map[string]any)
	if !ok {
		t.Fatalf("the upgraded state is not an object")
	}
	return out
}

// goValue converts a known tftypes value to plain Go values.
func goValue(t *testing.T, v tftypes.Value) any {
	t.Helper()
	if v.IsNull() {
		return nil
	}
	if !v.IsKnown() {
		t.Fatalf("unknown value in state: %s", v)
	}
	typ := v.Type()
	switch {
	case typ.Is(tftypes.String):
		var s string
		must(t, v.As(&s))
		return s
	case typ.Is(tftypes.Bool):
		var b bool
		must(t, v.As(&b))
		return b
	case typ.Is(tftypes.Number):
		var f big.Float
		must(t, v.As(&f))
		x, _ := f.Float64()
		return x
	case typ.Is(tftypes.List{}), typ.Is(tftypes.Set{}), typ.Is(tftypes.Tuple{}):
		var elems []tftypes.Value
		must(t, v.As(&elems))
		out := make([]any, 0, len(elems))
		for _, e := range elems {
			out = append(out, goValue(t, e))
		}
		return out
	case typ.Is(tftypes.Object{}), typ.Is(tftypes.Map{}):
		var attrs map[string]tftypes.Value
		must(t, v.As(&attrs))
		out := make(map[string]any, len(attrs))
		for k, e := range attrs {
			out[k] = goValue(t, e)
		}
		return out
	}
	t.Fatalf("unexpected type %s in state", typ)
	return nil
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
