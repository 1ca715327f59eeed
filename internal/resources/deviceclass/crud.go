package deviceclass

import (
	"context"
	"fmt"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/types"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/olapgke/terraform-provider-olapgke/internal/diagnostics"
	olapkube "github.com/olapgke/terraform-provider-olapgke/internal/kube"
	"github.com/olapgke/terraform-provider-olapgke/internal/lvmdconf"
)

func (r *deviceClassResource) kube(ctx context.Context, diags *diag.Diagnostics) kubernetes.Interface {
	if r.c == nil {
		diags.Append(diagnostics.ProviderBug("Provider Not Configured", "The resource was used before the provider was configured.", nil))
		return nil
	}
	k, err := r.c.Kube(ctx)
	if err != nil {
		diags.Append(diagnostics.KubeClientUnavailable("The Kubernetes client for the TopoLVM device class.", err))
	}
	return k
}

func (r *deviceClassResource) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	defer identitySpec.Write(ctx, resp.Identity, &resp.Diagnostics, &resp.State)
	var plan model
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	if resp.Diagnostics.HasError() {
		return
	}
	kube := r.kube(ctx, &resp.Diagnostics)
	if kube == nil {
		return
	}
	r.apply(ctx, kube, nil, &plan, &resp.Diagnostics)
	if resp.Diagnostics.HasError() {
		return
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, &plan)...)
}

func (r *deviceClassResource) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	defer identitySpec.Write(ctx, resp.Identity, &resp.Diagnostics, &resp.State)
	var plan, state model
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	kube := r.kube(ctx, &resp.Diagnostics)
	if kube == nil {
		return
	}
	r.apply(ctx, kube, &state, &plan, &resp.Diagnostics)
	if resp.Diagnostics.HasError() {
		return
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, &plan)...)
}

// apply writes the lvmd entry, the StorageClass and restarts lvmd, then fills unknown computed
// values in plan from the cluster (known planned values are kept, as Terraform requires).
func (r *deviceClassResource) apply(ctx context.Context, kube kubernetes.Interface, state, plan *model, diags *diag.Diagnostics) {
	ref, _ := plan.cm(ctx)
	want, d := plan.expand(ctx)
	diags.Append(d...)
	if diags.HasError() {
		return
	}
	from := ""
	if state != nil {
		prior, _ := state.expand(ctx)
		from = prior.Name
		// Re-check the guard against what exists now (the plan may be old).
		if !plan.ForceDestroy.ValueBool() && (prior.Name != want.Name || prior.VolumeGroup != want.VolumeGroup) {
			uses, err := r.usage(ctx, kube, prior.Name, prior.Default)
			if err != nil {
				diags.Append(liveCheckFailed("PVCs of the class could not be listed.", err))
				return
			}
			if len(uses) > 0 {
				diags.Append(inUse(path.Root("name"), prior.Name, "renames or moves the class", uses))
				return
			}
		}
	}
	if entryChanged(ctx, state, want) {
		// The same check as the plan's, on the nodes as they are now.
		if !checkThinPool(ctx, kube, want, diags) {
			return
		}
	}
	_, changed, err := writeClass(ctx, kube, ref, from, &want)
	if err != nil {
		diags.Append(diagnostics.Error("Lvmd Config Not Written", diagnostics.Detail{
			Checked: "ConfigMap " + ref.String() + " key " + ref.Key + " (read-modify-write with resourceVersion, retried on conflict).",
			Found:   "Writing device class " + want.Name + " failed.",
			Do:      "Check the error; run apply again once resolved (the edit is idempotent).",
			Err:     err,
		}))
		return
	}
	plan.ID = types.StringValue(classID(ref, want.Name))

	// StorageClass.
	var oldSC *scModel
	if state != nil {
		oldSC = state.sc(ctx)
	}
	if s := plan.sc(ctx); s != nil {
		desired := desiredStorageClass(ctx, s, want.Name)
		var pl, pa map[string]string
		if oldSC != nil {
			pl, pa = stringMap(ctx, oldSC.Labels), stringMap(ctx, oldSC.Annotations)
		}
		if _, err := ensureStorageClass(ctx, kube, desired, pl, pa); err != nil {
			diags.Append(scError("StorageClass "+desired.Name+" could not be created or updated.", err))
			return
		}
		if oldSC != nil && oldSC.Name.ValueString() != desired.Name {
			if err := deleteStorageClass(ctx, kube, oldSC.Name.ValueString()); err != nil {
				diags.Append(scError("The previous StorageClass "+oldSC.Name.ValueString()+" could not be deleted.", err))
				return
			}
		}
	} else if oldSC != nil {
		if err := deleteStorageClass(ctx, kube, oldSC.Name.ValueString()); err != nil {
			diags.Append(scError("StorageClass "+oldSC.Name.ValueString()+" (removed from the configuration) could not be deleted.", err))
			return
		}
	}

	if changed && plan.RestartLVMD.ValueBool() {
		r.restart(ctx, kube, ref, diags)
	}
	r.fillComputed(ctx, kube, plan, want, diags)
}

