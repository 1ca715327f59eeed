package kwoknodes

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/kwok/pkg/apis/internalversion"
	"sigs.k8s.io/kwok/pkg/utils/lifecycle"
)

// stageFor is the name of the stage KWOK's own matcher plays for pod among the sandbox's Pod
// stages, with or without the volume gate ("" when none matches).
func stageFor(t *testing.T, gate bool, pod *corev1.Pod) string {
	t.Helper()
	all, err := localStages()
	if err != nil {
		t.Fatal(err)
	}
	if err := addPodStages(all, 0); err != nil {
		t.Fatal(err)
	}
	if gate {
		if err := gatePodReadyOnVolumes(all); err != nil {
			t.Fatal(err)
		}
	}
	lc, err := lifecycle.NewLifecycle(all[internalversion.StageResourceRef{APIGroup: "v1", Kind: "Pod"}])
	if err != nil {
		t.Fatal(err)
	}
	st, err := lc.Match(context.Background(), &lifecycle.Event{Labels: pod.Labels, Annotations: pod.Annotations, Data: pod})
	if err != nil {
		t.Fatal(err)
	}
	if st == nil {
		return ""
	}
	return st.Name()
}

func withClaim(p *corev1.Pod) {
	p.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
		PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data-hist-0"}}}}
}

// TestGatePodReadyOnVolumes: with the gate, KWOK starts no Pending Pod with a claim (ready,
// failing pull or crash loop) until the kubelet volume manager marked its volumes mounted; a Pod
// without claims, or with only other volumes, starts as before; without the gate a Pod with a
// claim starts at once.
func TestGatePodReadyOnVolumes(t *testing.T) {
	t.Parallel()
	mounted := map[string]string{VolumesMountedAnnotation: "true"}
	emptyDir := func(p *corev1.Pod) {
		p.Spec.Volumes = []corev1.Volume{{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
	}
	ephemeral := func(p *corev1.Pod) {
		p.Spec.Volumes = []corev1.Volume{{Name: "scratch", VolumeSource: corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{}}}}
	}
	for name, tc := range map[string]struct {
		gate bool
		pod  *corev1.Pod
		want string
	}{
		"no volumes":                      {true, stagePod(nil, nil), "pod-ready"},
		"emptyDir only":                   {true, stagePod(nil, emptyDir), "pod-ready"},
		"claim not mounted":               {true, stagePod(nil, withClaim), ""},
		"ephemeral claim not mounted":     {true, stagePod(nil, ephemeral), ""},
		"claim mounted":                   {true, stagePod(mounted, withClaim), "pod-ready"},
		"claim, annotation not true":      {true, stagePod(map[string]string{VolumesMountedAnnotation: "false"}, withClaim), ""},
		"claim not mounted, failing pull": {true, stagePod(map[string]string{ImagePullAnnotation: "fail"}, withClaim), ""},
		"claim mounted, failing pull":     {true, stagePod(map[string]string{ImagePullAnnotation: "fail", VolumesMountedAnnotation: "true"}, withClaim), "olapgke-pod-image-pull"},
		"claim not mounted, crash loop":   {true, stagePod(map[string]string{CrashLoopAnnotation: "true"}, withClaim), ""},
		"claim mounted, crash loop":       {true, stagePod(map[string]string{CrashLoopAnnotation: "true", VolumesMountedAnnotation: "true"}, withClaim), "olapgke-pod-crash-loop"},
		"claim not mounted, no gate":      {false, stagePod(nil, withClaim), "pod-ready"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if got := stageFor(t, tc.gate, tc.pod); got != tc.want {
				t.Errorf("stage %q, want %q", got, tc.want)
			}
		})
	}
}
