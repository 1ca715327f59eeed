package clients

import (
	"context"
	"errors"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"github.com/olapgke/terraform-provider-olapgke/internal/gke"
)

func TestClientsBuildOnceAndCopy(t *testing.T) {
	t.Parallel()
	restCalls, gkeCalls := 0, 0
	c := New(Options{
		Project: "p",
		REST: func(context.Context) (*rest.Config, error) {
			restCalls++
			return &rest.Config{Host: "https://127.0.0.1:6443"}, nil
		},
		GKE: func(context.Context) (gke.API, error) {
			gkeCalls++
			return nil, errors.New("no GKE here")
		},
	})
	if c.PollInterval != 2*time.Second || c.Deferred() {
		t.Fatalf("defaults: poll %s, deferred %v", c.PollInterval, c.Deferred())
	}
	ctx := context.Background()
	cfg, err := c.REST(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Host = "mutated"
	again, _ := c.REST(ctx)
	if again.Host != "https://127.0.0.1:6443" {
		t.Fatalf("REST returned a shared config: %q", again.Host)
	}
	if _, err := c.Kube(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Dynamic(ctx); err != nil {
		t.Fatal(err)
	}
	if restCalls != 1 {
		t.Fatalf("REST builder called %d times, want 1", restCalls)
	}
	for range 2 {
		if _, err := c.GKE(ctx); err == nil {
			t.Fatal("want the GKE builder's error")
		}
	}
	if gkeCalls != 2 {
		t.Fatalf("GKE builder called %d times, want 2 (a failed build is retried)", gkeCalls)
	}
	var nilClients *Clients
	if !nilClients.Deferred() || !New(Options{Deferred: true}).Deferred() {
		t.Fatal("nil or deferred clients must report Deferred")
	}
}
