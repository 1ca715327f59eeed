package render

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha512"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

// hcp plays HCP Terraform for one run: the plan's JSON output behind the run's access token (a
// redirect to the stored plan, as HCP answers), and the task result callback.
type hcp struct {
	t     *testing.T
	token string
	plan  []byte
	srv   *httptest.Server

	mu        sync.Mutex
	callbacks []callback
	planGets  int
}

type callback struct {
	auth, contentType string
	body              map[string]any
}

func newHCP(t *testing.T, token string, plan []byte) *hcp {
	h := &hcp{t: t, token: token, plan: plan}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/v2/plans/{id}/json-output", func(w http.ResponseWriter, r *http.Request) {
		h.mu.Lock()
		h.planGets++
		h.mu.Unlock()
		if r.Header.Get("Authorization") != "Bearer "+h.token {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		http.Redirect(w, r, "/archivist/v1/object/plan-json", http.StatusTemporaryRedirect)
	})
	mux.HandleFunc("GET /archivist/v1/object/plan-json", func(w http.ResponseWriter, _ *http.Request) {
		if h.plan == nil {
			http.NotFound(w, nil)
			return
		}
		_, _ = w.Write(h.plan)
	})
	mux.HandleFunc("PATCH /api/v2/task-results/{id}/callback", func(w http.ResponseWriter, r *http.Request) {
		var body map[string]any
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		h.mu.Lock()
		h.callbacks = append(h.callbacks, callback{auth: r.Header.Get("Authorization"), contentType: r.Header.Get("Content-Type"), body: body})
		h.mu.Unlock()
		w.WriteHeader(http.StatusOK)
	})
	h.srv = httptest.NewServer(mux)
	t.Cleanup(h.srv.Close)
	return h
}

// request is testdata/runtask-request.json (the run-task request HCP Terraform sends at the
// post-plan stage, with every documented field) pointed at h instead of app.terraform.io. It was
// written from HCP Terraform's documented payload (Run Tasks Integration API, payload version 1),
// not recorded: no request from HCP Terraform can reach this project's machines.
func (h *hcp) request(t *testing.T, mutate func(map[string]any)) []byte {
	t.Helper()
	raw, err := os.ReadFile("testdata/runtask-request.json")
	if err != nil {
		t.Fatal(err)
	}
	var req map[string]any
	if err := json.Unmarshal(raw, &req); err != nil {
		t.Fatal(err)
	}
	for k, v := range req {
		if s, ok := v.(string); ok {
			req[k] = strings.ReplaceAll(s, "https://app.terraform.io", h.srv.URL)
		}
	}
	req["access_token"] = h.token
	if mutate != nil {
		mutate(req)
	}
	out, _ := json.Marshal(req)
	return out
}

func sign(key, body []byte) string {
	mac := hmac.New(sha512.New, key)
	mac.Write(body)
	return hex.EncodeToString(mac.Sum(nil))
}

// post sends body to a RunTask and waits for its callback (or for none, when the request is
// answered without one).
func post(t *testing.T, task RunTask, body []byte, sig string, wantCallback bool) int {
	t.Helper()
	done := make(chan error, 1)
	task.Done = func(err error) { done <- err }
	task.Logf = t.Logf
	rt := httptest.NewServer(task)
	defer rt.Close()
	r, _ := http.NewRequest(http.MethodPost, rt.URL, bytes.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	if sig != "" {
		r.Header.Set("X-TFC-Task-Signature", sig)
	}
	resp, err := http.DefaultClient.Do(r)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	if wantCallback {
		select {
		case err := <-done:
			t.Logf("callback: %v", err)
		case <-time.After(30 * time.Second):
			t.Fatal("no callback within 30s")
		}
	}
	return resp.StatusCode
}

// A run-task request at post-plan is answered 200; the task fetches the run's plan JSON with
// the run's token (following HCP's redirect) and PATCHes the callback: status passed, the plan
// summary as the message, the same Markdown as `render` as the outcome's body.
func TestRunTaskRendersThePlan(t *testing.T) {
	t.Parallel()
	plan, err := os.ReadFile(poolSwitch)
	if err != nil {
		t.Fatal(err)
	}
	h := newHCP(t, "run-token-1", plan)
	key := []byte("hmac-key")
	body := h.request(t, nil)
	if code := post(t, RunTask{HMACKey: key}, body, sign(key, body), true); code != http.StatusOK {
		t.Fatalf("answer %d", code)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.callbacks) != 1 {
		t.Fatalf("%d callbacks", len(h.callbacks))
	}
	cb := h.callbacks[0]
	if cb.auth != "Bearer run-token-1" || cb.contentType != "application/vnd.api+json" {
		t.Errorf("callback auth %q, content type %q", cb.auth, cb.contentType)
	}
	data := cb.body["data"].(map[string]any)
	attrs := data["attributes"].(map[string]any)
	if data["type"] != "task-results" || attrs["status"] != "passed" {
		t.Errorf("callback %v", cb.body)
	}
	var want bytes.Buffer
	if err := Markdown(bytes.NewReader(plan), &want, Options{}); err != nil {
		t.Fatal(err)
	}
	if msg, _ := attrs["message"].(string); msg == "" || !strings.Contains(want.String(), "> "+msg) {
		t.Errorf("message %q is not a plan summary of:\n%s", msg, want.String())
	}
	outcomes := data["relationships"].(map[string]any)["outcomes"].(map[string]any)["data"].([]any)
	o := outcomes[0].(map[string]any)
	if o["type"] != "task-result-outcomes" || o["attributes"].(map[string]any)["body"] != want.String() {
		t.Errorf("outcome %v", o)
	}
}

// A bad signature is refused before anything is fetched; HCP's verification request
// (access_token "test-token") is answered without a callback; a plan that cannot be fetched is
// reported as failed, with the reason.
func TestRunTaskRefusalsAndFailures(t *testing.T) {
	t.Parallel()
	key := []byte("hmac-key")
	h := newHCP(t, "run-token-2", nil)
	body := h.request(t, nil)
	if code := post(t, RunTask{HMACKey: key}, body, sign([]byte("other"), body), false); code != http.StatusUnauthorized {
		t.Errorf("bad signature: %d", code)
	}
	verify := h.request(t, func(r map[string]any) { r["access_token"] = "test-token" })
	if code := post(t, RunTask{HMACKey: key}, verify, sign(key, verify), false); code != http.StatusOK {
		t.Errorf("verification request: %d", code)
	}
	h.mu.Lock()
	if h.planGets != 0 || len(h.callbacks) != 0 {
		t.Errorf("refused or verification requests fetched %d plans, %d callbacks", h.planGets, len(h.callbacks))
	}
	h.mu.Unlock()

	post(t, RunTask{HMACKey: key}, body, sign(key, body), true) // the plan is not there (404)
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.callbacks) != 1 {
		t.Fatalf("%d callbacks", len(h.callbacks))
	}
	attrs := h.callbacks[0].body["data"].(map[string]any)["attributes"].(map[string]any)
	if attrs["status"] != "failed" || !strings.Contains(attrs["message"].(string), "404") {
		t.Errorf("missing plan: callback %v", attrs)
	}
}
