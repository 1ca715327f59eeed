package sandboxtest

import (
	"context"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/olapgke/terraform-provider-olapgke/internal/sandbox/kwoknodes"
)

// progress2 is an rsync --info=progress2 record: its byte count and percent.
var progress2 = regexp.MustCompile(`^ *([0-9,]+) +([0-9]+)% +[0-9.]+(?:kB|MB|GB)/s +[0-9]+:[0-9]{2}:[0-9]{2}(?:  | \(xfr#[0-9]+, to-chk=[0-9]+/[0-9]+\))$`)

// copierPod is a sink copier as the provider's warm moves make it (one container "copy", the
// claims in OLAPGKE_CLAIMS), annotated to play its copy.
func copierPod(ns, name, claims string, annotations map[string]string) *corev1.Pod {
	zero := int64(0)
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Annotations: annotations},
		Spec: corev1.PodSpec{
			RestartPolicy:                 corev1.RestartPolicyNever,
			TerminationGracePeriodSeconds: &zero,
			Containers: []corev1.Container{{Name: "copy", Image: "registry.example/rsync:3",
				Env: []corev1.EnvVar{{Name: kwoknodes.CopyClaimsEnv, Value: claims}}}},
		},
	}
}

// podLog is GET pods/log of the Pod's container "copy" (client-go GetLogs, as the provider reads
// it), tailLines when not negative.
func podLog(ctx context.Context, ns, name string, tailLines int64) (string, error) {
	opts := &corev1.PodLogOptions{Container: "copy"}
	if tailLines >= 0 {
		opts.TailLines = &tailLines
	}
	b, err := kube.CoreV1().Pods(ns).GetLogs(name, opts).DoRaw(ctx)
	return string(b), err
}

// copyProgress is how far a played copy log got: the claims begun and the last record's bytes.
func copyProgress(log string) (claims int, bytes int64) {
	for _, l := range strings.Split(log, "\n") {
		if strings.HasPrefix(l, "olapgke-copy: claim ") {
			claims, bytes = claims+1, 0
		}
		if m := progress2.FindStringSubmatch(l); m != nil {
			bytes, _ = strconv.ParseInt(strings.ReplaceAll(m[1], ",", ""), 10, 64)
		}
	}
	return claims, bytes
}

