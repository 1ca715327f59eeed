package kwoknodes

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestTerminateAfter(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	// pod was deleted at now+deletedAt with the given grace period; its deletionTimestamp has
	// one-second resolution, as the API server stores it.
	pod := func(deletedAt time.Duration, grace int64, ann string) *corev1.Pod {
		p := &corev1.Pod{}
		ts := metav1.NewTime(now.Add(deletedAt + time.Duration(grace)*time.Second).Truncate(time.Second))
		p.DeletionTimestamp = &ts
		p.DeletionGracePeriodSeconds = &grace
		if ann != "" {
			p.Annotations = map[string]string{ExitAfterSigtermAnnotation: ann}
		}
		return p
	}
	tests := map[string]struct {
		pod  *corev1.Pod
		seen time.Duration // relative to now
		want time.Duration
	}{
		"whole grace period":                   {pod(0, 30, ""), 0, 30 * time.Second},
		"sub-second delete keeps the 1 s":      {pod(-300*time.Millisecond, 1, ""), -300 * time.Millisecond, 700 * time.Millisecond},
		"grace period already over":            {pod(-2*time.Second, 1, ""), -2 * time.Second, 0},
		"seen late: deletionTimestamp bounds":  {pod(-10*time.Second, 1, ""), 0, 0},
		"app exits 2s after SIGTERM":           {pod(0, 30, "2s"), 0, 2 * time.Second},
		"exit later than grace: grace wins":    {pod(0, 5, "1m"), 0, 5 * time.Second},
		"unparsable annotation ignored":        {pod(0, 10, "soon"), 0, 10 * time.Second},
		"half the grace period already passed": {pod(-10*time.Second, 20, "15s"), -10 * time.Second, 5 * time.Second},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if got := terminateAfter(tc.pod, now.Add(tc.seen), now); got != tc.want {
				t.Errorf("terminateAfter = %s, want %s", got, tc.want)
			}
		})
	}
	noGrace := &corev1.Pod{}
	ts := metav1.NewTime(now.Add(3 * time.Second))
	noGrace.DeletionTimestamp = &ts
	if got := terminateAfter(noGrace, now, now); got != 3*time.Second {
		t.Errorf("without deletionGracePeriodSeconds: %s, want the deletionTimestamp (3s)", got)
	}
}
