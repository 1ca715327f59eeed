package statefulset

import (
	"strings"
	"testing"

	"github.com/olapgke/terraform-provider-olapgke/internal/diagnostics/diagtest"
	"github.com/olapgke/terraform-provider-olapgke/internal/k8sfeatures"
)

// TestVersionWarning: a cluster on 1.33 or older (GKE's extended channel) gets the warning that
// revision predictions are unverified there; 1.34 and later, and an unknown version, do not.
func TestVersionWarning(t *testing.T) {
	m := &manifest{Namespace: "ns", Name: "hist"}
	for v, want := range map[k8sfeatures.Version]bool{{Major: 1, Minor: 32}: true, {Major: 1, Minor: 33}: true,
		{Major: 1, Minor: 34}: false, {Major: 1, Minor: 36}: false, {Major: 1, Minor: 37}: false, {}: false} {
		d := versionWarning(m, k8sfeatures.Server{Version: v})
		if (d != nil) != want {
			t.Errorf("%v: warning %v, want %v", v, d != nil, want)
			continue
		}
		if d == nil {
			continue
		}
		if d.Summary() != "Kubernetes Version Unverified" || !strings.Contains(d.Detail(), "It runs "+v.String()+";") {
			t.Errorf("%v: %s\n%s", v, d.Summary(), d.Detail())
		}
		if p := diagtest.Problems(d); len(p) > 0 {
			t.Errorf("%v: %v", v, p)
		}
	}
}
