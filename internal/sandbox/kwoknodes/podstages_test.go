package kwoknodes

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/kwok/pkg/apis/internalversion"
	"sigs.k8s.io/kwok/pkg/config"
	"sigs.k8s.io/kwok/pkg/utils/gotpl"
	"sigs.k8s.io/kwok/pkg/utils/lifecycle"
)

// play matches pod against the sandbox's Pod stages with KWOK's own matcher (the one its Pod
// controller calls) and returns the stage's name and delay ("" when none matches).
func play(t *testing.T, readyAfter time.Duration, pod *corev1.Pod) (string, time.Duration) {
	t.Helper()
	all, err := localStages()
	if err != nil {
		t.Fatal(err)
	}
	if err := addPodStages(all, readyAfter); err != nil {
		t.Fatal(err)
	}
	lc, err := lifecycle.NewLifecycle(all[internalversion.StageResourceRef{APIGroup: "v1", Kind: "Pod"}])
	if err != nil {
		t.Fatal(err)
	}
	ev := &lifecycle.Event{Labels: pod.Labels, Annotations: pod.Annotations, Data: pod}
	for range 20 { // KWOK picks among weighted stages at random: a winner must always win
		st, err := lc.Match(context.Background(), ev)
		if err != nil {
			t.Fatal(err)
		}
		if st == nil {
			return "", 0
		}
		other, err := lc.Match(context.Background(), ev)
		if err != nil {
			t.Fatal(err)
		}
		if other.Name() != st.Name() {
			t.Fatalf("KWOK plays %s or %s", st.Name(), other.Name())
		}
		d, _, err := st.Delay(context.Background(), ev, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		if st.Name() != "pod-ready" {
			return st.Name(), d
		}
	}
	return "pod-ready", 0
}

func stagePod(annotations map[string]string, edit func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "olap", Name: "hist-0", UID: "u", Annotations: annotations},
		Spec:   corev1.PodSpec{NodeName: "n1", Containers: []corev1.Container{{Name: "app", Image: "olap:2"}}},
		Status: corev1.PodStatus{Phase: corev1.PodPending}}
	if edit != nil {
		edit(p)
	}
	return p
}

func containerWaiting(reason string) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "app", State: corev1.ContainerState{
			Waiting: &corev1.ContainerStateWaiting{Reason: reason}}}}
	}
}

func runningUnready(p *corev1.Pod) {
	p.Status.Phase = corev1.PodRunning
	p.Status.Conditions = []corev1.PodCondition{
		{Type: corev1.PodReady, Status: corev1.ConditionFalse, Reason: "ContainersNotReady"},
		{Type: corev1.ContainersReady, Status: corev1.ConditionFalse, Reason: "ContainersNotReady"}}
	p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "app", State: corev1.ContainerState{
		Running: &corev1.ContainerStateRunning{StartedAt: metav1.Now()}}}}
}

