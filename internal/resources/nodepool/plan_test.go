package nodepool

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-go/tftypes"
	"k8s.io/client-go/rest"

	"cloud.google.com/go/container/apiv1/containerpb"

	"github.com/olapgke/terraform-provider-olapgke/internal/clients"
	"github.com/olapgke/terraform-provider-olapgke/internal/diagnostics/diagtest"
	"github.com/olapgke/terraform-provider-olapgke/internal/gke"
	"github.com/olapgke/terraform-provider-olapgke/internal/gkerules"
)

// These tests drive ModifyPlan directly with a cluster whose Kubernetes API cannot be reached,
// to pin the diagnostics' wording and the fail-closed behaviour of the data-loss guard. The
// behaviour against a real control plane is covered by the TestAcc tests.

func unreachable() *clients.Clients {
	return clients.New(clients.Options{
		Project: "p", Location: "us-central1-a", Cluster: "c",
		REST: func(context.Context) (*rest.Config, error) {
			return nil, errors.New("dial tcp 127.0.0.1:1: connection refused")
		},
		GKE: func(context.Context) (gke.API, error) {
			return nil, errors.New("dial tcp 127.0.0.1:2: connection refused")
		},
	})
}

// clusterOn is a GKE API whose GetCluster answers a cluster on the given release channel (the
// other calls are not made at plan). The Kubernetes API stays unreachable.
type clusterOn struct {
	gke.API
	channel containerpb.ReleaseChannel_Channel
	calls   int
}

func (c *clusterOn) GetCluster(_ context.Context, ref gke.ClusterRef) (*containerpb.Cluster, error) {
	c.calls++
	return &containerpb.Cluster{Name: ref.Cluster, ReleaseChannel: &containerpb.ReleaseChannel{Channel: c.channel}}, nil
}

func withGKE(api gke.API) *clients.Clients {
	return clients.New(clients.Options{
		Project: "p", Location: "us-central1-a", Cluster: "c",
		REST: func(context.Context) (*rest.Config, error) {
			return nil, errors.New("dial tcp 127.0.0.1:1: connection refused")
		},
		GKE: func(context.Context) (gke.API, error) { return api, nil },
	})
}

type attrs map[string]any // path (dot-separated) -> value

func objectFor(t *testing.T, r *nodePoolResource, set attrs) (tfsdk.Plan, tfsdk.State) {
	t.Helper()
	ctx := context.Background()
	var sr resource.SchemaResponse
	r.Schema(ctx, resource.SchemaRequest{}, &sr)
	typ := sr.Schema.Type().TerraformType(ctx).(tftypes.Object)
	vals := map[string]tftypes.Value{}
	for name, at := range typ.AttributeTypes {
		vals[name] = tftypes.NewValue(at, nil)
	}
	plan := tfsdk.Plan{Schema: sr.Schema, Raw: tftypes.NewValue(typ, vals)}
	for k, v := range set {
		p := path.Empty()
		for _, step := range strings.Split(k, ".") {
			p = p.AtName(step)
		}
		if d := plan.SetAttribute(ctx, p, v); d.HasError() {
			t.Fatalf("setting %s: %v", k, d)
		}
	}
	state := tfsdk.State{Schema: sr.Schema, Raw: plan.Raw.Copy()}
	return plan, state
}

func findDiag(ds diag.Diagnostics, summary string) diag.Diagnostic {
	for _, d := range ds {
		if d.Summary() == summary {
			return d
		}
	}
	return nil
}

func base() attrs {
	return attrs{
		"name": "pool-a", "machine_type": "n2-standard-8", "local_nvme_ssd_count": int64(2),
		"ephemeral_storage_local_ssd_count": int64(0), "node_count": int64(3), "deletion_protection": true,
		"allow_local_data_loss": false, "spot": false,
	}
}

