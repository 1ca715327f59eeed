package acctest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestReadEnvFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "env")
	if err := os.WriteFile(p, []byte("# sandbox\nGOOGLE_PROJECT=p\n\nOLAPGKE_CONTAINER_INSECURE=true\nKUBECONFIG=/x/kubeconfig\nA=b=c\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := readEnvFile(p)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"GOOGLE_PROJECT": "p", "OLAPGKE_CONTAINER_INSECURE": "true", "KUBECONFIG": "/x/kubeconfig", "A": "b=c"}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Fatalf("%s = %q, want %q", k, got[k], v)
		}
	}
	if err := os.WriteFile(p, []byte("NOEQUALS\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := readEnvFile(p); err == nil || !strings.Contains(err.Error(), "line 1") {
		t.Fatalf("error = %v, want line 1 complaint", err)
	}
}

func TestWorldFile(t *testing.T) {
	dir := t.TempDir()
	p, err := worldFile(dir, "nodePools:\n- name: pool-a\n")
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(p); string(b) != "nodePools:\n- name: pool-a\n" {
		t.Fatalf("world file holds %q", b)
	}
	existing := filepath.Join(dir, "w.yaml")
	if err := os.WriteFile(existing, []byte("x: 1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if p, err := worldFile(dir, existing); err != nil || p != existing {
		t.Fatalf("worldFile(path) = %q, %v; want the path itself", p, err)
	}
}

// script writes an executable shell script standing in for the sandbox binary.
func script(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "fake-sandbox")
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestProcessReadyAndStop(t *testing.T) {
	// Writes ready after a moment, then waits for SIGTERM and records it.
	bin := script(t, `dir="$3"; trap 'echo stopped > "$dir/../stopped-marker"; exit 0' TERM
echo starting; sleep 0.2; touch "$dir/ready"
while :; do sleep 0.05; done
`)
	parent := t.TempDir()
	dir := filepath.Join(parent, "state")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	p, err := startProcess(bin, dir, []string{"up", "--state-dir", dir})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.waitReady(t.Context(), 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if err := p.stop(false); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(parent, "stopped-marker")); err != nil {
		t.Fatalf("sandbox did not get SIGTERM: %v", err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("state dir not removed: %v", err)
	}
}

func TestProcessExitBeforeReadyShowsLog(t *testing.T) {
	bin := script(t, "echo 'etcd: address already in use' >&2; exit 3\n")
	dir := t.TempDir()
	p, err := startProcess(bin, dir, []string{"up"})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	err = p.waitReady(t.Context(), 30*time.Second)
	if err == nil || !strings.Contains(err.Error(), "exited before it was ready") || !strings.Contains(err.Error(), "address already in use") {
		t.Fatalf("error = %v, want early exit with the log tail", err)
	}
	if time.Since(start) > 10*time.Second {
		t.Fatal("waitReady did not notice the exit")
	}
	_ = p.stop(true)
}

func TestProcessNotReadyTimesOut(t *testing.T) {
	bin := script(t, "echo still booting; while :; do sleep 0.05; done\n")
	dir := t.TempDir()
	p, err := startProcess(bin, dir, []string{"up"})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = p.stop(true) }()
	err = p.waitReady(t.Context(), 500*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "not ready after 500ms") || !strings.Contains(err.Error(), "still booting") {
		t.Fatalf("error = %v", err)
	}
}

func TestSandboxSkipsWithoutTFACC(t *testing.T) {
	// Unset for this test, so that it runs where TF_ACC is set too (CI runs with TF_ACC=1).
	t.Setenv("TF_ACC", "")
	ran := false
	t.Run("inner", func(t *testing.T) {
		Sandbox(t)
		ran = true
	})
	if ran {
		t.Fatal("Sandbox did not skip without TF_ACC")
	}
}
