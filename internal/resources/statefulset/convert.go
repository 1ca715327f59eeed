package statefulset

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"sort"

	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-go/tftypes"
)

// The manifest is a schema.DynamicAttribute: whatever object the user wrote (yamldecode output or an
// HCL object). These helpers convert it to plain JSON values (map[string]any, []any, string, bool,
// json.Number, nil) and back. Numbers stay exact: integers are written as integers, never as floats.

// errNotKnown marks a manifest (or a part of it) that is unknown until apply; callers test it
// with errors.Is.
var errNotKnown = errors.New("value is not known yet")

// dynamicToJSON converts a known dynamic value to plain JSON values.
func dynamicToJSON(ctx context.Context, d types.Dynamic) (any, error) {
	if d.IsUnknown() || d.IsUnderlyingValueUnknown() {
		return nil, errNotKnown
	}
	if d.IsNull() || d.IsUnderlyingValueNull() {
		return nil, nil
	}
	tv, err := d.ToTerraformValue(ctx)
	if err != nil {
		return nil, err
	}
	return tfToJSON(tv, tftypes.NewAttributePath())
}

func tfToJSON(v tftypes.Value, p *tftypes.AttributePath) (any, error) {
	if !v.IsKnown() {
		return nil, p.NewError(errNotKnown)
	}
	if v.IsNull() {
		return nil, nil
	}
	t := v.Type()
	switch {
	case t.Is(tftypes.String):
		var s string
		err := v.As(&s)
		return s, err
	case t.Is(tftypes.Bool):
		var b bool
		err := v.As(&b)
		return b, err
	case t.Is(tftypes.Number):
		var f big.Float
		if err := v.As(&f); err != nil {
			return nil, err
		}
		return numberToJSON(&f), nil
	case t.Is(tftypes.Object{}), t.Is(tftypes.Map{}):
		var m map[string]tftypes.Value
		if err := v.As(&m); err != nil {
			return nil, err
		}
		out := make(map[string]any, len(m))
		for k, ev := range m {
			j, err := tfToJSON(ev, p.WithAttributeName(k))
			if err != nil {
				return nil, err
			}
			out[k] = j
		}
		return out, nil
	case t.Is(tftypes.List{}), t.Is(tftypes.Set{}), t.Is(tftypes.Tuple{}):
		var l []tftypes.Value
		if err := v.As(&l); err != nil {
			return nil, err
		}
		out := make([]any, 0, len(l))
		for i, ev := range l {
			j, err := tfToJSON(ev, p.WithElementKeyInt(i))
			if err != nil {
				return nil, err
			}
			out = append(out, j)
		}
		return out, nil
	}
	return nil, p.NewErrorf("unsupported value type %s", t)
}

func numberToJSON(f *big.Float) json.Number {
	if f.IsInt() {
		i, _ := f.Int(nil)
		return json.Number(i.String())
	}
	return json.Number(f.Text('g', -1))
}

// stripNulls removes null object attributes (HCL objects built with conditionals carry them; the
// API server would read an explicit null in an apply patch as "remove this field").
func stripNulls(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			if e == nil {
				continue
			}
			out[k] = stripNulls(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = stripNulls(e)
		}
		return out
	}
	return v
}

// decodeJSON decodes JSON bytes keeping numbers as json.Number.
func decodeJSON(b []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
}

// jsonToDynamic converts plain JSON values to a dynamic value. hint is the Terraform type of a
// previous value of the same manifest (may be nil): where the JSON still fits it, the same type is
// kept, so a value read back from the cluster does not show a spurious type change in plans
// (a list stays a list, a tuple a tuple). Elsewhere objects become objects and arrays tuples, which
// is what yamldecode produces.
func jsonToDynamic(ctx context.Context, v any, hint tftypes.Type) (types.Dynamic, error) {
	tv, err := jsonToTF(v, hint)
	if err != nil {
		return types.DynamicNull(), err
	}
	av, err := types.DynamicType.ValueFromTerraform(ctx, tv)
	if err != nil {
		return types.DynamicNull(), err
	}
	d, ok := av.(types.Dynamic)
	if !ok {
		return types.DynamicNull(), fmt.Errorf("unexpected value type %T", av)
	}
	return d, nil
}

