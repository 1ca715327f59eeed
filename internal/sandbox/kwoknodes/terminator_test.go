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
	pod := func(deleteIn time.Duration, grace int64, ann string) *corev1.Pod {
		p := &corev1.Pod{}
		ts := metav1.NewTime(now.Add(deleteIn))
		p.DeletionTimestamp = &ts
		p.DeletionGracePeriodSeconds = &grace
		if ann != "" {
			p.Annotations = map[string]string{ExitAfterSigtermAnnotation: ann}
		}
		return p
	}
	tests := map[string]struct {
		pod  *corev1.Pod
		want time.Duration
	}{
		"whole grace period":                   {pod(30*time.Second, 30, ""), 30 * time.Second},
		"grace period already over":            {pod(-time.Second, 1, ""), 0},
		"app exits 2s after SIGTERM":           {pod(30*time.Second, 30, "2s"), 2 * time.Second},
		"exit later than grace: grace wins":    {pod(5*time.Second, 5, "1m"), 5 * time.Second},
		"unparsable annotation ignored":        {pod(10*time.Second, 10, "soon"), 10 * time.Second},
		"half the grace period already passed": {pod(10*time.Second, 20, "15s"), 5 * time.Second},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if got := terminateAfter(tc.pod, now); got != tc.want {
				t.Errorf("terminateAfter = %s, want %s", got, tc.want)
			}
		})
	}
}
