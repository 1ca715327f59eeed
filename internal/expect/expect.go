// Package expect decides whether an object someone else writes (an operator's StatefulSet) holds
// the fields a user expects: a partial object compared with the live one, leaf by leaf, and for
// each field that does not hold, the field manager that owns it (from managedFields). Pure: JSON
// values in, mismatches out.
package expect

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Mismatch is one expected field the object does not hold.
type Mismatch struct {
	// Path is the field, dotted (spec.updateStrategy.type, spec.template.spec.containers[0].image).
	Path string
	// Expected and Actual are the values as compact JSON; Actual is "" when Missing.
	Expected, Actual string
	Missing          bool
	// Manager is the field manager owning the field (or its nearest owned parent), "" when none.
	Manager string

	segments []string
}

// Compare reports every leaf of expected that actual does not hold. Objects are compared key by
// key (keys actual has beyond expected are fine), lists element by element (an expected list
// must have as many elements as the actual one; each element is compared partially again), and
// scalars by value (numbers as numbers: 1 equals 1.0).
func Compare(expected, actual any) []Mismatch {
	var out []Mismatch
	compare(nil, expected, actual, &out)
	sort.SliceStable(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}

func compare(at []string, exp, act any, out *[]Mismatch) {
	switch e := exp.(type) {
	case map[string]any:
		a, ok := act.(map[string]any)
		if !ok {
			*out = append(*out, mismatch(at, exp, act, act == nil))
			return
		}
		for k, ev := range e {
			av, present := a[k]
			if !present {
				*out = append(*out, mismatch(append(clone(at), k), ev, nil, true))
				continue
			}
			compare(append(clone(at), k), ev, av, out)
		}
	case []any:
		a, ok := act.([]any)
		if !ok || len(a) != len(e) {
			*out = append(*out, mismatch(at, exp, act, act == nil))
			return
		}
		for i := range e {
			compare(append(clone(at), "["+strconv.Itoa(i)+"]"), e[i], a[i], out)
		}
	default:
		if !scalarEqual(exp, act) {
			*out = append(*out, mismatch(at, exp, act, act == nil))
		}
	}
}

func scalarEqual(a, b any) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	na, aNum := number(a)
	nb, bNum := number(b)
	if aNum && bNum {
		return na == nb
	}
	return compact(a) == compact(b)
}

func number(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, true
	case int64:
		return float64(x), true
	case int:
		return float64(x), true
	case json.Number:
		f, err := x.Float64()
		return f, err == nil
	}
	return 0, false
}

func mismatch(at []string, exp, act any, missing bool) Mismatch {
	m := Mismatch{Path: dotted(at), Expected: compact(exp), Missing: missing, segments: at}
	if !missing {
		m.Actual = compact(act)
	}
	return m
}

func compact(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

func dotted(at []string) string {
	var b strings.Builder
	for _, s := range at {
		if !strings.HasPrefix(s, "[") && b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(s)
	}
	if b.Len() == 0 {
		return "(the object)"
	}
	return b.String()
}

func clone(s []string) []string { return append([]string(nil), s...) }

// Owners sets each mismatch's Manager: the manager whose managedFields set holds the field, or
// the deepest parent of it that one holds. actual is the object (to name list elements by
// their merge keys as managedFields does: k:{"name":"historical"}).
func Owners(ms []Mismatch, managed []metav1.ManagedFieldsEntry, actual any) {
	type owned struct {
		manager string
		set     map[string]any
	}
	var sets []owned
	for _, e := range managed {
		if e.FieldsV1 == nil {
			continue
		}
		var set map[string]any
		if json.Unmarshal(e.FieldsV1.GetRawBytes(), &set) == nil {
			sets = append(sets, owned{manager: e.Manager, set: set})
		}
	}
	for i := range ms {
		best, bestDepth := "", 0
		for _, o := range sets {
			if d := ownedDepth(o.set, ms[i].segments, actual); d > bestDepth {
				best, bestDepth = o.manager, d
			}
		}
		ms[i].Manager = best
	}
}

// ownedDepth is how many segments of path the field set holds, following actual for list keys.
func ownedDepth(set map[string]any, path []string, actual any) int {
	depth := 0
	cur, obj := set, actual
	for _, seg := range path {
		var next any
		var ok bool
		if strings.HasPrefix(seg, "[") {
			idx, _ := strconv.Atoi(strings.Trim(seg, "[]"))
			list, _ := obj.([]any)
			if idx >= len(list) {
				return depth
			}
			obj = list[idx]
			next, ok = cur["i:"+strconv.Itoa(idx)]
			if !ok {
				next, ok = cur[elementKey(obj)]
			}
		} else {
			m, _ := obj.(map[string]any)
			obj = m[seg]
			next, ok = cur["f:"+seg]
		}
		if !ok {
			return depth
		}
		depth++
		n, isMap := next.(map[string]any)
		if !isMap {
			return depth
		}
		cur = n
	}
	return depth
}

// elementKey is the managedFields key of a list element merged by name (containers, volumes,
// env, ports: the lists a StatefulSet template keys by name).
func elementKey(elem any) string {
	m, _ := elem.(map[string]any)
	if name, ok := m["name"].(string); ok {
		b, _ := json.Marshal(map[string]string{"name": name})
		return "k:" + string(b)
	}
	return ""
}
