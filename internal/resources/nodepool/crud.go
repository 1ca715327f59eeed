package nodepool

import (
	"context"
	"errors"
	"fmt"
	"time"

	"cloud.google.com/go/container/apiv1/containerpb"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/olapgke/terraform-provider-olapgke/internal/diagnostics"
	"github.com/olapgke/terraform-provider-olapgke/internal/gke"
	"github.com/olapgke/terraform-provider-olapgke/internal/gkerules"
)

const (
	defaultCreateTimeout = 30 * time.Minute
	defaultReadTimeout   = 5 * time.Minute
	defaultUpdateTimeout = 60 * time.Minute
	defaultDeleteTimeout = 30 * time.Minute
)

func (r *nodePoolResource) api(ctx context.Context, diags *diag.Diagnostics) gke.API {
	if r.c == nil {
		diags.Append(diagnostics.ProviderBug("Provider Not Configured", "The node pool resource was called without provider data.", nil))
		return nil
	}
	api, err := r.c.GKE(ctx)
	if err != nil {
		diags.Append(diagnostics.Error("GKE Client Unavailable", diagnostics.Detail{
			Checked: "The GKE API client built from the provider configuration.",
			Found:   "It could not be created.",
			Do:      "Check the provider's credentials and endpoint settings.",
			Err:     err,
		}))
		return nil
	}
	return api
}

func (r *nodePoolResource) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	defer identitySpec.Write(ctx, resp.Identity, &resp.Diagnostics, &resp.State)
	var plan model
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	if resp.Diagnostics.HasError() {
		return
	}
	timeout, d := plan.Timeouts.Create(ctx, defaultCreateTimeout)
	resp.Diagnostics.Append(d...)
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	api := r.api(ctx, &resp.Diagnostics)
	if plan.Name.IsUnknown() || plan.Name.IsNull() {
		plan.Name = types.StringValue(nameFromPrefix(plan.NamePrefix.ValueString(), time.Now()))
	}
	np, d := expand(ctx, &plan)
	resp.Diagnostics.Append(d...)
	if api == nil || resp.Diagnostics.HasError() {
		return
	}
	ref, name := plan.ref(), plan.Name.ValueString()
	if err := api.CreateNodePool(ctx, ref, np); err != nil {
		resp.Diagnostics.Append(apiError("Node Pool Creation Failed", "CreateNodePool", poolID(ref, name), plan.MachineType.ValueString(), err))
		// A failed operation can leave the pool behind (GKE marks it ERROR): keep it in state so
		// Terraform taints it and replaces it on the next apply instead of leaking it.
		if got, gerr := api.GetNodePool(ctx, ref, name); gerr == nil {
			r.store(ctx, got, &plan, &resp.State, &resp.Diagnostics)
		}
		return
	}
	got, err := api.GetNodePool(ctx, ref, name)
	if err != nil {
		resp.Diagnostics.Append(apiError("Node Pool Read Failed", "GetNodePool", poolID(ref, name), "", err))
		return
	}
	r.store(ctx, got, &plan, &resp.State, &resp.Diagnostics)
}

func (r *nodePoolResource) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	defer identitySpec.Write(ctx, resp.Identity, &resp.Diagnostics, &resp.State, &req.State)
	var state model
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	timeout, d := state.Timeouts.Read(ctx, defaultReadTimeout)
	resp.Diagnostics.Append(d...)
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	api := r.api(ctx, &resp.Diagnostics)
	if api == nil {
		return
	}
	got, err := api.GetNodePool(ctx, state.ref(), state.Name.ValueString())
	if gke.IsNotFound(err) {
		resp.State.RemoveResource(ctx)
		return
	}
	if err != nil {
		resp.Diagnostics.Append(apiError("Node Pool Read Failed", "GetNodePool", poolID(state.ref(), state.Name.ValueString()), "", err))
		return
	}
	// ephemeral_storage is recomputed on refresh with what the next plan will use, so a refresh
	// or an import is not followed by a plan that only fills it in.
	flatten(ctx, got, &state, &resp.Diagnostics)
	var cs *clusterState
	if r.c != nil && !r.c.Deferred() {
		if kc, err := r.c.Kube(ctx); err == nil {
			cs, _ = readClusterState(ctx, kc, state.Name.ValueString(), false)
		}
	}
	var quiet diag.Diagnostics // no DiskPressure warning on refresh: the plan gives it
	if cs != nil || state.EphemeralStorage.IsNull() || state.EphemeralStorage.IsUnknown() {
		// A failed read keeps what the last refresh recorded rather than a fallback.
		state.EphemeralStorage = r.planEphemeral(ctx, &state, &state, cs, demandFromCluster, &quiet)
	}
	r.store(ctx, got, &state, &resp.State, &resp.Diagnostics)
}

