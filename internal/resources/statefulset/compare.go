package statefulset

import (
	"encoding/json"
	"fmt"
	"math/big"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
)

// fieldDiff is one field the user set whose stored value differs.
type fieldDiff struct {
	Path string // e.g. spec.updateStrategy.type, spec.template.spec.containers[name=olap].image
	Want any    // what the configuration says (nil: absent)
	Got  any    // what the API server stored (nil: absent)
}

func (d fieldDiff) String() string {
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

// userFieldDiffs walks only the fields present in want (what the user configured) and reports each
// leaf whose value in got (the object the API server stored) differs. Fields the server or other
// managers added are not the user's and are ignored. List elements that are objects with a "name"
// are matched by name (containers, volumes, ports, env), others by position.
func userFieldDiffs(want, got any) []fieldDiff {
	var out []fieldDiff
	walkDiff("", want, got, &out)
	return out
}

func walkDiff(p string, want, got any, out *[]fieldDiff) {
	if got == nil && isZero(want) {
		return // the API server omits zero values of optional fields (minReadySeconds: 0, labels: {})
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
		for _, k := range sortedKeys(w) {
			if w[k] == nil {
				continue
			}
			walkDiff(joinPath(p, k), w[k], g[k], out)
		}
	case []any:
		g, ok := got.([]any)
		if !ok {
			*out = append(*out, fieldDiff{Path: p, Want: want, Got: got})
			return
		}
		if !isKeyedList(w) {
			if len(w) != len(g) {
				*out = append(*out, fieldDiff{Path: p, Want: want, Got: got})
				return
			}
			for i := range w {
				walkDiff(fmt.Sprintf("%s[%d]", p, i), w[i], g[i], out)
			}
			return
		}
		for _, we := range w {
			name := nameOf(we)
			ge := findNamed(g, name)
			ep := fmt.Sprintf("%s[name=%s]", p, name)
			if ge == nil {
				*out = append(*out, fieldDiff{Path: ep, Want: we, Got: nil})
				continue
			}
			walkDiff(ep, we, ge, out)
		}
	default:
		if !leafEqual(want, got) {
			*out = append(*out, fieldDiff{Path: p, Want: want, Got: got})
		}
	}
}

// mergeLive returns want with every user-set field replaced by the live value where they differ,
// and fields missing live dropped: the state then shows drift as a diff against the configuration
// on the next plan. Values that are equal (also "0.5" vs "500m") keep the user's spelling.
func mergeLive(want, got any) any {
	switch w := want.(type) {
	case nil:
		return nil
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return got
		}
		out := make(map[string]any, len(w))
		for k, wv := range w {
			gv, present := g[k]
			if wv == nil {
				out[k] = nil
				continue
			}
			if !present {
				if isZero(wv) {
					out[k] = wv
				}
				continue
			}
			out[k] = mergeLive(wv, gv)
		}
		return out
	case []any:
		g, ok := got.([]any)
		if !ok {
			return got
		}
		if !isKeyedList(w) {
			if len(w) != len(g) {
				return g
			}
			out := make([]any, len(w))
			for i := range w {
				out[i] = mergeLive(w[i], g[i])
			}
			return out
		}
		out := make([]any, 0, len(w))
		for _, we := range w {
			ge := findNamed(g, nameOf(we))
			if ge == nil {
				continue
			}
			out = append(out, mergeLive(we, ge))
		}
		return out
	default:
		if leafEqual(want, got) {
			return want
		}
		return got
	}
}

func isKeyedList(l []any) bool {
	if len(l) == 0 {
		return false
	}
	for _, e := range l {
		m, ok := e.(map[string]any)
		if !ok {
			return false
		}
		if _, ok := m["name"].(string); !ok {
			return false
		}
	}
	return true
}

func findNamed(l []any, name string) map[string]any {
	for _, e := range l {
		if m, ok := e.(map[string]any); ok && m["name"] == name {
			return m
		}
	}
	return nil
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

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
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
	case map[string]any:
		return len(x) == 0
	case []any:
		return len(x) == 0
	}
	return false
}

// nameOf is the "name" of a list element that is an object with one ("" otherwise).
func nameOf(e any) string {
	m, _ := e.(map[string]any)
	s, _ := m["name"].(string)
	return s
}
