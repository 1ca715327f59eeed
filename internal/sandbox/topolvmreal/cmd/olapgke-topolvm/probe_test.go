package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	mountutil "k8s.io/mount-utils"
)

// TestNoMounterProbe_NodeServerRunsNoUmount: TopoLVM's node server builds its mounter with
// mountutil.New, which runs umount once (mount_linux.go detectSafeNotMountedBehavior). With a
// recording umount first on PATH, the probe runs it; after noMounterProbe it must not.
func TestNoMounterProbe_NodeServerRunsNoUmount(t *testing.T) {
	bin, marks := t.TempDir(), filepath.Join(t.TempDir(), "umount-ran")
	script := "#!/bin/sh\necho \"$@\" >> " + marks + "\nexit 1\n"
	if err := os.WriteFile(filepath.Join(bin, "umount"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin)
	t.Setenv("TMPDIR", t.TempDir())
	ran := func() int {
		b, err := os.ReadFile(marks)
		if os.IsNotExist(err) {
			return 0
		}
		if err != nil {
			t.Fatal(err)
		}
		return bytes.Count(b, []byte("\n"))
	}

	_ = mountutil.New("")
	if ran() != 1 {
		t.Fatalf("without noMounterProbe, mountutil.New ran umount %d times, want 1 (the probe this test guards against changed)", ran())
	}

	dir := t.TempDir()
	if err := noMounterProbe(dir, filepath.Join(dir, "mounts.log")); err != nil {
		t.Fatal(err)
	}
	_ = mountutil.New("")
	if n := ran(); n != 1 {
		t.Errorf("after noMounterProbe, mountutil.New ran umount again (%d runs in all)", n)
	}
	if got := os.TempDir(); got != dir {
		t.Errorf("TMPDIR %q, want the socket directory %q", got, dir)
	}
}