func (r *nodePoolResource) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	defer identitySpec.Write(ctx, resp.Identity, &resp.Diagnostics, &resp.State)
	var plan, state model
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	timeout, d := plan.Timeouts.Update(ctx, defaultUpdateTimeout)
	resp.Diagnostics.Append(d...)
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	api := r.api(ctx, &resp.Diagnostics)
	if api == nil {
		return
	}
	ref, name := plan.ref(), plan.Name.ValueString()
	id := poolID(ref, name)
	want, d := expand(ctx, &plan)
	resp.Diagnostics.Append(d...)
	if resp.Diagnostics.HasError() {
		return
	}
	changed, _ := changes(&state, &plan)
	// One UpdateNodePool call per concern, as GKE accepts them; VM-recreating ones last so the
	// in-place ones are not held up behind a long upgrade operation.
	// Each step is one GKE call; the first that fails stops the update (see refreshAfterError).
	type step struct {
		call string // the RPC, for the diagnostic
		do   func() error
	}
	var steps []step
	add := func(what string, fill func(*containerpb.UpdateNodePoolRequest)) {
		u := &containerpb.UpdateNodePoolRequest{Name: id}
		fill(u)
		steps = append(steps, step{"UpdateNodePool (" + what + ")", func() error { return api.UpdateNodePool(ctx, u) }})
	}
	cfg := want.GetConfig()
	if changed["upgrade_settings"] && want.UpgradeSettings != nil {
		add("upgrade_settings", func(u *containerpb.UpdateNodePoolRequest) { u.UpgradeSettings = want.UpgradeSettings })
	}
	if changed["labels"] {
		add("labels", func(u *containerpb.UpdateNodePoolRequest) {
			u.Labels = &containerpb.NodeLabels{Labels: cfg.GetLabels()}
		})
	}
	if changed["taints"] || changed["storage_startup_taint"] {
		add("taints", func(u *containerpb.UpdateNodePoolRequest) {
			u.Taints = &containerpb.NodeTaints{Taints: cfg.GetTaints()}
		})
	}
	if changed["resource_labels"] {
		add("resource_labels", func(u *containerpb.UpdateNodePoolRequest) {
			u.ResourceLabels = &containerpb.ResourceLabels{Labels: cfg.GetResourceLabels()}
		})
	}
	if changed["node_locations"] && len(want.Locations) > 0 {
		add("node_locations", func(u *containerpb.UpdateNodePoolRequest) { u.Locations = want.Locations })
	}
	if changed["kubelet_config"] {
		add("kubelet_config", func(u *containerpb.UpdateNodePoolRequest) {
			u.KubeletConfig = cfg.GetKubeletConfig()
			if u.KubeletConfig == nil {
				u.KubeletConfig = &containerpb.NodeKubeletConfig{}
			}
		})
	}
	if changed["tags"] {
		add("tags", func(u *containerpb.UpdateNodePoolRequest) { u.Tags = &containerpb.NetworkTags{Tags: cfg.GetTags()} })
	}
	if changed["resource_manager_tags"] {
		add("resource_manager_tags", func(u *containerpb.UpdateNodePoolRequest) {
			u.ResourceManagerTags = &containerpb.ResourceManagerTags{Tags: cfg.GetResourceManagerTags().GetTags()}
		})
	}
	if changed["node_drain_config"] && want.NodeDrainConfig != nil {
		add("node_drain_config", func(u *containerpb.UpdateNodePoolRequest) { u.NodeDrainConfig = want.NodeDrainConfig })
	}
	// VM-recreating node system changes: one request each, as the google provider sends them.
	if changed["workload_metadata_config"] && cfg.GetWorkloadMetadataConfig() != nil {
		add("workload_metadata_config", func(u *containerpb.UpdateNodePoolRequest) { u.WorkloadMetadataConfig = cfg.GetWorkloadMetadataConfig() })
	}
	if changed["linux_node_config"] {
		add("linux_node_config", func(u *containerpb.UpdateNodePoolRequest) {
			u.LinuxNodeConfig = cfg.GetLinuxNodeConfig()
			if u.LinuxNodeConfig == nil {
				u.LinuxNodeConfig = &containerpb.LinuxNodeConfig{}
			}
		})
	}
	if changed["gvnic"] && cfg.GetGvnic() != nil {
		add("gvnic", func(u *containerpb.UpdateNodePoolRequest) { u.Gvnic = cfg.GetGvnic() })
	}
	if changed["gcfs_config"] && cfg.GetGcfsConfig() != nil {
		add("gcfs_config", func(u *containerpb.UpdateNodePoolRequest) { u.GcfsConfig = cfg.GetGcfsConfig() })
	}
	if (changed["network_config.enable_private_nodes"] || changed["network_config.network_performance_config"]) && want.NetworkConfig != nil {
		add("network_config", func(u *containerpb.UpdateNodePoolRequest) {
			u.NodeNetworkConfig = &containerpb.NodeNetworkConfig{EnablePrivateNodes: want.NetworkConfig.EnablePrivateNodes,
				NetworkPerformanceConfig: want.NetworkConfig.NetworkPerformanceConfig}
		})
	}
	if changed["machine_type"] || changed["boot_disk"] {
		add("machine_type/boot_disk", func(u *containerpb.UpdateNodePoolRequest) {
			if changed["machine_type"] {
				u.MachineType = cfg.GetMachineType()
			}
			if changed["boot_disk"] {
				u.DiskType, u.DiskSizeGb = cfg.GetDiskType(), int64(cfg.GetDiskSizeGb())
				if b := cfg.GetBootDisk(); b != nil {
					u.DiskType, u.DiskSizeGb, u.BootDisk = "", 0, b
				}
			}
		})
	}
	if changed["image_type"] || changed["version"] {
		add("image_type/version", func(u *containerpb.UpdateNodePoolRequest) {
			u.ImageType = cfg.GetImageType()
			u.NodeVersion = want.GetVersion()
			if !changed["version"] {
				u.NodeVersion = "-"
				if v := state.Version.ValueString(); v != "" {
					u.NodeVersion = v
				}
			}
		})
	}
	if changed["management"] && want.Management != nil {
		steps = append(steps, step{"SetNodePoolManagement", func() error { return api.SetNodePoolManagement(ctx, ref, name, want.Management) }})
	}
	if changed["autoscaling"] {
		a := want.Autoscaling
		if a == nil {
			a = &containerpb.NodePoolAutoscaling{Enabled: false}
		}
		steps = append(steps, step{"SetNodePoolAutoscaling", func() error { return api.SetNodePoolAutoscaling(ctx, ref, name, a) }})
	}
	if plan.Autoscaling.IsNull() && !plan.NodeCount.IsUnknown() && (changed["node_count"] || changed["autoscaling"]) {
		n := int32(plan.NodeCount.ValueInt64())
		steps = append(steps, step{"SetNodePoolSize", func() error { return api.SetNodePoolSize(ctx, ref, name, n) }})
	}
	for _, st := range steps {
		if err := st.do(); err != nil {
			resp.Diagnostics.Append(apiError("Node Pool Update Failed", st.call, id, plan.MachineType.ValueString(), err))
			r.refreshAfterError(ctx, api, &state, &resp.State)
			return
		}
	}
	got, err := api.GetNodePool(ctx, ref, name)
	if err != nil {
		resp.Diagnostics.Append(apiError("Node Pool Read Failed", "GetNodePool", id, "", err))
		return
	}
	r.store(ctx, got, &plan, &resp.State, &resp.Diagnostics)
}