func jsonToTF(v any, hint tftypes.Type) (tftypes.Value, error) {
	switch x := v.(type) {
	case nil:
		if hint != nil && !hint.Is(tftypes.DynamicPseudoType) {
			return tftypes.NewValue(hint, nil), nil
		}
		return tftypes.NewValue(tftypes.String, nil), nil
	case string:
		return tftypes.NewValue(tftypes.String, x), nil
	case bool:
		return tftypes.NewValue(tftypes.Bool, x), nil
	case json.Number:
		f, _, err := big.ParseFloat(string(x), 10, 512, big.ToNearestEven)
		if err != nil {
			return tftypes.Value{}, fmt.Errorf("number %q: %w", x, err)
		}
		return tftypes.NewValue(tftypes.Number, f), nil
	case float64:
		return tftypes.NewValue(tftypes.Number, new(big.Float).SetFloat64(x)), nil
	case int64:
		return tftypes.NewValue(tftypes.Number, new(big.Float).SetInt64(x)), nil
	case int:
		return tftypes.NewValue(tftypes.Number, new(big.Float).SetInt64(int64(x))), nil
	case map[string]any:
		return mapToTF(x, hint)
	case []any:
		return sliceToTF(x, hint)
	}
	return tftypes.Value{}, fmt.Errorf("unsupported JSON value %T", v)
}

func mapToTF(x map[string]any, hint tftypes.Type) (tftypes.Value, error) {
	keys := make([]string, 0, len(x))
	for k := range x {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	if mt, ok := hint.(tftypes.Map); ok {
		vals := make(map[string]tftypes.Value, len(x))
		fits := true
		for _, k := range keys {
			ev, err := jsonToTF(x[k], mt.ElementType)
			if err != nil {
				return tftypes.Value{}, err
			}
			if !ev.Type().Equal(mt.ElementType) {
				fits = false
				break
			}
			vals[k] = ev
		}
		if fits {
			return tftypes.NewValue(mt, vals), nil
		}
	}
	var hintAttrs map[string]tftypes.Type
	if ot, ok := hint.(tftypes.Object); ok {
		hintAttrs = ot.AttributeTypes
	}
	attrTypes := make(map[string]tftypes.Type, len(x))
	vals := make(map[string]tftypes.Value, len(x))
	for _, k := range keys {
		ev, err := jsonToTF(x[k], hintAttrs[k])
		if err != nil {
			return tftypes.Value{}, err
		}
		attrTypes[k] = ev.Type()
		vals[k] = ev
	}
	ot := tftypes.Object{AttributeTypes: attrTypes}
	return tftypes.NewValue(ot, vals), nil
}

func sliceToTF(x []any, hint tftypes.Type) (tftypes.Value, error) {
	var elemHint tftypes.Type
	switch ht := hint.(type) {
	case tftypes.List:
		elemHint = ht.ElementType
	case tftypes.Set:
		elemHint = ht.ElementType
	}
	if elemHint != nil {
		vals := make([]tftypes.Value, 0, len(x))
		fits := true
		for _, e := range x {
			ev, err := jsonToTF(e, elemHint)
			if err != nil {
				return tftypes.Value{}, err
			}
			if !ev.Type().Equal(elemHint) {
				fits = false
				break
			}
			vals = append(vals, ev)
		}
		if fits {
			if st, ok := hint.(tftypes.Set); ok {
				return tftypes.NewValue(st, vals), nil
			}
			return tftypes.NewValue(hint, vals), nil
		}
	}
	var hintElems []tftypes.Type
	if tt, ok := hint.(tftypes.Tuple); ok {
		hintElems = tt.ElementTypes
	}
	elemTypes := make([]tftypes.Type, 0, len(x))
	vals := make([]tftypes.Value, 0, len(x))
	for i, e := range x {
		var h tftypes.Type
		if i < len(hintElems) {
			h = hintElems[i]
		}
		ev, err := jsonToTF(e, h)
		if err != nil {
			return tftypes.Value{}, err
		}
		elemTypes = append(elemTypes, ev.Type())
		vals = append(vals, ev)
	}
	return tftypes.NewValue(tftypes.Tuple{ElementTypes: elemTypes}, vals), nil
}