func (r *deviceClassResource) restart(ctx context.Context, kube kubernetes.Interface, ref cmRef, diags *diag.Diagnostics) {
	sets, err := restartLVMD(ctx, kube, ref)
	if err != nil {
		diags.Append(diagnostics.Error("Lvmd Restart Failed", diagnostics.Detail{
			Checked: "DaemonSets in namespace " + ref.Namespace + " mounting ConfigMap " + ref.Name + ".",
			Found:   "The lvmd config was written, but rolling lvmd failed, so lvmd still runs with the old config.",
			Do:      "Roll it by hand: kubectl -n " + ref.Namespace + " rollout restart daemonset/<lvmd>.",
			Err:     err,
		}))
		return
	}
	if len(sets) == 0 {
		if all, err := lvmdDaemonSets(ctx, kube, ref); err == nil && len(all) == 0 {
			diags.Append(diagnostics.Warning("Lvmd DaemonSet Not Found", diagnostics.Detail{
				Checked: "DaemonSets in namespace " + ref.Namespace + " whose pod template mounts ConfigMap " + ref.Name + ".",
				Found:   "None; lvmd was not restarted and keeps its old config until it restarts.",
				Do:      "Restart lvmd however it runs on your nodes, or check lvmd_config_map.",
			}))
		}
	}
}

func scError(found string, err error) diag.Diagnostic {
	return diagnostics.AttributeError(path.Root("storage_class"), "StorageClass Not Applied", diagnostics.Detail{
		Checked: "The StorageClass described by storage_class.",
		Found:   found + " The lvmd config was already written.",
		Do:      "Fix the cause and apply again.",
		Err:     err,
	})
}

// fillComputed sets unknown capacity/volumes from the cluster.
func (r *deviceClassResource) fillComputed(ctx context.Context, kube kubernetes.Interface, m *model, dc lvmdconf.DeviceClass, diags *diag.Diagnostics) {
	if m.Capacity.IsUnknown() || m.Capacity.IsNull() {
		caps, err := capacity(ctx, kube, dc.Name, dc.Default)
		if err != nil {
			diags.Append(liveCheckFailed("Node capacity annotations could not be read.", err))
			return
		}
		m.Capacity = capacityValue(caps)
	}
	if m.Volumes.IsUnknown() || m.Volumes.IsNull() {
		uses, err := r.usage(ctx, kube, dc.Name, dc.Default)
		if err != nil {
			diags.Append(liveCheckFailed("PVCs of the class could not be listed.", err))
			return
		}
		m.Volumes = volumesValue(uses)
	}
}

