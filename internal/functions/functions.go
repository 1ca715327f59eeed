// Package functions holds the provider-defined functions: olapgke's GKE facts for users of any
// node pool resource (google_container_node_pool included), from the same gkerules table and
// arithmetic that olapgke_local_ssd_node_pool judges with.
package functions

import (
	"github.com/hashicorp/terraform-plugin-framework/function"
)

// All returns the provider's functions.
func All() []func() function.Function {
	return []func() function.Function{NewLocalSSDCount, NewEphemeralStorage}
}