func TestModifyPlanDiskPressureWarning(t *testing.T) {
	t.Parallel()
	r := &nodePoolResource{c: unreachable()}
	a := base()
	a["boot_disk.size_gb"] = int64(100)
	a["expected_ephemeral_gib"] = 60.0
	plan, _ := objectFor(t, r, a)
	var sr resource.SchemaResponse
	r.Schema(context.Background(), resource.SchemaRequest{}, &sr)
	req := resource.ModifyPlanRequest{Plan: plan, State: tfsdk.State{Schema: sr.Schema, Raw: tftypes.NewValue(plan.Raw.Type(), nil)}}
	resp := resource.ModifyPlanResponse{Plan: plan}
	r.ModifyPlan(context.Background(), req, &resp)
	if resp.Diagnostics.HasError() {
		t.Fatalf("unexpected errors: %v", resp.Diagnostics)
	}
	d := findDiag(resp.Diagnostics, "Nodes Will Hit DiskPressure")
	if d == nil {
		t.Fatalf("no DiskPressure warning in %v", resp.Diagnostics)
	}
	for _, want := range []string{
		"Per node: boot disk 100 GiB",
		"GKE reserves 41 GiB",
		"nodefs.available<10%",
		"expected demand 60 GiB per node",
		"boot_disk.size_gb = 130 or more",
		"n2-standard-8 takes 2 or 6 or 14 or 22 more Local SSD(s)",
	} {
		if !strings.Contains(strings.Join(strings.Fields(d.Detail()), " "), want) { // wrapping aside
			t.Errorf("warning detail lacks %q:\n%s", want, d.Detail())
		}
	}
	for _, p := range diagtest.Problems(d) { // the fixes are bullets of up to 350 columns
		t.Error(p)
	}
	var got ephemeralModel
	resp.Diagnostics.Append(resp.Plan.GetAttribute(context.Background(), path.Root("ephemeral_storage"), &got)...)
	if got.HeadroomGiB.ValueFloat64() != -16.17 || got.DemandSource.ValueString() != "expected_ephemeral_gib" {
		t.Errorf("ephemeral_storage = %+v", got)
	}

	// A larger boot disk: no warning.
	a["boot_disk.size_gb"] = int64(200)
	plan, _ = objectFor(t, r, a)
	req.Plan, resp = plan, resource.ModifyPlanResponse{Plan: plan}
	r.ModifyPlan(context.Background(), req, &resp)
	if d := findDiag(resp.Diagnostics, "Nodes Will Hit DiskPressure"); d != nil {
		t.Errorf("unexpected warning with 200 GiB: %s", d.Detail())
	}
}

func TestModifyPlanGuardFailsClosed(t *testing.T) {
	t.Parallel()
	r := &nodePoolResource{c: unreachable()}
	a := base()
	a["project"], a["location"], a["cluster"] = "p", "us-central1-a", "c"
	a["id"] = "projects/p/locations/us-central1-a/clusters/c/nodePools/pool-a"
	_, state := objectFor(t, r, a)
	a["machine_type"] = "n2-standard-16"
	plan, _ := objectFor(t, r, a)
	resp := resource.ModifyPlanResponse{Plan: plan}
	r.ModifyPlan(context.Background(), resource.ModifyPlanRequest{Plan: plan, State: state}, &resp)
	d := findDiag(resp.Diagnostics, "Data-Loss Check Failed")
	if d == nil || !strings.Contains(d.Detail(), "connection refused") || !strings.Contains(d.Detail(), "recreate") {
		t.Fatalf("want a Data-Loss Check Failed error naming the cause, got %v", resp.Diagnostics)
	}

	// The same change with allow_local_data_loss = true only warns.
	a["allow_local_data_loss"] = true
	plan, _ = objectFor(t, r, a)
	resp = resource.ModifyPlanResponse{Plan: plan}
	r.ModifyPlan(context.Background(), resource.ModifyPlanRequest{Plan: plan, State: state}, &resp)
	if resp.Diagnostics.HasError() {
		t.Fatalf("allow_local_data_loss = true must not fail the plan: %v", resp.Diagnostics)
	}
}

