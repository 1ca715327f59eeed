// Package gkerules holds the pure GKE node pool rules olapgke checks at plan time, each in one
// place with its source: Local SSD counts per machine family, boot disk minimums, node pool name
// rules, the ephemeral-storage arithmetic of a node (boot disk, GKE reservation, kubelet eviction
// threshold, allocatable, demand, headroom), which node pool changes recreate VMs, the
// data-loss verdicts for changes that delete or recreate nodes holding TopoLVM volumes or add
// NoExecute taints their Pods do not tolerate, and what a release channel requires of node
// management.
//
// Inputs are plain values and Kubernetes API objects; outputs are verdicts with reasons. No
// clients, no Terraform types, no logging.
package gkerules
