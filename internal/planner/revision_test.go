package planner_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/olapgke/terraform-provider-olapgke/internal/planner"
	"github.com/olapgke/terraform-provider-olapgke/internal/planner/plannertest"
	appsv1 "k8s.io/api/apps/v1"
)

func TestRevisionPatchShape(t *testing.T) {
	t.Parallel()
	set := plannertest.MkSet(3)
	patch, err := planner.RevisionPatch(set)
	if err != nil {
		t.Fatal(err)
	}
	// The controller's getPatch output: only spec.template, "$patch":"replace"
	// first (keys sorted by encoding/json), compact.
	if want := `{"spec":{"template":{"$patch":"replace","metadata":{`; !strings.HasPrefix(string(patch), want) {
		t.Errorf("patch %s does not start with %s", patch, want)
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, patch); err != nil || !bytes.Equal(compact.Bytes(), patch) {
		t.Errorf("patch is not compact JSON: %s", patch)
	}
	other := set.DeepCopy()
	other.Spec.Replicas = nil
	other.Spec.UpdateStrategy = appsv1.StatefulSetUpdateStrategy{Type: appsv1.OnDeleteStatefulSetStrategyType}
	if p2, _ := planner.RevisionPatch(other); !bytes.Equal(p2, patch) {
		t.Errorf("fields outside the template changed the revision data")
	}
	plannertest.NewImage(other)
	if p3, _ := planner.RevisionPatch(other); bytes.Equal(p3, patch) {
		t.Errorf("an image change did not change the revision data")
	}
}

func TestResolveUpdateRevision(t *testing.T) {
	t.Parallel()
	base := plannertest.MkSet(3)
	changed := base.DeepCopy()
	plannertest.NewImage(changed)
	basePatch, _ := planner.RevisionPatch(base)
	changedPatch, _ := planner.RevisionPatch(changed)

	tests := map[string]struct {
		desired   *appsv1.StatefulSet
		revisions func(t *testing.T) []appsv1.ControllerRevision
		collision int32
		want      string
	}{
		"no history: hash with collision count 0": {
			desired: base, revisions: func(*testing.T) []appsv1.ControllerRevision { return nil },
			want: planner.RevisionName("olap", planner.HashRevision(basePatch, 0)),
		},
		"collision count from status is hashed in": {
			desired: base, revisions: func(*testing.T) []appsv1.ControllerRevision { return nil }, collision: 2,
			want: planner.RevisionName("olap", planner.HashRevision(basePatch, 2)),
		},
		"name taken by different data bumps the collision count": {
			desired: changed,
			revisions: func(t *testing.T) []appsv1.ControllerRevision {
				r := plannertest.RevisionFor(t, base, 1)
				r.Name = planner.RevisionName("olap", planner.HashRevision(changedPatch, 0))
				return []appsv1.ControllerRevision{r}
			},
			want: planner.RevisionName("olap", planner.HashRevision(changedPatch, 1)),
		},
		"latest revision semantically equal but different bytes is kept": {
			desired: base,
			revisions: func(t *testing.T) []appsv1.ControllerRevision {
				r := plannertest.RevisionFor(t, base, 1)
				var indented bytes.Buffer
				_ = json.Indent(&indented, r.Data.Raw, "", "  ")
				r.Data.Raw = indented.Bytes()
				r.Name = "olap-kept"
				return []appsv1.ControllerRevision{r}
			},
			want: "olap-kept",
		},
		"older equal revision is reused (revert)": {
			desired: base,
			revisions: func(t *testing.T) []appsv1.ControllerRevision {
				old := plannertest.RevisionFor(t, base, 1)
				old.Name = "olap-old"
				return []appsv1.ControllerRevision{plannertest.RevisionFor(t, changed, 2), old}
			},
			want: "olap-old",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			revs := tc.revisions(t)
			live := base.DeepCopy()
			got, err := planner.ResolveUpdateRevision(tc.desired, planner.OwnedRevisions(live, revs), tc.collision)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("got %s, want %s", got, tc.want)
			}
		})
	}
}

func TestHashRevisionMatchesHistoryFormat(t *testing.T) {
	t.Parallel()
	h := planner.HashRevision([]byte(`{"spec":{}}`), 0)
	// rand.SafeEncodeString uses an alphabet without vowels and look-alikes.
	if h == "" || strings.ContainsAny(h, "aeiou013") {
		t.Errorf("hash %q is not safe-encoded", h)
	}
	if planner.HashRevision([]byte(`{"spec":{}}`), 1) == h {
		t.Errorf("collision count does not change the hash")
	}
	if got := planner.RevisionName(strings.Repeat("x", 300), "abc"); len(got) != 223+4 {
		t.Errorf("long prefix not truncated: %d", len(got))
	}
}
