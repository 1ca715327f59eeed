package statefulset_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/olapgke/terraform-provider-olapgke/internal/acctest"
	"github.com/olapgke/terraform-provider-olapgke/internal/stsutil"
)

// TestAccLocalDataLost_OrdinalNotReadyOnLostVolume: on the sandbox's real TopoLVM the nodes'
// kubelets publish volumes with TopoLVM's NodePublishVolume. After GKE recreates the VM of
// ordinal 1's node under the same name (new, empty Local SSDs), the ordinal comes back on that
// node, where its PV is pinned, and cannot mount: the kubelet's FailedMount Warning ("failed to
// find LV") and a Pod that stays ContainerCreating. The ordinals data source reports it not
// Ready (it used to run Ready on a volume that is gone); ordinal 0 stays Ready.
func TestAccLocalDataLost_OrdinalNotReadyOnLostVolume(t *testing.T) {
	env := acctest.Sandbox(t)
	ns := namespace(t, env.Kube, "lost-mount")
	cfg := acctest.HistoricalStatefulSetHCL(ns, "pool-b", "olap:1")
	tf := acctest.NewTF(t, cfg)
	t.Cleanup(func() { _, _ = tf.Run("destroy", "-auto-approve") })
	if out, err := tf.Apply(); err != nil {
		t.Fatalf("apply: %v\n%s", err, out)
	}
	pod1 := func(ctx context.Context) (*corev1.Pod, error) {
		return env.Kube.CoreV1().Pods(ns).Get(ctx, stsutil.PodName("hist", 1), metav1.GetOptions{})
	}
	before, err := pod1(t.Context())
	if err != nil || before.Spec.NodeName == "" {
		t.Fatalf("Pod of ordinal 1: %v", err)
	}
	node := before.Spec.NodeName
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	if err := env.RecreateNode(ctx, node, acctest.RecreateSameName); err != nil {
		t.Fatal(err)
	}
	var uid types.UID
	var failed string
	if err := wait.PollUntilContextCancel(ctx, 500*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		p, err := pod1(ctx)
		if err != nil || p.UID == before.UID || p.Spec.NodeName == "" {
			return false, nil //nolint:nilerr // not recreated yet: ask again
		}
		evs, err := env.Kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: fields.Set{
			"involvedObject.uid": string(p.UID), "reason": "FailedMount"}.String()})
		if err != nil {
			return false, err
		}
		for _, e := range evs.Items {
			if strings.Contains(e.Message, "failed to find LV") {
				uid, failed = p.UID, e.Message
				return true, nil
			}
		}
		return false, nil
	}); err != nil {
		t.Fatalf("recreated ordinal 1 on %s: no FailedMount for its lost volume: %v", node, err)
	}
	p, err := pod1(t.Context())
	if err != nil || p.UID != uid || p.Spec.NodeName != node || stsutil.PodReady(p) {
		t.Fatalf("ordinal 1 on the lost volume: %v, node %s, Ready %v; want on %s, not Ready", err, p.Spec.NodeName, stsutil.PodReady(p), node)
	}
	if !strings.HasPrefix(failed, `MountVolume.SetUp failed for volume "pvc-`) {
		t.Errorf("FailedMount message %q, want the kubelet's MountVolume.SetUp failed for volume ...", failed)
	}

	tf.Write(cfg + fmt.Sprintf(`
data "olapgke_statefulset_ordinals" "hist" {
  namespace  = %q
  name       = "hist"
  depends_on = [olapgke_statefulset.hist]
}
output "ready" {
  value = [for o in data.olapgke_statefulset_ordinals.hist.ordinals : o.ready]
}
`, ns))
	out, _ := tf.Run("plan")
	flat := strings.Join(strings.Fields(out), " ")
	if !strings.Contains(flat, "ready = [ + true, + false, + true, ]") {
		t.Errorf("the ordinals data source should report ordinal 1 not Ready and the others Ready:\n%s", out)
	}
}
