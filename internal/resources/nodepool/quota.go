package nodepool

import (
	"fmt"
	"regexp"
	"strings"
)

// quotaTexts finds each quota GKE names in its answer to a node pool the project's Compute Engine
// quotas cannot hold. GKE refuses the call with 403 PERMISSION_DENIED, not RESOURCE_EXHAUSTED:
// "Insufficient regional quota to satisfy request: resource "CPUS": request requires '144.0' and
// is short '109.0'. project has a quota of '128.0' with '35.0' available. View and manage quotas
// at https://console.cloud.google.com/iam-admin/quotas?usage=USED&project=P." (m-lab/etl#798,
// GoogleCloudPlatform/k8s-config-connector#321 for "C2_CPUS"); several are numbered "(1)
// insufficient regional quota ... (2) ..."; "Insufficient project quota ... "CPUS_ALL_REGIONS""
// for a project-wide one (kubeflow/examples#597), and older answers say "... for resource:
// "CPUS". The request requires ..." (kubeflow/kubeflow#842).
var quotaTexts = regexp.MustCompile(`(?i)insufficient (?:regional|project) quota to satisfy request(?::| for) resource:? "([A-Z0-9_]+)"`)

// quotaShortfalls returns the quotas GKE says are short, in its order; none when the answer is
// not about quota (a 403 for IAM is then what it says).
func quotaShortfalls(msg string) []string {
	var out []string
	for _, m := range quotaTexts.FindAllStringSubmatch(msg, -1) {
		out = append(out, m[1])
	}
	return out
}

// quotaAdvice says what to do about quotas that are short: more quota for the metric, or a pool
// that needs less of it. Never IAM: the credentials were good enough for GKE to count.
func quotaAdvice(metrics []string) string {
	less := map[string]bool{}
	for _, m := range metrics {
		switch {
		case strings.HasSuffix(m, "CPUS"):
			less["fewer nodes or a smaller machine type (another machine family counts against its own CPU quota)"] = true
		case m == "LOCAL_SSD_TOTAL_GB":
			less["fewer nodes or fewer Local SSDs per node"] = true
		case strings.HasSuffix(m, "_GB"):
			less["fewer nodes or a smaller boot disk"] = true
		default:
			less["fewer or smaller nodes"] = true
		}
	}
	var asks []string
	for _, l := range []string{
		"fewer nodes or a smaller machine type (another machine family counts against its own CPU quota)",
		"fewer nodes or fewer Local SSDs per node", "fewer nodes or a smaller boot disk", "fewer or smaller nodes",
	} {
		if less[l] {
			asks = append(asks, l)
		}
	}
	return fmt.Sprintf("This is Compute Engine quota, not a permission: the project's quota for %s in the region cannot hold the pool. "+
		"Request more quota for %s (Google Cloud console, IAM & Admin > Quotas, or gcloud), or ask for less: %s. "+
		"The credentials and their IAM roles are fine: GKE checked them before counting.",
		strings.Join(metrics, ", "), strings.Join(metrics, ", "), strings.Join(asks, "; "))
}
