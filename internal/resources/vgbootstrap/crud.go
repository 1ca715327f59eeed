package vgbootstrap

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/olapgke/terraform-provider-olapgke/internal/topolvm"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/types"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	ktypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/olapgke/terraform-provider-olapgke/internal/diagnostics"
	olapkube "github.com/olapgke/terraform-provider-olapgke/internal/kube"
	"github.com/olapgke/terraform-provider-olapgke/internal/resources/apifailure"
)

const (
	fieldManager   = "olapgke"
	defaultTimeout = 10 * time.Minute
	// pollInterval of the wait for nodes: Node and Event LISTs (two requests a second).
	pollInterval = time.Second
)

func (r *bootstrapResource) clients(ctx context.Context, diags *diag.Diagnostics) (kubernetes.Interface, dynamic.Interface) {
	kube, err := r.c.Kube(ctx)
	if err != nil {
		diags.Append(diagnostics.KubeClientUnavailable("Installing the volume-group bootstrap.", err))
		return nil, nil
	}
	dyn, err := r.c.Dynamic(ctx)
	if err != nil {
		diags.Append(diagnostics.KubeClientUnavailable("Installing the volume-group bootstrap.", err))
		return nil, nil
	}
	return kube, dyn
}

func (r *bootstrapResource) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	defer identitySpec.Write(ctx, resp.Identity, &resp.Diagnostics, &resp.State)
	var m model
	resp.Diagnostics.Append(req.Plan.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	timeout, d := m.Timeouts.Create(ctx, defaultTimeout)
	resp.Diagnostics.Append(d...)
	r.apply(ctx, &m, timeout, &resp.Diagnostics)
	if resp.Diagnostics.HasError() {
		return
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}

func (r *bootstrapResource) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	defer identitySpec.Write(ctx, resp.Identity, &resp.Diagnostics, &resp.State)
	var m model
	resp.Diagnostics.Append(req.Plan.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	timeout, d := m.Timeouts.Update(ctx, defaultTimeout)
	resp.Diagnostics.Append(d...)
	r.apply(ctx, &m, timeout, &resp.Diagnostics)
	if resp.Diagnostics.HasError() {
		return
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}

// apply server-side applies every object of the manifest, then waits for the nodes.
func (r *bootstrapResource) apply(ctx context.Context, m *model, timeout time.Duration, diags *diag.Diagnostics) {
	kube, dyn := r.clients(ctx, diags)
	if kube == nil {
		return
	}
	objs, err := manifests(m.options())
	if err != nil {
		diags.Append(diagnostics.ProviderBug("Bootstrap Manifest Unreadable", "The embedded vg-bootstrap.yaml did not render.", err))
		return
	}
	start := time.Now()
	if m.CreateNamespace.ValueBool() {
		// A namespace still terminating (this resource destroyed a moment ago) refuses new
		// objects: wait until it is gone.
		if err := waitNamespaceGone(ctx, kube, m.Namespace.ValueString(), timeout, true); err != nil {
			diags.Append(diagnostics.Error("Namespace Still Terminating", diagnostics.Detail{
				Checked: "Namespace " + m.Namespace.ValueString() + ", which this resource creates.",
				Found:   "It is being deleted and was not gone within the timeout; new objects cannot be created in it.",
				Do:      "Find what holds it (kubectl get namespace " + m.Namespace.ValueString() + " -o yaml: status.conditions) and apply again.",
				Err:     err,
			}))
			return
		}
	}
	for _, obj := range objs {
		if err := applyObject(ctx, dyn, obj); err != nil {
			d := apifailure.Detail("Server-side apply of the bootstrap's objects (field manager olapgke): "+describe(obj)+".", err, apifailure.Advice{
				Found:       "The API server refused " + describe(obj) + ".",
				Do:          "Fix what the cause names and apply again.",
				Permissions: "get, create and patch on the bootstrap's namespaces, serviceaccounts, configmaps, daemonsets, clusterroles and clusterrolebindings",
			})
			d.Do += " Objects already applied are kept."
			diags.Append(diagnostics.Error("Volume Group Bootstrap Not Installed", d))
			return
		}
	}
	m.ID = types.StringValue(m.Namespace.ValueString() + "/" + DaemonSetName)
	if m.WaitForNodes.ValueBool() {
		waitForNodes(ctx, kube, m.VolumeGroup.ValueString(), timeout-time.Since(start), diags)
	}
}

func applyObject(ctx context.Context, dyn dynamic.Interface, obj runtime.Object) error {
	res, ok := gvr(obj)
	if !ok {
		return fmt.Errorf("no resource for %s", obj.GetObjectKind().GroupVersionKind())
	}
	meta, ok := obj.(metav1.Object)
	if !ok {
		return fmt.Errorf("%T has no metadata", obj)
	}
	body, err := json.Marshal(obj)
	if err != nil {
		return err
	}
	var ri dynamic.ResourceInterface = dyn.Resource(res)
	if meta.GetNamespace() != "" {
		ri = dyn.Resource(res).Namespace(meta.GetNamespace())
	}
	force := true
	_, err = ri.Patch(ctx, meta.GetName(), ktypes.ApplyPatchType, body, metav1.PatchOptions{FieldManager: fieldManager, Force: &force})
	return err
}

func describe(obj runtime.Object) string {
	kind := obj.GetObjectKind().GroupVersionKind().Kind
	if m, ok := obj.(metav1.Object); ok {
		if m.GetNamespace() != "" {
			return kind + " " + m.GetNamespace() + "/" + m.GetName()
		}
		return kind + " " + m.GetName()
	}
	return kind
}

// waitForNodes polls the Local-SSD nodes and the bootstrap's Events until every node is ready or
// blocked (topolvm.BootstrapProgress), then warns about the blocked ones; at the deadline it
// warns about the nodes still pending. Nothing here fails the apply: the bootstrap is installed,
// and the nodes it could not prepare keep their start-up taint, so nothing lands on them.
func waitForNodes(ctx context.Context, kube kubernetes.Interface, vg string, timeout time.Duration, diags *diag.Diagnostics) {
	var last []topolvm.BootstrapNode
	sel := labels.SelectorFromSet(labels.Set{topolvm.LabelLocalNVMeSSD: "true"}).String()
	evSel := fields.SelectorFromSet(fields.Set{"source": topolvm.BootstrapComponent, "type": "Warning", "involvedObject.kind": "Node"}).String()
	err := wait.PollUntilContextTimeout(ctx, pollInterval, max(timeout, pollInterval), true, func(ctx context.Context) (bool, error) {
		nodes, err := kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: sel})
		if err != nil {
			return false, nil //nolint:nilerr // transient: asked again, the deadline reports it
		}
		events, err := kube.CoreV1().Events("").List(ctx, metav1.ListOptions{FieldSelector: evSel})
		if err != nil {
			return false, nil //nolint:nilerr // transient: asked again
		}
		ptrs := make([]*corev1.Node, 0, len(nodes.Items))
		for i := range nodes.Items {
			ptrs = append(ptrs, &nodes.Items[i])
		}
		last = topolvm.BootstrapProgress(ptrs, events.Items, vg)
		for _, n := range last {
			if !n.Ready && n.Blocked == "" {
				return false, nil
			}
		}
		return true, nil
	})
	var blocked, pending []string
	for _, n := range last {
		switch {
		case n.Ready:
		case n.Blocked != "":
			blocked = append(blocked, "- "+n.Name+": "+n.Blocked)
		default:
			pending = append(pending, n.Name)
		}
	}
	if len(blocked) > 0 {
		diags.Append(diagnostics.Warning("Volume Group Not Created On Some Nodes", diagnostics.Detail{
			Checked: "Every node labelled " + topolvm.LabelLocalNVMeSSD + "=true, and the Warning Events the bootstrap recorded about it.",
			Found:   "The bootstrap left these nodes without volume group " + vg + "; they keep the start-up taint, so no historical lands there:\n" + strings.Join(blocked, "\n"),
			Do:      "Devices holding another volume group, a filesystem or a partition table are never touched. Wipe them yourself if their data is not needed (wipefs, vgremove), or recreate the node (GKE gives it empty Local SSDs); the bootstrap's next pass creates the group.",
		}))
	}
	if len(pending) > 0 || (err != nil && last == nil) {
		diags.Append(diagnostics.Warning("Volume Group Bootstrap Still Running", diagnostics.Detail{
			Checked: fmt.Sprintf("For %s, whether each Local-SSD node has volume group %s and no start-up taint.", timeout.Round(time.Second), vg),
			Found:   "Not yet on: " + orNodesUnread(pending) + ". The bootstrap recorded nothing about them (its Pods may not run: image pull, Pod Security, scheduling).",
			Do:      "Check the DaemonSet's Pods (kubectl -n <namespace> get pods -l app.kubernetes.io/name=olapgke-vg-bootstrap -o wide) and their logs. The nodes keep the start-up taint until their group exists; migrations onto them wait.",
			Err:     err,
		}))
	}
}

