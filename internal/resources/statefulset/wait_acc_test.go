package statefulset_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/olapgke/terraform-provider-olapgke/internal/acctest"
	"github.com/olapgke/terraform-provider-olapgke/internal/stsutil"
)

// withPodAnnotations adds annotations (a YAML flow mapping's entries) to the pod template of an
// stsConfig's text: the sandbox's Pod settings (kwoknodes podstages.go).
func withPodAnnotations(t *testing.T, cfg, annotations string) string {
	t.Helper()
	const tmpl = "      template:\n        metadata:\n"
	if !strings.Contains(cfg, tmpl) {
		t.Fatal("no pod template metadata in the config")
	}
	return strings.Replace(cfg, tmpl, tmpl+"          annotations: {"+annotations+"}\n", 1)
}

// A rollout to an image that cannot be pulled stops after the wait judgement's grace
// (planner.JudgeWait), quoting the kubelet's reason, instead of waiting out the 10 minute
// timeout: that would end in "Rollout Timed Out".
func TestAccStatefulSet_ImagePullFailureStopsTheRollout(t *testing.T) {
	env := acctest.Sandbox(t)
	t.Parallel()
	ns := namespace(t, env.Kube, "sts-pull")
	cfg := stsConfig{ns: ns, name: "hist", extra: "  timeouts {\n    update = \"10m\"\n  }"}
	bad := cfg
	bad.image = "olap:missing"
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{Config: cfg.String()},
			{
				Config:      withPodAnnotations(t, bad.String(), `sandbox.olapgke.io/image-pull: fail`),
				ExpectError: wrapped(`Rollout Cannot Progress.*Ordinal 2 \(Pod hist-2\).*(ErrImagePull|ImagePullBackOff).*olap:missing`),
			},
		},
	})
}

// A crash loop stops the rollout the same way.
func TestAccStatefulSet_CrashLoopStopsTheRollout(t *testing.T) {
	env := acctest.Sandbox(t)
	t.Parallel()
	ns := namespace(t, env.Kube, "sts-crash")
	cfg := stsConfig{ns: ns, name: "hist", replicas: 1}
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config:      withPodAnnotations(t, cfg.String(), `sandbox.olapgke.io/crash-loop: "true"`),
				ExpectError: wrapped(`Rollout Cannot Progress.*Ordinal 0 \(Pod hist-0\).*CrashLoopBackOff: back-off 10s restarting failed container=olap`),
			},
		},
	})
}

// A Pod whose readiness takes time (Running, not Ready for a while) is waited for, not judged a
// failure: the apply ends with every Pod Ready.
func TestAccStatefulSet_ReadinessDelayIsWaitedFor(t *testing.T) {
	env := acctest.Sandbox(t)
	t.Parallel()
	ns := namespace(t, env.Kube, "sts-slow")
	cfg := stsConfig{ns: ns, name: "hist", replicas: 2}
	slow := cfg
	slow.image = "olap:2"
	// Longer than the wait judgement's grace (planner.DefaultWaitGrace, 20s).
	const delay = "25s"
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{Config: cfg.String()},
			{
				Config: withPodAnnotations(t, slow.String(), `sandbox.olapgke.io/ready-after: "`+delay+`"`),
				Check: resource.ComposeTestCheckFunc(
					resource.TestCheckResourceAttr(res, "rollout.ready_replicas", "2"),
					func(*terraform.State) error {
						for o := range int32(2) {
							p, err := env.Kube.CoreV1().Pods(ns).Get(t.Context(), stsutil.PodName("hist", o), metav1.GetOptions{})
							if err != nil {
								return err
							}
							if !stsutil.PodReady(p) || p.Spec.Containers[0].Image != "olap:2" || p.Annotations["sandbox.olapgke.io/ready-after"] != delay {
								return fmt.Errorf("Pod %s: ready %v, image %s, annotations %v", p.Name, stsutil.PodReady(p), p.Spec.Containers[0].Image, p.Annotations)
							}
							if !startedUnready(p) {
								return fmt.Errorf("Pod %s did not start unready (conditions %v)", p.Name, p.Status.Conditions)
							}
						}
						return nil
					},
				),
			},
		},
	})
}

// startedUnready: the Pod became Ready at least a second after its containers started, as the
// readiness delay has it (KWOK's fast pod-ready stage makes both the same instant).
func startedUnready(p *corev1.Pod) bool {
	var ready metav1.Time
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			ready = c.LastTransitionTime
		}
	}
	if len(p.Status.ContainerStatuses) == 0 || p.Status.ContainerStatuses[0].State.Running == nil {
		return false
	}
	return ready.Sub(p.Status.ContainerStatuses[0].State.Running.StartedAt.Time) >= 1e9
}
