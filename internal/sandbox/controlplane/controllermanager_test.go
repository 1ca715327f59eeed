package controlplane

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// up --node-monitor-grace-period reaches the node lifecycle controller's config; without it the
// component's default stays.
func TestControllerManagerNodeMonitorGracePeriod(t *testing.T) {
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	// Config builds clients but does not connect: no API server needed.
	if err := os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1", insecure-skip-tls-verify: true}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		extra []string
		want  time.Duration
	}{
		{nil, 50 * time.Second},
		{[]string{"--node-monitor-grace-period=10m0s"}, 10 * time.Minute},
	} {
		cc, err := controllerManagerConfig(context.Background(), kubeconfig, "http://127.0.0.1:1", Controllers, tc.extra)
		if err != nil {
			t.Fatalf("%v: %v", tc.extra, err)
		}
		if got := cc.ComponentConfig.NodeLifecycleController.NodeMonitorGracePeriod.Duration; got != tc.want {
			t.Errorf("%v: node monitor grace period %s, want %s", tc.extra, got, tc.want)
		}
	}
}
