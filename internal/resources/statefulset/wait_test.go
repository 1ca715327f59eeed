package statefulset

import (
	"strings"
	"testing"
	"time"

	"github.com/olapgke/terraform-provider-olapgke/internal/engine"
	"github.com/olapgke/terraform-provider-olapgke/internal/planner"
)

// Rollout Cannot Progress advises by the wait judgement's cause: fixing the image or the crash
// for those, moving the ordinal only for a PV pinned where the Pod cannot go.
func TestRolloutErrorAdvisesByCause(t *testing.T) {
	t.Parallel()
	m := &manifest{Namespace: "olap", Name: "hist"}
	for cause, want := range map[planner.StuckCause]struct{ has, not string }{
		planner.CauseImagePull:      {"Fix the image reference", "olapgke_statefulset_migration"},
		planner.CauseCrashLoop:      {"kubectl logs --previous", "olapgke_statefulset_migration"},
		planner.CauseFailedMount:    {"kubectl describe pod", "olapgke_statefulset_migration"},
		planner.CausePVNodeAffinity: {"olapgke_statefulset_migration", "Fix the image"},
	} {
		d := rolloutError(m, &engine.StuckError{Ordinal: 2, Pod: "hist-2", Cause: cause, Source: "container olap of Pod hist-2 waiting",
			Quote: "ErrImagePull: not found", For: 20 * time.Second})
		detail := strings.Join(strings.Fields(d.Detail()), " ")
		if d.Summary() != "Rollout Cannot Progress" || !strings.Contains(detail, want.has) || strings.Contains(detail, want.not) ||
			!strings.Contains(detail, `waiting says: "ErrImagePull: not found" (for 20s)`) {
			t.Errorf("%s: %s\n%s", cause, d.Summary(), d.Detail())
		}
	}
}
