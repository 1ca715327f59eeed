package installacc

import (
	"archive/zip"
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/olapgke/terraform-provider-olapgke/internal/acctest"
)

func TestMain(m *testing.M) { acctest.Main(m) }

const (
	namespace = "olapgke"
	ptype     = "olapgke"
	project   = "terraform-provider-olapgke"
)

// TestAccInstall installs the release artefacts through a filesystem mirror and a network
// mirror, with every CLI under test, and plans against the sandbox with the installed binary;
// then shows that a corrupted archive is refused by the CLI's own checksum verification.
func TestAccInstall(t *testing.T) {
	acctest.Sandbox(t)
	rel := releaseArtefacts(t)
	constraint := moduleConstraint(t)
	for _, c := range clis(t) {
		t.Run(c.name+"/filesystem_mirror", func(t *testing.T) {
			mirror := filesystemMirror(t, c.host, rel, rel.zipBytes)
			w := newWork(t, c, mirror, constraint)
			out := w.mustRun("init")
			if !strings.Contains(out, "Installed olapgke/olapgke v"+rel.version) {
				t.Fatalf("init did not install olapgke/olapgke v%s:\n%s", rel.version, out)
			}
			// A filesystem mirror vouches for no zh: hash (no registry signed it): the CLI records
			// only the h1: hash of the package, which must be the one of the release's zip.
			w.checkLock(rel, false)
			w.checkPlan(rel)

			// The same mirror with the archive swapped, in a new working directory that carries
			// the lock file (as a checkout does): a damaged zip and a valid zip with an extra
			// file must both be refused by the CLI's checksum verification.
			lock := filepath.Join(w.dir, ".terraform.lock.hcl")
			for _, tc := range []struct {
				name, want string
				zip        []byte
			}{
				{"corrupted", "failed to calculate checksum for " + c.host + "/olapgke/olapgke " + rel.version + " package", corrupt(rel.zipBytes)},
				{"tampered", "doesn't match any of the checksums previously recorded in the dependency lock file", tamper(t, rel.zipBytes)},
			} {
				w2 := newWork(t, c, filesystemMirror(t, c.host, rel, tc.zip), constraint)
				copyFile(t, lock, filepath.Join(w2.dir, ".terraform.lock.hcl"))
				out, err := w2.run("init")
				t.Logf("init with a %s archive in the filesystem mirror:\n%s", tc.name, out)
				if err == nil {
					t.Fatalf("init installed a %s archive:\n%s", tc.name, out)
				}
				wantChecksumError(t, out, tc.want)
			}
		})
		t.Run(c.name+"/network_mirror", func(t *testing.T) {
			m := serveNetworkMirror(t, c.host, rel)
			w := newWork(t, c, m.rc, constraint)
			w.env = append(w.env, "SSL_CERT_FILE="+m.caFile)
			out := w.mustRun("init")
			if !strings.Contains(out, "Installed olapgke/olapgke v"+rel.version) {
				t.Fatalf("init did not install olapgke/olapgke v%s:\n%s", rel.version, out)
			}
			for _, p := range []string{"index.json", rel.version + ".json", rel.zipName} {
				if !m.served(p) {
					t.Errorf("the network mirror never served %s (served: %v): init did not install through it", p, m.paths())
				}
			}
			// The mirror's zh: hash is checked (below) but not recorded: the CLI writes zh: hashes
			// only for packages whose SHA256SUMS a registry's signing key vouched for.
			w.checkLock(rel, false)
			w.checkPlan(rel)

			// The mirror now serves a corrupted archive under the genuine hash: a fresh working
			// directory (no lock file) must refuse it on the mirror's own hash.
			m.setZip(corrupt(rel.zipBytes))
			w2 := newWork(t, c, m.rc, constraint)
			w2.env = append(w2.env, "SSL_CERT_FILE="+m.caFile)
			out, err := w2.run("init")
			t.Logf("init with a corrupted archive from the network mirror:\n%s", out)
			if err == nil {
				t.Fatalf("init installed a corrupted archive:\n%s", out)
			}
			wantChecksumError(t, out, `provider package doesn't match the expected checksum "zh:`+rel.zipSHA256+`"`)
		})
	}
}

// wantChecksumError fails unless init's output carries the CLI's provider installation error
// with the given checksum wording.
func wantChecksumError(t *testing.T, out, want string) {
	t.Helper()
	flat := strings.Join(strings.Fields(out), " ")
	if !strings.Contains(flat, "Failed to install provider") && !strings.Contains(flat, "Error while installing olapgke/olapgke") {
		t.Errorf("init failed, but not with the CLI's provider installation error:\n%s", out)
	}
	if !strings.Contains(flat, want) {
		t.Errorf("init's error does not say %q:\n%s", want, out)
	}
}

