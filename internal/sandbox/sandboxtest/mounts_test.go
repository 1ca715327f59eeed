package sandboxtest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"
)

// annVolumesMounted is what real TopoLVM's kubelet volume manager writes on a Pod once its
// volumes are published (topolvmreal.AnnVolumesMounted, kwoknodes.VolumesMountedAnnotation).
const annVolumesMounted = "sandbox.olapgke.io/volumes-mounted"

// mountRecord is DIR/mounts.log: the kubelets' CSI node calls and the stand-ins' command lines.
func mountRecord(t *testing.T, dir string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "mounts.log"))
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSpace(string(b)), "\n")
}

// linesWith are the record's lines that start with prefix and hold every part.
func linesWith(lines []string, prefix string, parts ...string) []string {
	var out []string
	for _, l := range lines {
		if !strings.HasPrefix(l, prefix) {
			continue
		}
		all := true
		for _, p := range parts {
			all = all && strings.Contains(l, p)
		}
		if all {
			out = append(out, l)
		}
	}
	return out
}

func podOf(t *testing.T, k kubernetes.Interface, ns, name string) *corev1.Pod {
	t.Helper()
	p, err := k.CoreV1().Pods(ns).Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get Pod %s: %v", name, err)
	}
	return p
}

// failedMounts are the Pod's FailedMount Events (by the Pod's UID; a repeat raises an Event's
// count).
func failedMounts(ctx context.Context, k kubernetes.Interface, pod *corev1.Pod) ([]corev1.Event, error) {
	evs, err := k.CoreV1().Events(pod.Namespace).List(ctx, metav1.ListOptions{FieldSelector: fields.Set{
		"involvedObject.uid": string(pod.UID), "reason": "FailedMount",
	}.String()})
	if err != nil {
		return nil, err
	}
	return evs.Items, nil
}

