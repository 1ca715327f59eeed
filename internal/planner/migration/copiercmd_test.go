package migration

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// TestDefaultCopierCommandsRunRsync runs the default source and sink commands with the real
// rsync and sh on this machine, as the copier Pods run them (the environment CopierPod gives,
// claims under OLAPGKE_DATA): the sink copies every claim, exits 0, writes rsync's stats as its
// termination message, and its log is what ParseCopyProgress reads (a claim marker, then
// progress2 records ending at 100%). KWOK runs no containers, so this is where the commands
// themselves are tested. CI installs rsync (.ci/run); elsewhere the test is skipped without it.
func TestDefaultCopierCommandsRunRsync(t *testing.T) {
	for _, tool := range []string{"rsync", "awk", "sh"} {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("CI") != "" {
				t.Fatalf("%s is not on PATH; .ci/run installs it", tool)
			}
			t.Skipf("%s is not on PATH", tool)
		}
	}
	root := t.TempDir()
	src, dst := filepath.Join(root, "src"), filepath.Join(root, "dst")
	claims := []string{"cache", "segments"}
	for _, c := range claims {
		if err := os.MkdirAll(filepath.Join(src, c, "sub"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Join(dst, c), 0o755); err != nil {
			t.Fatal(err)
		}
		for i := range 3 {
			b := make([]byte, 1<<20)
			_, _ = rand.Read(b)
			if err := os.WriteFile(filepath.Join(src, c, "sub", fmt.Sprintf("seg-%d", i)), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	// A stale file on the target goes (--delete).
	if err := os.WriteFile(filepath.Join(dst, "cache", "stale"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := fmt.Sprint(l.Addr().(*net.TCPAddr).Port)
	_ = l.Close()
	// The commands' fixed paths (the container's /tmp and termination-log) go to the test's
	// directory; nothing else of them is changed.
	tmp := filepath.Join(root, "tmp")
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		t.Fatal(err)
	}
	localize := func(cmd []string) []string {
		out := append([]string(nil), cmd...)
		out[2] = strings.NewReplacer("/tmp/", tmp+"/", "/dev/termination-log", filepath.Join(root, "termination-log")).Replace(out[2])
		return out
	}
	env := func(data string) []string {
		return append(os.Environ(), "OLAPGKE_CLAIMS="+strings.Join(claims, " "), "OLAPGKE_PORT="+port,
			"OLAPGKE_DATA="+data, "OLAPGKE_SOURCE=127.0.0.1", "OLAPGKE_BWLIMIT_KBPS=2048")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	sc := localize(DefaultSourceCommand())
	source := exec.CommandContext(ctx, sc[0], sc[1:]...)
	source.Env = env(src)
	var sourceOut bytes.Buffer
	source.Stdout, source.Stderr = &sourceOut, &sourceOut
	if err := source.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = source.Process.Kill(); _ = source.Wait() }()
	if err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		c, err := net.Dial("tcp", "127.0.0.1:"+port)
		if err == nil {
			_ = c.Close()
		}
		return err == nil, nil
	}); err != nil {
		t.Fatalf("the source never listened on %s: %v\n%s", port, err, sourceOut.String())
	}

	kc := localize(DefaultSinkCommand())
	sink := exec.CommandContext(ctx, kc[0], kc[1:]...)
	sink.Env = env(dst)
	out, err := sink.CombinedOutput()
	if err != nil {
		t.Fatalf("the sink failed: %v\n%s\nsource:\n%s", err, out, sourceOut.String())
	}
	for _, c := range claims {
		for i := range 3 {
			a, _ := os.ReadFile(filepath.Join(src, c, "sub", fmt.Sprintf("seg-%d", i)))
			b, err := os.ReadFile(filepath.Join(dst, c, "sub", fmt.Sprintf("seg-%d", i)))
			if err != nil || !bytes.Equal(a, b) {
				t.Errorf("claim %s file %d not copied (%v)", c, i, err)
			}
		}
	}
	if _, err := os.Stat(filepath.Join(dst, "cache", "stale")); !os.IsNotExist(err) {
		t.Errorf("a file only on the target was kept: %v", err)
	}
	term, err := os.ReadFile(filepath.Join(root, "termination-log"))
	if err != nil || strings.Count(string(term), "Total transferred file size") != len(claims) {
		t.Errorf("termination message %q (%v): want rsync's stats line per claim", term, err)
	}
	p, ok := ParseCopyProgress(string(out))
	if !ok || p.Claim != "segments" || p.Index != 2 || p.Of != 2 || p.Percent != 100 || p.Bytes != 3<<20 {
		t.Errorf("the sink's log reads as %+v (ok %v), want the last claim at 100%% of 3 MiB; log:\n%s", p, ok, out)
	}
	// Mid-copy records exist too (2 MiB/s over 3 MiB a claim): the log is read while it runs.
	mid := 0
	for _, line := range strings.Split(string(out), "\n") {
		if m := progress2.FindStringSubmatch(line); m != nil && m[3] != "100" {
			mid++
		}
	}
	if mid == 0 {
		t.Errorf("no record below 100%% in the sink's log:\n%s", out)
	}
}
