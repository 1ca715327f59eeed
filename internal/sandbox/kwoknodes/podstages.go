package kwoknodes

import (
	"fmt"
	"strings"
	"time"

	"sigs.k8s.io/kwok/pkg/apis/internalversion"
	"sigs.k8s.io/kwok/pkg/config"
)

// Pods that take time or never start, played with KWOK's own stage mechanism (kwok v0.8.0
// pkg/apis/v1alpha1/stage_types.go; docs: https://kwok.sigs.k8s.io/docs/user/stages-configuration/):
// a Stage selects Pods by expressions on the object, waits its delay (which an annotation may
// set: delay.durationFrom) and patches the status and records an event. When several stages
// match, KWOK plays one of those with a positive weight (pkg/utils/lifecycle/lifecycle.go
// Match), as its own chaos stages do (kustomize/stage/pod/chaos): the stages below carry
// weight 1 and so win over the fast pod-ready stage (weight 0) for the Pods they select.
//
// What the kubelet does and these stages copy (kubernetes v1.37.2):
//   - Image pull failure (pkg/kubelet/images/image_manager.go pullImage): the container waits
//     with reason ErrImagePull and the CRI's message, a Warning "Failed" event; the next sync
//     within the back-off reports ImagePullBackOff "Back-off pulling image ...: ErrImagePull:
//     ..." (with a Normal "BackOff" event), and after the back-off (10 s, doubling to 300 s:
//     pkg/kubelet/kubelet.go imageBackOffPeriod, MaxImageBackOff) it pulls again. The Pod stays
//     Pending. Divergence: the back-off here stays at 10 s.
//   - Crash loop (pkg/kubelet/kuberuntime/kuberuntime_manager.go doBackOff): the Pod is Running,
//     not Ready; the container's last state is terminated (exit code 1, reason Error) and it
//     waits with reason CrashLoopBackOff, "back-off 10s restarting failed container=NAME
//     pod=POD_NS(UID)", with a Warning "BackOff" event. Divergence: it does not restart
//     between back-offs (restartCount stays 1).
//   - Readiness delay: the containers run and the Pod is Running, Ready False
//     (ContainersNotReady) until its readiness probe passes; here after the Pod's
//     ReadyAfterAnnotation, else the world's Options.ReadyAfter.
const (
	// ImagePullAnnotation "fail" on a Pod makes every pull of its images fail (ErrImagePull,
	// then ImagePullBackOff), as an image that does not exist in its registry.
	ImagePullAnnotation = "sandbox.olapgke.io/image-pull"
	// CrashLoopAnnotation "true" on a Pod makes its containers exit at start (CrashLoopBackOff).
	CrashLoopAnnotation = "sandbox.olapgke.io/crash-loop"
	// ReadyAfterAnnotation on a Pod (a Go duration) is how long its containers run before its
	// readiness probe passes: Running and not Ready until then. It overrides Options.ReadyAfter.
	ReadyAfterAnnotation = "sandbox.olapgke.io/ready-after"
	// RunForAnnotation on a Pod that does not restart (restartPolicy Never), a Go duration, is
	// how long its containers run before they exit: the Pod is then Succeeded, or Failed when
	// ExitCodeAnnotation is not "0", with TerminationMessageAnnotation as the containers'
	// termination message (the kubelet: pkg/kubelet/kubelet_pods.go getPhase, a Never Pod whose
	// containers all terminated). Without it such a Pod runs until it is deleted.
	RunForAnnotation             = "sandbox.olapgke.io/run-for"
	ExitCodeAnnotation           = "sandbox.olapgke.io/exit-code"
	TerminationMessageAnnotation = "sandbox.olapgke.io/termination-message"
)

// imagePullBackOff is the kubelet's first image pull back-off (imageBackOffPeriod).
const imagePullBackOff = 10 * time.Second

