package deviceclass

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

func hashOf(text string) string {
	sum := sha256.Sum256([]byte(text))
	return hex.EncodeToString(sum[:])
}

// Two device classes applied at once both write the shared ConfigMap and both roll lvmd. Whatever
// the interleaving, the DaemonSet must end annotated with the hash of the config as it is now.
func TestRestartLVMDFollowsConcurrentConfigWrites(t *testing.T) {
	t.Parallel()
	ref := cmRef{Namespace: "topolvm-system", Name: "topolvm-lvmd-0", Key: "lvmd.yaml"}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ref.Namespace, Name: ref.Name}, Data: map[string]string{ref.Key: "device-classes: [a]\n"}}
	ds := &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Namespace: ref.Namespace, Name: "topolvm-lvmd-0"}}
	ds.Spec.Template.Spec.Volumes = []corev1.Volume{{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: ref.Name}}}}}
	kube := fake.NewClientset(cm, ds)

	// The other writer lands its ConfigMap edit right after our first DaemonSet patch.
	const later = "device-classes: [a, b]\n"
	raced := false
	kube.PrependReactor("patch", "daemonsets", func(k8stesting.Action) (bool, runtime.Object, error) {
		if !raced {
			raced = true
			cur := cm.DeepCopy()
			cur.Data[ref.Key] = later
			// Through the tracker: the clientset itself is locked while reactors run.
			if err := kube.Tracker().Update(corev1.SchemeGroupVersion.WithResource("configmaps"), cur, ref.Namespace); err != nil {
				t.Errorf("concurrent write: %v", err)
			}
		}
		return false, nil, nil
	})

	names, err := restartLVMD(context.Background(), kube, ref)
	if err != nil {
		t.Fatal(err)
	}
	if len(names) != 1 || names[0] != "topolvm-system/topolvm-lvmd-0" {
		t.Errorf("patched DaemonSets = %v", names)
	}
	got, err := kube.AppsV1().DaemonSets(ref.Namespace).Get(context.Background(), ds.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if h := got.Spec.Template.Annotations[AnnLVMDConfigHash]; h != hashOf(later) {
		t.Errorf("annotation %s = %q, want the hash of the config written last (%q); hash of the earlier config is %q", AnnLVMDConfigHash, h, hashOf(later), hashOf("device-classes: [a]\n"))
	}
}

// A DaemonSet already annotated with the current config's hash is left alone.
func TestRestartLVMDNoopWhenCurrent(t *testing.T) {
	t.Parallel()
	ref := cmRef{Namespace: "topolvm-system", Name: "topolvm-lvmd-0", Key: "lvmd.yaml"}
	text := "device-classes: [a]\n"
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ref.Namespace, Name: ref.Name}, Data: map[string]string{ref.Key: text}}
	ds := &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Namespace: ref.Namespace, Name: "lvmd"}}
	ds.Spec.Template.Annotations = map[string]string{AnnLVMDConfigHash: hashOf(text)}
	ds.Spec.Template.Spec.Volumes = []corev1.Volume{{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: ref.Name}}}}}
	kube := fake.NewClientset(cm, ds)
	names, err := restartLVMD(context.Background(), kube, ref)
	if err != nil || len(names) != 0 {
		t.Fatalf("restartLVMD = %v, %v; want no patch", names, err)
	}
}
