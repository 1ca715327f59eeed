package statefulset

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/types"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/olapgke/terraform-provider-olapgke/internal/diagnostics/diagtest"
	"github.com/olapgke/terraform-provider-olapgke/internal/planner"
	"github.com/olapgke/terraform-provider-olapgke/internal/planner/rollout"
)

func incidentPlan(action rollout.Action) *rollout.Plan {
	p := &rollout.Plan{UpdateRevision: "hist-abc", TemplateChanged: true}
	for o := int32(0); o < 3; o++ {
		op := rollout.OrdinalPlan{
			Ordinal: o, Pod: "hist-" + strconv.Itoa(int(o)), Node: "gke-olap-pool-a-" + string('x'+o), Action: action,
			Schedulable: false, Reason: "PV pinned to a pool-a node; that node fails the pod's node selector",
			Volumes: []planner.Volume{{Claim: "cache", PVC: "cache-hist-" + strconv.Itoa(int(o)), PV: "pvc-" + string('a'+o), PinnedNode: "gke-olap-pool-a-" + string('x'+o)}},
		}
		if action == rollout.ActionRecreate {
			op.Wave = int(3 - o)
			op.Blocked = o < 2
		}
		p.Ordinals = append(p.Ordinals, op)
	}
	return p
}

func summaries(d diag.Diagnostics) (errs, warns []string) {
	for _, x := range d {
		if x.Severity() == diag.SeverityError {
			errs = append(errs, x.Summary())
		} else {
			warns = append(warns, x.Summary())
		}
	}
	return errs, warns
}

func TestVerdictDiagnostics(t *testing.T) {
	t.Parallel()
	m := &manifest{Namespace: "olap", Name: "hist"}
	cases := map[string]struct {
		plan       *rollout.Plan
		allow      bool
		errs, warn string
	}{
		"incident refused":              {plan: incidentPlan(rollout.ActionRecreate), errs: "Ordinals Would Stay Pending", warn: "Ordinals Will Be Recreated"},
		"incident allowed":              {plan: incidentPlan(rollout.ActionRecreate), allow: true, warn: "Ordinals Will Be Recreated,Ordinals Would Stay Pending"},
		"ondelete stranded is no error": {plan: incidentPlan(rollout.ActionStranded), warn: "Stale Ordinals Cannot Be Recreated In Place"},
		"unchanged says nothing":        {plan: &rollout.Plan{Ordinals: []rollout.OrdinalPlan{{Ordinal: 0, Action: rollout.ActionUnchanged, Schedulable: true}}}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			d := verdictDiagnostics(m, tc.plan, tc.allow)
			errs, warns := summaries(d)
			if got := strings.Join(errs, ","); got != tc.errs {
				t.Errorf("errors: got %q want %q", got, tc.errs)
			}
			if got := strings.Join(warns, ","); got != tc.warn {
				t.Errorf("warnings: got %q want %q", got, tc.warn)
			}
			if tc.errs != "" {
				detail := strings.Join(strings.Fields(d.Errors()[0].Detail()), " ") // bullets are wrapped
				for o := 0; o < 3; o++ {
					for _, s := range []string{"- hist-" + strconv.Itoa(o) + " (recreate): ", "PV pvc-" + string(rune('a'+o)), "node gke-olap-pool-a-" + string(rune('x'+o))} {
						if !strings.Contains(detail, s) {
							t.Errorf("error detail does not name %q:\n%s", s, detail)
						}
					}
				}
				for _, s := range []string{"OnDelete", "olapgke_statefulset_migration", "allow_unschedulable", "partition above every ordinal does not do"} {
					if !strings.Contains(detail, s) {
						t.Errorf("error detail does not say %q", s)
					}
				}
				// A partition above every ordinal is refused by the migration while the template
				// change is pending: never offered as a way to proceed.
				if strings.Contains(detail, "raise spec.updateStrategy.rollingUpdate.partition") {
					t.Errorf("error detail still advises raising the partition:\n%s", detail)
				}
			}
		})
	}
}

