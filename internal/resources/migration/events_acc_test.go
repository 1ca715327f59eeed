package migration_test

import (
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/olapgke/terraform-provider-olapgke/internal/acctest"
	"github.com/olapgke/terraform-provider-olapgke/internal/engine"
)

// After a migration, the StatefulSet's Events (what kubectl describe, Argo CD and the GKE
// console show) hold one Event per step, in order, for each ordinal: moving, PVC deleted, Pod
// deleted, Pod Ready on a node of the target pool.
func TestAccStatefulSetMigration_Events(t *testing.T) {
	env := acctest.Sandbox(t)
	ensurePool(t, env, "pool-b", 3)
	ns := "mig-events"
	f := newSet(t, env, ns, 2, "pool-a", "1Gi")
	f.switchPool(t, "pool-b")
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories,
		Steps: []resource.TestStep{{
			Config: testAccStatefulSetMigrationConfig_basic(ns, ""),
			Check: func(*terraformState) error {
				list, err := env.Kube.EventsV1().Events(ns).List(t.Context(), metav1.ListOptions{})
				if err != nil {
					return err
				}
				var evs []eventsv1.Event
				for _, e := range list.Items {
					if e.Regarding.Kind == "StatefulSet" && e.Regarding.Name == "hist" && strings.HasPrefix(e.Reason, "Olapgke") {
						evs = append(evs, e)
					}
				}
				sort.SliceStable(evs, func(i, j int) bool { return evs[i].EventTime.Before(&evs[j].EventTime) })
				var got, want []string
				for _, o := range []int{1, 0} {
					for _, r := range []string{engine.ReasonOrdinalMoving, engine.ReasonPVCDeleted, engine.ReasonPodDeleted, engine.ReasonPodReady} {
						want = append(want, fmt.Sprintf("%s ordinal %d", r, o))
					}
				}
				for _, e := range evs {
					o := -1
					_, _ = fmt.Sscanf(e.Note, "ordinal %d", &o)
					got = append(got, fmt.Sprintf("%s ordinal %d", e.Reason, o))
					if e.Reason == engine.ReasonPodReady && !strings.Contains(e.Note, "pool-b") {
						t.Errorf("Pod Ready event does not name a pool-b node: %q", e.Note)
					}
					if e.ReportingController != engine.EventsController || e.Type != "Normal" {
						t.Errorf("event %s: controller %q, type %s", e.Reason, e.ReportingController, e.Type)
					}
				}
				if strings.Join(got, "\n") != strings.Join(want, "\n") {
					return fmt.Errorf("events on StatefulSet %s/hist:\n%s\nwant:\n%s", ns, strings.Join(got, "\n"), strings.Join(want, "\n"))
				}
				return nil
			},
		}},
	})
}
