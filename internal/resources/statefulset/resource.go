// Package statefulset is the olapgke_statefulset resource and the olapgke_statefulset_ordinals data
// source: a StatefulSet passed through to the API server untouched (server-side apply, field
// manager "olapgke") with a per-ordinal plan from the planner package.
package statefulset

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/types"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ktypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/olapgke/terraform-provider-olapgke/internal/clients"
	"github.com/olapgke/terraform-provider-olapgke/internal/diagnostics"
	olapkube "github.com/olapgke/terraform-provider-olapgke/internal/kube"
	"github.com/olapgke/terraform-provider-olapgke/internal/resources/apifailure"
)

// FieldManager is the server-side apply field manager for every object this resource writes.
const FieldManager = "olapgke"

var intOrPercent = regexp.MustCompile(`^[0-9]+%?$`)

var (
	_ resource.Resource                = (*statefulSetResource)(nil)
	_ resource.ResourceWithConfigure   = (*statefulSetResource)(nil)
	_ resource.ResourceWithImportState = (*statefulSetResource)(nil)
	_ resource.ResourceWithModifyPlan  = (*statefulSetResource)(nil)
)

type statefulSetResource struct {
	clients *clients.Clients
}

// NewStatefulSetResource returns the olapgke_statefulset resource.
func NewStatefulSetResource() resource.Resource { return &statefulSetResource{} }

func (r *statefulSetResource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_statefulset"
}

func (r *statefulSetResource) Configure(_ context.Context, req resource.ConfigureRequest, resp *resource.ConfigureResponse) {
	if c := clients.FromProviderData(req.ProviderData, &resp.Diagnostics); c != nil {
		r.clients = c
	}
}

func (r *statefulSetResource) ImportState(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse) {
	if req.ID = identitySpec.ImportID(ctx, req, &resp.Diagnostics); resp.Diagnostics.HasError() {
		return // an import by identity goes on with the ID it stands for (identitySpec)
	}
	ns, name, ok := strings.Cut(req.ID, "/")
	if !ok || ns == "" || name == "" || strings.Contains(name, "/") {
		resp.Diagnostics.Append(diagnostics.Error("Invalid Import ID", diagnostics.Detail{
			Checked: fmt.Sprintf("The import ID %q.", req.ID),
			Found:   "It is not of the form <namespace>/<name>.",
			Do:      "Import with e.g. `terraform import olapgke_statefulset.historical olap/historical`.",
		}))
		return
	}
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("id"), types.StringValue(ns+"/"+name))...)
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("namespace"), types.StringValue(ns))...)
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("name"), types.StringValue(name))...)
}

// manifest is the user's StatefulSet as JSON values, with its identity.
type manifest struct {
	Obj             map[string]any
	Namespace, Name string
	Set             *appsv1.StatefulSet // typed decoding (unknown fields dropped): for Service/PDB only
}

// parseManifest converts the manifest attribute and checks what the provider itself needs
// (kind, apiVersion, metadata.name); everything else is left to the API server's validation.
func parseManifest(ctx context.Context, d types.Dynamic) (*manifest, error) {
	v, err := dynamicToJSON(ctx, d)
	if err != nil {
		return nil, err
	}
	return manifestFromJSON(v)
}

// manifestFromJSON is parseManifest's check of the manifest as JSON values.
func manifestFromJSON(v any) (*manifest, error) {
	obj, ok := stripNulls(v).(map[string]any)
	if !ok {
		return nil, fmt.Errorf("the manifest is a %T, not an object with apiVersion, kind, metadata and spec", v)
	}
	if av, kind := obj["apiVersion"], obj["kind"]; av != "apps/v1" || kind != "StatefulSet" {
		return nil, fmt.Errorf("the manifest has apiVersion %v and kind %v; this resource manages apps/v1 StatefulSet only", av, kind)
	}
	meta, _ := obj["metadata"].(map[string]any)
	name, _ := meta["name"].(string)
	if name == "" {
		return nil, fmt.Errorf("the manifest has no metadata.name")
	}
	ns, _ := meta["namespace"].(string)
	if ns == "" {
		ns = metav1.NamespaceDefault
	}
	// Send the namespace explicitly: apply requests must match the URL's namespace.
	withNS := make(map[string]any, len(meta)+1)
	for k, e := range meta {
		withNS[k] = e
	}
	withNS["namespace"] = ns
	obj["metadata"] = withNS
	body, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	set := &appsv1.StatefulSet{}
	if err := json.Unmarshal(body, set); err != nil {
		return nil, fmt.Errorf("the manifest does not decode as a StatefulSet: %w", err)
	}
	return &manifest{Obj: obj, Namespace: ns, Name: name, Set: set}, nil
}

// applyOptions are the patch options of every StatefulSet write: server-side apply under the
// olapgke field manager with strict field validation (unknown fields are errors, not dropped).
func applyOptions(force bool, dryRun bool) metav1.PatchOptions {
	o := metav1.PatchOptions{FieldManager: FieldManager, Force: &force, FieldValidation: "Strict"}
	if dryRun {
		o.DryRun = []string{metav1.DryRunAll}
	}
	return o
}

func applyStatefulSet(ctx context.Context, kube kubernetes.Interface, m *manifest, force, dryRun bool) (*appsv1.StatefulSet, error) {
	return applyStatefulSetAs(ctx, kube, m, FieldManager, force, dryRun)
}

// applyStatefulSetAs is applyStatefulSet under field manager fm (the plan data source dry-runs
// as its own manager: it owns nothing). A dry run changes nothing, so it is retried on transient
// errors like every read the plan makes (kube.RetryRead); a real apply is not.
func applyStatefulSetAs(ctx context.Context, kube kubernetes.Interface, m *manifest, fm string, force, dryRun bool) (*appsv1.StatefulSet, error) {
	body, err := json.Marshal(m.Obj)
	if err != nil {
		return nil, err
	}
	o := applyOptions(force, dryRun)
	o.FieldManager = fm
	if !dryRun {
		return kube.AppsV1().StatefulSets(m.Namespace).Patch(ctx, m.Name, ktypes.ApplyPatchType, body, o)
	}
	var got *appsv1.StatefulSet
	err = olapkube.RetryRead(ctx, func(ctx context.Context) error { // a dry run changes nothing
		var err error
		got, err = kube.AppsV1().StatefulSets(m.Namespace).Patch(ctx, m.Name, ktypes.ApplyPatchType, body, o)
		return err
	})
	return got, err
}

// setJSON renders a StatefulSet as the JSON values the API server returns (typed clients drop
// apiVersion and kind on decoding).
func setJSON(s *appsv1.StatefulSet) (any, error) {
	cp := *s
	cp.APIVersion, cp.Kind = "apps/v1", "StatefulSet"
	return objectJSON(&cp)
}

// objectJSON renders an API object as JSON values.
func objectJSON(obj any) (any, error) {
	b, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	return decodeJSON(b)
}

func (r *statefulSetResource) kube(ctx context.Context) (kubernetes.Interface, error) {
	if r.clients == nil {
		return nil, fmt.Errorf("the provider was not configured")
	}
	return r.clients.Kube(ctx)
}

// kubeError is the detail of a failed request (what) whose refusal has no advice of its own.
func kubeError(what string, err error) diagnosticsDetail {
	return apifailure.Detail(what, err, apifailure.Advice{
		Found: "The API server refused the request.",
		Do:    "Fix what the cause names and run the command again.",
	})
}

type diagnosticsDetail = diagnostics.Detail
