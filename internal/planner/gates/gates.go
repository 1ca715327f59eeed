// Package gates holds hydration gates' pure parts: templates and their placeholders, JSONPath
// checks, descriptions, and the verdict on one answer (JudgePodGate, JudgeHTTPGate). No Snapshot,
// no clients; the engine polls.
package gates

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/util/jsonpath"
)

// Hydration gates: Kubernetes Ready is not "loaded". After each restart or move the migration
// waits until every gate of the step passes before the next batch starts. This file holds the
// gates' pure side: what a gate is, the placeholders its strings take, whether one answer passes
// and how it is described (plan, logs, errors). The engine polls (engine/gates.go).

// Gate is one check of a step. Exactly one of PodCondition and HTTP is set.
type Gate struct {
	// Name identifies the gate in plans, logs and errors ("gate 1" when the user gave none).
	Name string
	// Timeout bounds the wait for this gate; Interval is the time between polls.
	Timeout, Interval time.Duration
	PodCondition      *PodConditionGate
	HTTP              *HTTPGate
}

// PodConditionGate passes when the Pod has condition Type with Status (a readinessGate type an
// agent or sidecar sets).
type PodConditionGate struct {
	Type   corev1.PodConditionType
	Status corev1.ConditionStatus
}

// HTTPGate passes when a request from where Terraform runs answers ExpectStatus and, when
// ExpectJSONPath is set, the JSON body's value there equals ExpectValue. URL, header values and
// ExpectValue take the placeholders of GatePlaceholders.
type HTTPGate struct {
	URL, Method string
	// Headers are secret: never described, logged, quoted or kept in state.
	Headers        map[string]string
	ExpectStatus   int
	ExpectJSONPath string
	ExpectValue    string
}

// GateTarget is what a gate's placeholders are filled with: the ordinal whose step just ended.
type GateTarget struct {
	Namespace, StatefulSet, Pod, Node, PodIP string
	Ordinal                                  int32
}

// GatePlaceholders are the placeholders gate strings may use.
var GatePlaceholders = []string{"ordinal", "pod", "namespace", "statefulset", "node", "pod_ip"}

var placeholderRE = regexp.MustCompile(`\{([a-z_]+)\}`)

// CheckGateTemplate reports a placeholder s uses that GatePlaceholders does not name.
func CheckGateTemplate(s string) error {
	known := map[string]bool{}
	for _, p := range GatePlaceholders {
		known[p] = true
	}
	for _, m := range placeholderRE.FindAllStringSubmatch(s, -1) {
		if !known[m[1]] {
			return fmt.Errorf("unknown placeholder {%s}; the placeholders are {%s}", m[1], strings.Join(GatePlaceholders, "}, {"))
		}
	}
	return nil
}

// ExpandGate fills s's placeholders from t. Values that are not known yet (a node a move has not
// reached, at plan) are passed as "" and their placeholder is left as written.
func ExpandGate(s string, t GateTarget) string {
	vals := map[string]string{"ordinal": strconv.Itoa(int(t.Ordinal)), "pod": t.Pod, "namespace": t.Namespace,
		"statefulset": t.StatefulSet, "node": t.Node, "pod_ip": t.PodIP}
	return placeholderRE.ReplaceAllStringFunc(s, func(m string) string {
		if v := vals[m[1:len(m)-1]]; v != "" {
			return v
		}
		return m
	})
}

// ParseGateJSONPath parses a JSON path as kubectl takes it ({.a.b[0]}), also written without
// braces (.a.b) or with a leading $ ($.a.b).
func ParseGateJSONPath(p string) (*jsonpath.JSONPath, error) {
	p = strings.TrimSpace(p)
	if !strings.HasPrefix(p, "{") {
		p = strings.TrimPrefix(p, "$")
		if !strings.HasPrefix(p, ".") && !strings.HasPrefix(p, "[") {
			p = "." + p
		}
		p = "{" + p + "}"
	}
	jp := jsonpath.New("gate").AllowMissingKeys(false)
	if err := jp.Parse(p); err != nil {
		return nil, err
	}
	return jp, nil
}

// CheckGate reports what is wrong with g as configured (before any target is known).
func CheckGate(g Gate) error {
	switch {
	case (g.PodCondition == nil) == (g.HTTP == nil):
		return fmt.Errorf("a gate takes exactly one of pod_condition and http")
	case g.Timeout <= 0:
		return fmt.Errorf("timeout must be positive")
	case g.Interval <= 0:
		return fmt.Errorf("interval must be positive")
	case g.Interval > g.Timeout:
		return fmt.Errorf("interval %s is longer than timeout %s: the gate would be polled once", g.Interval, g.Timeout)
	}
	if c := g.PodCondition; c != nil {
		if c.Type == "" {
			return fmt.Errorf("pod_condition.type must not be empty")
		}
		switch c.Status {
		case corev1.ConditionTrue, corev1.ConditionFalse, corev1.ConditionUnknown:
		default:
			return fmt.Errorf("pod_condition.status is %q; it must be True, False or Unknown", c.Status)
		}
		return nil
	}
	h := g.HTTP
	for what, s := range map[string]string{"http.url": h.URL, "http.expect_value": h.ExpectValue} {
		if err := CheckGateTemplate(s); err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
	}
	for k, v := range h.Headers {
		if err := CheckGateTemplate(v); err != nil {
			return fmt.Errorf("http.headers[%q]: %w", k, err)
		}
	}
	u, err := url.Parse(ExpandGate(h.URL, GateTarget{Namespace: "ns", StatefulSet: "set", Pod: "set-0", Node: "node", PodIP: "10.0.0.1"}))
	if err != nil {
		return fmt.Errorf("http.url: %w", err)
	}
	if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
		return fmt.Errorf("http.url %q must be an absolute http:// or https:// URL", h.URL)
	}
	switch h.Method {
	case http.MethodGet, http.MethodHead, http.MethodPost:
	default:
		return fmt.Errorf("http.method %q: a gate reads; use GET, HEAD or POST", h.Method)
	}
	if h.ExpectStatus < 100 || h.ExpectStatus > 599 {
		return fmt.Errorf("http.expect_status %d is not an HTTP status", h.ExpectStatus)
	}
	if h.ExpectJSONPath != "" {
		if _, err := ParseGateJSONPath(h.ExpectJSONPath); err != nil {
			return fmt.Errorf("http.expect_json_path: %w", err)
		}
	}
	return nil
}

