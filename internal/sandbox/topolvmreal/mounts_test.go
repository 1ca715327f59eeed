package topolvmreal

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	mountutil "k8s.io/mount-utils"
	utilexec "k8s.io/utils/exec"
)

// blkidType is what the real /sbin/blkid finds on dev, as TopoLVM's DetectFilesystem asks it
// ("" when it finds nothing: exit 2).
func blkidType(t *testing.T, dev string) string {
	t.Helper()
	out, err := exec.Command(realBlkid, "-p", "-u", "filesystem", "-o", "export", dev).CombinedOutput()
	var exit *exec.ExitError
	if errors.As(err, &exit) && exit.ExitCode() == 2 {
		return ""
	}
	if err != nil {
		t.Fatalf("blkid %s: %v: %s", dev, err, out)
	}
	for _, l := range strings.Split(string(out), "\n") {
		if v, ok := strings.CutPrefix(l, "TYPE="); ok {
			return v
		}
	}
	return ""
}

// TestStandIns_FormatAndMountAsMountUtilsRunsThem drives the stand-ins with mount-utils' own
// SafeFormatAndMount and ResizeFs (the code TopoLVM's node server runs), with PATH = the
// stand-ins' directory as in olapgke-topolvm: a new volume is found unformatted by the real
// blkid, formatted (mkfs.xfs -f) and mounted; the real blkid then finds xfs, so a second
// FormatAndMount only checks (fsck -a) and mounts; wipefs -a erases the signature; mkfs.ext4
// gives ext4; the growth after a mount runs xfs_growfs; every call is recorded, and the mounter's
// construction runs no umount.
func TestStandIns_FormatAndMountAsMountUtilsRunsThem(t *testing.T) {
	dir := t.TempDir()
	bin, rec := filepath.Join(dir, "bin"), filepath.Join(dir, "mounts.log")
	if err := WriteStandIns(bin, rec); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin)
	record := func() []string {
		b, err := os.ReadFile(rec)
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		return strings.Split(strings.TrimSpace(string(b)), "\n")
	}
	dev, target := filepath.Join(dir, "dev", "vg-ssd", "lv1"), filepath.Join(dir, "target")
	if err := ensureDevice(dev, 10<<30); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(target, 0o755); err != nil {
		t.Fatal(err)
	}
	if got := blkidType(t, dev); got != "" {
		t.Fatalf("new volume: blkid finds %q", got)
	}
	m := mountutil.SafeFormatAndMount{Interface: mountutil.New(""), Exec: utilexec.New()}
	if err := m.FormatAndMount(dev, target, "xfs", []string{"nouuid"}); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"blkid -p -s TYPE -s PTTYPE -o export " + dev,
		"mkfs.xfs -f " + dev,
		"mount -t xfs -o nouuid,defaults " + dev + " " + target,
	}
	if got := record(); !slices.Equal(got, want) {
		t.Fatalf("record:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if got := blkidType(t, dev); got != "xfs" {
		t.Fatalf("after mkfs.xfs: blkid finds %q, want xfs", got)
	}
	if err := m.FormatAndMount(dev, target, "xfs", []string{"nouuid"}); err != nil {
		t.Fatal(err)
	}
	want = append(want, "blkid -p -s TYPE -s PTTYPE -o export "+dev, "fsck -a "+dev, "mount -t xfs -o nouuid,defaults "+dev+" "+target)
	if got := record(); !slices.Equal(got, want) {
		t.Fatalf("second publish, record:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	r := mountutil.NewResizeFs(m.Exec)
	if need, err := r.NeedResize(dev, target); err != nil || !need {
		t.Fatalf("NeedResize: %v, %v; want true (mount-utils leaves xfs to xfs_growfs)", need, err)
	}
	if _, err := r.Resize(dev, target); err != nil {
		t.Fatal(err)
	}
	if got := record(); got[len(got)-1] != "xfs_growfs -d "+target {
		t.Errorf("resize recorded %q, want xfs_growfs -d %s", got[len(got)-1], target)
	}
	if out, err := exec.Command("wipefs", "-a", dev).CombinedOutput(); err != nil {
		t.Fatalf("wipefs: %v: %s", err, out)
	}
	if got := blkidType(t, dev); got != "" {
		t.Fatalf("after wipefs -a: blkid finds %q", got)
	}
	if out, err := exec.Command("mkfs.ext4", "-F", "-m0", dev).CombinedOutput(); err != nil {
		t.Fatalf("mkfs.ext4: %v: %s", err, out)
	}
	if got := blkidType(t, dev); got != "ext4" {
		t.Fatalf("after mkfs.ext4: blkid finds %q, want ext4", got)
	}
	if st, err := os.Stat(dev); err != nil || st.Size() != 10<<30 {
		t.Errorf("device size changed by the stand-ins: %v, %v", st, err)
	}
	for _, l := range record() {
		if strings.HasPrefix(l, "umount") {
			t.Errorf("umount ran: %q", l)
		}
	}
}