// podStages returns the stages above, for a world whose Pods become Ready readyAfter after
// their containers start (0: at once, unless a Pod's ReadyAfterAnnotation says otherwise).
func podStages(readyAfter time.Duration) ([]*internalversion.Stage, error) {
	// Pods the readiness stages play: every one with a world delay, else those annotated.
	delayed := `
    - key: '.metadata.annotations["` + ReadyAfterAnnotation + `"]'
      operator: 'Exists'`
	if readyAfter > 0 {
		delayed = ""
	}
	raws := []string{
		fmt.Sprintf(imagePullFailed, "pull", "NotIn", "'ErrImagePull'\n      - 'ImagePullBackOff'", 0,
			`event:
      type: Warning
      reason: Failed
      message: 'Error: ErrImagePull'`, imagePullFailedStatus),
		fmt.Sprintf(imagePullFailed, "retry", "In", "'ImagePullBackOff'", imagePullBackOff.Milliseconds(),
			`event:
      type: Warning
      reason: Failed
      message: 'Error: ErrImagePull'`, imagePullFailedStatus),
		fmt.Sprintf(imagePullFailed, "backoff", "In", "'ErrImagePull'", 0,
			`event:
      type: Normal
      reason: BackOff
      message: 'Back-off pulling image'`, imagePullBackOffStatus),
		crashLoop,
		strings.Replace(podStartUnready, "%DELAYED%", delayed, 1),
		podRunToCompletion,
		strings.Replace(strings.Replace(podReadyAfter, "%DELAYED%", delayed, 1), "%DELAY%", fmt.Sprint(readyAfter.Milliseconds()), 1),
	}
	out := make([]*internalversion.Stage, 0, len(raws))
	for _, raw := range raws {
		s, err := config.UnmarshalWithType[*internalversion.Stage](raw)
		if err != nil {
			return nil, fmt.Errorf("parse the sandbox's Pod stage: %w\n%s", err, raw)
		}
		out = append(out, s)
	}
	return out, nil
}

// addPodStages adds podStages(readyAfter) to stages (localStages' map).
func addPodStages(stages map[internalversion.StageResourceRef][]*internalversion.Stage, readyAfter time.Duration) error {
	pods, err := podStages(readyAfter)
	if err != nil {
		return err
	}
	for _, s := range pods {
		stages[s.Spec.ResourceRef] = append(stages[s.Spec.ResourceRef], s)
	}
	return nil
}

// notFailing selects Pods that neither fail their pulls nor crash.
const notFailing = `
    - key: '.metadata.annotations["` + ImagePullAnnotation + `"]'
      operator: 'NotIn'
      values:
      - 'fail'
    - key: '.metadata.annotations["` + CrashLoopAnnotation + `"]'
      operator: 'NotIn'
      values:
      - 'true'`

// podIPs is KWOK's fast pod-ready stage's host and Pod IP part.
const podIPs = `
      {{ $hostIPs := NodeIPsWith .spec.nodeName }}
      {{ with $hostIPs }}
      hostIP: {{ index . 0 | Quote }}
      hostIPs:
      {{ range . }}
      - ip: {{ . | Quote }}
      {{ end }}
      {{ end }}
      {{ $podIPs := PodIPsWith .spec.nodeName ( or .spec.hostNetwork false ) ( or .metadata.uid "" ) ( or .metadata.name "" ) ( or .metadata.namespace "" ) }}
      {{ with $podIPs }}
      podIP: {{ index . 0 | Quote }}
      podIPs:
      {{ range . }}
      - ip: {{ . | Quote }}
      {{ end }}
      {{ end }}`

// imagePullFailed is one step of the pull cycle (named by the first value): the first
// container's waiting reason (operator, values) selects the step, after a delay in milliseconds, with its event and status.
const imagePullFailed = `apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: olapgke-pod-image-%s
spec:
  resourceRef:
    apiGroup: v1
    kind: Pod
  selector:
    matchExpressions:
    - key: '.metadata.deletionTimestamp'
      operator: 'DoesNotExist'
    - key: '.status.phase'
      operator: 'In'
      values:
      - 'Pending'
    - key: '.metadata.annotations["` + ImagePullAnnotation + `"]'
      operator: 'In'
      values:
      - 'fail'
    - key: '.status.containerStatuses.[0].state.waiting.reason'
      operator: '%s'
      values:
      - %s
  weight: 1
  delay:
    durationMilliseconds: %d
  next:
    %s
    statusTemplate: |
      {{ $now := Now }}
      conditions:
      - lastTransitionTime: {{ $now | Quote }}
        status: "True"
        type: Initialized
      - lastTransitionTime: {{ $now | Quote }}
        message: 'containers with unready status: [{{ range .spec.containers }}{{ .name }} {{ end }}]'
        reason: ContainersNotReady
        status: "False"
        type: Ready
      - lastTransitionTime: {{ $now | Quote }}
        message: 'containers with unready status: [{{ range .spec.containers }}{{ .name }} {{ end }}]'
        reason: ContainersNotReady
        status: "False"
        type: ContainersReady
      containerStatuses:
      {{ range .spec.containers }}
      - image: {{ .image | Quote }}
        name: {{ .name | Quote }}
        ready: false
        restartCount: 0
        started: false
        state:
          waiting:
%s
      {{ end }}` + podIPs + `
      phase: Pending
`