func TestModifyPlanDestroyProtection(t *testing.T) {
	t.Parallel()
	r := &nodePoolResource{c: unreachable()}
	a := base()
	a["id"] = "projects/p/locations/us-central1-a/clusters/c/nodePools/pool-a"
	plan, state := objectFor(t, r, a)
	nullPlan := tfsdk.Plan{Schema: plan.Schema, Raw: tftypes.NewValue(plan.Raw.Type(), nil)}
	resp := resource.ModifyPlanResponse{Plan: nullPlan}
	r.ModifyPlan(context.Background(), resource.ModifyPlanRequest{Plan: nullPlan, State: state}, &resp)
	if d := findDiag(resp.Diagnostics, "Deletion Protection Enabled"); d == nil || d.Severity() != diag.SeverityError {
		t.Fatalf("want a Deletion Protection Enabled error, got %v", resp.Diagnostics)
	}
	// Unprotected, but the cluster cannot be read: destroy fails closed too.
	a["deletion_protection"] = false
	_, state = objectFor(t, r, a)
	resp = resource.ModifyPlanResponse{Plan: nullPlan}
	r.ModifyPlan(context.Background(), resource.ModifyPlanRequest{Plan: nullPlan, State: state}, &resp)
	if findDiag(resp.Diagnostics, "Data-Loss Check Failed") == nil {
		t.Fatalf("want Data-Loss Check Failed, got %v", resp.Diagnostics)
	}
}

func TestParseImportID(t *testing.T) {
	t.Parallel()
	c := unreachable()
	tests := map[string]struct {
		id, want string
		ok       bool
	}{
		"short":      {id: "sandbox/us-central1-a/olap/pool-a", want: "projects/sandbox/locations/us-central1-a/clusters/olap/nodePools/pool-a", ok: true},
		"api name":   {id: "projects/sandbox/locations/us-central1-a/clusters/olap/nodePools/pool-a", want: "projects/sandbox/locations/us-central1-a/clusters/olap/nodePools/pool-a", ok: true},
		"bare name":  {id: "pool-a", want: "projects/p/locations/us-central1-a/clusters/c/nodePools/pool-a", ok: true},
		"empty part": {id: "sandbox//olap/pool-a"},
		"three":      {id: "a/b/c"},
	}
	for name, tc := range tests {
		ref, pool, ok := parseImportID(tc.id, c)
		if ok != tc.ok || ok && poolID(ref, pool) != tc.want {
			t.Errorf("%s: parseImportID(%q) = %s, %v; want %s, %v", name, tc.id, poolID(ref, pool), ok, tc.want, tc.ok)
		}
	}
}

func TestVersionMatches(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		cfg, actual string
		want        bool
	}{
		{"1.37", "1.37.2-gke.100", true}, {"1.37.2", "1.37.2-gke.100", true}, {"1.37.2-gke.100", "1.37.2-gke.100", true},
		{"-", "1.37.2-gke.100", true}, {"latest", "1.37.2", true}, {"1.3", "1.37.2", false}, {"1.36", "1.37.2", false}, {"", "1.37.2", false},
	} {
		if got := versionMatches(tc.cfg, tc.actual); got != tc.want {
			t.Errorf("versionMatches(%q, %q) = %v, want %v", tc.cfg, tc.actual, got, tc.want)
		}
	}
}