func TestStallWarnings(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	stuck := rollout.RolloutStatus{CurrentRevision: "hist-old", UpdateRevision: "hist-new", Replicas: 3, ReadyReplicas: 2,
		Stuck: []rollout.StuckOrdinal{{Ordinal: 2, Pod: "hist-2", Phase: "Pending", Revision: "new", Reason: "Unschedulable",
			Message: "0/6 nodes are available: 3 node(s) didn't match PersistentVolume's node affinity"}}}
	ro, d := rolloutValue(stuck)
	if d.HasError() {
		t.Fatal(d)
	}
	state := &resourceModel{Namespace: types.StringValue("olap"), Name: types.StringValue("hist"), Rollout: ro}
	got := stallWarnings(ctx, state)
	if len(got) != 1 || got[0].Summary() != "Rollout Is Stalled" {
		t.Fatalf("got %v", got)
	}
	flat := strings.Join(strings.Fields(got[0].Detail()), " ") // wrapping aside
	for _, s := range []string{"ordinal 2", "hist-2", "didn't match PersistentVolume's node affinity", "revert", "olapgke_statefulset_migration"} {
		if !strings.Contains(flat, s) {
			t.Errorf("warning does not say %q:\n%s", s, got[0].Detail())
		}
	}
	for _, p := range diagtest.Problems(got[0]) { // at 80 columns, as Terraform prints it
		t.Error(p)
	}
	healthy, _ := rolloutValue(rollout.RolloutStatus{Complete: true})
	if w := stallWarnings(ctx, &resourceModel{Rollout: healthy}); len(w) != 0 {
		t.Fatalf("healthy rollout warned: %v", w)
	}
}

// The recreate warning stays readable at Terraform's 80 columns: one short line per ordinal and
// one for its node, with GKE-length names.
func TestRecreateTableFitsEightyColumns(t *testing.T) {
	t.Parallel()
	var ords []rollout.OrdinalPlan
	for o := int32(12); o >= 0; o-- {
		ords = append(ords, rollout.OrdinalPlan{Ordinal: o, Pod: "historical-" + strconv.Itoa(int(o)), Wave: int(13 - o),
			Node: "gke-olap-historical-a-75d730ab-" + strconv.Itoa(1000+int(o)), Schedulable: o%2 == 0, Blocked: o < 5})
	}
	got := recreateTable(ords)
	lines := strings.Split(strings.TrimSpace(got), "\n")
	if len(lines) != 2*len(ords)+5 { // two per ordinal, one more per blocked one
		t.Fatalf("%d lines for %d ordinals:\n%s", len(lines), len(ords), got)
	}
	for _, l := range lines {
		if len(l) > 80 {
			t.Errorf("line of %d columns: %q", len(l), l)
		}
	}
	if !strings.Contains(got, "wave 13, ordinal 0 (Pod historical-0): schedulable\n  node today: gke-olap-historical-a-75d730ab-1000\n  blocked: an earlier wave stalls, the controller never gets here\n") {
		t.Errorf("rendering:\n%s", got)
	}
	if !strings.Contains(got, "wave 2, ordinal 11 (Pod historical-11): NOT schedulable\n  node today: gke-olap-historical-a-75d730ab-1011\n") {
		t.Errorf("rendering:\n%s", got)
	}
}

