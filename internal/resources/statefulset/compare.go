package statefulset

import (
	"encoding/json"
	"fmt"
	"math/big"
	"sort"
	"strings"
	"sync"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/client-go/applyconfigurations"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
	"sigs.k8s.io/structured-merge-diff/v6/typed"
	"sigs.k8s.io/structured-merge-diff/v6/value"
)

// fieldDiff is one field the user set whose stored value differs.
type fieldDiff struct {
	Path string // e.g. spec.updateStrategy.type, spec.template.spec.containers[name=olap].image
	Want any    // what the configuration says (nil: absent)
	Got  any    // what the API server stored (nil: absent)
	Err  error  // set when the two could not be compared at all
}

func (d fieldDiff) String() string {
	if d.Err != nil {
		return fmt.Sprintf("%s: cannot be compared with the StatefulSet schema of this\nprovider's Kubernetes client: %v", d.Path, d.Err)
	}
	return fmt.Sprintf("%s: configured %s, stored %s", d.Path, showJSON(d.Want), showJSON(d.Got))
}

func showJSON(v any) string {
	if v == nil {
		return "(absent)"
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	s := string(b)
	if len(s) > 120 {
		s = s[:117] + "..."
	}
	return s
}

// userFieldDiffs reports each field the user set (want, the manifest) whose value in got (the
// object the API server stored) differs. Fields the server or other managers added are not the
// user's and are ignored. Lists match the way server-side apply matches them: by the StatefulSet
// schema's list types and keys (see compareStatefulSets).
func userFieldDiffs(want, got any) []fieldDiff {
	c, err := compareStatefulSets(want, got)
	if err != nil {
		return []fieldDiff{{Path: "manifest", Err: err}}
	}
	var out []fieldDiff
	c.removed.Iterate(func(p fieldpath.Path) {
		out = append(out, fieldDiff{Path: pathString(p), Want: plainAt(c.wantV, p), Got: nil})
	})
	c.modified.Iterate(func(p fieldpath.Path) {
		atomicDiffs(pathString(p), plainAt(c.wantV, p), plainAt(c.gotV, p), &out)
	})
	sort.SliceStable(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}

// stsConverter turns StatefulSets into structured-merge-diff typed values with the schema
// server-side apply uses: client-go's applyconfigurations schema, of the same Kubernetes version as
// k8s.io/api. Its list types and keys say how list elements match (volumeMounts by mountPath,
// container ports by containerPort and protocol, containers and volumes by name) and which values
// are atomic (args, command, tolerations).
var stsConverter = sync.OnceValue(func() managedfields.TypeConverter {
	return applyconfigurations.NewTypeConverter(scheme.Scheme)
})

// comparison is the typed comparison of a manifest with a stored StatefulSet, reduced to drift.
type comparison struct {
	want, got   *typed.TypedValue
	wantV, gotV value.Value
	removed     *fieldpath.Set // set by the user, absent from the stored object (topmost paths)
	modified    *fieldpath.Set // set by the user, stored with a different value
}

// compareStatefulSets compares want (the manifest) with got (the stored object) with
// structured-merge-diff over the StatefulSet schema. Not drift:
//   - fields only got has (server defaults, other managers' fields);
//   - zero values the server omits (minReadySeconds: 0, labels: {});
//   - values equal as the server reads them (quantities "0.5" and "500m", 1 and "1");
//   - apiVersion and kind of embedded objects (volumeClaimTemplates): the server drops them.
func compareStatefulSets(want, got any) (*comparison, error) {
	wantV, err := statefulSetValue(want)
	if err != nil {
		return nil, fmt.Errorf("reading the manifest: %w", err)
	}
	gotV, err := statefulSetValue(got)
	if err != nil {
		return nil, fmt.Errorf("reading the stored object: %w", err)
	}
	wt, err := statefulSetTyped(wantV)
	if err != nil {
		return nil, fmt.Errorf("the manifest: %w", err)
	}
	gt, err := statefulSetTyped(gotV)
	if err != nil {
		return nil, fmt.Errorf("the stored object: %w", err)
	}
	cmp, err := wt.Compare(gt)
	if err != nil {
		return nil, err
	}
	c := &comparison{want: wt, got: gt, wantV: wantV, gotV: gotV, removed: fieldpath.NewSet(), modified: fieldpath.NewSet()}
	cmp.Removed.Iterate(func(p fieldpath.Path) {
		// Compare lists every node of a removed subtree; report its top only.
		for i := 1; i < len(p); i++ {
			if cmp.Removed.Has(p[:i]) {
				return
			}
		}
		if isZero(plainAt(wantV, p)) || embeddedTypeMeta(p) {
			return
		}
		c.removed.Insert(p)
	})
	cmp.Modified.Iterate(func(p fieldpath.Path) {
		if !covers(plainAt(wantV, p), plainAt(gotV, p)) {
			c.modified.Insert(p)
		}
	})
	return c, nil
}

// statefulSetValue is v (plain JSON values) as a structured-merge-diff value, without the null
// attributes HCL objects carry (they mean "not set"), with apiVersion and kind set if absent.
func statefulSetValue(v any) (value.Value, error) {
	m, ok := stripNulls(v).(map[string]any)
	if !ok {
		return nil, fmt.Errorf("not an object: %T", v)
	}
	if m["apiVersion"] == nil {
		m["apiVersion"] = appsv1.SchemeGroupVersion.String()
	}
	if m["kind"] == nil {
		m["kind"] = "StatefulSet"
	}
	b, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	return value.FromJSON(b)
}

func statefulSetTyped(v value.Value) (*typed.TypedValue, error) {
	m, ok := v.Unstructured().(map[string]any)
	if !ok {
		return nil, fmt.Errorf("not an object")
	}
	u := &unstructured.Unstructured{Object: m}
	// Only the StatefulSet schema applies; the manifest's own apiVersion and kind are checked
	// before the apply (and the server answered to apps/v1 StatefulSet).
	u.SetGroupVersionKind(appsv1.SchemeGroupVersion.WithKind("StatefulSet"))
	// The API server accepts duplicates in the lists it always accepted them in (env).
	return stsConverter().ObjectToTyped(u, typed.AllowDuplicates)
}

// embeddedTypeMeta: apiVersion or kind of an object embedded below the root (a
// volumeClaimTemplates element). The API server drops them; configured and absent is no drift.
func embeddedTypeMeta(p fieldpath.Path) bool {
	if len(p) < 2 || p[len(p)-1].FieldName == nil {
		return false
	}
	f := *p[len(p)-1].FieldName
	return f == "apiVersion" || f == "kind"
}

// valueAt is the value in v at p, nil if there is none. structured-merge-diff has no lookup by
// path, so this follows the path's elements itself: fields by name, list elements by their key
// fields (a key field an element leaves out is the schema's default, as for ports' protocol), by
// value (sets) or by index.
func valueAt(v value.Value, p fieldpath.Path) value.Value {
	for _, pe := range p {
		if v == nil || v.IsNull() {
			return nil
		}
		switch {
		case pe.FieldName != nil:
			if !v.IsMap() {
				return nil
			}
			x, ok := v.AsMap().Get(*pe.FieldName)
			if !ok {
				return nil
			}
			v = x
		case pe.Index != nil:
			if !v.IsList() || *pe.Index >= v.AsList().Length() {
				return nil
			}
			v = v.AsList().At(*pe.Index)
		default:
			if !v.IsList() {
				return nil
			}
			l := v.AsList()
			var found value.Value
			for i := 0; i < l.Length() && found == nil; i++ {
				if e := l.At(i); elementMatches(e, pe) {
					found = e
				}
			}
			v = found
		}
	}
	return v
}

func elementMatches(e value.Value, pe fieldpath.PathElement) bool {
	if pe.Value != nil {
		return value.Equals(e, *pe.Value)
	}
	if pe.Key == nil || !e.IsMap() {
		return false
	}
	for _, f := range *pe.Key {
		if x, ok := e.AsMap().Get(f.Name); ok && !value.Equals(x, f.Value) {
			return false
		}
	}
	return true
}

// plainAt is valueAt as plain JSON values (nil if absent).
func plainAt(v value.Value, p fieldpath.Path) any {
	x := valueAt(v, p)
	if x == nil {
		return nil
	}
	return x.Unstructured()
}

// pathString writes p as the diagnostics always have: dotted field names, list elements by their
// keys (containers[name=olap], volumeMounts[mountPath=/tmp],
// ports[containerPort=8123,protocol=TCP]), set elements by value ([=x]), others by index.
func pathString(p fieldpath.Path) string {
	s := ""
	for _, pe := range p {
		switch {
		case pe.FieldName != nil:
			s = joinPath(s, *pe.FieldName)
		case pe.Key != nil:
			parts := make([]string, 0, len(*pe.Key))
			for _, f := range *pe.Key {
				parts = append(parts, f.Name+"="+scalarString(f.Value))
			}
			s += "[" + strings.Join(parts, ",") + "]"
		case pe.Value != nil:
			s += "[=" + scalarString(*pe.Value) + "]"
		case pe.Index != nil:
			s += fmt.Sprintf("[%d]", *pe.Index)
		}
	}
	return s
}

func scalarString(v value.Value) string {
	if v.IsString() {
		return v.AsString()
	}
	return value.ToString(v)
}

// covers reports whether got holds every value want sets, equal as the server reads it.
func covers(want, got any) bool {
	var d []fieldDiff
	atomicDiffs("", want, got, &d)
	return len(d) == 0
}

// atomicDiffs appends the differences of the user's fields inside a scalar or an atomic value
// (args, tolerations, volumeClaimTemplates), which the typed comparison reports as modified when
// any byte differs. Inside those, as everywhere else, only what the user set counts: keys the
// server added are ignored, zero values may be omitted, quantities and numbers compare by amount,
// apiVersion and kind of embedded objects may be dropped. Atomic lists have no element keys: the
// API replaces them whole, so elements are named by position. No library has this "the user's
// fields, read as the server reads them" equality, so it is written here.
func atomicDiffs(p string, want, got any, out *[]fieldDiff) {
	if got == nil && isZero(want) {
		return
	}
	switch w := want.(type) {
	case nil:
		return
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			*out = append(*out, fieldDiff{Path: p, Want: want, Got: got})
			return
		}
		keys := make([]string, 0, len(w))
		for k := range w {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if _, stored := g[k]; !stored && p != "" && (k == "apiVersion" || k == "kind") {
				continue // embedded TypeMeta, see embeddedTypeMeta
			}
			atomicDiffs(joinPath(p, k), w[k], g[k], out)
		}
	case []any:
		g, ok := got.([]any)
		if !ok || len(w) != len(g) {
			*out = append(*out, fieldDiff{Path: p, Want: want, Got: got})
			return
		}
		for i := range w {
			atomicDiffs(fmt.Sprintf("%s[%d]", p, i), w[i], g[i], out)
		}
	default:
		if !leafEqual(want, got) {
			*out = append(*out, fieldDiff{Path: p, Want: want, Got: got})
		}
	}
}

// mergeLive returns want with every user-set field replaced by the live value where they differ,
// and fields missing live dropped: the state then shows drift as a diff against the configuration
// on the next plan. Values that are equal (also "0.5" vs "500m") keep the user's spelling. List
// elements match as in userFieldDiffs. If the two cannot be compared with the schema, want is
// returned unchanged (userFieldDiffs says why).
func mergeLive(want, got any) any {
	c, err := compareStatefulSets(want, got)
	if err != nil {
		return want
	}
	res := c.want.RemoveItems(c.removed)
	if !c.modified.Empty() {
		if res, err = res.Merge(c.got.ExtractItems(c.modified, typed.WithAppendKeyFields())); err != nil {
			return want
		}
	}
	b, err := json.Marshal(res.AsValue().Unstructured())
	if err != nil {
		return want
	}
	out, err := decodeJSON(b)
	if err != nil {
		return want
	}
	if w, ok := want.(map[string]any); ok {
		if m, ok := out.(map[string]any); ok {
			for _, k := range []string{"apiVersion", "kind"} { // statefulSetValue added them
				if _, set := w[k]; !set {
					delete(m, k)
				}
			}
		}
	}
	return restoreNulls(want, out)
}

// restoreNulls puts back want's null attributes, which the comparison leaves out, where the
// object holding them is still there, so the manifest keeps its Terraform type.
func restoreNulls(want, out any) any {
	switch w := want.(type) {
	case map[string]any:
		o, ok := out.(map[string]any)
		if !ok {
			return out
		}
		for k, wv := range w {
			if wv == nil {
				o[k] = nil
			} else if ov, ok := o[k]; ok {
				o[k] = restoreNulls(wv, ov)
			}
		}
		return o
	case []any:
		o, ok := out.([]any)
		if !ok || len(o) != len(w) {
			return out
		}
		for i := range w {
			o[i] = restoreNulls(w[i], o[i])
		}
		return o
	}
	return out
}

func joinPath(p, k string) string {
	if p == "" {
		return k
	}
	if strings.ContainsAny(k, "./") {
		return fmt.Sprintf("%s[%q]", p, k)
	}
	return p + "." + k
}

// leafEqual compares scalars the way the API server would read them: numbers by value, and
// quantities by amount ("0.5" == "500m", 1 == "1"), since the server canonicalises quantities.
func leafEqual(a, b any) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	as, aIsNum := scalarText(a)
	bs, bIsNum := scalarText(b)
	if aIsNum && bIsNum {
		return numEqual(as, bs)
	}
	if _, ok := a.(bool); ok {
		return a == b
	}
	if _, ok := b.(bool); ok {
		return false
	}
	if as == bs {
		return true
	}
	qa, errA := resource.ParseQuantity(as)
	qb, errB := resource.ParseQuantity(bs)
	return errA == nil && errB == nil && qa.Cmp(qb) == 0
}

func scalarText(v any) (string, bool) {
	switch x := v.(type) {
	case json.Number:
		return string(x), true
	case float64:
		return new(big.Float).SetFloat64(x).Text('g', -1), true
	case int64:
		return fmt.Sprint(x), true
	case int:
		return fmt.Sprint(x), true
	case string:
		return x, false
	}
	return fmt.Sprint(v), false
}

func numEqual(a, b string) bool {
	fa, _, errA := big.ParseFloat(a, 10, 512, big.ToNearestEven)
	fb, _, errB := big.ParseFloat(b, 10, 512, big.ToNearestEven)
	if errA != nil || errB != nil {
		return a == b
	}
	return fa.Cmp(fb) == 0
}

// isZero reports JSON zero values, which the API server leaves out of what it returns.
func isZero(v any) bool {
	switch x := v.(type) {
	case nil:
		return true
	case string:
		return x == ""
	case bool:
		return !x
	case json.Number:
		return numEqual(string(x), "0")
	case int64:
		return x == 0
	case float64:
		return x == 0
	case map[string]any:
		for _, e := range x {
			if !isZero(e) {
				return false
			}
		}
		return true // also {labels: {}}: the server omits all of it
	case []any:
		return len(x) == 0
	}
	return false
}
