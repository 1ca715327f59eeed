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
		// GKE answers a quota shortfall with 403 PERMISSION_DENIED (m-lab/etl#798); the advice is
		// quota, never IAM.
		"quota as GKE answers it": {
			err: fmt.Errorf("creating node pool %s: %w", pool, status.Error(codes.PermissionDenied, "Insufficient regional quota to satisfy request: resource \"N2_CPUS\": request requires '24.0' and is short '8.0'. project has a quota of '64.0' with '16.0' available. View and manage quotas at https://console.cloud.google.com/iam-admin/quotas?usage=USED&project=p.")),
			want: []string{"GKE answered PermissionDenied: Insufficient regional quota", "not a permission", "quota for N2_CPUS in the region", "Request more quota for N2_CPUS",
				"a smaller machine type"},
			not: []string{"Check the provider's credentials", "may be left in an error state"},
		},
		"several quotas short": {
			err:  fmt.Errorf("creating node pool %s: %w", pool, status.Error(codes.PermissionDenied, "\n\t(1) insufficient regional quota to satisfy request: resource \"LOCAL_SSD_TOTAL_GB\": request requires '750.0' and is short '500.0'. project has a quota of '2500.0' with '250.0' available.\n\t(2) insufficient regional quota to satisfy request: resource \"N2_CPUS\": request requires '8.0' and is short '8.0'. project has a quota of '24.0' with '0.0' available.")),
			want: []string{"quota for LOCAL_SSD_TOTAL_GB, N2_CPUS in the region", "fewer Local SSDs per node", "a smaller machine type"},
			not:  []string{"Check the provider's credentials"},
		},
		"quota in an older shape": {
			err:  fmt.Errorf("creating node pool %s: %w", pool, status.Error(codes.PermissionDenied, "Insufficient regional quota to satisfy request for resource: \"SSD_TOTAL_GB\". The request requires '1500.0' and is short '700.0'. The regional quota is '800.0' with '800.0' available.")),
			want: []string{"Request more quota for SSD_TOTAL_GB", "a smaller boot disk"},
			not:  []string{"Check the provider's credentials"},
		},
		// The near miss: a 403 that is about IAM.
		"permission denied by IAM": {
			err:  fmt.Errorf("creating node pool %s: %w", pool, status.Error(codes.PermissionDenied, "Required \"container.nodePools.create\" permission(s) for \"projects/p/locations/l/clusters/c\".")),
			want: []string{"GKE answered PermissionDenied: Required", "Check the provider's credentials and their IAM roles"},
			not:  []string{"quota"},
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