// imagePullFailedStatus is containerd's answer for an image its registry does not have.
const imagePullFailedStatus = `            reason: ErrImagePull
            message: {{ printf "rpc error: code = NotFound desc = failed to pull and unpack image %q: failed to resolve reference %q: %s: not found" .image .image .image | Quote }}`

const imagePullBackOffStatus = `            reason: ImagePullBackOff
            message: {{ printf "Back-off pulling image %q: ErrImagePull: rpc error: code = NotFound desc = failed to pull and unpack image %q: failed to resolve reference %q: %s: not found" .image .image .image .image | Quote }}`

const crashLoop = `apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: olapgke-pod-crash-loop
spec:
  resourceRef:
    apiGroup: v1
    kind: Pod
  selector:
    matchExpressions:
    - key: '.metadata.deletionTimestamp'
      operator: 'DoesNotExist'
    - key: '.status.phase'
      operator: 'In'
      values:
      - 'Pending'
    - key: '.metadata.annotations["` + CrashLoopAnnotation + `"]'
      operator: 'In'
      values:
      - 'true'
    - key: '.metadata.annotations["` + ImagePullAnnotation + `"]'
      operator: 'NotIn'
      values:
      - 'fail'
  weight: 1
  delay:
    durationMilliseconds: 1000
  next:
    event:
      type: Warning
      reason: BackOff
      message: 'Back-off restarting failed container'
    statusTemplate: |
      {{ $now := Now }}
      {{ $pod := . }}
      conditions:
      - lastTransitionTime: {{ $now | Quote }}
        status: "True"
        type: Initialized
      - lastTransitionTime: {{ $now | Quote }}
        message: 'containers with unready status: [{{ range .spec.containers }}{{ .name }} {{ end }}]'
        reason: ContainersNotReady
        status: "False"
        type: Ready
      - lastTransitionTime: {{ $now | Quote }}
        message: 'containers with unready status: [{{ range .spec.containers }}{{ .name }} {{ end }}]'
        reason: ContainersNotReady
        status: "False"
        type: ContainersReady
      containerStatuses:
      {{ range .spec.containers }}
      - image: {{ .image | Quote }}
        name: {{ .name | Quote }}
        ready: false
        restartCount: 1
        started: false
        lastState:
          terminated:
            exitCode: 1
            reason: Error
            startedAt: {{ $now | Quote }}
            finishedAt: {{ $now | Quote }}
        state:
          waiting:
            reason: CrashLoopBackOff
            message: {{ printf "back-off 10s restarting failed container=%s pod=%s_%s(%s)" .name $pod.metadata.name $pod.metadata.namespace $pod.metadata.uid | Quote }}
      {{ end }}` + podIPs + `
      phase: Running
      startTime: {{ $now | Quote }}
`

// podStartUnready starts the containers of a Pod whose readiness is delayed: Running, not Ready.
const podStartUnready = `apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: olapgke-pod-start-unready
spec:
  resourceRef:
    apiGroup: v1
    kind: Pod
  selector:
    matchExpressions:
    - key: '.metadata.deletionTimestamp'
      operator: 'DoesNotExist'
    - key: '.status.phase'
      operator: 'In'
      values:
      - 'Pending'
    - key: '.status.conditions.[] | select( .type == "Ready" ) | .status'
      operator: 'NotIn'
      values:
      - 'True'` + notFailing + `%DELAYED%
  weight: 1
  next:
    statusTemplate: |
      {{ $now := Now }}
      conditions:
      - lastTransitionTime: {{ $now | Quote }}
        status: "True"
        type: Initialized
      - lastTransitionTime: {{ $now | Quote }}
        message: 'containers with unready status: [{{ range .spec.containers }}{{ .name }} {{ end }}]'
        reason: ContainersNotReady
        status: "False"
        type: Ready
      - lastTransitionTime: {{ $now | Quote }}
        message: 'containers with unready status: [{{ range .spec.containers }}{{ .name }} {{ end }}]'
        reason: ContainersNotReady
        status: "False"
        type: ContainersReady
      containerStatuses:
      {{ range .spec.containers }}
      - image: {{ .image | Quote }}
        name: {{ .name | Quote }}
        ready: false
        restartCount: 0
        started: true
        state:
          running:
            startedAt: {{ $now | Quote }}
      {{ end }}` + podIPs + `
      phase: Running
      startTime: {{ $now | Quote }}
`

