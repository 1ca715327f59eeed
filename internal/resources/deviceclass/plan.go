package deviceclass

import (
	"context"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/types"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes"

	"github.com/olapgke/terraform-provider-olapgke/internal/diagnostics"
	"github.com/olapgke/terraform-provider-olapgke/internal/lvmdconf"
	"github.com/olapgke/terraform-provider-olapgke/internal/topolvm"
)

// ValidateConfig checks what needs no cluster: lvmd's per-class rules, Kubernetes names and the
// StorageClass binding mode.
func (r *deviceClassResource) ValidateConfig(ctx context.Context, req resource.ValidateConfigRequest, resp *resource.ValidateConfigResponse) {
	var m model
	resp.Diagnostics.Append(req.Config.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	attrErr := func(p path.Path, summary, checked string, err error, do string) {
		resp.Diagnostics.Append(diagnostics.AttributeError(p, summary, diagnostics.Detail{Checked: checked, Found: capitalise(err.Error()) + ".", Do: do}))
	}
	if !m.Name.IsNull() && !m.Name.IsUnknown() {
		if err := lvmdconf.ValidateName(m.Name.ValueString()); err != nil {
			attrErr(path.Root("name"), "Invalid Device Class Name", "The device-class name against lvmd's rule.", err, "Choose a name like ssd, nvme-thin or fast.1.")
		}
	}
	if !m.VolumeGroup.IsNull() && !m.VolumeGroup.IsUnknown() {
		if err := lvmdconf.ValidateVolumeGroup(m.VolumeGroup.ValueString()); err != nil {
			attrErr(path.Root("volume_group"), "Invalid Volume Group Name", "volume_group against LVM's naming rules.", err, "Use the name of the volume group created on the nodes (vgcreate), e.g. vg-ssd.")
		}
	}
	thin := m.Type.ValueString() == lvmdconf.TypeThin
	if !m.Type.IsUnknown() && !m.ThinPool.IsUnknown() {
		switch {
		case thin && m.ThinPool.IsNull():
			resp.Diagnostics.Append(diagnostics.AttributeError(path.Root("thin_pool"), "Thin Pool Required", diagnostics.Detail{
				Checked: "type and thin_pool.",
				Found:   `type is "thin" but thin_pool is not set; lvmd needs the thin pool's name and overprovision ratio for thin classes.`,
				Do:      `Add thin_pool { name = "pool0", overprovision_ratio = 5 } (the thin pool LV must exist in the volume group), or use type = "thick".`,
			}))
		case !thin && !m.ThinPool.IsNull():
			resp.Diagnostics.Append(diagnostics.AttributeError(path.Root("thin_pool"), "Thin Pool Without Thin Type", diagnostics.Detail{
				Checked: "type and thin_pool.",
				Found:   "thin_pool is set but type is thick (the default); lvmd ignores thin-pool for thick classes.",
				Do:      `Set type = "thin" or remove thin_pool.`,
			}))
		}
	}
	if !m.ThinPool.IsNull() && !m.ThinPool.IsUnknown() {
		var tp thinPoolModel
		resp.Diagnostics.Append(m.ThinPool.As(ctx, &tp, asOpts)...)
		if !tp.OverprovisionRatio.IsNull() && !tp.OverprovisionRatio.IsUnknown() && !(tp.OverprovisionRatio.ValueFloat64() > 1) {
			resp.Diagnostics.Append(diagnostics.AttributeError(path.Root("thin_pool").AtName("overprovision_ratio"), "Overprovision Ratio Too Low", diagnostics.Detail{
				Checked: "thin_pool.overprovision_ratio.",
				Found: fmt.Sprintf("It is %g; it must be greater than 1. lvmd refuses values below 1.0, and 1.0 would give no more capacity than a thick class while paying thin-pool overhead.",
					tp.OverprovisionRatio.ValueFloat64()),
				Do: "Use a ratio such as 2 or 5 (virtual capacity = pool size x ratio), or a thick class.",
			}))
		}
		if !tp.Name.IsNull() && !tp.Name.IsUnknown() {
			if err := lvmdconf.ValidateVolumeGroup(tp.Name.ValueString()); err != nil {
				attrErr(path.Root("thin_pool").AtName("name"), "Invalid Thin Pool Name", "thin_pool.name against LVM's naming rules.", fmt.Errorf("%s", strings.Replace(err.Error(), "volume group", "thin pool", 1)), "Use the thin pool LV's name, e.g. pool0.")
			}
		}
	}
	if !m.StripeSize.IsNull() && !m.StripeSize.IsUnknown() {
		if err := lvmdconf.ValidateStripeSize(m.StripeSize.ValueString()); err != nil {
			attrErr(path.Root("stripe_size"), "Invalid Stripe Size", "stripe_size against lvcreate's --stripesize syntax.", err, "Write it like 64k or 4m.")
		}
	}
	if !m.LVMDConfigMap.IsNull() && !m.LVMDConfigMap.IsUnknown() {
		var c cmModel
		resp.Diagnostics.Append(m.LVMDConfigMap.As(ctx, &c, asOpts)...)
		p := path.Root("lvmd_config_map")
		check := func(v types.String, at string, f func(string) []string, what string) {
			if v.IsNull() || v.IsUnknown() {
				return
			}
			if errs := f(v.ValueString()); len(errs) > 0 {
				attrErr(p.AtName(at), "Invalid ConfigMap Reference", "lvmd_config_map."+at+".", fmt.Errorf("%q is not a valid %s: %s", v.ValueString(), what, strings.Join(errs, "; ")), "Use the namespace, name and key of the TopoLVM chart's lvmd ConfigMap (topolvm-system/topolvm-lvmd-0, key lvmd.yaml).")
			}
		}
		check(c.Namespace, "namespace", validation.IsDNS1123Label, "namespace name")
		check(c.Name, "name", validation.IsDNS1123Subdomain, "ConfigMap name")
		check(c.Key, "key", validation.IsConfigMapKey, "ConfigMap key")
	}
	if s := m.sc(ctx); s != nil {
		p := path.Root("storage_class")
		if !s.Name.IsNull() && !s.Name.IsUnknown() {
			if errs := validation.IsDNS1123Subdomain(s.Name.ValueString()); len(errs) > 0 {
				attrErr(p.AtName("name"), "Invalid StorageClass Name", "storage_class.name against Kubernetes object name rules (DNS-1123 subdomain).",
					fmt.Errorf("%q: %s", s.Name.ValueString(), strings.Join(errs, "; ")), "Use lowercase letters, digits, '-' and '.', e.g. topolvm-ssd.")
			}
		}
		if !s.VolumeBindingMode.IsNull() && !s.VolumeBindingMode.IsUnknown() && s.VolumeBindingMode.ValueString() != bindingWaitForUser {
			resp.Diagnostics.Append(diagnostics.AttributeError(p.AtName("volume_binding_mode"), "Volume Binding Mode Not Supported", diagnostics.Detail{
				Checked: "storage_class.volume_binding_mode.",
				Found: fmt.Sprintf("It is %q. A TopoLVM volume is a logical volume on one node's disks: it must be provisioned on the node the scheduler picked for the Pod, "+
					"which only WaitForFirstConsumer does. With Immediate the volume lands on an arbitrary node and the Pod is then pinned there or never schedules.", s.VolumeBindingMode.ValueString()),
				Do: `Remove volume_binding_mode or set it to "WaitForFirstConsumer".`,
			}))
		}
	}
}

func capitalise(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// ModifyPlan runs the live checks (default count and lvmd conflicts against the ConfigMap, the
// in-use guard) and plans capacity and volumes.
func (r *deviceClassResource) ModifyPlan(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse) {
	if req.Plan.Raw.IsNull() {
		r.planDestroy(ctx, req, resp)
		return
	}
	var plan model
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	var state *model
	if !req.State.Raw.IsNull() {
		state = &model{}
		resp.Diagnostics.Append(req.State.Get(ctx, state)...)
	}
	if resp.Diagnostics.HasError() {
		return
	}
	ref, refKnown := plan.cm(ctx)
	if refKnown && !plan.Name.IsUnknown() {
		plan.ID = types.StringValue(classID(ref, plan.Name.ValueString()))
	}

	var want, prior lvmdconf.DeviceClass
	known := plan.lvmdKnown()
	if known {
		var d diag.Diagnostics
		want, d = plan.expand(ctx)
		resp.Diagnostics.Append(d...)
	}
	lvmdChanged := state == nil || !known
	if state != nil {
		var d diag.Diagnostics
		prior, d = state.expand(ctx)
		resp.Diagnostics.Append(d...)
		if known && !reflect.DeepEqual(prior, want) {
			lvmdChanged = true
		}
	}
	if lvmdChanged {
		plan.Capacity = types.MapUnknown(types.Int64Type)
	}

	if r.c == nil || r.c.Deferred() {
		resp.Diagnostics.Append(diagnostics.Deferred("device-class checks against the lvmd ConfigMap and the in-use guard"))
		plan.Volumes = types.ListUnknown(types.ObjectType{AttrTypes: volumeAttrTypes})
		plan.Capacity = types.MapUnknown(types.Int64Type)
		resp.Diagnostics.Append(resp.Plan.Set(ctx, &plan)...)
		return
	}
	if !refKnown || !known {
		plan.Volumes = types.ListUnknown(types.ObjectType{AttrTypes: volumeAttrTypes})
		resp.Diagnostics.Append(resp.Plan.Set(ctx, &plan)...)
		return
	}
	kube, err := r.c.Kube(ctx)
	if err != nil {
		resp.Diagnostics.Append(liveCheckFailed("Kubernetes clients could not be built.", err))
		return
	}

	// lvmd rules across the ConfigMap, as it would be after this change.
	from := ""
	if state != nil {
		from = prior.Name
	}
	if lvmdChanged {
		// Only a change to this entry is checked: a no-op plan must not fail because of what
		// other classes (maybe changing in the same apply) look like right now.
		r.checkConfigMap(ctx, kube, ref, from, want, &resp.Diagnostics)
		checkThinPool(ctx, kube, want, &resp.Diagnostics)
	}

	// In-use guard and the planned volumes.
	var uses []topolvm.VolumeUse
	if state != nil {
		uses, err = r.usage(ctx, kube, prior.Name, prior.Default)
	} else {
		uses, err = r.usage(ctx, kube, want.Name, want.Default)
	}
	if err != nil {
		resp.Diagnostics.Append(liveCheckFailed("PersistentVolumes, PVCs, StorageClasses and StatefulSets could not be listed.", err))
		return
	}
	if state != nil && len(uses) > 0 && !plan.ForceDestroy.ValueBool() {
		moved := map[string]string{}
		if prior.Name != want.Name {
			moved["name"] = fmt.Sprintf("renames the class from %q to %q", prior.Name, want.Name)
		}
		if prior.VolumeGroup != want.VolumeGroup {
			moved["volume_group"] = fmt.Sprintf("moves the class from volume group %q to %q", prior.VolumeGroup, want.VolumeGroup)
		}
		if prior.IsThin() && (!want.IsThin() || prior.ThinPool.Name != want.ThinPool.Name) {
			moved["thin_pool"] = fmt.Sprintf("moves the class off thin pool %q", prior.ThinPool.Name)
		}
		for _, attrName := range []string{"name", "volume_group", "thin_pool"} {
			if what, ok := moved[attrName]; ok {
				resp.Diagnostics.Append(inUse(path.Root(attrName), prior.Name, what, uses))
			}
		}
	}
	// volumes and capacity describe the cluster. The plan keeps what the refresh recorded in
	// state (Terraform plans again at apply, after other resources of the same run may have moved
	// volumes, and requires the same values); a new class, or a changed lvmd entry, records them
	// at apply. The in-use guard above judged the volumes as they are now.
	plan.Volumes = types.ListUnknown(types.ObjectType{AttrTypes: volumeAttrTypes})
	if state != nil && !state.Volumes.IsNull() && !state.Volumes.IsUnknown() {
		plan.Volumes = state.Volumes
	}
	if !lvmdChanged && state != nil && !state.Capacity.IsNull() && !state.Capacity.IsUnknown() {
		plan.Capacity = state.Capacity
	}

	r.planStorageClass(ctx, kube, state, &plan, want.Name, &resp.Diagnostics)
	if lvmdChanged && state != nil && !plan.RestartLVMD.ValueBool() {
		resp.Diagnostics.Append(diagnostics.AttributeWarning(path.Root("restart_lvmd"), "Lvmd Restart Needed", diagnostics.Detail{
			Checked: "Whether this change reaches lvmd.",
			Found:   "The lvmd entry of class " + want.Name + " changes, lvmd reads its config only at start, and restart_lvmd is false.",
			Do:      "Restart the lvmd pods after apply (kubectl -n " + ref.Namespace + " rollout restart daemonset/<lvmd>) or set restart_lvmd = true.",
		}))
	}
	resp.Diagnostics.Append(resp.Plan.Set(ctx, &plan)...)
}

// checkConfigMap reads the live lvmd config, applies the planned edit and reports lvmd's
// cross-class rules: exactly one default, unique names and volume-group/thin-pool targets.
//
// Two or more defaults is an error (lvmd refuses to start). No default is a warning, not an
// error: each class is checked against the live ConfigMap, not against the other classes
// planned in the same apply, so refusing "none" would make it impossible to create the classes
// of a fresh ConfigMap together or to move the default from class A to class B (A false, then
// B true: two applies, because two defaults at once are refused). lvmd itself accepts no
// default; only PVCs of StorageClasses naming no device-class fail meanwhile.
func (r *deviceClassResource) checkConfigMap(ctx context.Context, kube kubernetes.Interface, ref cmRef, from string, want lvmdconf.DeviceClass, diags *diag.Diagnostics) {
	cfg, cm, err := readConfig(ctx, kube, ref)
	if err != nil {
		if cm != nil {
			diags.Append(diagnostics.Error("Unreadable Lvmd Config", diagnostics.Detail{
				Checked: "Key " + ref.Key + " of ConfigMap " + ref.String() + ".",
				Found:   "It is not an lvmd config olapgke can edit without losing data.",
				Do:      "Fix the ConfigMap (or point lvmd_config_map at the right one) and plan again.",
				Err:     err,
			}))
			return
		}
		diags.Append(liveCheckFailed("ConfigMap "+ref.String()+" could not be read.", err))
		return
	}
	if err := edit(cfg, from, &want); err != nil {
		diags.Append(diagnostics.ProviderBug("Lvmd Config Edit Failed", "Applying the planned class to the parsed config failed.", err))
		return
	}
	classes, err := cfg.Classes()
	if err != nil {
		diags.Append(diagnostics.ProviderBug("Lvmd Config Edit Failed", "Reading classes back from the edited config failed.", err))
		return
	}
	others, defaults := conflictsOf(classes, want.Name)
	for _, e := range others {
		diags.Append(diagnostics.AttributeError(path.Root("volume_group"), "Device Class Conflicts With Another", diagnostics.Detail{
			Checked: "The device-classes of ConfigMap " + ref.String() + " (key " + ref.Key + ") with this class applied, against lvmd's start-up checks.",
			Found:   capitalise(e.Error()) + ".",
			Do:      "Use a different name, volume group or thin pool; lvmd refuses to start with this config.",
		}))
	}
	if defaults != nil && len(defaults.Defaults) == 0 {
		diags.Append(diagnostics.AttributeWarning(path.Root("default"), "No Default Device Class", diagnostics.Detail{
			Checked: "How many device-classes in ConfigMap " + ref.String() + " (key " + ref.Key + ") would be marked default after this change.",
			Found:   "None would be (" + want.Name + " is not the default); StorageClasses that name no device-class cannot provision until one is.",
			Do:      "Set default = true on exactly one class, in this apply if another resource does so, or in the next (two defaults at once are refused, so moving the default takes two applies).",
		}))
		defaults = nil
	}
	if defaults != nil {
		do := "Set default = false on the other class(es) first (apply that), or on this one: exactly one class may be the default."
		diags.Append(diagnostics.AttributeError(path.Root("default"), "Default Device Class Count", diagnostics.Detail{
			Checked: "How many device-classes in ConfigMap " + ref.String() + " (key " + ref.Key + ") would be marked default after this change.",
			Found:   capitalise(defaults.Error()) + ".",
			Do:      do,
		}))
	}
}

// planStorageClass warns when the StorageClass object will be replaced.
func (r *deviceClassResource) planStorageClass(ctx context.Context, kube kubernetes.Interface, state, plan *model, class string, diags *diag.Diagnostics) {
	s := plan.sc(ctx)
	var old *scModel
	if state != nil {
		old = state.sc(ctx)
	}
	if s == nil || s.Name.IsUnknown() || s.FSType.IsUnknown() || s.ReclaimPolicy.IsUnknown() || s.VolumeBindingMode.IsUnknown() {
		return
	}
	want := desiredStorageClass(ctx, s, class)
	reason := ""
	if old != nil && old.Name.ValueString() != s.Name.ValueString() {
		reason = fmt.Sprintf("its name changes from %q to %q (the old StorageClass is deleted)", old.Name.ValueString(), s.Name.ValueString())
	} else if cur, err := kube.StorageV1().StorageClasses().Get(ctx, want.Name, metav1.GetOptions{}); err == nil {
		if !immutableEqual(cur, want) {
			reason = "immutable fields differ: " + immutableDiff(cur, want)
		}
	} else if !apierrors.IsNotFound(err) {
		diags.Append(liveCheckFailed("StorageClass "+want.Name+" could not be read.", err))
		return
	}
	if reason == "" {
		return
	}
	diags.Append(diagnostics.AttributeWarning(path.Root("storage_class"), "StorageClass Will Be Replaced", diagnostics.Detail{
		Checked: "StorageClass " + want.Name + " against the planned storage_class.",
		Found:   "Apply deletes and recreates the StorageClass object because " + reason + ". Kubernetes does not allow updating parameters, provisioner, reclaim policy or binding mode.",
		Do:      "Nothing, if intended: existing PVCs and PVs are unaffected (a PV carries its own device class, filesystem and reclaim policy); only volumes provisioned afterwards get the new settings.",
	}))
}

func immutableDiff(cur, want *storagev1.StorageClass) string {
	var parts []string
	if cur.Provisioner != want.Provisioner {
		parts = append(parts, fmt.Sprintf("provisioner %q -> %q", cur.Provisioner, want.Provisioner))
	}
	if !reflect.DeepEqual(cur.Parameters, want.Parameters) {
		parts = append(parts, fmt.Sprintf("parameters %v -> %v", cur.Parameters, want.Parameters))
	}
	if !reflect.DeepEqual(cur.ReclaimPolicy, want.ReclaimPolicy) {
		parts = append(parts, "reclaimPolicy -> "+string(*want.ReclaimPolicy))
	}
	if !reflect.DeepEqual(cur.VolumeBindingMode, want.VolumeBindingMode) {
		parts = append(parts, "volumeBindingMode -> "+string(*want.VolumeBindingMode))
	}
	if !reflect.DeepEqual(cur.MountOptions, want.MountOptions) {
		parts = append(parts, "mountOptions removed")
	}
	return strings.Join(parts, ", ")
}

// planDestroy refuses to destroy a class PVs use unless force_destroy.
func (r *deviceClassResource) planDestroy(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse) {
	var state model
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() || r.c == nil || r.c.Deferred() {
		return
	}
	kube, err := r.c.Kube(ctx)
	if err != nil {
		resp.Diagnostics.Append(liveCheckFailed("Kubernetes clients could not be built.", err))
		return
	}
	if state.Default.ValueBool() {
		resp.Diagnostics.Append(diagnostics.Warning("Default Device Class Removed", diagnostics.Detail{
			Checked: "Whether the class being destroyed is lvmd's default.",
			Found:   "Class " + state.Name.ValueString() + " is the default; after destroy no class in the ConfigMap is, and StorageClasses naming no device-class stop working.",
			Do:      "Mark another class default = true.",
		}))
	}
	if state.ForceDestroy.ValueBool() {
		return
	}
	uses, err := r.usage(ctx, kube, state.Name.ValueString(), state.Default.ValueBool())
	if err != nil {
		resp.Diagnostics.Append(liveCheckFailed("PersistentVolumes and PVCs of the class could not be listed.", err))
		return
	}
	if len(uses) > 0 {
		resp.Diagnostics.Append(inUse(path.Root("name"), state.Name.ValueString(), "destroys the class", uses))
	}
}

func inUse(p path.Path, class, what string, uses []topolvm.VolumeUse) diag.Diagnostic {
	lines := make([]string, len(uses))
	sets := map[string][]int{}
	for i, u := range uses {
		lines[i] = "  - " + u.String()
		if u.StatefulSet != "" {
			sets[u.StatefulSet] = append(sets[u.StatefulSet], u.Ordinal)
		}
	}
	found := fmt.Sprintf("This change %s, but %d PVC(s) use it:\n%s", what, len(uses), strings.Join(lines, "\n"))
	if len(sets) > 0 {
		var s []string
		for _, set := range slices.Sorted(maps.Keys(sets)) {
			ords := sets[set]
			slices.Sort(ords)
			strs := make([]string, len(ords))
			for i, o := range ords {
				strs[i] = strconv.Itoa(o)
			}
			s = append(s, set+" ordinals "+strings.Join(strs, ","))
		}
		found += "\nStatefulSet ordinals affected: " + strings.Join(s, "; ") + "."
	}
	return diagnostics.AttributeError(p, "Device Class In Use", diagnostics.Detail{
		Checked: "PersistentVolumes and PVCs of device class " + class + ": TopoLVM's LogicalVolume of each PV " +
			"(spec.deviceClass), else its topolvm.io/device-class volume attribute, else its StorageClass's parameter.",
		Found: found + "\nTopoLVM could no longer manage (expand, delete) those volumes: their data would be stranded on the nodes.",
		Do:    "Migrate or delete those PVCs first, or set force_destroy = true (and apply it) to proceed anyway.",
	})
}

func liveCheckFailed(found string, err error) diag.Diagnostic {
	return diagnostics.Error("Device Class Check Failed", diagnostics.Detail{
		Checked: "The lvmd ConfigMap and the PVCs/PVs of the class, in the cluster's API.",
		Found:   found,
		Do:      "Make the cluster's API server reachable and plan again.",
		Err:     err,
	})
}

func volumesValue(uses []topolvm.VolumeUse) types.List {
	t := types.ObjectType{AttrTypes: volumeAttrTypes}
	vals := make([]attr.Value, len(uses))
	for i, u := range uses {
		vals[i] = types.ObjectValueMust(volumeAttrTypes, map[string]attr.Value{
			"namespace": types.StringValue(u.Namespace), "pvc": types.StringValue(u.PVC), "pv": types.StringValue(u.PV),
			"node": types.StringValue(u.Node), "storage_class": types.StringValue(u.StorageClass),
			"statefulset": types.StringValue(u.StatefulSet), "ordinal": types.Int64Value(int64(u.Ordinal)),
		})
	}
	return types.ListValueMust(t, vals)
}

func capacityValue(caps map[string]int64) types.Map {
	vals := map[string]attr.Value{}
	for k, v := range caps {
		vals[k] = types.Int64Value(v)
	}
	return types.MapValueMust(types.Int64Type, vals)
}
