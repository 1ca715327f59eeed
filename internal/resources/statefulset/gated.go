package statefulset

import (
	"fmt"
	"slices"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	appsv1 "k8s.io/api/apps/v1"

	"github.com/olapgke/terraform-provider-olapgke/internal/diagnostics"
	"github.com/olapgke/terraform-provider-olapgke/internal/k8sfeatures"
	"github.com/olapgke/terraform-provider-olapgke/internal/planner"
)

// Fields behind a Kubernetes feature gate (k8sfeatures.StatefulSetGatedFields,
// e.g. rollingUpdate.maxUnavailable behind MaxUnavailableStatefulSet, off by
// default before 1.37) are dropped by an API server whose gate is off. That is
// the server's answer, not drift and not a mutating webhook: the plan warns,
// the post-apply comparison skips them, and refresh keeps them in state.

// droppedGated are the gated fields the manifest sets that the stored object
// (a dry run's or the apply's answer) lacks.
func droppedGated(want any, stored any) []k8sfeatures.GatedField {
	w, ok1 := want.(map[string]any)
	s, ok2 := stored.(map[string]any)
	if !ok1 || !ok2 {
		return nil
	}
	return k8sfeatures.Dropped(w, s)
}

// gatedWarning tells the user which configured fields the server drops, the gate
// and the version, and what the controller will do instead.
func gatedWarning(m *manifest, server k8sfeatures.Server, fields []k8sfeatures.GatedField) diag.Diagnostic {
	names := make([]string, 0, len(fields))
	gates := make([]string, 0, len(fields))
	for _, f := range fields {
		names = append(names, f.PathString())
		gates = append(gates, fmt.Sprintf("%s (%s)", f.Gate.Name, f.Gate.Stages))
	}
	return diagnostics.AttributeWarning(manifestPath, "Field Dropped: Feature Gate Off", diagnostics.Detail{
		Checked: fmt.Sprintf("The API server's dry run of StatefulSet %s/%s on Kubernetes %s.",
			m.Namespace, m.Name, server.Version),
		Found: fmt.Sprintf("It drops %s: feature gate %s is off on this cluster.",
			strings.Join(names, ", "), strings.Join(gates, ", ")),
		Do: "Expect the controller's one-Pod-at-a-time rolling update (the plan " +
			"shows it). The field takes effect once the cluster runs a version " +
			"with the gate on (1.37); keep it or remove it, neither is drift.",
	})
}

// withoutGatedDiffs drops the comparison differences that are dropped gated
// fields.
func withoutGatedDiffs(diffs []fieldDiff, dropped []k8sfeatures.GatedField) []fieldDiff {
	if len(dropped) == 0 {
		return diffs
	}
	out := diffs[:0:0]
	for _, d := range diffs {
		skip := false
		for _, f := range dropped {
			if d.Path == f.PathString() && d.Got == nil {
				skip = true
			}
		}
		if !skip {
			out = append(out, d)
		}
	}
	return out
}

// withGatedKept is live with every gated field that prior (the manifest in
// state) sets and live lacks copied from prior, when the server's version has
// the gate off: refresh must not report the server's own dropping as drift,
// or every plan would show it again. With the gate on a missing field is drift.
func withGatedKept(prior, live any, server k8sfeatures.Server) any {
	p, ok1 := prior.(map[string]any)
	l, ok2 := live.(map[string]any)
	if !ok1 || !ok2 {
		return live
	}
	for _, f := range k8sfeatures.Dropped(p, l) {
		if server.Enabled(f.Gate) {
			continue
		}
		v, _ := k8sfeatures.Lookup(p, f.Path)
		l = setPath(l, f.Path, v)
	}
	return l
}

// setPath returns a copy of m (copied along path only) with path set to v.
func setPath(m map[string]any, path []string, v any) map[string]any {
	out := make(map[string]any, len(m)+1)
	for k, x := range m {
		out[k] = x
	}
	if len(path) == 1 {
		out[path[0]] = v
		return out
	}
	child, _ := m[path[0]].(map[string]any)
	out[path[0]] = setPath(child, path[1:], v)
	return out
}

// observeGated records on snap the gates the dry run showed off (a configured
// gated field the server dropped from desired), so the planner simulates the
// controller that server runs; it returns the dropped fields.
func observeGated(m *manifest, desired *appsv1.StatefulSet, snap *planner.Snapshot) []k8sfeatures.GatedField {
	if desired == nil {
		return nil
	}
	stored, err := setJSON(desired)
	if err != nil {
		return nil
	}
	dropped := droppedGated(m.Obj, stored)
	for _, f := range dropped {
		if !slices.Contains(snap.Server.Off, f.Gate.Name) {
			snap.Server.Off = append(snap.Server.Off, f.Gate.Name)
		}
	}
	return dropped
}

// versionWarning says that the cluster runs a minor older than olapgke verifies
// (k8sfeatures.Version.Unverified), or nil.
func versionWarning(m *manifest, server k8sfeatures.Server) diag.Diagnostic {
	if !server.Version.Unverified() {
		return nil
	}
	return diagnostics.AttributeWarning(manifestPath, "Kubernetes Version Unverified", diagnostics.Detail{
		Checked: fmt.Sprintf("The Kubernetes version of the cluster of StatefulSet %s/%s "+
			"(/version: emulation version, else major.minor, else gitVersion).", m.Namespace, m.Name),
		Found: fmt.Sprintf("It runs %s; olapgke's revision names and rollout predictions "+
			"are verified on %s to %s only (up to 1.33 the StatefulSet controller hashed "+
			"revisions differently). GKE's extended channel still serves 1.32 and 1.33.",
			server.Version, k8sfeatures.Oldest, k8sfeatures.Newest),
		Do: "Upgrade the control plane to " + k8sfeatures.Oldest.String() + " or later, or " +
			"check each planned ordinal action against what the controller does.",
	})
}
