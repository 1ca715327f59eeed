// Package topolvmgke holds the volume-group bootstrap the olapgke_volume_group_bootstrap resource
// installs: vg-bootstrap.sh and vg-bootstrap.yaml are the one copy, read by kubectl/kustomize
// users from this directory and embedded into the provider from here.
package topolvmgke

import _ "embed"

// Script is vg-bootstrap.sh, the ConfigMap vg-bootstrap-script's key vg-bootstrap.sh.
//
//go:embed vg-bootstrap.sh
var Script string

// Manifest is vg-bootstrap.yaml: Namespace, ServiceAccount, ClusterRole, ClusterRoleBinding and
// DaemonSet, as YAML documents separated by "---".
//
//go:embed vg-bootstrap.yaml
var Manifest string