// management.auto_upgrade = false is refused at plan on a cluster enrolled in a release channel,
// on the attribute, with every detail line within 80 columns; on no channel it passes, and a plan
// that leaves auto-upgrade on never reads the cluster.
func TestModifyPlanReleaseChannel(t *testing.T) {
	t.Parallel()
	plan := func(r *nodePoolResource, autoUpgrade, autoRepair bool) resource.ModifyPlanResponse {
		a := base()
		a["project"], a["location"], a["cluster"] = "p", "us-central1-a", "c"
		a["management.auto_upgrade"], a["management.auto_repair"] = autoUpgrade, autoRepair
		p, _ := objectFor(t, r, a)
		nullState := tfsdk.State{Schema: p.Schema, Raw: tftypes.NewValue(p.Raw.Type(), nil)}
		resp := resource.ModifyPlanResponse{Plan: p}
		r.ModifyPlan(context.Background(), resource.ModifyPlanRequest{Plan: p, State: nullState}, &resp)
		return resp
	}

	regular := &clusterOn{channel: containerpb.ReleaseChannel_REGULAR}
	resp := plan(&nodePoolResource{c: withGKE(regular)}, false, true)
	d := findDiag(resp.Diagnostics, "Auto-Upgrade Required By Release Channel")
	if d == nil || d.Severity() != diag.SeverityError {
		t.Fatalf("want an Auto-Upgrade Required By Release Channel error, got %v", resp.Diagnostics)
	}
	if wp, ok := d.(diag.DiagnosticWithPath); !ok || !wp.Path().Equal(path.Root("management").AtName("auto_upgrade")) {
		t.Errorf("error not on management.auto_upgrade: %#v", d)
	}
	if !strings.Contains(d.Detail(), "\n"+gkerules.MaintenanceExclusionsURL+"\n") {
		t.Errorf("detail does not link maintenance exclusions on a line of its own:\n%s", d.Detail())
	}
	flat := strings.Join(strings.Fields(d.Detail()), " ") // wrapping aside
	for _, want := range []string{"cluster projects/p/locations/us-central1-a/clusters/c", "REGULAR release channel", "auto_upgrade = false",
		"maintenance exclusion", `"no minor or node upgrades"`, "no release channel"} {
		if !strings.Contains(flat, want) {
			t.Errorf("detail lacks %q:\n%s", want, d.Detail())
		}
	}
	for _, p := range diagtest.Problems(d) { // at 80 columns, as Terraform prints it
		t.Error(p)
	}
	if findDiag(resp.Diagnostics, "Auto-Repair Required By Release Channel") != nil {
		t.Errorf("auto_repair = true refused: %v", resp.Diagnostics)
	}

	resp = plan(&nodePoolResource{c: withGKE(regular)}, true, false)
	if d := findDiag(resp.Diagnostics, "Auto-Repair Required By Release Channel"); d == nil ||
		!d.(diag.DiagnosticWithPath).Path().Equal(path.Root("management").AtName("auto_repair")) {
		t.Errorf("want an Auto-Repair Required By Release Channel error on auto_repair, got %v", resp.Diagnostics)
	}

	none := &clusterOn{} // channel 0, UNSPECIFIED: no release channel
	if resp := plan(&nodePoolResource{c: withGKE(none)}, false, false); resp.Diagnostics.HasError() {
		t.Errorf("no release channel: unexpected errors %v", resp.Diagnostics)
	}
	calls := regular.calls
	if resp := plan(&nodePoolResource{c: withGKE(regular)}, true, true); resp.Diagnostics.HasError() || regular.calls != calls {
		t.Errorf("auto-upgrade on: errors %v, GetCluster calls %d (want none)", resp.Diagnostics, regular.calls-calls)
	}

	// GKE unreachable: a warning, not an error (GKE itself refuses at apply).
	resp = plan(&nodePoolResource{c: unreachable()}, false, true)
	if d := findDiag(resp.Diagnostics, "Release Channel Not Checked"); d == nil || d.Severity() != diag.SeverityWarning || !strings.Contains(d.Detail(), "127.0.0.1:2") {
		t.Errorf("want a Release Channel Not Checked warning naming the cause, got %v", resp.Diagnostics)
	}
}

