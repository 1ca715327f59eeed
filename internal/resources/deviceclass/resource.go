// Package deviceclass is the olapgke_topolvm_device_class resource: one entry of TopoLVM's lvmd
// device-classes (in the lvmd ConfigMap several classes share) plus, optionally, the StorageClass
// that points at it. Plan-time checks: lvmd's rules (internal/lvmdconf), exactly one default class
// across the ConfigMap, WaitForFirstConsumer binding, and a guard that refuses to drop, rename or
// move a class while PersistentVolumes use it.
package deviceclass

import (
	"context"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/olapgke/terraform-provider-olapgke/internal/clients"
	"github.com/olapgke/terraform-provider-olapgke/internal/diagnostics"
	"github.com/olapgke/terraform-provider-olapgke/internal/stsutil"
)

// TypeSuffix is the resource type name after the provider prefix.
const TypeSuffix = "_topolvm_device_class"

// Defaults matching the TopoLVM Helm chart (lvmd.managed=true, one lvmd DaemonSet).
const (
	DefaultNamespace     = "topolvm-system"
	DefaultConfigMapName = "topolvm-lvmd-0"
	DefaultConfigKey     = "lvmd.yaml"
)

// TopoLVM and Kubernetes names the resource reads and writes.
const (
	Provisioner        = stsutil.ProvisionerTopoLVM
	LegacyProvisioner  = stsutil.ProvisionerTopoLVMLegacy
	DeviceClassParam   = stsutil.ParamDeviceClass
	FSTypeParam        = "csi.storage.k8s.io/fstype"
	CapacityAnnPrefix  = stsutil.AnnotationCapacityPrefix
	TopologyKey        = stsutil.LabelTopoLVMNode
	AnnIsDefaultClass  = "storageclass.kubernetes.io/is-default-class"
	AnnLVMDConfigHash  = "olapgke.io/lvmd-config-sha256"
	privateImportKey   = "imported"
	bindingWaitForUser = "WaitForFirstConsumer"
)

var (
	_ resource.Resource                   = (*deviceClassResource)(nil)
	_ resource.ResourceWithConfigure      = (*deviceClassResource)(nil)
	_ resource.ResourceWithImportState    = (*deviceClassResource)(nil)
	_ resource.ResourceWithModifyPlan     = (*deviceClassResource)(nil)
	_ resource.ResourceWithValidateConfig = (*deviceClassResource)(nil)
)

type deviceClassResource struct {
	c *clients.Clients
}

// NewTopoLVMDeviceClassResource returns the olapgke_topolvm_device_class resource.
func NewTopoLVMDeviceClassResource() resource.Resource { return &deviceClassResource{} }

func (r *deviceClassResource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + TypeSuffix
}

func (r *deviceClassResource) Configure(_ context.Context, req resource.ConfigureRequest, resp *resource.ConfigureResponse) {
	if c := clients.FromProviderData(req.ProviderData, &resp.Diagnostics); c != nil {
		r.c = c
	}
}

// cmRef says where lvmd's config lives.
type cmRef struct{ Namespace, Name, Key string }

func (c cmRef) String() string { return c.Namespace + "/" + c.Name }

func classID(c cmRef, class string) string { return c.Namespace + "/" + c.Name + "/" + class }

// parseImportID accepts <configmap-namespace>/<configmap-name>/<class> or <class> (chart defaults).
func parseImportID(id string) (cmRef, string, bool) {
	p := strings.Split(id, "/")
	switch len(p) {
	case 1:
		return cmRef{DefaultNamespace, DefaultConfigMapName, DefaultConfigKey}, p[0], p[0] != ""
	case 3:
		return cmRef{p[0], p[1], DefaultConfigKey}, p[2], p[0] != "" && p[1] != "" && p[2] != ""
	}
	return cmRef{}, "", false
}

// ImportState accepts <configmap-namespace>/<configmap-name>/<class> or a bare class name (in
// topolvm-system/topolvm-lvmd-0). The StorageClass whose topolvm.io/device-class parameter names
// the class is adopted into storage_class when there is exactly one.
func (r *deviceClassResource) ImportState(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse) {
	if req.ID = identitySpec.ImportID(ctx, req, &resp.Diagnostics); resp.Diagnostics.HasError() {
		return // an import by identity goes on with the ID it stands for (identitySpec)
	}
	ref, name, ok := parseImportID(req.ID)
	if !ok {
		resp.Diagnostics.Append(diagnostics.Error("Invalid Import ID", diagnostics.Detail{
			Checked: `The import ID "` + req.ID + `".`,
			Found:   "It is neither <configmap-namespace>/<configmap-name>/<class> nor a bare device-class name.",
			Do:      "Import with e.g. `terraform import olapgke_topolvm_device_class.ssd topolvm-system/topolvm-lvmd-0/ssd` or `... ssd`.",
		}))
		return
	}
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("id"), types.StringValue(classID(ref, name)))...)
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("name"), types.StringValue(name))...)
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("lvmd_config_map"), cmObject(ref))...)
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("restart_lvmd"), types.BoolValue(true))...)
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("force_destroy"), types.BoolValue(false))...)
	resp.Diagnostics.Append(resp.Private.SetKey(ctx, privateImportKey, []byte(`true`))...)
}
