package render

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha512"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"strings"
	"time"
)

// RunTask answers HCP Terraform run-task requests (Run Tasks Integration API): it answers 200 at
// once, then fetches the run's plan JSON from plan_json_api_url with the request's access token,
// renders it, and PATCHes task_result_callback_url with status "passed", the first line as the
// message and the Markdown as one outcome's body. A plan it cannot read is reported as status
// "failed" with the reason (a mandatory task then stops the run, as a review that could not be
// made should; an advisory one only shows it).
type RunTask struct {
	Options Options
	// HMACKey, when set, is the run task's HMAC key: requests whose X-Tfc-Task-Signature is not
	// the body's HMAC-SHA512 under it are refused (401).
	HMACKey []byte
	// Client makes the plan and callback requests (default: a client with a 30 s timeout).
	Client *http.Client
	// Logf receives one line per request (default log.Printf).
	Logf func(format string, args ...any)
	// Done, when set, is called after each callback (tests).
	Done func(error)
}

// runTaskRequest is the run-task request body; only the fields this task reads.
type runTaskRequest struct {
	PayloadVersion        int    `json:"payload_version"`
	AccessToken           string `json:"access_token"`
	Stage                 string `json:"stage"`
	TaskResultCallbackURL string `json:"task_result_callback_url"`
	PlanJSONAPIURL        string `json:"plan_json_api_url"`
	RunID                 string `json:"run_id"`
	WorkspaceName         string `json:"workspace_name"`
}

// verificationToken is the access token of the request HCP Terraform sends when a run task is
// created or its URL changed: answer 200, call nothing back.
const verificationToken = "test-token"

// ServeHTTP implements the run task's endpoint.
func (t RunTask) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		http.Error(w, "POST a run-task request", http.StatusMethodNotAllowed)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if len(t.HMACKey) > 0 {
		mac := hmac.New(sha512.New, t.HMACKey)
		mac.Write(body)
		got, _ := hex.DecodeString(r.Header.Get("X-Tfc-Task-Signature"))
		if !hmac.Equal(got, mac.Sum(nil)) {
			http.Error(w, "bad X-TFC-Task-Signature", http.StatusUnauthorized)
			return
		}
	}
	var req runTaskRequest
	if err := json.Unmarshal(body, &req); err != nil {
		http.Error(w, "not a run-task request: "+err.Error(), http.StatusBadRequest)
		return
	}
	w.WriteHeader(http.StatusOK)
	if req.AccessToken == verificationToken || req.TaskResultCallbackURL == "" {
		return
	}
	// Answer first (HCP retries a request that is not answered 200 soon), report later.
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		err := t.handle(ctx, req)
		t.logf("run %s (%s, %s): %v", req.RunID, req.WorkspaceName, req.Stage, errOrOK(err))
		if t.Done != nil {
			t.Done(err)
		}
	}()
}

func errOrOK(err error) any {
	if err == nil {
		return "reported"
	}
	return err
}

func (t RunTask) logf(format string, args ...any) {
	if t.Logf != nil {
		t.Logf(format, args...)
		return
	}
	log.Printf(format, args...)
}

func (t RunTask) client() *http.Client {
	if t.Client != nil {
		return t.Client
	}
	return &http.Client{Timeout: 30 * time.Second}
}

func (t RunTask) handle(ctx context.Context, req runTaskRequest) error {
	status, message, md := "passed", "", ""
	if req.PlanJSONAPIURL == "" {
		status, message = "failed", "no plan_json_api_url: attach the olapgke run task at the post-plan or pre-apply stage"
	} else if plan, err := t.fetch(ctx, req.PlanJSONAPIURL, req.AccessToken); err != nil {
		status, message = "failed", "reading the plan JSON: "+err.Error()
	} else {
		var b bytes.Buffer
		if err := Markdown(bytes.NewReader(plan), &b, t.Options); err != nil {
			status, message = "failed", err.Error()
		} else {
			md = b.String()
			message = summaryLine(md)
		}
	}
	return t.callback(ctx, req, status, message, md)
}

func (t RunTask) fetch(ctx context.Context, url, token string) ([]byte, error) {
	r, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	r.Header.Set("Authorization", "Bearer "+token)
	resp, err := t.client().Do(r) // follows HCP's redirect to the plan's storage
	if err != nil {
		return nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return io.ReadAll(io.LimitReader(resp.Body, 256<<20))
}

// summaryLine is the run task's one-line message: the first plan_summary, or the first heading.
func summaryLine(md string) string {
	for _, l := range strings.Split(md, "\n") {
		if s, ok := strings.CutPrefix(l, "> "); ok {
			return s
		}
	}
	return "olapgke plan rendered"
}

func (t RunTask) callback(ctx context.Context, req runTaskRequest, status, message, md string) error {
	type outcome struct {
		Type       string `json:"type"`
		Attributes struct {
			OutcomeID   string `json:"outcome-id"`
			Description string `json:"description"`
			Body        string `json:"body,omitempty"`
		} `json:"attributes"`
	}
	var payload struct {
		Data struct {
			Type       string `json:"type"`
			Attributes struct {
				Status  string `json:"status"`
				Message string `json:"message"`
			} `json:"attributes"`
			Relationships *struct {
				Outcomes struct {
					Data []outcome `json:"data"`
				} `json:"outcomes"`
			} `json:"relationships,omitempty"`
		} `json:"data"`
	}
	payload.Data.Type = "task-results"
	payload.Data.Attributes.Status, payload.Data.Attributes.Message = status, message
	if md != "" {
		o := outcome{Type: "task-result-outcomes"}
		o.Attributes.OutcomeID, o.Attributes.Description, o.Attributes.Body = "olapgke-plan", "Ordinals, moves and timeline", md
		payload.Data.Relationships = &struct {
			Outcomes struct {
				Data []outcome `json:"data"`
			} `json:"outcomes"`
		}{}
		payload.Data.Relationships.Outcomes.Data = []outcome{o}
	}
	body, err := json.Marshal(payload)
	if err != nil {
		return err
	}
	r, err := http.NewRequestWithContext(ctx, http.MethodPatch, req.TaskResultCallbackURL, bytes.NewReader(body))
	if err != nil {
		return err
	}
	r.Header.Set("Content-Type", "application/vnd.api+json")
	r.Header.Set("Authorization", "Bearer "+req.AccessToken)
	resp, err := t.client().Do(r)
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("PATCH %s: %s", req.TaskResultCallbackURL, resp.Status)
	}
	if status != "passed" {
		return errors.New(message)
	}
	return nil
}

// Serve answers run-task requests on addr until ctx ends.
func Serve(ctx context.Context, addr string, t RunTask) error {
	srv := &http.Server{Addr: addr, Handler: t, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	if err := srv.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