// corrupt flips one byte in the middle of an archive (inside the compressed binary).
func corrupt(b []byte) []byte {
	c := slices.Clone(b)
	c[len(c)/2] ^= 0xff
	return c
}

// tamper rewrites an archive with one more file: a valid zip whose contents hash differently.
func tamper(t *testing.T, b []byte) []byte {
	t.Helper()
	zr, err := zip.NewReader(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	zw := zip.NewWriter(&out)
	for _, f := range zr.File {
		if err := zw.Copy(f); err != nil {
			t.Fatal(err)
		}
	}
	extra, err := zw.Create("EXTRA")
	if err == nil {
		_, err = extra.Write([]byte("not part of the release\n"))
	}
	if err == nil {
		err = zw.Close()
	}
	if err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

// artefacts are the release files of one version.
type artefacts struct {
	dir, version string
	zipName      string // the host's archive
	zipBytes     []byte
	zipSHA256    string // hex, as the lock file's zh: hash
	h1           string // the h1: hash of the archive's contents
}

var (
	relOnce sync.Once
	rel     *artefacts
	relErr  error
	relDir  string // removed by the first test's cleanup
)

// releaseArtefacts builds the release with scripts/release-snapshot.sh (host target, signed with
// a throwaway key) or reads OLAPGKE_RELEASE_DIST, and checks the files a registry takes.
func releaseArtefacts(t *testing.T) *artefacts {
	t.Helper()
	relOnce.Do(func() {
		dir := os.Getenv("OLAPGKE_RELEASE_DIST")
		gnupg := ""
		if dir == "" {
			var err error
			if relDir, err = os.MkdirTemp("", "olapgke-installacc-"); err != nil { //nolint:usetesting // shared by every test of the package
				relErr = err
				return
			}
			dir, gnupg = filepath.Join(relDir, "dist"), filepath.Join(relDir, "gnupg")
			relErr = buildRelease(dir, gnupg)
		}
		if relErr == nil {
			rel, relErr = readRelease(dir, gnupg)
		}
	})
	t.Cleanup(func() {
		if relDir != "" && !t.Failed() {
			_ = os.RemoveAll(relDir)
		}
	})
	if relErr != nil {
		t.Fatal(relErr)
	}
	return rel
}

func buildRelease(dist, gnupg string) error {
	if err := os.MkdirAll(gnupg, 0o700); err != nil {
		return err
	}
	gpg := func(args ...string) (string, error) {
		cmd := exec.Command("gpg", append([]string{"--batch", "--no-tty"}, args...)...)
		cmd.Env = append(os.Environ(), "GNUPGHOME="+gnupg)
		out, err := cmd.CombinedOutput()
		if err != nil {
			return "", fmt.Errorf("gpg %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out), nil
	}
	defer func() { _ = exec.Command("gpgconf", "--homedir", gnupg, "--kill", "gpg-agent").Run() }()
	if _, err := gpg("--pinentry-mode", "loopback", "--passphrase", "", "--quick-gen-key",
		"olapgke release test <release-test@olapgke.invalid>", "ed25519", "sign", "never"); err != nil {
		return err
	}
	out, err := gpg("--with-colons", "--list-secret-keys")
	if err != nil {
		return err
	}
	fpr := ""
	for line := range strings.SplitSeq(out, "\n") {
		if f := strings.Split(line, ":"); len(f) > 9 && f[0] == "fpr" && fpr == "" {
			fpr = f[9]
		}
	}
	if fpr == "" {
		return fmt.Errorf("no fingerprint in gpg's key list:\n%s", out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(acctest.RepoRoot(), "scripts", "release-snapshot.sh"))
	cmd.Dir = acctest.RepoRoot()
	cmd.Env = append(os.Environ(), "DIST="+dist, "GNUPGHOME="+gnupg, "GPG_FINGERPRINT="+fpr, "ALL=", "VERSION=",
		// The provider's packages come from the build cache (`go test` compiled them); the
		// release's -trimpath would compile them all again. Layout and hashes are the release's.
		"REUSE_BUILD_CACHE=1")
	start := time.Now()
	b, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("scripts/release-snapshot.sh: %v\n%s", err, b)
	}
	fmt.Fprintf(os.Stderr, "installacc: release artefacts built in %s\n", time.Since(start).Round(time.Second))
	return nil
}

// readRelease checks the registry files of dir (one version): the host's zip holding the
// executable, SHA256SUMS listing every zip and the manifest with their hashes, its signature
// (verified when gnupg holds the key) and the manifest equal to terraform-registry-manifest.json.
func readRelease(dir, gnupg string) (*artefacts, error) {
	sums, _ := filepath.Glob(filepath.Join(dir, project+"_*_SHA256SUMS"))
	if len(sums) != 1 {
		return nil, fmt.Errorf("want one %s_<version>_SHA256SUMS in %s, found %v", project, dir, sums)
	}
	r := &artefacts{dir: dir}
	r.version = strings.TrimSuffix(strings.TrimPrefix(filepath.Base(sums[0]), project+"_"), "_SHA256SUMS")
	prefix := project + "_" + r.version + "_"
	r.zipName = prefix + runtime.GOOS + "_" + runtime.GOARCH + ".zip"

	listed := map[string]string{}
	f, err := os.Open(sums[0])
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if h, name, ok := strings.Cut(sc.Text(), "  "); ok {
			listed[name] = h
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	for _, e := range entries {
		name := e.Name()
		registryFile := strings.HasSuffix(name, ".zip") || strings.HasSuffix(name, "_manifest.json")
		if !strings.HasPrefix(name, prefix) || !registryFile {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			return nil, err
		}
		sum := sha256.Sum256(b)
		if got := hex.EncodeToString(sum[:]); listed[name] != got {
			return nil, fmt.Errorf("SHA256SUMS lists %s as %q, its sha256 is %s", name, listed[name], got)
		}
		delete(listed, name)
		if name == r.zipName {
			r.zipBytes, r.zipSHA256 = b, hex.EncodeToString(sum[:])
		}
	}
	if len(listed) > 0 {
		return nil, fmt.Errorf("SHA256SUMS lists files that are not in %s: %v", dir, listed)
	}
	if r.zipBytes == nil {
		return nil, fmt.Errorf("no %s in %s", r.zipName, dir)
	}
	manifest, err := os.ReadFile(filepath.Join(dir, prefix+"manifest.json"))
	if err != nil {
		return nil, fmt.Errorf("the registry manifest: %w", err)
	}
	want, err := os.ReadFile(filepath.Join(acctest.RepoRoot(), "terraform-registry-manifest.json"))
	if err != nil {
		return nil, err
	}
	if !bytes.Equal(manifest, want) {
		return nil, fmt.Errorf("%smanifest.json is not terraform-registry-manifest.json:\n%s", prefix, manifest)
	}
	sig := sums[0] + ".sig"
	if _, err := os.Stat(sig); err != nil {
		return nil, fmt.Errorf("SHA256SUMS is not signed: %w", err)
	}
	if gnupg != "" {
		cmd := exec.Command("gpg", "--batch", "--verify", sig, sums[0])
		cmd.Env = append(os.Environ(), "GNUPGHOME="+gnupg)
		if out, err := cmd.CombinedOutput(); err != nil {
			return nil, fmt.Errorf("gpg --verify of SHA256SUMS.sig: %v\n%s", err, out)
		}
	}
	if r.h1, err = zipH1(r.zipBytes, project+"_v"+r.version); err != nil {
		return nil, err
	}
	return r, nil
}

// zipH1 is the lock file's h1: hash of an archive's contents (the Go module dirhash "Hash1" of
// the files in it, which Terraform computes for a provider package), checking that the
// archive holds the provider executable.
func zipH1(b []byte, executable string) (string, error) {
	zr, err := zip.NewReader(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		return "", err
	}
	type entry struct{ name, sum string }
	var files []entry
	found := false
	for _, f := range zr.File {
		if strings.HasSuffix(f.Name, "/") {
			continue
		}
		if f.Name == executable {
			found = f.Mode()&0o100 != 0
		}
		rc, err := f.Open()
		if err != nil {
			return "", err
		}
		h := sha256.New()
		_, err = io.Copy(h, rc)
		_ = rc.Close()
		if err != nil {
			return "", err
		}
		files = append(files, entry{f.Name, hex.EncodeToString(h.Sum(nil))})
	}
	if !found {
		return "", fmt.Errorf("the archive holds no executable %s", executable)
	}
	slices.SortFunc(files, func(a, b entry) int { return strings.Compare(a.name, b.name) })
	summary := sha256.New()
	for _, f := range files {
		_, _ = fmt.Fprintf(summary, "%s  %s\n", f.sum, f.name)
	}
	sum := summary.Sum(nil)
	return "h1:" + base64.StdEncoding.EncodeToString(sum[:]), nil
}

// moduleConstraint is the provider version constraint of modules/olap-historical, so the test
// installs what the module asks for (a release the module's pin does not admit fails here).
func moduleConstraint(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(acctest.RepoRoot(), "modules", "olap-historical", "versions.tf"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?s)olapgke\s*=\s*\{[^}]*version\s*=\s*"([^"]+)"`).FindSubmatch(b)
	if m == nil {
		t.Fatal("modules/olap-historical/versions.tf sets no olapgke version constraint")
	}
	return string(m[1])
}

// cli is one CLI under test and the registry host its short provider sources resolve to.
type cli struct{ name, bin, host string }

func clis(t *testing.T) []cli {
	t.Helper()
	var out []cli
	seen := map[string]bool{}
	for _, bin := range []string{acctest.TerraformBinary(t), os.Getenv("OLAPGKE_TOFU_PATH")} {
		if bin == "" || seen[bin] {
			continue
		}
		seen[bin] = true
		cmd := exec.Command(bin, "version")
		cmd.Env = append(cleanEnv(), "TF_CLI_CONFIG_FILE=/dev/null")
		v, err := cmd.Output()
		if err != nil {
			t.Fatalf("%s version: %v", bin, err)
		}
		first := strings.SplitN(string(v), "\n", 2)[0]
		c := cli{name: "terraform", bin: bin, host: "registry.terraform.io"}
		if strings.HasPrefix(first, "OpenTofu") {
			c = cli{name: "tofu", bin: bin, host: "registry.opentofu.org"}
		}
		t.Logf("CLI %s (%s): provider address %s/%s/%s", first, bin, c.host, namespace, ptype)
		out = append(out, c)
	}
	return out
}

// cleanEnv is the environment without the settings that would change where providers come from.
func cleanEnv() []string {
	return slices.DeleteFunc(os.Environ(), func(kv string) bool {
		k, _, _ := strings.Cut(kv, "=")
		return k == "TF_CLI_CONFIG_FILE" || k == "TF_PLUGIN_CACHE_DIR" || k == "TF_DATA_DIR" || k == "SSL_CERT_FILE" ||
			strings.HasPrefix(k, "TF_LOG")
	})
}

// work is a working directory with a CLI config that installs only from the given mirror.
type work struct {
	t   *testing.T
	c   cli
	dir string
	env []string
}

// newWork writes main.tf (the provider required as users do, a data source read at plan) and
// the CLI config rc (its text) into a new directory.
func newWork(t *testing.T, c cli, rc, constraint string) *work {
	t.Helper()
	dir := t.TempDir()
	rcPath := filepath.Join(dir, "cli.tfrc")
	if err := os.WriteFile(rcPath, []byte(rc), 0o600); err != nil {
		t.Fatal(err)
	}
	wd := filepath.Join(dir, "work")
	if err := os.MkdirAll(wd, 0o755); err != nil {
		t.Fatal(err)
	}
	main := fmt.Sprintf(`terraform {
  required_providers {
    olapgke = {
      source  = "%s/%s"
      version = %q
    }
  }
}

provider "olapgke" {}

data "olapgke_cluster" "this" {}

output "kubernetes_version" {
  value = data.olapgke_cluster.this.kubernetes_version
}
`, namespace, ptype, constraint)
	if err := os.WriteFile(filepath.Join(wd, "main.tf"), []byte(main), 0o600); err != nil {
		t.Fatal(err)
	}
	env := append(cleanEnv(), "TF_CLI_CONFIG_FILE="+rcPath, "TF_IN_AUTOMATION=1", "CHECKPOINT_DISABLE=1")
	return &work{t: t, c: c, dir: wd, env: env}
}

func (w *work) run(args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, w.c.bin, append([]string{args[0], "-no-color", "-input=false"}, args[1:]...)...)
	cmd.Dir = w.dir
	cmd.Env = w.env
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func (w *work) mustRun(args ...string) string {
	w.t.Helper()
	out, err := w.run(args...)
	if err != nil {
		w.t.Fatalf("%s %s: %v\n%s", w.c.name, strings.Join(args, " "), err, out)
	}
	return out
}

// checkLock requires the lock file entry of the provider at the released version with the h1:
// hash of the archive's contents and, with zh, the archive's zh: hash (sha256 of the zip, as in
// SHA256SUMS).
func (w *work) checkLock(r *artefacts, zh bool) {
	w.t.Helper()
	b, err := os.ReadFile(filepath.Join(w.dir, ".terraform.lock.hcl"))
	if err != nil {
		w.t.Fatal(err)
	}
	addr := w.c.host + "/" + namespace + "/" + ptype
	m := regexp.MustCompile(`(?s)provider "` + regexp.QuoteMeta(addr) + `" \{(.*?)\n\}`).FindSubmatch(b)
	if m == nil {
		w.t.Fatalf("lock file has no entry for %s:\n%s", addr, b)
	}
	entry := string(m[1])
	want := []string{`version     = "` + r.version + `"`, `"` + r.h1 + `"`}
	if zh {
		want = append(want, `"zh:`+r.zipSHA256+`"`)
	}
	for _, want := range want {
		if !strings.Contains(entry, want) {
			w.t.Errorf("lock file entry for %s lacks %s:\n%s", addr, want, b)
		}
	}
}

// checkPlan plans with the installed provider against the sandbox and checks, from the
// provider's own log, that the installed binary carries the release's version.
func (w *work) checkPlan(r *artefacts) {
	w.t.Helper()
	logPath := filepath.Join(w.t.TempDir(), "provider.log")
	saved := w.env
	w.env = append(slices.Clone(w.env), "TF_LOG_PROVIDER=INFO", "TF_LOG_PATH="+logPath)
	out := w.mustRun("plan")
	w.env = saved
	if !regexp.MustCompile(`kubernetes_version\s*=\s*"v[0-9]`).MatchString(out) {
		w.t.Errorf("plan with the installed provider did not read the sandbox cluster's version:\n%s", out)
	}
	b, err := os.ReadFile(logPath)
	if err != nil {
		w.t.Fatal(err)
	}
	ua := "terraform-provider-olapgke/" + r.version
	if !strings.Contains(string(b), "olapgke provider configured") || !strings.Contains(string(b), ua) {
		w.t.Errorf("the installed provider's configure log line lacks its version (%s); log %d bytes", ua, len(b))
	}
}

// filesystemMirror lays the archive out in the packed layout and returns a CLI config that
// installs olapgke only from there.
func filesystemMirror(t *testing.T, host string, r *artefacts, zipBytes []byte) string {
	t.Helper()
	dir := t.TempDir()
	pkg := filepath.Join(dir, host, namespace, ptype)
	if err := os.MkdirAll(pkg, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(pkg, r.zipName), zipBytes, 0o644); err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf(`provider_installation {
  filesystem_mirror {
    path    = %q
    include = ["%s/%s/*"]
  }
}
`, dir, host, namespace)
}

// networkMirror is a provider network mirror (the CLI's provider network mirror protocol) on a
// loopback HTTPS server with its own certificate.
type networkMirror struct {
	rc, caFile string
	mu         sync.Mutex
	zip        []byte
	got        []string
}

func (m *networkMirror) setZip(b []byte) { m.mu.Lock(); m.zip = b; m.mu.Unlock() }
func (m *networkMirror) paths() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.got)
}
func (m *networkMirror) served(suffix string) bool {
	return slices.ContainsFunc(m.paths(), func(p string) bool { return strings.HasSuffix(p, "/"+suffix) })
}

func serveNetworkMirror(t *testing.T, host string, r *artefacts) *networkMirror {
	t.Helper()
	m := &networkMirror{zip: r.zipBytes}
	base := "/" + host + "/" + namespace + "/" + ptype + "/"
	platform := runtime.GOOS + "_" + runtime.GOARCH
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		m.mu.Lock()
		m.got = append(m.got, req.URL.Path)
		zipBytes := m.zip
		m.mu.Unlock()
		switch req.URL.Path {
		case base + "index.json":
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(map[string]any{"versions": map[string]any{r.version: map[string]any{}}})
		case base + r.version + ".json":
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(map[string]any{"archives": map[string]any{platform: map[string]any{
				"url": r.zipName, "hashes": []string{"zh:" + r.zipSHA256},
			}}})
		case base + r.zipName:
			w.Header().Set("Content-Type", "application/zip")
			_, _ = w.Write(zipBytes)
		default:
			http.NotFound(w, req)
		}
	}))
	t.Cleanup(srv.Close)
	m.caFile = filepath.Join(t.TempDir(), "mirror-ca.pem")
	if err := os.WriteFile(m.caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o644); err != nil {
		t.Fatal(err)
	}
	m.rc = fmt.Sprintf(`provider_installation {
  network_mirror {
    url     = "%s/"
    include = ["%s/%s/*"]
  }
}
`, srv.URL, host, namespace)
	return m
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o644); err != nil {
		t.Fatal(err)
	}
}