// TestRealTopoLVM_PodsReadyOnlyOnPublishedVolumes: on `up --topolvm real` the nodes' kubelets
// publish each Pod's TopoLVM volume through TopoLVM's own NodePublishVolume before KWOK makes the
// Pod Ready. The record shows, for each ordinal's volume, the publish to the kubelet's target
// path, then wipefs, mkfs.xfs and mount of the logical volume's device. A deleted Pod's volume
// is unpublished and published again for its successor on the same node, found formatted (the
// real /sbin/blkid reads the stand-in mkfs's superblock), so not formatted again. After GKE
// recreates the VM of ordinal 0's node under the same name (new, empty Local SSDs), the ordinal
// comes back on that node (its PV is pinned there), TopoLVM answers NotFound "failed to find
// LV", and the Pod gets the kubelet's FailedMount Warning Events, retried, and stays Pending
// with its container waiting in ContainerCreating, not Ready; the other ordinals stay Ready.
func TestRealTopoLVM_PodsReadyOnlyOnPublishedVolumes(t *testing.T) {
	t.Parallel() // own sandbox, waits on its controllers: beside the others that do (CI time, issue 44)
	topolvmBin := topolvmBinOrSkip(t)
	p := startRealProcess(t, `
clusters:
- name: olap
  location: us-central1-a
  nodePools:
  - name: pool-a
topolvm:
  bringUp:
    capacityPoll: 3s
`, topolvmBin, nil)
	k := kubernetes.NewForConfigOrDie(p.rest)
	control := p.env["OLAPGKE_SANDBOX_CONTROL"]
	ctx := t.Context()
	ns, sts := runOrdinals(t, k)
	_, pvs := storageOf(t, k, ns, sts.Name, int(*sts.Spec.Replicas))

	rec := mountRecord(t, p.dir)
	for i, pv := range pvs {
		handle := pv.Spec.CSI.VolumeHandle
		pod := podOf(t, k, ns, fmt.Sprintf("%s-%d", sts.Name, i))
		if pod.Annotations[annVolumesMounted] != "true" || !isReady(pod) {
			t.Errorf("ordinal %d: annotation %q, Ready %v: want mounted and Ready", i, pod.Annotations[annVolumesMounted], isReady(pod))
		}
		target := "/pods/" + string(pod.UID) + "/volumes/kubernetes.io~csi/" + pv.Name + "/mount"
		dev := "/vg-ssd/" + handle
		for _, want := range []struct{ prefix, parts []string }{
			{[]string{"NodePublishVolume "}, []string{"volume=" + handle, target}},
			{[]string{"wipefs "}, []string{"-a", dev}},
			{[]string{"mkfs.xfs "}, []string{"-f", dev}},
			{[]string{"mount "}, []string{"-t xfs", "nouuid", dev, target}},
		} {
			if got := linesWith(rec, want.prefix[0], want.parts...); len(got) != 1 {
				t.Errorf("ordinal %d: %d record lines %q with %q, want 1; record:\n%s", i, len(got), want.prefix[0], want.parts, strings.Join(rec, "\n"))
			}
		}
	}
	if t.Failed() {
		t.FailNow()
	}
	p0, _ := pvNode(pvs[0])
	handle0 := pvs[0].Spec.CSI.VolumeHandle

	// A deleted Pod: unpublished; its successor on the same node publishes the formatted volume.
	old := podOf(t, k, ns, sts.Name+"-0")
	if err := k.CoreV1().Pods(ns).Delete(ctx, old.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	var next *corev1.Pod
	poll(t, 2*time.Minute, "ordinal 0 back, Ready", func(ctx context.Context) (bool, error) {
		pod, err := k.CoreV1().Pods(ns).Get(ctx, old.Name, metav1.GetOptions{})
		if err != nil || pod.UID == old.UID {
			return false, nil
		}
		next = pod
		return isReady(pod), nil
	})
	poll(t, time.Minute, "old Pod's volume unpublished", func(context.Context) (bool, error) {
		return len(linesWith(mountRecord(t, p.dir), "NodeUnpublishVolume ", "volume="+handle0, string(old.UID))) == 1, nil
	})
	rec = mountRecord(t, p.dir)
	if got := linesWith(rec, "NodePublishVolume ", "volume="+handle0, string(next.UID)); len(got) != 1 {
		t.Errorf("successor Pod: %d publish lines, want 1", len(got))
	}
	if got := linesWith(rec, "mkfs.xfs ", "/vg-ssd/"+handle0); len(got) != 1 {
		t.Errorf("volume formatted %d times, want once (a volume published again must be found formatted): %q", len(got), got)
	}

	// GKE recreates the VM under the same name: the ordinal's logical volume is gone.
	if err := recreateVM(ctx, control, p0, "same-name"); err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("MountVolume.SetUp failed for volume %q : rpc error: code = NotFound desc = failed to find LV: %s", pvs[0].Name, handle0)
	var lost *corev1.Pod
	var events []corev1.Event
	poll(t, 3*time.Minute, "ordinal 0 recreated on "+p0+" with FailedMount retried", func(ctx context.Context) (bool, error) {
		pod, err := k.CoreV1().Pods(ns).Get(ctx, old.Name, metav1.GetOptions{})
		if err != nil || pod.UID == next.UID || pod.Spec.NodeName == "" {
			return false, nil
		}
		evs, err := failedMounts(ctx, k, pod)
		if err != nil {
			return false, err
		}
		lost, events = pod, evs
		for _, e := range evs {
			if e.Message == want {
				return e.Count >= 2, nil
			}
		}
		return false, nil
	})
	if lost.Spec.NodeName != p0 {
		t.Fatalf("recreated ordinal 0 on %s, want %s (its PV's node)", lost.Spec.NodeName, p0)
	}
	// Until the recreated node's agent is back, the kubelet has no driver to call ("driver name
	// topolvm.io not found in the list of registered CSI drivers"): same reason and prefix.
	prefix := fmt.Sprintf("MountVolume.SetUp failed for volume %q : ", pvs[0].Name)
	for _, e := range events {
		if e.Type != corev1.EventTypeWarning || !strings.HasPrefix(e.Message, prefix) || e.Source.Component != "kubelet" || e.Source.Host != p0 {
			t.Errorf("event %s %s from %s/%s: %q; want Warning from kubelet/%s: %q...", e.Type, e.Reason, e.Source.Component, e.Source.Host, e.Message, p0, prefix)
		}
	}
	lost = podOf(t, k, ns, old.Name)
	waiting := ""
	if cs := lost.Status.ContainerStatuses; len(cs) == 1 && cs[0].State.Waiting != nil {
		waiting = cs[0].State.Waiting.Reason
	}
	if isReady(lost) || lost.Status.Phase != corev1.PodPending || waiting != "ContainerCreating" || lost.Annotations[annVolumesMounted] != "" {
		t.Errorf("ordinal 0 on the lost volume: phase %s, Ready %v, waiting %q, annotation %q; want Pending, not Ready, ContainerCreating, none",
			lost.Status.Phase, isReady(lost), waiting, lost.Annotations[annVolumesMounted])
	}
	for i := 1; i < len(pvs); i++ {
		if pod := podOf(t, k, ns, fmt.Sprintf("%s-%d", sts.Name, i)); !isReady(pod) && pod.Spec.NodeName != p0 {
			t.Errorf("ordinal %d on %s not Ready", i, pod.Spec.NodeName)
		}
	}
}
