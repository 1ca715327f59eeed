package nodepool

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/olapgke/terraform-provider-olapgke/internal/gke"
)

// apiError must carry GKE's own message and say what to do for each kind of failure. The
// sandbox's GKE emulator produces InvalidArgument answers end to end (TestAccLocalSSDNodePool_APIErrorSurfaces);
// quota and failed-operation answers are built here in the shapes the gke package returns them.
func TestAPIError(t *testing.T) {
	t.Parallel()
	const pool = "projects/p/locations/l/clusters/c/nodePools/x"
	tests := map[string]struct {
		err     error
		machine string
		want    []string
		not     []string
	}{
		"quota": {
			err:  fmt.Errorf("creating node pool %s: %w", pool, status.Error(codes.ResourceExhausted, "Insufficient regional quota to satisfy request: resource \"SSD_TOTAL_GB\": request requires '1500.0' and is short '700.0'.")),
			want: []string{"GKE answered ResourceExhausted: Insufficient regional quota", "SSD_TOTAL_GB", "request more quota"},
		},
		"invalid argument on an unknown family": {
			err:     fmt.Errorf("creating node pool: %w", status.Error(codes.InvalidArgument, "Machine type \"z9-standard-8\" does not exist.")),
			machine: "z9-standard-8",
			want:    []string{"GKE answered InvalidArgument: Machine type \"z9-standard-8\" does not exist.", "does not cover machine type z9-standard-8", "Fix the configuration"},
		},
		"operation failure": {
			err: &gke.OperationError{What: "creating node pool", Operation: "projects/p/locations/l/operations/op-1", Code: codes.Internal,
				Message: "Node pool creation failed: instance group manager reported ZONE_RESOURCE_POOL_EXHAUSTED"},
			want: []string{"operation projects/p/locations/l/operations/op-1 failed (Internal): Node pool creation failed: instance group manager reported ZONE_RESOURCE_POOL_EXHAUSTED",
				"may be left in an error state"},
		},
		"timeout while GKE refused the call at its concurrent operations quota": {
			err: fmt.Errorf("updating node pool: %w after 12 tries in 5m0s while GKE refused the call as busy; its last answer: %w", context.DeadlineExceeded,
				status.Error(codes.ResourceExhausted, `Too many operations: cluster "c" hits the concurrent operations quota 5, please try again later.`)),
			want: []string{"GKE answered DeadlineExceeded", "concurrent operations quota 5", "Raise the resource's timeouts"},
		},
		"GKE unavailable is not a configuration error": {
			err:  fmt.Errorf("creating node pool: %w", status.Error(codes.Unavailable, "injected by faultproxy")),
			want: []string{"GKE answered Unavailable", "usually transient", "apply again"},
			not:  []string{"Fix the configuration"},
		},
		"timeout": {
			err:  fmt.Errorf("creating node pool: gave up waiting: %w", context.DeadlineExceeded),
			want: []string{"GKE answered DeadlineExceeded", "Raise the resource's timeouts"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			d := apiError("Node Pool Creation Failed", "CreateNodePool", pool, tc.machine, tc.err)
			if d.Summary() != "Node Pool Creation Failed" {
				t.Errorf("summary = %q", d.Summary())
			}
			for _, w := range tc.want {
				if !strings.Contains(d.Detail(), w) {
					t.Errorf("detail lacks %q:\n%s", w, d.Detail())
				}
			}
			for _, n := range tc.not {
				if strings.Contains(d.Detail(), n) {
					t.Errorf("detail has %q:\n%s", n, d.Detail())
				}
			}
		})
	}
}
