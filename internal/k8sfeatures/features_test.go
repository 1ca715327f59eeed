package k8sfeatures

import (
	"encoding/json"
	"testing"

	"k8s.io/apimachinery/pkg/version"
)

func TestFromInfo(t *testing.T) {
	for _, tc := range []struct {
		info *version.Info
		want Version
	}{
		{&version.Info{Major: "1", Minor: "37", EmulationMajor: "1", EmulationMinor: "35"}, Version{1, 35}},
		{&version.Info{Major: "1", Minor: "35+"}, Version{1, 35}}, // GKE's spelling
		{&version.Info{Major: "1", Minor: "36"}, Version{1, 36}},
		// GKE's gitVersion when the fields are missing (a proxy that drops them).
		{&version.Info{GitVersion: "v1.33.5-gke.1308000"}, Version{1, 33}},
		{&version.Info{GitVersion: "v1.37.2"}, Version{1, 37}},
		{&version.Info{GitVersion: "v0.0.0-master+$Format:%H$"}, Version{}},
		{&version.Info{}, Version{}},
		{nil, Version{}},
	} {
		if got := FromInfo(tc.info); got != tc.want {
			t.Errorf("FromInfo(%+v) = %v, want %v", tc.info, got, tc.want)
		}
	}
}

func TestParseGitVersion(t *testing.T) {
	for s, want := range map[string]Version{
		"v1.37.2-gke.1000": {1, 37}, "v1.34.1-gke.1829001": {1, 34}, "1.35.0": {1, 35},
		"v1.33.5-gke.1308000": {1, 33}, "": {}, "gke": {}, "v0.0.0-master": {},
	} {
		got, ok := ParseGitVersion(s)
		if got != want || ok != (want != Version{}) {
			t.Errorf("ParseGitVersion(%q) = %v, %v; want %v", s, got, ok, want)
		}
	}
}

// TestUnverifiedBelowOldest: the plan warning fires on 1.32 and 1.33 (GKE's extended channel)
// and never on 1.34 and later, nor on an unknown version.
func TestUnverifiedBelowOldest(t *testing.T) {
	for v, want := range map[Version]bool{{1, 32}: true, {1, 33}: true, {1, 34}: false, {1, 35}: false, {1, 37}: false, {1, 38}: false, {}: false} {
		if got := v.Unverified(); got != want {
			t.Errorf("%v.Unverified() = %v, want %v", v, got, want)
		}
	}
}

func TestMaxUnavailableGateByVersion(t *testing.T) {
	for v, want := range map[Version]bool{{1, 34}: false, {1, 35}: false, {1, 36}: false, {1, 37}: true, {1, 38}: true, {}: true} {
		if got := (Server{Version: v}).Enabled(MaxUnavailableStatefulSet); got != want {
			t.Errorf("%v: enabled = %v, want %v", v, got, want)
		}
	}
	if (Server{Version: Version{1, 37}, Off: []string{"MaxUnavailableStatefulSet"}}).Enabled(MaxUnavailableStatefulSet) {
		t.Error("a gate observed off on 1.37 counts as on")
	}
}

func TestDropped(t *testing.T) {
	var configured, dropped, kept, unset map[string]any
	for p, s := range map[*map[string]any]string{
		&configured: `{"spec":{"updateStrategy":{"type":"RollingUpdate","rollingUpdate":{"maxUnavailable":2}}}}`,
		&dropped:    `{"spec":{"updateStrategy":{"type":"RollingUpdate","rollingUpdate":{"partition":0}}}}`,
		&kept:       `{"spec":{"updateStrategy":{"type":"RollingUpdate","rollingUpdate":{"partition":0,"maxUnavailable":2}}}}`,
		&unset:      `{"spec":{"updateStrategy":{"type":"RollingUpdate"}}}`,
	} {
		if err := json.Unmarshal([]byte(s), p); err != nil {
			t.Fatal(err)
		}
	}
	if got := Dropped(configured, dropped); len(got) != 1 || got[0].Gate.Name != "MaxUnavailableStatefulSet" || got[0].PathString() != "spec.updateStrategy.rollingUpdate.maxUnavailable" {
		t.Errorf("Dropped(configured, dropped) = %+v", got)
	}
	if got := Dropped(configured, kept); len(got) != 0 {
		t.Errorf("Dropped(configured, kept) = %+v, want none", got)
	}
	if got := Dropped(unset, dropped); len(got) != 0 {
		t.Errorf("Dropped(unset, dropped) = %+v, want none (not configured)", got)
	}
}