// podReadyAfter is KWOK's fast pod-ready stage for a Pod podStartUnready started (Running,
// ContainersReady False for ContainersNotReady; the node lifecycle controller's "not ready"
// marking of Pods on a NotReady node leaves ContainersReady alone), after the delay.
const podReadyAfter = `apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: olapgke-pod-ready-after
spec:
  resourceRef:
    apiGroup: v1
    kind: Pod
  selector:
    matchExpressions:
    - key: '.metadata.deletionTimestamp'
      operator: 'DoesNotExist'
    - key: '.status.phase'
      operator: 'In'
      values:
      - 'Running'
    - key: '.status.conditions.[] | select( .type == "ContainersReady" ) | .reason'
      operator: 'In'
      values:
      - 'ContainersNotReady'
    - key: '.status.containerStatuses.[0].state.running.startedAt'
      operator: 'Exists'` + notFailing + `%DELAYED%
  weight: 1
  delay:
    durationMilliseconds: %DELAY%
    durationFrom:
      expressionFrom: '.metadata.annotations["` + ReadyAfterAnnotation + `"]'
  next:
    statusTemplate: |
      {{ $now := Now }}
      conditions:
      - lastTransitionTime: {{ $now | Quote }}
        status: "True"
        type: Initialized
      - lastTransitionTime: {{ $now | Quote }}
        status: "True"
        type: Ready
      - lastTransitionTime: {{ $now | Quote }}
        status: "True"
        type: ContainersReady
      {{ range .spec.readinessGates }}
      - lastTransitionTime: {{ $now | Quote }}
        status: "True"
        type: {{ .conditionType | Quote }}
      {{ end }}
      containerStatuses:
      {{ range .status.containerStatuses }}
      - image: {{ .image | Quote }}
        name: {{ .name | Quote }}
        ready: true
        restartCount: 0
        started: true
        state:
          running:
            startedAt: {{ .state.running.startedAt | Quote }}
      {{ end }}
`

// podRunToCompletion ends a running Pod that does not restart after its RunForAnnotation: its
// containers terminated with ExitCodeAnnotation (default 0) and TerminationMessageAnnotation,
// the Pod Succeeded or Failed, not Ready.
const podRunToCompletion = `apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: olapgke-pod-run-to-completion
spec:
  resourceRef:
    apiGroup: v1
    kind: Pod
  selector:
    matchExpressions:
    - key: '.metadata.deletionTimestamp'
      operator: 'DoesNotExist'
    - key: '.status.phase'
      operator: 'In'
      values:
      - 'Running'
    - key: '.spec.restartPolicy'
      operator: 'In'
      values:
      - 'Never'
    - key: '.metadata.annotations["` + RunForAnnotation + `"]'
      operator: 'Exists'
  weight: 1
  delay:
    durationMilliseconds: 0
    durationFrom:
      expressionFrom: '.metadata.annotations["` + RunForAnnotation + `"]'
  next:
    statusTemplate: |
      {{ $now := Now }}
      {{ $code := "0" }}{{ with index .metadata.annotations "` + ExitCodeAnnotation + `" }}{{ $code = . }}{{ end }}
      {{ $msg := "" }}{{ with index .metadata.annotations "` + TerminationMessageAnnotation + `" }}{{ $msg = . }}{{ end }}
      conditions:
      - lastTransitionTime: {{ $now | Quote }}
        reason: PodCompleted
        status: "False"
        type: Ready
      - lastTransitionTime: {{ $now | Quote }}
        reason: PodCompleted
        status: "False"
        type: ContainersReady
      containerStatuses:
      {{ range .spec.containers }}
      - image: {{ .image | Quote }}
        name: {{ .name | Quote }}
        ready: false
        restartCount: 0
        started: false
        state:
          terminated:
            exitCode: {{ $code }}
            reason: {{ if eq $code "0" }}Completed{{ else }}Error{{ end }}
            message: {{ $msg | Quote }}
            finishedAt: {{ $now | Quote }}
      {{ end }}
      phase: {{ if eq $code "0" }}Succeeded{{ else }}Failed{{ end }}
`
