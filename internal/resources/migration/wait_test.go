package migration

import (
	"strings"
	"testing"

	"github.com/olapgke/terraform-provider-olapgke/internal/engine"
	"github.com/olapgke/terraform-provider-olapgke/internal/planner"
)

// The wait judgement's causes get their own summary and advice (planner.StuckCause.Advice),
// quoting the kubelet; the others keep the general advice.
func TestMigrationDiagnosticWaitCauses(t *testing.T) {
	t.Parallel()
	for cause, want := range map[planner.StuckCause]struct{ summary, advice string }{
		planner.CauseImagePull:          {"Moved Pod Cannot Start", "Fix the image reference"},
		planner.CauseCrashLoop:          {"Moved Pod Cannot Start", "kubectl logs --previous"},
		planner.CauseContainerError:     {"Moved Pod Cannot Start", "missing ConfigMap or Secret"},
		planner.CauseFailedMount:        {"Moved Pod Volume Not Mounted", "kubectl describe pod"},
		planner.CauseProvisioningFailed: {"Volume Provisioning Failed", "Free or add capacity"},
		planner.CauseUnschedulable:      {"Moved Pod Cannot Be Scheduled", "target nodes cordoned or missing"},
	} {
		d := migrationDiagnostic("olap", "hist", []int32{1}, nil, &engine.MigrationError{
			Ordinal: 1, Pod: "hist-1", Phase: "wait", Reason: "waiting for Pod hist-1 to be Running and Ready",
			Source: "container app of Pod hist-1 waiting", Quote: "ImagePullBackOff: Back-off pulling image", Cause: cause,
		})
		detail := strings.Join(strings.Fields(d.Detail()), " ")
		if d.Summary() != want.summary || !strings.Contains(detail, want.advice) ||
			!strings.Contains(detail, `waiting says: "ImagePullBackOff: Back-off pulling image"`) ||
			!strings.Contains(detail, "run terraform apply again") {
			t.Errorf("%s: %q\n%s", cause, d.Summary(), d.Detail())
		}
	}
}
