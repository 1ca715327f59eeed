// Package versionacc holds acceptance tests about one Kubernetes minor other
// than the sandbox's default: its sandbox emulates Kubernetes 1.35, where
// MaxUnavailableStatefulSet is off by default (tests only; see
// legacy_rollout_acc_test.go).
package versionacc
