package statefulset

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestUnmountedClaimTemplates(t *testing.T) {
	t.Parallel()
	claim := func(n string) corev1.PersistentVolumeClaim {
		return corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: n}}
	}
	cases := map[string]struct {
		init, main []corev1.Container
		claims     []string
		want       []string
	}{
		"all mounted": {
			main:   []corev1.Container{{VolumeMounts: []corev1.VolumeMount{{Name: "cache"}, {Name: "logs"}}}},
			claims: []string{"cache", "logs"},
		},
		"one unmounted": {
			main:   []corev1.Container{{VolumeMounts: []corev1.VolumeMount{{Name: "cache"}}}},
			claims: []string{"cache", "spill", "logs"},
			want:   []string{"spill", "logs"},
		},
		"init container mount counts": {
			init:   []corev1.Container{{VolumeMounts: []corev1.VolumeMount{{Name: "seed"}}}},
			main:   []corev1.Container{{VolumeMounts: []corev1.VolumeMount{{Name: "cache"}}}},
			claims: []string{"cache", "seed"},
		},
		"block device counts": {
			main:   []corev1.Container{{VolumeDevices: []corev1.VolumeDevice{{Name: "raw"}}}},
			claims: []string{"raw"},
		},
		"no containers mount anything": {
			main:   []corev1.Container{{Name: "olap"}},
			claims: []string{"cache"},
			want:   []string{"cache"},
		},
		"no claim templates": {main: []corev1.Container{{Name: "olap"}}},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			set := &appsv1.StatefulSet{}
			set.Spec.Template.Spec.InitContainers = c.init
			set.Spec.Template.Spec.Containers = c.main
			for _, n := range c.claims {
				set.Spec.VolumeClaimTemplates = append(set.Spec.VolumeClaimTemplates, claim(n))
			}
			if diff := cmp.Diff(c.want, unmountedClaimTemplates(set)); diff != "" {
				t.Errorf("unmounted (-want +got):\n%s", diff)
			}
		})
	}
}