func TestConflictDiagnosticNamesManagersAndFields(t *testing.T) {
	t.Parallel()
	se := &apierrors.StatusError{ErrStatus: metav1.Status{Code: 409, Reason: metav1.StatusReasonConflict,
		Message: "Apply failed with 2 conflicts: conflicts with \"kubectl-client-side-apply\" using apps/v1: ...",
		Details: &metav1.StatusDetails{Causes: []metav1.StatusCause{
			{Type: metav1.CauseTypeFieldManagerConflict, Message: `conflict with "kubectl-client-side-apply" using apps/v1`, Field: ".spec.template.spec.containers[name=\"historical\"].image"},
			{Type: metav1.CauseTypeFieldManagerConflict, Message: `conflict with "kubectl-client-side-apply" using apps/v1`, Field: ".spec.replicas"},
			{Type: metav1.CauseTypeFieldManagerConflict, Message: `conflict with "druid-operator" using apps/v1`, Field: ".spec.updateStrategy.type"},
		}}}}
	d := rejected(se)
	if d.Summary() != "StatefulSet Fields Owned By Another Manager" {
		t.Fatalf("summary %q", d.Summary())
	}
	flat := strings.Join(strings.Fields(d.Detail()), " ") // wrapping aside
	for _, want := range []string{`- "druid-operator" owns .spec.updateStrategy.type`,
		`- "kubectl-client-side-apply" owns .spec.replicas, .spec.template.spec.containers[name="historical"].image`, "force_conflicts = true"} {
		if !strings.Contains(flat, want) {
			t.Errorf("detail does not say %q:\n%s", want, d.Detail())
		}
	}
	for _, p := range diagtest.Problems(d) { // at 80 columns, as Terraform prints it
		t.Error(p)
	}
	// Any other refusal keeps the generic diagnostic.
	if d := rejected(apierrors.NewInvalid(schema.GroupKind{Group: "apps", Kind: "StatefulSet"}, "hist", nil)); d.Summary() != "StatefulSet Rejected By The API Server" {
		t.Fatalf("invalid: summary %q", d.Summary())
	}
}

// TestOrdinalBullet: an ordinal's bullet names its Pod, PV, PVC and node once each, keeps what
// only the volume list says, and falls back to the full reason without its "ordinal N: " prefix.
func TestOrdinalBullet(t *testing.T) {
	t.Parallel()
	vol := planner.Volume{Claim: "cache", PVC: "cache-historical-2", PV: "pvc-1", PinnedNode: "gke-a-1"}
	data := planner.Volume{Claim: "data", PVC: "data-historical-2", PV: "pvc-2", PinnedNode: "gke-a-1"}
	o := rollout.OrdinalPlan{Ordinal: 2, Pod: "historical-2", Action: rollout.ActionStranded,
		Reason: "ordinal 2: PV pvc-1 is pinned to node gke-a-1 (topology.topolvm.io/node); that node fails the pod's nodeSelector " +
			"cloud.google.com/gke-nodepool=b (Pod historical-2, PVC cache-historical-2)",
		ShortReason: "PV pvc-1 of PVC cache-historical-2 is pinned to node gke-a-1 (topology.topolvm.io/node), which fails the pod's " +
			"nodeSelector cloud.google.com/gke-nodepool=b",
		Volumes: []planner.Volume{vol, data}}
	cases := []struct {
		o      rollout.OrdinalPlan
		action rollout.Action
		want   string
	}{
		{o, "", "- historical-2: " + o.ShortReason + "; volumes: PVC data-historical-2 -> PV pvc-2"},
		{o, rollout.ActionRecreate, "- historical-2 (recreate): " + o.ShortReason + "; volumes: PVC data-historical-2 -> PV pvc-2"},
		{rollout.OrdinalPlan{Ordinal: 2, Pod: "historical-2", Reason: "0/6 nodes are available: 3 node(s) had volume node affinity conflict",
			Volumes: []planner.Volume{vol}}, rollout.ActionCreate,
			"- historical-2 (create): 0/6 nodes are available: 3 node(s) had volume node affinity conflict; " +
				"volumes: PVC cache-historical-2 -> PV pvc-1 (pinned to node gke-a-1)"},
		{rollout.OrdinalPlan{Ordinal: 2, Pod: "historical-2", Reason: "ordinal 2: no node matches the placement of Pod historical-2"}, "",
			"- historical-2: no node matches the placement of Pod historical-2"},
	}
	for _, tc := range cases {
		got := ordinalBullet(tc.o, tc.action)
		if got != tc.want {
			t.Errorf("ordinalBullet:\n got %q\nwant %q", got, tc.want)
		}
		for _, once := range []string{"historical-2:", "historical-2 (", "pvc-1", "gke-a-1", "cache-historical-2"} {
			if n := strings.Count(got, once); n > 1 {
				t.Errorf("%q named %d times: %q", once, n, got)
			}
		}
	}
}
