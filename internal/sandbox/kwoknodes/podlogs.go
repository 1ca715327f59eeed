package kwoknodes

import (
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
	"k8s.io/kubernetes/pkg/apis/core/v1/validation"
)

// Container logs, as a kubelet serves them (pods/log): the nodes' kubelet endpoint serves
// GET /containerLogs/{namespace}/{pod}/{container} (KubeletHandler; the control plane's egress
// proxy brings every node's kubelet connection to it: controlplane.ControlPlane.ServeKubelet).
// No container writes anything here, so the logs are played from annotations:
const (
	// LogAnnotation on a Pod is the log of each of its containers, served as is.
	LogAnnotation = "sandbox.olapgke.io/log"
	// CopyBytesAnnotation on a Pod (an integer, bytes a claim) plays the log of the warm move's
	// sink copier (internal/planner/migration DefaultSinkCommand with rsync --info=progress2
	// --stats, '\r' turned into new lines): the claims named in the container's OLAPGKE_CLAIMS
	// (space separated) are copied one after another, each of CopyBytesAnnotation bytes at a
	// constant rate, from the container's start until the Pod's end (RunForAnnotation, split
	// evenly among the claims). For each claim begun:
	//
	//	olapgke-copy: claim <name> (<i> of <n>)
	//	<an rsync progress2 record a second, the latest 120 of them (rsync.go)>
	//
	// and once it is copied a 100% record " (xfr#1, to-chk=0/2)" and
	// "Total transferred file size: <bytes> bytes". When ExitCodeAnnotation is not "0" the last
	// claim fails half way, at the Pod's end (each claim then takes run-for/(n-½)): its records
	// stop at 50% and rsync's error line for that exit code follows ("rsync error: error in
	// socket IO (code 10) at io.c(231) [Receiver=3.2.7]"). Without RunForAnnotation or claims
	// the log is empty. A Pod's LogAnnotation wins over it.
	CopyBytesAnnotation = "sandbox.olapgke.io/copy-bytes"
	// CopyClaimsEnv is the copier container's list of claims.
	CopyClaimsEnv = "OLAPGKE_CLAIMS"
	// maxCopyRecords bounds the progress records kept a claim (the latest).
	maxCopyRecords = 120
)

// KubeletHandler serves a kubelet's GET /containerLogs/{namespace}/{pod}/{container} for every
// node, reading Pods through kube; anything else a kubelet serves is 404. now is the clock
// (time.Now). The request's handling follows the kubelet's (k8s.io/kubernetes v1.37.2
// pkg/kubelet/server/server.go getContainerLogs; pkg/kubelet/kubelet_pods.go
// GetKubeletContainerLogs, validateContainerLogStatus; k8s.io/cri-client v0.37.2 pkg/logs
// logs.go ReadLogs for the options).
func KubeletHandler(kube kubernetes.Interface, now func() time.Time) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /containerLogs/{namespace}/{pod}/{container}", func(w http.ResponseWriter, r *http.Request) {
		serveContainerLogs(w, r, kube, now)
	})
	return mux
}

// kubeletError writes err as the kubelet does (go-restful Response.WriteError: the status and
// the error's text).
func kubeletError(w http.ResponseWriter, status int, err error) {
	w.Header().Set("Content-Type", "text/plain")
	w.WriteHeader(status)
	_, _ = io.WriteString(w, err.Error())
}

