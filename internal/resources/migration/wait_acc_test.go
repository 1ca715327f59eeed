package migration_test

import (
	"context"
	"regexp"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"

	"github.com/olapgke/terraform-provider-olapgke/internal/acctest"
)

// switchPoolWithAnnotations is switchPool with pod template annotations added (the sandbox's
// Pod settings: kwoknodes podstages.go), so the moved Pods behave as they say.
func (f *setFixture) switchPoolWithAnnotations(t *testing.T, pool string, ann map[string]string) {
	t.Helper()
	ctx := t.Context()
	sets := f.env.Kube.AppsV1().StatefulSets(f.ns)
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		s, err := sets.Get(ctx, f.name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		s = s.DeepCopy()
		s.Spec.Template.Spec.NodeSelector = map[string]string{labelPool: pool}
		if s.Spec.Template.Annotations == nil {
			s.Spec.Template.Annotations = map[string]string{}
		}
		for k, v := range ann {
			s.Spec.Template.Annotations[k] = v
		}
		_, err = sets.Update(ctx, s, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatalf("switching template to %s: %v", pool, err)
	}
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		s, err := sets.Get(ctx, f.name, metav1.GetOptions{})
		return err == nil && s.Status.ObservedGeneration >= s.Generation, err
	})
	if err != nil {
		t.Fatalf("controller did not observe the template change: %v", err)
	}
}

// A moved Pod whose image cannot be pulled stops the migration after the wait judgement's grace
// (planner.JudgeWait, the rollout waiter's too), quoting the kubelet's reason, instead of waiting
// out ordinal_timeout (which would read "Moved Pod Not Ready In Time"). The next ordinals are
// not touched.
func TestAccStatefulSetMigration_ImagePullFailureStops(t *testing.T) {
	env := acctest.Sandbox(t)
	ensurePool(t, env, "pool-b", 3)
	f := newSet(t, env, "mig-pull", 2, "pool-a", "1Gi")
	f.switchPoolWithAnnotations(t, "pool-b", map[string]string{"sandbox.olapgke.io/image-pull": "fail"})
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories,
		Steps: []resource.TestStep{{
			Config: testAccStatefulSetMigrationConfig_basic("mig-pull", ""),
			ExpectError: regexp.MustCompile(`(?s)[Oo]rdinal 1 \(Pod hist-1\) stopped.*image\s+pull\s+for.*` +
				`(ErrImagePull|ImagePullBackOff).*failed to pull and unpack image`),
		}},
	})
	f.checkUntouched(t, 0)
}

// A moved Pod that takes longer than the grace to become Ready (its readiness probe) is waited
// for: the migration completes.
func TestAccStatefulSetMigration_ReadinessDelayIsWaitedFor(t *testing.T) {
	env := acctest.Sandbox(t)
	ensurePool(t, env, "pool-b", 3)
	f := newSet(t, env, "mig-slow", 1, "pool-a", "1Gi")
	f.switchPoolWithAnnotations(t, "pool-b", map[string]string{"sandbox.olapgke.io/ready-after": "25s"})
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories,
		Steps: []resource.TestStep{{
			Config: testAccStatefulSetMigrationConfig_basic("mig-slow", ""),
			Check:  durationsRecorded(0),
		}},
	})
	f.checkMoved(t, "pool-b", 0)
}