func TestPodStages(t *testing.T) {
	t.Parallel()
	fail := map[string]string{ImagePullAnnotation: "fail"}
	crash := map[string]string{CrashLoopAnnotation: "true"}
	slow := map[string]string{ReadyAfterAnnotation: "7s"}
	for name, tc := range map[string]struct {
		world     time.Duration
		pod       *corev1.Pod
		want      string
		wantDelay time.Duration
	}{
		"a plain Pod is KWOK's fast pod-ready":  {pod: stagePod(nil, nil), want: "pod-ready"},
		"image pull: the first pull fails":      {pod: stagePod(fail, nil), want: "olapgke-pod-image-pull"},
		"image pull: ErrImagePull backs off":    {pod: stagePod(fail, containerWaiting("ErrImagePull")), want: "olapgke-pod-image-backoff"},
		"image pull: pulls again after 10s":     {pod: stagePod(fail, containerWaiting("ImagePullBackOff")), want: "olapgke-pod-image-retry", wantDelay: 10 * time.Second},
		"image pull fails with a world delay":   {world: time.Minute, pod: stagePod(fail, nil), want: "olapgke-pod-image-pull"},
		"crash loop":                            {pod: stagePod(crash, nil), want: "olapgke-pod-crash-loop", wantDelay: time.Second},
		"a crash-looping Pod stays":             {pod: stagePod(crash, func(p *corev1.Pod) { runningUnready(p) }), want: ""},
		"ready-after: containers start unready": {pod: stagePod(slow, nil), want: "olapgke-pod-start-unready"},
		"ready-after: Ready after the delay":    {pod: stagePod(slow, runningUnready), want: "olapgke-pod-ready-after", wantDelay: 7 * time.Second},
		"world delay: containers start unready": {world: 3 * time.Second, pod: stagePod(nil, nil), want: "olapgke-pod-start-unready"},
		"world delay: Ready after it":           {world: 3 * time.Second, pod: stagePod(nil, runningUnready), want: "olapgke-pod-ready-after", wantDelay: 3 * time.Second},
		"the Pod's delay wins over the world's": {world: 3 * time.Second, pod: stagePod(slow, runningUnready), want: "olapgke-pod-ready-after", wantDelay: 7 * time.Second},
		"without a delay a Running Pod is left": {pod: stagePod(nil, runningUnready), want: ""},
		"a Pod marked not ready on a NotReady node is left": {world: 3 * time.Second, pod: stagePod(nil, func(p *corev1.Pod) {
			runningUnready(p)
			p.Status.Conditions[1] = corev1.PodCondition{Type: corev1.ContainersReady, Status: corev1.ConditionTrue}
		}), want: ""},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got, d := play(t, tc.world, tc.pod)
			if got != tc.want || d != tc.wantDelay {
				t.Fatalf("plays %q after %s, want %q after %s", got, d, tc.want, tc.wantDelay)
			}
		})
	}
}

// A Pod that does not restart, with a run time, ends after it: Succeeded with exit code 0, or
// Failed with the annotated exit code and message; without a run time it runs on.
func TestPodRunToCompletion(t *testing.T) {
	t.Parallel()
	never := func(p *corev1.Pod) {
		p.Spec.RestartPolicy = corev1.RestartPolicyNever
		p.Status.Phase = corev1.PodRunning
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	}
	if got, d := play(t, 0, stagePod(map[string]string{RunForAnnotation: "3s"}, never)); got != "olapgke-pod-run-to-completion" || d != 3*time.Second {
		t.Fatalf("plays %q after %s, want olapgke-pod-run-to-completion after 3s", got, d)
	}
	if got, _ := play(t, 0, stagePod(nil, never)); got != "" {
		t.Fatalf("a Never Pod without a run time: plays %q, want it left running", got)
	}
	always := func(p *corev1.Pod) { never(p); p.Spec.RestartPolicy = corev1.RestartPolicyAlways }
	if got, _ := play(t, 0, stagePod(map[string]string{RunForAnnotation: "3s"}, always)); got != "" {
		t.Fatalf("a restarting Pod with a run time: plays %q, want it left running", got)
	}
	r := gotpl.NewRenderer(gotpl.FuncMap{})
	for _, tc := range []struct {
		ann     map[string]string
		phase   corev1.PodPhase
		code    int32
		reason  string
		message string
	}{
		{map[string]string{RunForAnnotation: "1s"}, corev1.PodSucceeded, 0, "Completed", ""},
		{map[string]string{RunForAnnotation: "1s", ExitCodeAnnotation: "23", TerminationMessageAnnotation: "rsync error: code 23"},
			corev1.PodFailed, 23, "Error", "rsync error: code 23"},
	} {
		out, err := r.ToJSON(statusTemplate(t, podRunToCompletion), stagePod(tc.ann, never))
		if err != nil {
			t.Fatal(err)
		}
		var st corev1.PodStatus
		if err := json.Unmarshal(out, &st); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		term := st.ContainerStatuses[0].State.Terminated
		if st.Phase != tc.phase || term == nil || term.ExitCode != tc.code || term.Reason != tc.reason || term.Message != tc.message {
			t.Errorf("%v: phase %s, terminated %+v", tc.ann, st.Phase, term)
		}
	}
}

// statusTemplate is the status template of the stage raw (YAML).
func statusTemplate(t *testing.T, raw string) string {
	t.Helper()
	s, err := config.UnmarshalWithType[*internalversion.Stage](raw)
	if err != nil {
		t.Fatal(err)
	}
	return s.Spec.Steps[0].Patch.Template
}
