package gates

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

var gateTarget = GateTarget{Namespace: "olap", StatefulSet: "hist", Pod: "hist-2", Node: "gke-b-1", PodIP: "10.1.2.3", Ordinal: 2}

func TestExpandGate(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"http://c/{namespace}/{statefulset}/{pod}/{ordinal}?n={node}&ip={pod_ip}": "http://c/olap/hist/hist-2/2?n=gke-b-1&ip=10.1.2.3",
		"no placeholders {}":   "no placeholders {}",
		"{unknown} stays":      "{unknown} stays",
		"tier-{ordinal}-{pod}": "tier-2-hist-2",
	} {
		if got := ExpandGate(in, gateTarget); got != want {
			t.Errorf("ExpandGate(%q) = %q, want %q", in, got, want)
		}
	}
	// Values not known yet keep their placeholder (a move's node at plan).
	if got := ExpandGate("{node}/{pod_ip}", GateTarget{Pod: "p"}); got != "{node}/{pod_ip}" {
		t.Errorf("unknown values: got %q", got)
	}
}

func httpGate(mut func(*Gate)) Gate {
	g := Gate{Name: "loaded", Timeout: time.Minute, Interval: time.Second,
		HTTP: &HTTPGate{URL: "http://127.0.0.1:8081/status/{pod}", Method: "GET", ExpectStatus: 200}}
	if mut != nil {
		mut(&g)
	}
	return g
}

func TestCheckGate(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		g    Gate
		want string // "" = valid
	}{
		"http ok":          {g: httpGate(nil)},
		"json path ok":     {g: httpGate(func(g *Gate) { g.HTTP.ExpectJSONPath, g.HTTP.ExpectValue = "$.tiers[0].left", "0" })},
		"pod condition ok": {g: Gate{Name: "c", Timeout: time.Minute, Interval: time.Second, PodCondition: &PodConditionGate{Type: "example.com/loaded", Status: "True"}}},
		"both":             {g: httpGate(func(g *Gate) { g.PodCondition = &PodConditionGate{Type: "x", Status: "True"} }), want: "exactly one"},
		"neither":          {g: Gate{Timeout: time.Minute, Interval: time.Second}, want: "exactly one"},
		"interval > timeout": {g: httpGate(func(g *Gate) { g.Interval = 2 * time.Minute }),
			want: "longer than timeout"},
		"bad placeholder": {g: httpGate(func(g *Gate) { g.HTTP.URL = "http://c/{podname}" }), want: "unknown placeholder {podname}"},
		"header placeholder": {g: httpGate(func(g *Gate) { g.HTTP.Headers = map[string]string{"X-Ord": "{ordnal}"} }),
			want: `headers["X-Ord"]`},
		"relative url":     {g: httpGate(func(g *Gate) { g.HTTP.URL = "/status" }), want: "absolute"},
		"ftp url":          {g: httpGate(func(g *Gate) { g.HTTP.URL = "ftp://c/status" }), want: "absolute"},
		"delete method":    {g: httpGate(func(g *Gate) { g.HTTP.Method = "DELETE" }), want: "a gate reads"},
		"bad status":       {g: httpGate(func(g *Gate) { g.HTTP.ExpectStatus = 42 }), want: "not an HTTP status"},
		"bad json path":    {g: httpGate(func(g *Gate) { g.HTTP.ExpectJSONPath = "{.a[}" }), want: "expect_json_path"},
		"empty condition":  {g: Gate{Timeout: time.Minute, Interval: time.Second, PodCondition: &PodConditionGate{Status: "True"}}, want: "type must not be empty"},
		"condition status": {g: Gate{Timeout: time.Minute, Interval: time.Second, PodCondition: &PodConditionGate{Type: "x", Status: "yes"}}, want: "True, False or Unknown"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			err := CheckGate(tc.g)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func TestJudgeHTTPGate(t *testing.T) {
	t.Parallel()
	withPath := func(p, v string) HTTPGate {
		return HTTPGate{URL: "http://c", Method: "GET", ExpectStatus: 200, ExpectJSONPath: p, ExpectValue: v}
	}
	for name, tc := range map[string]struct {
		h      HTTPGate
		status int
		body   string
		pass   bool
		answer string // contained in the answer
	}{
		"status only passes":  {h: HTTPGate{ExpectStatus: 200}, status: 200, body: "ok", pass: true, answer: "HTTP 200: ok"},
		"5xx is not yet":      {h: HTTPGate{ExpectStatus: 200}, status: 503, body: "loading", answer: "HTTP 503: loading (want status 200)"},
		"number equal":        {h: withPath("{.wikipedia}", "0"), status: 200, body: `{"wikipedia": 0}`, pass: true},
		"number not yet":      {h: withPath(".wikipedia", "0"), status: 200, body: `{"wikipedia": 12}`, answer: `.wikipedia is "12", want "0"`},
		"number forms":        {h: withPath("$.left", "0"), status: 200, body: `{"left": 0.0}`, pass: true},
		"large number as is":  {h: withPath("$.n", "12345678901234567890"), status: 200, body: `{"n": 12345678901234567890}`, pass: true},
		"string value":        {h: withPath("$.state", "loaded"), status: 200, body: `{"state":"loaded"}`, pass: true},
		"templated value":     {h: withPath("$.replica", "{pod}"), status: 200, body: `{"replica":"hist-2"}`, pass: true},
		"bool":                {h: withPath("$.ok", "true"), status: 200, body: `{"ok":true}`, pass: true},
		"missing key":         {h: withPath("$.absent", "0"), status: 200, body: `{"x":0}`, answer: "not found"},
		"not json":            {h: withPath("$.x", "0"), status: 200, body: `<html>`, answer: "not JSON"},
		"status before value": {h: withPath("$.x", "0"), status: 500, body: `{"x":0}`, answer: "want status 200"},
		"long body quoted short": {h: HTTPGate{ExpectStatus: 204}, status: 200, body: strings.Repeat("x", 1000),
			answer: strings.Repeat("x", maxQuotedBody) + "..."},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			v := JudgeHTTPGate(tc.h, gateTarget, tc.status, []byte(tc.body))
			if v.Pass != tc.pass || !strings.Contains(v.Answer, tc.answer) {
				t.Fatalf("got %+v, want pass=%v and an answer containing %q", v, tc.pass, tc.answer)
			}
		})
	}
}