// refreshAfterError stores what GKE reports after a failed update step, so the state shows the
// steps that did apply and the next plan retries the rest.
func (r *nodePoolResource) refreshAfterError(ctx context.Context, api gke.API, state *model, out *tfsdk.State) {
	got, err := api.GetNodePool(ctx, state.ref(), state.Name.ValueString())
	if err != nil {
		return
	}
	var ignored diag.Diagnostics
	r.store(ctx, got, state, out, &ignored)
}

func (r *nodePoolResource) Delete(ctx context.Context, req resource.DeleteRequest, resp *resource.DeleteResponse) {
	var state model
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	if state.DeletionProtection.ValueBool() {
		resp.Diagnostics.Append(deletionProtected(&state, "destroy", nil))
		return
	}
	timeout, d := state.Timeouts.Delete(ctx, defaultDeleteTimeout)
	resp.Diagnostics.Append(d...)
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if resp.Diagnostics.Append(r.destroyGuard(ctx, &state)...); resp.Diagnostics.HasError() {
		return
	}
	api := r.api(ctx, &resp.Diagnostics)
	if api == nil {
		return
	}
	err := api.DeleteNodePool(ctx, state.ref(), state.Name.ValueString())
	if err != nil && !gke.IsNotFound(err) {
		resp.Diagnostics.Append(apiError("Node Pool Deletion Failed", "DeleteNodePool", state.ID.ValueString(), "", err))
	}
}