func serveContainerLogs(w http.ResponseWriter, r *http.Request, kube kubernetes.Interface, now func() time.Time) {
	ns, name, container := r.PathValue("namespace"), r.PathValue("pod"), r.PathValue("container")
	query := r.URL.Query()
	// backwards compatibility for the "tail" query parameter (as the kubelet)
	if tail := query.Get("tail"); tail != "" {
		query["tailLines"] = []string{tail}
		if tail == "all" {
			delete(query, "tailLines")
		}
	}
	opts := &corev1.PodLogOptions{}
	if err := legacyscheme.ParameterCodec.DecodeParameters(query, corev1.SchemeGroupVersion, opts); err != nil {
		kubeletError(w, http.StatusBadRequest, fmt.Errorf(`{"message": "Unable to decode query."}`))
		return
	}
	opts.TypeMeta = metav1.TypeMeta{}
	if errs := validation.ValidatePodLogOptions(opts); len(errs) > 0 {
		kubeletError(w, http.StatusUnprocessableEntity, fmt.Errorf(`{"message": "Invalid request."}`))
		return
	}
	pod, err := kube.CoreV1().Pods(ns).Get(r.Context(), name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		kubeletError(w, http.StatusNotFound, fmt.Errorf("pod %q does not exist", name))
		return
	}
	if err != nil {
		kubeletError(w, http.StatusInternalServerError, err)
		return
	}
	spec := containerSpec(pod, container)
	if spec == nil {
		kubeletError(w, http.StatusNotFound, fmt.Errorf("container %q not found in pod %q", container, name))
		return
	}
	// GetKubeletContainerLogs' errors are 400 (getContainerLogs).
	started, err := containerStarted(pod, container, opts.Previous)
	if err != nil {
		kubeletError(w, http.StatusBadRequest, err)
		return
	}
	lines := playedLog(pod, spec, started, now())
	if opts.Stream != nil && *opts.Stream == corev1.LogStreamStderr {
		lines = nil // the played logs are the containers' stdout
	}
	w.Header().Set("Content-Type", "text/plain")
	w.WriteHeader(http.StatusOK)
	_, _ = io.WriteString(w, renderLog(lines, opts, now()))
}

// containerSpec is the Pod's container of that name (kubecontainer.GetContainerSpec: regular,
// init and ephemeral containers).
func containerSpec(pod *corev1.Pod, name string) *corev1.Container {
	for i := range pod.Spec.Containers {
		if pod.Spec.Containers[i].Name == name {
			return &pod.Spec.Containers[i]
		}
	}
	for i := range pod.Spec.InitContainers {
		if pod.Spec.InitContainers[i].Name == name {
			return &pod.Spec.InitContainers[i]
		}
	}
	for i := range pod.Spec.EphemeralContainers {
		if pod.Spec.EphemeralContainers[i].Name == name {
			c := corev1.Container(pod.Spec.EphemeralContainers[i].EphemeralContainerCommon)
			return &c
		}
	}
	return nil
}

// containerStarted is when the container began, or the kubelet's error for a container without
// logs (validateContainerLogStatus). Divergence: KWOK's statuses carry no containerID, which a
// kubelet's terminated container always has; here a terminated container has its logs.
func containerStarted(pod *corev1.Pod, name string, previous bool) (time.Time, error) {
	var cs *corev1.ContainerStatus
	for _, list := range [][]corev1.ContainerStatus{pod.Status.ContainerStatuses, pod.Status.InitContainerStatuses, pod.Status.EphemeralContainerStatuses} {
		for i := range list {
			if list[i].Name == name {
				cs = &list[i]
				break
			}
		}
		if cs != nil {
			break
		}
	}
	if cs == nil {
		return time.Time{}, fmt.Errorf("container %q in pod %q is not available", name, pod.Name)
	}
	podStart := time.Time{}
	if pod.Status.StartTime != nil {
		podStart = pod.Status.StartTime.Time
	}
	switch st := cs.State; {
	case previous:
		// KWOK restarts no container: there is never a previous one.
		return time.Time{}, fmt.Errorf("previous terminated container %q in pod %q not found", name, pod.Name)
	case st.Running != nil:
		if !st.Running.StartedAt.IsZero() {
			return st.Running.StartedAt.Time, nil
		}
		return podStart, nil
	case st.Terminated != nil:
		if !st.Terminated.StartedAt.IsZero() {
			return st.Terminated.StartedAt.Time, nil
		}
		// KWOK's run-to-completion stage (podstages.go) writes no startedAt: the container ran
		// RunForAnnotation until finishedAt.
		if d, err := time.ParseDuration(pod.Annotations[RunForAnnotation]); err == nil && !st.Terminated.FinishedAt.IsZero() {
			return st.Terminated.FinishedAt.Add(-d), nil
		}
		return podStart, nil
	case st.Waiting != nil:
		switch reason := st.Waiting.Reason; reason {
		case "ErrImagePull":
			return time.Time{}, fmt.Errorf("container %q in pod %q is waiting to start: image can't be pulled", name, pod.Name)
		case "ImagePullBackOff":
			return time.Time{}, fmt.Errorf("container %q in pod %q is waiting to start: trying and failing to pull image", name, pod.Name)
		default:
			return time.Time{}, fmt.Errorf("container %q in pod %q is waiting to start: %v", name, pod.Name, reason)
		}
	default:
		return time.Time{}, fmt.Errorf("container %q in pod %q is waiting to start - no logs yet", name, pod.Name)
	}
}