func (r *deviceClassResource) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	defer identitySpec.Write(ctx, resp.Identity, &resp.Diagnostics, &resp.State, &req.State)
	var state model
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	kube := r.kube(ctx, &resp.Diagnostics)
	if kube == nil {
		return
	}
	ref, _ := state.cm(ctx)
	name := state.Name.ValueString()
	cfg, cm, err := readConfig(ctx, kube, ref)
	if err != nil {
		resp.Diagnostics.Append(diagnostics.Error("Unreadable Lvmd Config", diagnostics.Detail{
			Checked: "Key " + ref.Key + " of ConfigMap " + ref.String() + ".",
			Found:   "It could not be read or parsed.",
			Do:      "Fix the ConfigMap and refresh again.",
			Err:     err,
		}))
		return
	}
	dc, ok := cfg.Get(name)
	if cm == nil || !ok {
		resp.State.RemoveResource(ctx)
		return
	}
	importing := false
	if b, d := req.Private.GetKey(ctx, privateImportKey); !d.HasError() && string(b) == "true" {
		importing = true
		resp.Diagnostics.Append(resp.Private.SetKey(ctx, privateImportKey, nil)...)
	}
	prior := state.sc(ctx)
	state.flattenClass(dc)
	state.ID = types.StringValue(classID(ref, name))
	state.LVMDConfigMap = cmObject(ref)
	if state.RestartLVMD.IsNull() {
		state.RestartLVMD = types.BoolValue(true)
	}
	if state.ForceDestroy.IsNull() {
		state.ForceDestroy = types.BoolValue(false)
	}

	switch {
	case prior != nil:
		sc, err := olapkube.Get(ctx, kube.StorageV1().StorageClasses().Get, prior.Name.ValueString())
		switch {
		case apierrors.IsNotFound(err):
			state.StorageClass = types.ObjectNull(scAttrTypes)
		case err != nil:
			resp.Diagnostics.Append(scError("StorageClass "+prior.Name.ValueString()+" could not be read.", err))
			return
		default:
			state.StorageClass = flattenStorageClass(ctx, sc, prior)
		}
	case importing:
		sc, err := findStorageClass(ctx, kube, dc)
		if err != nil {
			resp.Diagnostics.Append(scError("StorageClasses could not be listed.", err))
			return
		}
		state.StorageClass = types.ObjectNull(scAttrTypes)
		if sc != nil {
			state.StorageClass = flattenStorageClass(ctx, sc, nil)
		}
	}
	state.Capacity = types.MapUnknown(types.Int64Type)
	state.Volumes = types.ListUnknown(types.ObjectType{AttrTypes: volumeAttrTypes})
	r.fillComputed(ctx, kube, &state, dc, &resp.Diagnostics)
	resp.Diagnostics.Append(resp.State.Set(ctx, &state)...)
}

// findStorageClass returns the one TopoLVM StorageClass naming the class (nil if none or several).
func findStorageClass(ctx context.Context, kube kubernetes.Interface, dc lvmdconf.DeviceClass) (*storagev1.StorageClass, error) {
	list, err := kube.StorageV1().StorageClasses().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	names := classStorageClasses(list.Items, dc.Name, dc.Default)
	var exact []*storagev1.StorageClass
	for i := range list.Items {
		sc := &list.Items[i]
		if names[sc.Name] && sc.Parameters[DeviceClassParam] == dc.Name {
			exact = append(exact, sc)
		}
	}
	if len(exact) == 1 {
		return exact[0], nil
	}
	return nil, nil
}

func (r *deviceClassResource) Delete(ctx context.Context, req resource.DeleteRequest, resp *resource.DeleteResponse) {
	var state model
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	kube := r.kube(ctx, &resp.Diagnostics)
	if kube == nil {
		return
	}
	name := state.Name.ValueString()
	if !state.ForceDestroy.ValueBool() {
		uses, err := r.usage(ctx, kube, name, state.Default.ValueBool())
		if err != nil {
			resp.Diagnostics.Append(liveCheckFailed("PVCs of the class could not be listed.", err))
			return
		}
		if len(uses) > 0 {
			resp.Diagnostics.Append(inUse(path.Root("name"), name, "destroys the class", uses))
			return
		}
	}
	ref, _ := state.cm(ctx)
	text, changed, err := writeClass(ctx, kube, ref, name, nil)
	if err != nil {
		resp.Diagnostics.Append(diagnostics.Error("Lvmd Config Not Written", diagnostics.Detail{
			Checked: "ConfigMap " + ref.String() + " key " + ref.Key + ".",
			Found:   "Removing device class " + name + " failed.",
			Do:      "Check the error and destroy again.",
			Err:     err,
		}))
		return
	}
	if s := state.sc(ctx); s != nil {
		if err := deleteStorageClass(ctx, kube, s.Name.ValueString()); err != nil {
			resp.Diagnostics.Append(scError(fmt.Sprintf("StorageClass %s could not be deleted.", s.Name.ValueString()), err))
			return
		}
	}
	if changed && state.RestartLVMD.ValueBool() && strings.TrimSpace(text) != "" {
		r.restart(ctx, kube, ref, &resp.Diagnostics)
	}
}