func (r *bootstrapResource) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	defer identitySpec.Write(ctx, resp.Identity, &resp.Diagnostics, &resp.State, &req.State)
	var m model
	resp.Diagnostics.Append(req.State.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	kube, err := r.c.Kube(ctx)
	if err != nil {
		resp.Diagnostics.Append(diagnostics.KubeClientUnavailable("Reading the volume-group bootstrap.", err))
		return
	}
	ns := m.Namespace.ValueString()
	ds, err := olapkube.Get(ctx, kube.AppsV1().DaemonSets(ns).Get, DaemonSetName)
	if apierrors.IsNotFound(err) {
		resp.State.RemoveResource(ctx)
		return
	}
	if err != nil {
		resp.Diagnostics.Append(diagnostics.Error("Volume Group Bootstrap Not Read", diagnostics.Detail{
			Checked: "DaemonSet " + ns + "/" + DaemonSetName + ".",
			Found:   "The API server did not answer the read.",
			Do:      "Check the provider's Kubernetes access and refresh again.",
			Err:     err,
		}))
		return
	}
	image, vg, mode, recheck, ok := fromDaemonSet(ds)
	if !ok {
		resp.State.RemoveResource(ctx) // someone replaced it with something else
		return
	}
	m.ID = types.StringValue(ns + "/" + DaemonSetName)
	m.Image, m.VolumeGroup, m.LVMMode, m.RecheckSeconds = types.StringValue(image), types.StringValue(vg), types.StringValue(mode), types.Int64Value(recheck)
	m.ThinPools = thinPoolsValue(thinPoolsFromDaemonSet(ds), m.ThinPools)
	nsObj, err := kube.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
	if err == nil {
		m.CreateNamespace = types.BoolValue(nsObj.Labels[managedByLabel] == managedByOlapgke)
	}
	if m.WaitForNodes.IsNull() {
		m.WaitForNodes = types.BoolValue(true)
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}

func (r *bootstrapResource) Delete(ctx context.Context, req resource.DeleteRequest, resp *resource.DeleteResponse) {
	var m model
	resp.Diagnostics.Append(req.State.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	_, dyn := r.clients(ctx, &resp.Diagnostics)
	if dyn == nil {
		return
	}
	objs, err := manifests(m.options())
	if err != nil {
		resp.Diagnostics.Append(diagnostics.ProviderBug("Bootstrap Manifest Unreadable", "The embedded vg-bootstrap.yaml did not render.", err))
		return
	}
	timeout, d := m.Timeouts.Delete(ctx, defaultTimeout)
	resp.Diagnostics.Append(d...)
	// Reverse creation order: the DaemonSet first, the namespace (when ours) last.
	for i := len(objs) - 1; i >= 0; i-- {
		res, _ := gvr(objs[i])
		meta, _ := objs[i].(metav1.Object)
		var ri dynamic.ResourceInterface = dyn.Resource(res)
		if meta.GetNamespace() != "" {
			ri = dyn.Resource(res).Namespace(meta.GetNamespace())
		}
		if err := ri.Delete(ctx, meta.GetName(), metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			resp.Diagnostics.Append(diagnostics.Error("Volume Group Bootstrap Not Deleted", diagnostics.Detail{
				Checked: "Deleting the bootstrap's objects (the volume groups stay on the nodes).",
				Found:   "The API server refused to delete " + describe(objs[i]) + ".",
				Do:      "Check the provider's Kubernetes permissions and destroy again.",
				Err:     err,
			}))
			return
		}
	}
	if m.CreateNamespace.ValueBool() {
		kube, err := r.c.Kube(ctx)
		if err == nil {
			err = waitNamespaceGone(ctx, kube, m.Namespace.ValueString(), timeout, false)
		}
		if err != nil {
			resp.Diagnostics.Append(diagnostics.Warning("Namespace Still Terminating", diagnostics.Detail{
				Checked: "Namespace " + m.Namespace.ValueString() + " after deleting it.",
				Found:   "It was not gone within the delete timeout.",
				Do:      "Nothing is left in Terraform's state; check what holds the namespace (status.conditions) before creating the bootstrap there again.",
				Err:     err,
			}))
		}
	}
}

// waitNamespaceGone waits until namespace ns does not exist. With onlyIfTerminating it returns
// at once when the namespace exists and is not being deleted.
func waitNamespaceGone(ctx context.Context, kube kubernetes.Interface, ns string, timeout time.Duration, onlyIfTerminating bool) error {
	return wait.PollUntilContextTimeout(ctx, pollInterval, max(timeout, pollInterval), true, func(ctx context.Context) (bool, error) {
		n, err := kube.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			return true, nil
		case err != nil:
			return false, nil //nolint:nilerr // transient: asked again until the timeout
		}
		return onlyIfTerminating && n.DeletionTimestamp == nil, nil
	})
}

func orNodesUnread(pending []string) string {
	if len(pending) == 0 {
		return "the nodes could not be listed"
	}
	return strings.Join(pending, ", ")
}