// playedLog is the container's log so far (see LogAnnotation, CopyBytesAnnotation).
func playedLog(pod *corev1.Pod, c *corev1.Container, started, now time.Time) []logLine {
	if text, ok := pod.Annotations[LogAnnotation]; ok {
		var out []logLine
		for len(text) > 0 {
			i := strings.IndexByte(text, '\n')
			if i < 0 {
				out = append(out, logLine{t: started, text: text, partial: true})
				break
			}
			out = append(out, logLine{t: started, text: text[:i]})
			text = text[i+1:]
		}
		return out
	}
	raw, ok := pod.Annotations[CopyBytesAnnotation]
	if !ok {
		return nil
	}
	bytes, err := strconv.ParseInt(raw, 10, 64)
	if err != nil || bytes < 0 {
		return nil
	}
	runFor, err := time.ParseDuration(pod.Annotations[RunForAnnotation])
	if err != nil || runFor <= 0 {
		return nil
	}
	var claims []string
	for _, e := range c.Env {
		if e.Name == CopyClaimsEnv {
			claims = strings.Fields(e.Value)
		}
	}
	if len(claims) == 0 {
		return nil
	}
	exitCode := 0
	if v, ok := pod.Annotations[ExitCodeAnnotation]; ok {
		exitCode, _ = strconv.Atoi(v)
	}
	shares := float64(len(claims))
	if exitCode != 0 {
		shares -= 0.5
	}
	per := time.Duration(float64(runFor) / shares)
	if end := started.Add(runFor); now.After(end) {
		now = end
	}
	return copyTranscript(claims, bytes, per, exitCode, started, now, maxCopyRecords)
}

// renderLog writes lines as the CRI log reader does (cri-client pkg/logs ReadLogs): the last
// TailLines lines, then those not before the since time, each with its timestamp
// (RFC3339NanoFixed and a space) when asked, cut after LimitBytes bytes. A literal log's last
// line without a new line stays without one.
func renderLog(lines []logLine, opts *corev1.PodLogOptions, now time.Time) string {
	if opts.TailLines != nil && int64(len(lines)) > *opts.TailLines {
		lines = lines[int64(len(lines))-*opts.TailLines:]
	}
	var since time.Time
	switch {
	case opts.SinceSeconds != nil:
		since = now.Add(-time.Duration(*opts.SinceSeconds) * time.Second)
	case opts.SinceTime != nil:
		since = opts.SinceTime.Time
	}
	remain := int64(math.MaxInt64)
	if opts.LimitBytes != nil {
		remain = *opts.LimitBytes
	}
	var b strings.Builder
	for _, l := range lines {
		if l.t.Before(since) {
			continue
		}
		line := l.text
		if !l.partial {
			line += "\n"
		}
		if opts.Timestamps {
			line = l.t.UTC().Format("2006-01-02T15:04:05.000000000Z07:00") + " " + line
		}
		if int64(len(line)) > remain {
			line = line[:remain]
		}
		b.WriteString(line)
		remain -= int64(len(line))
		if remain <= 0 {
			break
		}
	}
	return b.String()
}