// store flattens got into m, lists the pool's Nodes, and writes the state. The planned
// ephemeral_storage is kept (it is a plan-time computation, not something GKE reports).
func (r *nodePoolResource) store(ctx context.Context, got *containerpb.NodePool, m *model, out *tfsdk.State, diags *diag.Diagnostics) {
	flatten(ctx, got, m, diags)
	r.readActivity(ctx, got, m, diags)
	m.Nodes = types.ListValueMust(types.StringType, nil)
	if r.c != nil && !r.c.Deferred() {
		kc, err := r.c.Kube(ctx)
		if err == nil {
			var nodes []string
			if ns, lerr := poolNodes(ctx, kc, got.GetName()); lerr == nil {
				nodes = nodeNames(ns)
			} else {
				err = lerr
			}
			m.Nodes = listOf(nodes, diags)
		}
		if err != nil {
			diags.Append(diagnostics.Warning("Nodes Not Listed", diagnostics.Detail{
				Checked: "The Kubernetes Nodes of node pool " + got.GetName() + ".",
				Found:   "The Kubernetes API could not be read, so nodes is left empty until a refresh can list them. The node pool itself was read from GKE.",
				Do:      "Check that the provider's credentials may list Nodes (Kubernetes RBAC: list on nodes) and that the API server is reachable. The next terraform plan or apply lists them again.",
				Err:     err,
			}))
		}
	}
	if m.EphemeralStorage.IsUnknown() {
		m.EphemeralStorage = types.ObjectNull(ephemeralAttrTypes)
	} else if !m.EphemeralStorage.IsNull() && anyUnknown(m.EphemeralStorage) {
		// The demand is left to apply when the plan had none it could keep (a new pool): record
		// what the cluster shows now.
		var cs *clusterState
		if r.c != nil && !r.c.Deferred() {
			if kc, err := r.c.Kube(ctx); err == nil {
				cs, _ = readClusterState(ctx, kc, got.GetName(), false)
			}
		}
		var quiet diag.Diagnostics
		m.EphemeralStorage = r.planEphemeral(ctx, m, m, cs, demandFromCluster, &quiet)
	}
	if m.LocalSSDGiBPerNode.IsUnknown() {
		m.LocalSSDGiBPerNode = types.Int64Null()
	}
	diags.Append(out.Set(ctx, m)...)
}