// DescribeGate says what g checks for target t, as plans, logs and errors show it. Headers are
// never shown, not even their names: their values are write-only, so a plan cannot know them
// and a description must not change between plan and apply.
func DescribeGate(g Gate, t GateTarget) string {
	if c := g.PodCondition; c != nil {
		return fmt.Sprintf("%s: Pod %s has condition %s=%s", g.Name, t.Pod, c.Type, c.Status)
	}
	h := g.HTTP
	s := fmt.Sprintf("%s: %s %s answers %d", g.Name, h.Method, ExpandGate(h.URL, t), h.ExpectStatus)
	if h.ExpectJSONPath != "" {
		s += fmt.Sprintf(" with %s = %q", h.ExpectJSONPath, ExpandGate(h.ExpectValue, t))
	}
	return s
}

// GateVerdict is one poll's answer.
type GateVerdict struct {
	Pass bool
	// Answer quotes what was seen, for the log and the error of a gate that never passes.
	Answer string
}

// JudgePodGate judges a pod_condition gate on the ordinal's current Pod (nil when it has none).
func JudgePodGate(c PodConditionGate, pod *corev1.Pod) GateVerdict {
	if pod == nil {
		return GateVerdict{Answer: "the Pod does not exist"}
	}
	for _, pc := range pod.Status.Conditions {
		if pc.Type != c.Type {
			continue
		}
		a := fmt.Sprintf("condition %s=%s", pc.Type, pc.Status)
		if pc.Reason != "" || pc.Message != "" {
			a += fmt.Sprintf(" (%s: %s)", pc.Reason, pc.Message)
		}
		return GateVerdict{Pass: pc.Status == c.Status, Answer: a}
	}
	return GateVerdict{Answer: fmt.Sprintf("Pod %s has no condition %s", pod.Name, c.Type)}
}

// maxQuotedBody bounds how much of a body an answer quotes.
const maxQuotedBody = 300

// JudgeHTTPGate judges one HTTP answer (status and body) for target t.
func JudgeHTTPGate(h HTTPGate, t GateTarget, status int, body []byte) GateVerdict {
	quoted := strings.TrimSpace(string(body))
	if len(quoted) > maxQuotedBody {
		quoted = quoted[:maxQuotedBody] + "..."
	}
	a := fmt.Sprintf("HTTP %d", status)
	if quoted != "" {
		a += ": " + quoted
	}
	if status != h.ExpectStatus {
		return GateVerdict{Answer: a + fmt.Sprintf(" (want status %d)", h.ExpectStatus)}
	}
	if h.ExpectJSONPath == "" {
		return GateVerdict{Pass: true, Answer: a}
	}
	want := ExpandGate(h.ExpectValue, t)
	got, err := gateJSONValue(h.ExpectJSONPath, body)
	if err != nil {
		return GateVerdict{Answer: a + fmt.Sprintf(" (%s: %v)", h.ExpectJSONPath, err)}
	}
	if got != want && !sameNumber(got, want) {
		return GateVerdict{Answer: a + fmt.Sprintf(" (%s is %q, want %q)", h.ExpectJSONPath, got, want)}
	}
	return GateVerdict{Pass: true, Answer: a}
}

// sameNumber: both are numbers of equal value (0 and 0.0, 1e3 and 1000).
func sameNumber(a, b string) bool {
	x, err1 := strconv.ParseFloat(a, 64)
	y, err2 := strconv.ParseFloat(b, 64)
	return err1 == nil && err2 == nil && x == y
}

// gateJSONValue is the text of the value at path p in body: a string as is, anything else as
// compact JSON (numbers as written: 0, 1.5), several results joined by spaces as kubectl prints
// them.
func gateJSONValue(p string, body []byte) (string, error) {
	jp, err := ParseGateJSONPath(p)
	if err != nil {
		return "", err
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var doc any
	if err := dec.Decode(&doc); err != nil {
		return "", fmt.Errorf("the body is not JSON: %v", err)
	}
	results, err := jp.FindResults(doc)
	if err != nil {
		return "", err
	}
	var parts []string
	for _, rs := range results {
		for _, r := range rs {
			v := r.Interface()
			if s, ok := v.(string); ok {
				parts = append(parts, s)
				continue
			}
			b, err := json.Marshal(v)
			if err != nil {
				return "", err
			}
			parts = append(parts, string(b))
		}
	}
	if len(parts) == 0 {
		return "", fmt.Errorf("no value there")
	}
	return strings.Join(parts, " "), nil
}
