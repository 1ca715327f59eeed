package controlplane

import (
	"fmt"
	"slices"

	"k8s.io/component-base/version"
)

// Versions are the Kubernetes minors the sandbox can emulate, oldest first:
// the binary's own minor and the three before it (the emulation floor of
// component-base compatibility versions is binary minor - 3, see
// k8s.io/component-base/compatibility version.go). GKE's release channels
// cover the same span.
var Versions = []string{"1.34", "1.35", "1.36", "1.37"}

// BinaryMinor is the minor of the linked k8s.io/kubernetes ("1.37").
func BinaryMinor() string { return version.DefaultKubeBinaryVersion }

// emulationArgs are the flags every component gets for KubernetesVersion v.
// All three components share the process-global component registry
// (compatibility.DefaultComponentGlobalsRegistry), so they emulate one
// version; the flag is passed to each so none falls back to the binary's.
func emulationArgs(v string) ([]string, error) {
	if v == "" || v == BinaryMinor() {
		return nil, nil
	}
	if !slices.Contains(Versions, v) {
		return nil, fmt.Errorf("kubernetes version %q is not supported: the sandbox emulates %v", v, Versions)
	}
	return []string{"--emulated-version=" + v}, nil
}
