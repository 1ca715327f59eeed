package gkerules

import (
	"fmt"
	"regexp"
)

// MaxNodePoolNameLen is the longest node pool name GKE accepts.
// Source: https://cloud.google.com/kubernetes-engine/docs/reference/rest/v1/projects.locations.clusters.nodePools
// ("The name of the node pool"), and gcloud's validation: lowercase letters, digits and hyphens,
// starting with a letter, ending with a letter or digit, at most 40 characters.
const MaxNodePoolNameLen = 40

var nodePoolNameRE = regexp.MustCompile(`^[a-z]([-a-z0-9]*[a-z0-9])?$`)

// CheckNodePoolName reports why name is not a valid GKE node pool name, or nil.
func CheckNodePoolName(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("the node pool name is empty")
	case len(name) > MaxNodePoolNameLen:
		return fmt.Errorf("node pool name %q is %d characters; GKE allows at most %d", name, len(name), MaxNodePoolNameLen)
	case !nodePoolNameRE.MatchString(name):
		return fmt.Errorf("node pool name %q must start with a lowercase letter and contain only lowercase letters, digits and hyphens, ending with a letter or digit", name)
	}
	return nil
}