// A taint change that adds a NoExecute taint needs the data-loss check (and fails closed when the
// cluster cannot be read); a NoSchedule taint or removing a taint does not.
func TestModifyPlanNoExecuteTaintGuard(t *testing.T) {
	t.Parallel()
	r := &nodePoolResource{c: unreachable()}
	taints := func(effect string) []attr.Value {
		if effect == "" {
			return nil
		}
		return []attr.Value{types.ObjectValueMust(taintAttrTypes, map[string]attr.Value{
			"key": types.StringValue("dedicated"), "value": types.StringValue("olap"), "effect": types.StringValue(effect)})}
	}
	list := func(effect string) types.List {
		if effect == "" {
			return types.ListNull(types.ObjectType{AttrTypes: taintAttrTypes})
		}
		return types.ListValueMust(types.ObjectType{AttrTypes: taintAttrTypes}, taints(effect))
	}
	tests := map[string]struct {
		before, after string
		guarded       bool
	}{
		"NoExecute added":             {after: "NO_EXECUTE", guarded: true},
		"NoSchedule became NoExecute": {before: "NO_SCHEDULE", after: "NO_EXECUTE", guarded: true},
		"NoSchedule added":            {after: "NO_SCHEDULE"},
		"PreferNoSchedule added":      {after: "PREFER_NO_SCHEDULE"},
		"NoExecute removed":           {before: "NO_EXECUTE"},
		"NoExecute became NoSchedule": {before: "NO_EXECUTE", after: "NO_SCHEDULE"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			a := base()
			a["project"], a["location"], a["cluster"] = "p", "us-central1-a", "c"
			a["id"] = "projects/p/locations/us-central1-a/clusters/c/nodePools/pool-a"
			a["taints"] = list(tc.before)
			_, state := objectFor(t, r, a)
			a["taints"] = list(tc.after)
			plan, _ := objectFor(t, r, a)
			resp := resource.ModifyPlanResponse{Plan: plan}
			r.ModifyPlan(context.Background(), resource.ModifyPlanRequest{Plan: plan, State: state}, &resp)
			d := findDiag(resp.Diagnostics, "Data-Loss Check Failed")
			if tc.guarded != (d != nil) {
				t.Fatalf("guarded = %v, diagnostics %v", tc.guarded, resp.Diagnostics)
			}
			if d != nil && !strings.Contains(d.Detail(), "taint NoExecute") {
				t.Errorf("detail does not say what the change does:\n%s", d.Detail())
			}
		})
	}
}

// The eviction verdict uses the data-loss guard's diagnostic: an error on taints, a warning with
// allow_local_data_loss = true; its lines fit 80 columns.
func TestDataLossDiagNoExecuteTaint(t *testing.T) {
	t.Parallel()
	l := loss{kind: gkerules.LossEvict, attrs: []string{"taints"},
		detail: "taints add dedicated=olap:NoExecute to every node, and the taint-eviction controller evicts the Pods that do not tolerate it"}
	v := gkerules.Verdict{Kind: gkerules.LossEvict, Certain: true, AtRisk: []gkerules.AtRisk{{
		Node: "gke-olap-historical-a-75d730ab-3wkq", PV: "pvc-6fee0257-092c-4cec-84b3-4caef4a31b46", PVC: "olap/cache-historical-0",
		StatefulSet: "olap/historical", Ordinal: 0, Pod: "olap/historical-0", Evicted: "its Pod does not tolerate dedicated=olap:NoExecute"}}}
	d := dataLossDiag("historical-a", l, v, false)
	if d.Severity() != diag.SeverityError || d.Summary() != "Pinned Ordinals Would Be Evicted" ||
		!d.(diag.DiagnosticWithPath).Path().Equal(path.Root("taints")) {
		t.Fatalf("got %s %q on %v", d.Severity(), d.Summary(), d)
	}
	flat := strings.Join(strings.Fields(d.Detail()), " ")
	for _, want := range []string{"node pool historical-a", "StatefulSet olap/historical ordinal(s) 0",
		"does not tolerate dedicated=olap:NoExecute", "add a toleration", "NO_SCHEDULE", "allow_local_data_loss = true"} {
		if !strings.Contains(flat, want) {
			t.Errorf("detail lacks %q:\n%s", want, d.Detail())
		}
	}
	for _, p := range diagtest.Problems(d) { // at 80 columns, as Terraform prints it
		t.Error(p)
	}
	if w := dataLossDiag("historical-a", l, v, true); w.Severity() != diag.SeverityWarning || w.Summary() != "Pinned Ordinals Will Be Evicted" {
		t.Errorf("allowed: got %s %q", w.Severity(), w.Summary())
	}
}
