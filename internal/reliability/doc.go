// Package reliability holds olapgke's reliability and security suites (issue 10). They run the
// real provider binary under the real terraform CLI against the local sandbox, with
// internal/faultproxy between the provider and the API server / GKE emulator, and assert the
// invariants users rely on when a tool deletes PVCs:
//
//   - apply completes, or stops with a clear diagnostic and a state the next apply resumes from;
//   - no Pod or PVC of an ordinal outside the move in progress is ever deleted (a watch records
//     every deletion by UID for the whole run);
//   - no ordinal is without a Ready Pod for longer than its own move.
//
// Suites: faults (fault_test.go), SIGKILL of terraform apply at each migration phase
// (interrupt_test.go), least-privilege RBAC (rbac_test.go, manifests in examples/rbac/), bad
// input (badinput_test.go). Quick ones run under `make testacc`; the slow ones only with
// OLAPGKE_RELIABILITY=1 (`make reliability`), whose results are summarised in RELIABILITY.md.
package reliability
