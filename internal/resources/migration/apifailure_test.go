package migration

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// "Cluster Snapshot Failed" says what the failed LIST means: RBAC names the grant, a transient
// failure asks to run again, and neither is told the other's advice.
func TestSnapshotFailedAdvice(t *testing.T) {
	t.Parallel()
	forbidden := fmt.Errorf("listing persistentvolumes: %w", apierrors.NewForbidden(schema.GroupResource{Resource: "persistentvolumes"}, "",
		errors.New(`User "system:serviceaccount:olapgke-system:tf" cannot list resource "persistentvolumes" in API group "" at the cluster scope`)))
	transient := fmt.Errorf("listing pods: %w", apierrors.NewServiceUnavailable("injected"))
	for _, tc := range []struct {
		err       error
		want, not string
	}{
		{forbidden, "Least-privilege Kubernetes access", "transient"},
		{transient, "usually transient: run the command again", "Least-privilege"},
	} {
		d := snapshotFailed("The StatefulSet olap/hist (LIST calls).", tc.err)
		if d.Summary() != "Cluster Snapshot Failed" || !strings.Contains(d.Detail(), tc.want) || strings.Contains(d.Detail(), tc.not) ||
			!strings.Contains(d.Detail(), "Nothing was changed.") {
			t.Errorf("%v: %s\n%s", tc.err, d.Summary(), d.Detail())
		}
	}
}