func TestJudgePodGate(t *testing.T) {
	t.Parallel()
	c := PodConditionGate{Type: "example.com/loaded", Status: corev1.ConditionTrue}
	pod := &corev1.Pod{}
	pod.Name = "hist-2"
	if v := JudgePodGate(c, nil); v.Pass || !strings.Contains(v.Answer, "does not exist") {
		t.Errorf("no Pod: %+v", v)
	}
	if v := JudgePodGate(c, pod); v.Pass || !strings.Contains(v.Answer, "has no condition example.com/loaded") {
		t.Errorf("no condition: %+v", v)
	}
	pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue},
		{Type: "example.com/loaded", Status: corev1.ConditionFalse, Reason: "Loading", Message: "12 segments left"}}
	if v := JudgePodGate(c, pod); v.Pass || !strings.Contains(v.Answer, "=False (Loading: 12 segments left)") {
		t.Errorf("false: %+v", v)
	}
	pod.Status.Conditions[1].Status = corev1.ConditionTrue
	if v := JudgePodGate(c, pod); !v.Pass {
		t.Errorf("true: %+v", v)
	}
}

func TestDescribeGateNeverShowsHeaderValues(t *testing.T) {
	t.Parallel()
	g := httpGate(func(g *Gate) {
		g.HTTP.Headers = map[string]string{"Authorization": "Bearer s3cret"}
		g.HTTP.ExpectJSONPath, g.HTTP.ExpectValue = "$.left", "0"
	})
	got := DescribeGate(g, gateTarget)
	if strings.Contains(got, "s3cret") || strings.Contains(got, "Authorization") {
		t.Fatalf("description shows headers: %s", got)
	}
	if want := `loaded: GET http://127.0.0.1:8081/status/hist-2 answers 200 with $.left = "0"`; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
}
