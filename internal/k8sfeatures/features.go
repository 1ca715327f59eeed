// Package k8sfeatures holds, in one place, what olapgke depends on that changes
// between the Kubernetes minors GKE runs (1.34 to 1.37): the cluster's
// effective version (the emulation version when the control plane emulates an
// older minor), the feature gates behind StatefulSet fields and controller
// behaviour, and the manifest fields the API server drops when such a gate is
// off. Pure: objects in, answers out.
package k8sfeatures

import (
	"fmt"
	"strconv"
	"strings"

	utilversion "k8s.io/apimachinery/pkg/util/version"
	"k8s.io/apimachinery/pkg/version"
)

// Version is a Kubernetes major.minor. The zero Version means "unknown"; callers
// then assume the newest minor olapgke knows (Newest).
type Version struct{ Major, Minor int }

// Newest is the newest minor whose behaviour olapgke models (the scheduler and
// controller code it links, k8s.io/kubernetes v1.37).
var Newest = Version{1, 37}

// Oldest is the oldest minor olapgke supports (GKE's oldest supported minor).
var Oldest = Version{1, 34}

func (v Version) String() string {
	if v == (Version{}) {
		return "unknown"
	}
	return fmt.Sprintf("%d.%d", v.Major, v.Minor)
}

// Known is v, or Newest when v is unknown.
func (v Version) Known() Version {
	if v == (Version{}) {
		return Newest
	}
	return v
}

// AtLeast reports v >= o (an unknown v counts as Newest).
func (v Version) AtLeast(o Version) bool {
	k := v.Known()
	return k.Major > o.Major || (k.Major == o.Major && k.Minor >= o.Minor)
}

// FromInfo is the version a cluster behaves as: the emulation version when the
// server reports one (component-base compatibility versions, Kubernetes 1.31+),
// else its major.minor, else the major.minor of its gitVersion. GKE reports
// minors like "35+" (the suffix is ignored) and gitVersions like
// "v1.35.2-gke.1308000".
func FromInfo(info *version.Info) Version {
	if info == nil {
		return Version{}
	}
	if v, ok := parse(info.EmulationMajor, info.EmulationMinor); ok {
		return v
	}
	if v, ok := parse(info.Major, info.Minor); ok {
		return v
	}
	v, _ := ParseGitVersion(info.GitVersion)
	return v
}

// ParseGitVersion is the major.minor of a server's gitVersion: "v1.37.2",
// GKE's "v1.37.2-gke.1000", any build suffix (apimachinery's generic version
// rule: dot-separated numbers, then anything).
func ParseGitVersion(s string) (Version, bool) {
	g, err := utilversion.ParseGeneric(s)
	if err != nil || g.Major() == 0 {
		return Version{}, false
	}
	return Version{int(g.Major()), int(g.Minor())}, true
}

// Unverified reports whether v is a known minor older than Oldest: olapgke's
// revision predictions follow the StatefulSet controller of 1.34 and later
// (up to 1.33 the controller hashed revisions with creationTimestamp: null,
// and the sandbox cannot emulate below 1.34), so on such a cluster they are
// unverified. GKE's extended channel still serves 1.32 and 1.33. An unknown
// version is not judged.
func (v Version) Unverified() bool {
	return v != (Version{}) && !v.AtLeast(Oldest)
}

func parse(major, minor string) (Version, bool) {
	ma, err1 := strconv.Atoi(strings.TrimRight(major, "+"))
	mi, err2 := strconv.Atoi(strings.TrimRight(minor, "+"))
	if err1 != nil || err2 != nil || ma == 0 {
		return Version{}, false
	}
	return Version{ma, mi}, true
}

// Gate is a Kubernetes feature gate olapgke's answers depend on.
type Gate struct {
	// Name is the gate's name (k8s.io/kubernetes pkg/features/kube_features.go).
	Name string
	// OnFrom is the first minor where the gate is on by default.
	OnFrom Version
	// Stages says, for people, how the gate's default moved.
	Stages string
}

// OnByDefault reports whether the gate is on by default at v (unknown v: Newest).
func (g Gate) OnByDefault(v Version) bool { return v.AtLeast(g.OnFrom) }

// MaxUnavailableStatefulSet gates spec.updateStrategy.rollingUpdate.maxUnavailable
// and the controller's rolling update that honours it. Source:
// k8s.io/kubernetes v1.37.2 pkg/features/kube_features.go (alpha off 1.24, beta
// off 1.35, beta on 1.37); with the gate off the API server drops the field
// (pkg/registry/apps/statefulset/strategy.go dropStatefulSetDisabledFields,
// unless the stored object already uses it) and the controller runs its
// one-Pod-at-a-time loop (pkg/controller/statefulset/stateful_set_control.go
// updateStatefulSet, the branch after the gate check).
var MaxUnavailableStatefulSet = Gate{
	Name:   "MaxUnavailableStatefulSet",
	OnFrom: Version{1, 37},
	Stages: "alpha and off from 1.24, beta and off in 1.35 and 1.36, on by default from 1.37",
}

// GatedField is a manifest field the API server drops when its gate is off.
type GatedField struct {
	Path []string // e.g. spec, updateStrategy, rollingUpdate, maxUnavailable
	Gate Gate
}

// PathString is the dotted path (spec.updateStrategy.rollingUpdate.maxUnavailable).
func (f GatedField) PathString() string { return strings.Join(f.Path, ".") }

// StatefulSetGatedFields are the StatefulSet fields behind a gate that is off on
// some minor GKE runs.
var StatefulSetGatedFields = []GatedField{
	{Path: []string{"spec", "updateStrategy", "rollingUpdate", "maxUnavailable"}, Gate: MaxUnavailableStatefulSet},
}

// Dropped lists the gated fields set in configured (a StatefulSet manifest as
// a JSON map) and absent from stored (what the API server kept, e.g. a
// server-side dry run): the server dropped them because the gate is off.
func Dropped(configured, stored map[string]any) []GatedField {
	var out []GatedField
	for _, f := range StatefulSetGatedFields {
		if _, set := lookup(configured, f.Path); !set {
			continue
		}
		if _, kept := lookup(stored, f.Path); !kept {
			out = append(out, f)
		}
	}
	return out
}

// IsGatedPath reports whether path (dotted) is a gated field's path.
func IsGatedPath(path string) (GatedField, bool) {
	for _, f := range StatefulSetGatedFields {
		if f.PathString() == path {
			return f, true
		}
	}
	return GatedField{}, false
}

// Lookup returns the value at path in m and whether it is set (non-nil).
func Lookup(m map[string]any, path []string) (any, bool) { return lookup(m, path) }

func lookup(m map[string]any, path []string) (any, bool) {
	var cur any = m
	for _, k := range path {
		mm, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		cur, ok = mm[k]
		if !ok || cur == nil {
			return nil, false
		}
	}
	return cur, true
}

// Server is what olapgke knows of a cluster's control plane when it plans.
type Server struct {
	// Version is the cluster's effective Kubernetes version (zero: unknown).
	Version Version
	// Off are gates observed off on this server (a field the dry run dropped),
	// whatever the version's default.
	Off []string
}

// Enabled reports whether g is active on the server: observed off wins, else
// the version's default.
func (s Server) Enabled(g Gate) bool {
	for _, n := range s.Off {
		if n == g.Name {
			return false
		}
	}
	return g.OnByDefault(s.Version)
}