// TestPodLogs_PlayedCopierLog reads a sink copier's log through the API server (pods/log: the
// API server's kubelet client, its egress proxy, the sandbox's kubelet endpoint) while the
// copy runs and after it: rsync's progress2 records growing, one claim after the other, the
// --stats line of each; a failing copy's rsync error; a literal log.
func TestPodLogs_PlayedCopierLog(t *testing.T) {
	ns := newNamespace(t)
	const gib = 1 << 30
	pods := []*corev1.Pod{
		copierPod(ns, "sink", "data cache", map[string]string{
			kwoknodes.CopyBytesAnnotation: strconv.Itoa(gib), kwoknodes.RunForAnnotation: "12s"}),
		copierPod(ns, "failing", "data", map[string]string{
			kwoknodes.CopyBytesAnnotation: strconv.Itoa(gib), kwoknodes.RunForAnnotation: "4s", kwoknodes.ExitCodeAnnotation: "10"}),
		copierPod(ns, "literal", "", map[string]string{kwoknodes.LogAnnotation: "hello\nworld\n"}),
	}
	for _, p := range pods {
		if _, err := kube.CoreV1().Pods(ns).Create(t.Context(), p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	// Running: the first claim's header and records.
	var first string
	poll(t, 60*time.Second, "the sink's log with a progress record", func(ctx context.Context) (bool, error) {
		log, err := podLog(ctx, ns, "sink", -1)
		first = log
		return err == nil && strings.HasPrefix(log, "olapgke-copy: claim data (1 of 2)\n") && progress2.MatchString(strings.Split(log, "\n")[1]), err
	})
	// tailLines=1: the latest record only.
	tail, err := podLog(t.Context(), ns, "sink", 1)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Count(tail, "\n") != 1 || !progress2.MatchString(strings.TrimSuffix(tail, "\n")) {
		t.Errorf("tailLines=1: %q, want one progress2 record", tail)
	}
	// The copy goes on: a later read shows more.
	c0, b0 := copyProgress(first)
	poll(t, 30*time.Second, "the sink's progress to grow", func(ctx context.Context) (bool, error) {
		log, err := podLog(ctx, ns, "sink", -1)
		c, b := copyProgress(log)
		return err == nil && (c > c0 || c == c0 && b > b0), err
	})

	// Done: both claims copied, each with its 100% record and --stats line.
	poll(t, 60*time.Second, "the sink Succeeded and the failing copier Failed", func(ctx context.Context) (bool, error) {
		s, err := kube.CoreV1().Pods(ns).Get(ctx, "sink", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		f, err := kube.CoreV1().Pods(ns).Get(ctx, "failing", metav1.GetOptions{})
		return err == nil && s.Status.Phase == corev1.PodSucceeded && f.Status.Phase == corev1.PodFailed, err
	})
	done, err := podLog(t.Context(), ns, "sink", -1)
	if err != nil {
		t.Fatal(err)
	}
	final := "  1,073,741,824 100%"
	stats := "\nTotal transferred file size: 1,073,741,824 bytes\n"
	if strings.Count(done, stats) != 2 || strings.Count(done, final) != 2 || !strings.Contains(done, "\nolapgke-copy: claim cache (2 of 2)\n") ||
		!strings.HasSuffix(done, stats) {
		t.Errorf("the finished sink's log:\n%s", done)
	}
	for _, l := range strings.Split(strings.TrimSuffix(done, "\n"), "\n") {
		if !progress2.MatchString(l) && !strings.HasPrefix(l, "olapgke-copy: claim ") && !strings.HasPrefix(l, "Total transferred file size: ") {
			t.Errorf("unexpected line %q", l)
		}
	}
	tail, err = podLog(t.Context(), ns, "sink", 1)
	if err != nil || tail != stats[1:] {
		t.Errorf("tailLines=1 after the copy: %q, %v", tail, err)
	}

	// The failing copy stops half way with rsync's error.
	failed, err := podLog(t.Context(), ns, "failing", 2)
	if err != nil {
		t.Fatal(err)
	}
	if lines := strings.Split(strings.TrimSuffix(failed, "\n"), "\n"); len(lines) != 2 ||
		!strings.Contains(lines[0], "  536,870,912  50%") ||
		lines[1] != "rsync error: error in socket IO (code 10) at io.c(231) [Receiver=3.2.7]" {
		t.Errorf("the failing copier's last lines: %q", failed)
	}

	// A literal log, as is.
	literal, err := podLog(t.Context(), ns, "literal", -1)
	if err != nil || literal != "hello\nworld\n" {
		t.Errorf("literal log: %q, %v", literal, err)
	}

	// An unknown container: the API server answers 400 itself (k8s.io/kubernetes
	// pkg/registry/core/pod/strategy.go LogLocation, validateContainer) and never asks the
	// kubelet; the kubelet's own 404 (an unknown Pod or container) is
	// kwoknodes.TestKubeletHandler_ContainerLogs'. (Nor can nodes/proxy reach it here: the API
	// server resolves a node's address in DNS first, pkg/registry/core/node/strategy.go
	// isProxyableHostname, and sandbox node names resolve nowhere.)
	body, err := kube.CoreV1().Pods(ns).GetLogs("sink", &corev1.PodLogOptions{Container: "nope"}).DoRaw(t.Context())
	if !apierrors.IsBadRequest(err) || !strings.Contains(string(body), "container nope is not valid for pod sink") {
		t.Errorf("pods/log of an unknown container: %v %q, want the API server's 400", err, body)
	}
}