// apiError turns a GKE error into a diagnostic that carries GKE's own message.
func apiError(summary, call, pool, machineType string, err error) diag.Diagnostic {
	code, msg := codes.Unknown, err.Error()
	var opErr *gke.OperationError
	var st interface{ GRPCStatus() *status.Status }
	switch {
	case errors.As(err, &opErr):
		code, msg = opErr.Code, opErr.Message
	case errors.Is(err, context.DeadlineExceeded):
		// Also when the timeout ended a wait on GKE's busy answers (an operation in progress,
		// the concurrent operations quota): the error carries GKE's last answer, and waiting
		// longer is the fix, not more quota.
		code = codes.DeadlineExceeded
	case errors.As(err, &st):
		code, msg = st.GRPCStatus().Code(), st.GRPCStatus().Message()
	}
	found := fmt.Sprintf("GKE answered %s: %s", code, msg)
	if opErr != nil {
		found = fmt.Sprintf("GKE accepted the request but its operation %s failed (%s): %s", opErr.Operation, code, msg)
	}
	if _, known := gkerules.LookupMachineType(machineType); machineType != "" && !known && code == codes.InvalidArgument {
		found += fmt.Sprintf("\n\nolapgke's Local SSD and boot disk table does not cover machine type %s, so GKE judged the request.", machineType)
	}
	do := "Fix the configuration GKE names and apply again."
	short := quotaShortfalls(msg)
	switch {
	case len(short) > 0 && (code == codes.PermissionDenied || code == codes.ResourceExhausted):
		// GKE answers a quota shortfall with 403 PERMISSION_DENIED (quota.go): not an IAM problem.
		do = quotaAdvice(short)
	default:
		do = adviceFor(code, opErr, do)
	}
	if opErr != nil && code != codes.ResourceExhausted && len(short) == 0 {
		do = "The node pool may be left in an error state; Terraform keeps it in state so the next apply can repair or replace it. " + do
	}
	return diagnostics.Error(summary, diagnostics.Detail{
		Checked: fmt.Sprintf("GKE %s for node pool %s.", call, pool),
		Found:   found,
		Do:      do,
		Err:     err,
	})
}

// adviceFor is what to do about a GKE error of code that is not a quota shortfall.
func adviceFor(code codes.Code, opErr *gke.OperationError, do string) string {
	switch code {
	case codes.ResourceExhausted:
		do = "A quota is exhausted: request more quota for the project and region (IAM & Admin > Quotas), or use fewer or smaller nodes."
	case codes.FailedPrecondition, codes.Aborted:
		do = "Another operation is running on the cluster or node pool, or the pool changed meanwhile: wait for it to finish and apply again."
	case codes.PermissionDenied, codes.Unauthenticated:
		do = "Check the provider's credentials and their IAM roles (container.nodePools.* on the project)."
	case codes.DeadlineExceeded, codes.Canceled:
		do = "The operation did not finish within the timeout; it may still be running in GKE. Raise the resource's timeouts, wait, then apply again."
	case codes.Unavailable, codes.Internal:
		if opErr == nil {
			// The call itself failed (GKE's front end unavailable or failing): nothing in the
			// configuration is at fault. A failed operation keeps the advice below.
			do = "This is usually transient (GKE was briefly unavailable or failed internally): apply again. Nothing in the configuration needs to change."
		}
	}
	return do
}

// anyUnknown reports whether an attribute of o is unknown.
func anyUnknown(o types.Object) bool {
	for _, v := range o.Attributes() {
		if v.IsUnknown() {
			return true
		}
	}
	return false
}
