package nodepool

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-go/tftypes"
	"k8s.io/client-go/rest"

	"github.com/olapgke/terraform-provider-olapgke/internal/clients"
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
		"nodes will hit DiskPressure: boot disk 100 GiB",
		"GKE reserves 41 GiB",
		"nodefs.available<10%",
		"expected demand 60 GiB per node",
		"boot_disk.size_gb = 130 or more",
		"n2-standard-8 takes 2 or 6 or 14 or 22 more Local SSD(s)",
	} {
		if !strings.Contains(d.Detail(), want) {
			t.Errorf("warning detail lacks %q:\n%s", want, d.Detail())
		}
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
