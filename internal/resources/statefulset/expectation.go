package statefulset

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-timeouts/resource/timeouts"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringdefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/olapgke/terraform-provider-olapgke/internal/clients"
	"github.com/olapgke/terraform-provider-olapgke/internal/diagnostics"
	"github.com/olapgke/terraform-provider-olapgke/internal/engine"
	"github.com/olapgke/terraform-provider-olapgke/internal/expect"
	olapkube "github.com/olapgke/terraform-provider-olapgke/internal/kube"
	"github.com/olapgke/terraform-provider-olapgke/internal/resources/durations"
)

var (
	_ resource.Resource               = (*expectationResource)(nil)
	_ resource.ResourceWithConfigure  = (*expectationResource)(nil)
	_ resource.ResourceWithModifyPlan = (*expectationResource)(nil)
)

// Expectation defaults.
const (
	DefaultSettle             = "10s"
	DefaultExpectationTimeout = "10m"
)

type expectationResource struct{ clients *clients.Clients }

// NewExpectationResource returns the olapgke_statefulset_expectation resource.
func NewExpectationResource() resource.Resource { return &expectationResource{} }

type expectationModel struct {
	ID                 types.String   `tfsdk:"id"`
	Namespace          types.String   `tfsdk:"namespace"`
	Name               types.String   `tfsdk:"name"`
	Expect             types.Dynamic  `tfsdk:"expect"`
	Settle             types.String   `tfsdk:"settle"`
	Triggers           types.Map      `tfsdk:"triggers"`
	Satisfied          types.Bool     `tfsdk:"satisfied"`
	ObservedGeneration types.Int64    `tfsdk:"observed_generation"`
	Owner              types.String   `tfsdk:"owner"`
	Timeouts           timeouts.Value `tfsdk:"timeouts"`
}

func (r *expectationResource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_statefulset_expectation"
}

func (r *expectationResource) Configure(_ context.Context, req resource.ConfigureRequest, resp *resource.ConfigureResponse) {
	if c := clients.FromProviderData(req.ProviderData, &resp.Diagnostics); c != nil {
		r.clients = c
	}
}

func (r *expectationResource) Schema(ctx context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	resp.Schema = schema.Schema{
		MarkdownDescription: "Verifies that a StatefulSet someone else writes (an operator from its custom resource, Helm) holds the " +
			"fields you expect, after its owner reconciled: for example that the `updateStrategy.type = \"OnDelete\"` you gave the " +
			"operator reached the StatefulSet. On create and update (order it after the change of the custom resource with " +
			"`depends_on`) it waits until the StatefulSet exists, its controller observed its latest generation and nobody " +
			"changed its spec for `settle`, then compares `expect` field by field and fails with **Operator Did Not Apply " +
			"Expected Fields**, naming each field, the expected and actual value, the field manager that wrote it and the " +
			"owner. Refresh compares again, so a later rewrite by the operator shows as a change in the next plan. It never " +
			"writes the StatefulSet; destroying it only removes it from state.",
		Attributes: map[string]schema.Attribute{
			"id": schema.StringAttribute{Computed: true, Description: "`<namespace>/<name>`.",
				PlanModifiers: []planmodifier.String{stringplanmodifier.UseStateForUnknown()}},
			"namespace": schema.StringAttribute{Required: true, Description: "Namespace of the StatefulSet.",
				PlanModifiers: []planmodifier.String{stringplanmodifier.RequiresReplace()},
				Validators:    []validator.String{stringvalidator.LengthAtLeast(1)}},
			"name": schema.StringAttribute{Required: true, Description: "Name of the StatefulSet.",
				PlanModifiers: []planmodifier.String{stringplanmodifier.RequiresReplace()},
				Validators:    []validator.String{stringvalidator.LengthAtLeast(1)}},
			"expect": schema.DynamicAttribute{Required: true,
				MarkdownDescription: "A partial StatefulSet object: the fields that must hold, e.g. " +
					"`{ spec = { updateStrategy = { type = \"OnDelete\" }, template = { spec = { nodeSelector = { \"cloud.google.com/gke-nodepool\" = \"historical-b\" } } } } }`. " +
					"Objects are compared key by key (other keys are free), lists element by element, numbers as numbers."},
			"settle": schema.StringAttribute{Optional: true, Computed: true, Default: stringdefault.StaticString(DefaultSettle),
				MarkdownDescription: "How long the StatefulSet's generation must stay unchanged (and observed by its controller) " +
					"before its owner is taken to be done reconciling (default `" + DefaultSettle + "`). Set it above the operator's " +
					"reconcile delay.",
				Validators: []validator.String{durations.AtLeastZero()}},
			"triggers": schema.MapAttribute{ElementType: types.StringType, Optional: true,
				MarkdownDescription: "Arbitrary values (e.g. the custom resource's generation or a hash of its spec): changing them checks again."},
			"satisfied": schema.BoolAttribute{Computed: true,
				MarkdownDescription: "Whether the StatefulSet held every expected field when last checked. A refresh that finds it " +
					"false makes the next plan an update, which waits and checks again."},
			"observed_generation": schema.Int64Attribute{Computed: true, Description: "Generation of the StatefulSet that was checked."},
			"owner": schema.StringAttribute{Computed: true,
				Description: "The StatefulSet's controlling owner (`<kind>/<name>` from ownerReferences), empty when none."},
		},
		Blocks: map[string]schema.Block{
			"timeouts": timeouts.Block(ctx, timeouts.Opts{
				Create: true, Update: true,
				CreateDescription: "How long to wait until the StatefulSet holds every expected field. Default `" + DefaultExpectationTimeout + "`. A duration such as `30m` (units `s`, `m`, `h`).",
				UpdateDescription: "The same wait after `expect`, `settle` or `triggers` changed. Default `" + DefaultExpectationTimeout + "`.",
			}),
		},
	}
}

// ModifyPlan plans a check whenever the last one did not hold (drift) or an argument changed.
func (r *expectationResource) ModifyPlan(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse) {
	if req.Plan.Raw.IsNull() {
		return
	}
	var plan expectationModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	if resp.Diagnostics.HasError() {
		return
	}
	if !plan.Namespace.IsUnknown() && !plan.Name.IsUnknown() {
		plan.ID = types.StringValue(plan.Namespace.ValueString() + "/" + plan.Name.ValueString())
	}
	var state *expectationModel
	if !req.State.Raw.IsNull() {
		state = &expectationModel{}
		resp.Diagnostics.Append(req.State.Get(ctx, state)...)
	}
	unchanged := state != nil && state.Satisfied.ValueBool() && plan.Expect.Equal(state.Expect) &&
		plan.Settle.Equal(state.Settle) && plan.Triggers.Equal(state.Triggers)
	if unchanged {
		plan.Satisfied, plan.ObservedGeneration, plan.Owner = state.Satisfied, state.ObservedGeneration, state.Owner
	} else {
		// Apply either proves the expectation or fails: planned true is what it promises.
		plan.Satisfied = types.BoolValue(true)
		plan.ObservedGeneration, plan.Owner = types.Int64Unknown(), types.StringUnknown()
	}
	resp.Diagnostics.Append(resp.Plan.Set(ctx, &plan)...)
}

func (r *expectationResource) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	defer expectationIdentitySpec.Write(ctx, resp.Identity, &resp.Diagnostics, &resp.State)
	var plan expectationModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	if resp.Diagnostics.HasError() {
		return
	}
	timeout, diags := plan.Timeouts.Create(ctx, mustParse(DefaultExpectationTimeout))
	resp.Diagnostics.Append(diags...)
	r.verify(ctx, &plan, timeout, &resp.Diagnostics)
	if plan.Satisfied.ValueBool() {
		resp.Diagnostics.Append(resp.State.Set(ctx, &plan)...)
	}
}

func (r *expectationResource) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	defer expectationIdentitySpec.Write(ctx, resp.Identity, &resp.Diagnostics, &resp.State)
	var plan expectationModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	if resp.Diagnostics.HasError() {
		return
	}
	timeout, diags := plan.Timeouts.Update(ctx, mustParse(DefaultExpectationTimeout))
	resp.Diagnostics.Append(diags...)
	r.verify(ctx, &plan, timeout, &resp.Diagnostics)
	// Saved also when the check failed (satisfied = false), so the next plan checks again.
	resp.Diagnostics.Append(resp.State.Set(ctx, &plan)...)
}

// verify waits for the owner to settle and compares; it fills the computed values of m.
func (r *expectationResource) verify(ctx context.Context, m *expectationModel, timeout time.Duration, diags *diag.Diagnostics) {
	m.Satisfied = types.BoolValue(false)
	if m.ObservedGeneration.IsUnknown() {
		m.ObservedGeneration = types.Int64Value(0)
	}
	if m.Owner.IsUnknown() {
		m.Owner = types.StringValue("")
	}
	if diags.HasError() {
		return
	}
	ns, name := m.Namespace.ValueString(), m.Name.ValueString()
	m.ID = types.StringValue(ns + "/" + name)
	want, err := dynamicToJSON(ctx, m.Expect)
	if err != nil {
		diags.Append(diagnostics.AttributeError(path.Root("expect"), "Invalid Expectation", diagnostics.Detail{
			Checked: "The expect attribute.", Found: err.Error() + ".", Do: "Set expect to a partial StatefulSet object."}))
		return
	}
	kube, err := r.clients.Kube(ctx)
	if err != nil {
		diags.Append(diagnostics.KubeClientUnavailable("The Kubernetes client for checking the StatefulSet.", err))
		return
	}
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	settle := mustParse(m.Settle.ValueString())
	st, err := engine.AwaitSettled(wctx, kube, ns, name, engine.SettleOptions{Quiet: settle})
	if err != nil {
		diags.Append(diagnostics.Error("StatefulSet Did Not Settle", diagnostics.Detail{
			Checked: fmt.Sprintf("StatefulSet %s/%s, until its owner stops changing it (settle %s).", ns, name, settle),
			Found:   "It did not exist or kept changing until the timeout.",
			Do:      "Check that the operator reconciles the custom resource (its logs and the resource's status), or raise the timeout.",
			Err:     err,
		}))
		return
	}
	ms, err := check(want, st.Set)
	if err != nil {
		diags.Append(diagnostics.ProviderBug("Expectation Check Failed", "Encoding the live StatefulSet.", err))
		return
	}
	m.ObservedGeneration, m.Owner = types.Int64Value(st.Set.Generation), types.StringValue(ownerOf(st.Set))
	if len(ms) == 0 {
		m.Satisfied = types.BoolValue(true)
		return
	}
	reconciled := fmt.Sprintf("Its generation went from %d to %d and then stayed unchanged for %s.", st.FirstGeneration, st.Set.Generation, settle)
	if st.FirstGeneration == st.Set.Generation {
		reconciled = fmt.Sprintf("Its generation stayed %d for %s: the owner did not change it.", st.Set.Generation, settle)
	}
	diags.Append(diagnostics.AttributeError(path.Root("expect"), "Operator Did Not Apply Expected Fields", diagnostics.Detail{
		Checked: fmt.Sprintf("StatefulSet %s/%s against expect, after its owner reconciled. %s", ns, name, reconciled),
		Found:   mismatchText(ms, st.Set),
		Do: "Fix what writes these fields (the operator's configuration or version: some operators hard-code them), " +
			"then apply again; olapgke never writes this StatefulSet.",
	}))
}

// check compares want with the live object and names each mismatch's field manager.
func check(want any, set *appsv1.StatefulSet) ([]expect.Mismatch, error) {
	live, err := setJSON(set)
	if err != nil {
		return nil, err
	}
	ms := expect.Compare(want, live)
	expect.Owners(ms, set.ManagedFields, live)
	return ms, nil
}

func mismatchText(ms []expect.Mismatch, set *appsv1.StatefulSet) string {
	lines := make([]string, 0, len(ms))
	for _, m := range ms {
		actual := m.Actual
		if m.Missing {
			actual = "not set"
		}
		l := fmt.Sprintf("- %s: expected %s, found %s", m.Path, m.Expected, actual)
		if m.Manager != "" {
			l += fmt.Sprintf(" (written by field manager %q)", m.Manager)
		}
		lines = append(lines, l)
	}
	owner := ownerOf(set)
	if owner == "" {
		owner = "no controlling owner"
	}
	return fmt.Sprintf("StatefulSet %s/%s (owner: %s) does not hold %d expected field(s):\n%s",
		set.Namespace, set.Name, owner, len(ms), strings.Join(lines, "\n"))
}

func ownerOf(set *appsv1.StatefulSet) string {
	if ref := metav1.GetControllerOfNoCopy(set); ref != nil {
		return ref.Kind + "/" + ref.Name
	}
	return ""
}

// Read compares again without waiting: a later rewrite by the owner shows as satisfied = false
// (and a warning), which ModifyPlan turns into an update.
func (r *expectationResource) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	defer expectationIdentitySpec.Write(ctx, resp.Identity, &resp.Diagnostics, &resp.State, &req.State)
	var m expectationModel
	resp.Diagnostics.Append(req.State.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() || r.clients == nil || r.clients.Deferred() {
		return
	}
	kube, err := r.clients.Kube(ctx)
	if err != nil {
		resp.Diagnostics.Append(diagnostics.KubeClientUnavailable("The Kubernetes client for checking the StatefulSet.", err))
		return
	}
	ns, name := m.Namespace.ValueString(), m.Name.ValueString()
	set, err := olapkube.Get(ctx, kube.AppsV1().StatefulSets(ns).Get, name)
	if apierrors.IsNotFound(err) {
		m.Satisfied = types.BoolValue(false)
		resp.Diagnostics.Append(diagnostics.Warning("Expected StatefulSet Missing", diagnostics.Detail{
			Checked: fmt.Sprintf("StatefulSet %s/%s.", ns, name), Found: "It does not exist.",
			Do: "The next apply waits for its owner to create it and checks again."}))
		resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
		return
	}
	if err != nil {
		resp.Diagnostics.Append(diagnostics.Error("StatefulSet Read Failed", kubeError(fmt.Sprintf("Reading StatefulSet %s/%s.", ns, name), err)))
		return
	}
	want, err := dynamicToJSON(ctx, m.Expect)
	if err != nil && !errors.Is(err, errNotKnown) {
		resp.Diagnostics.Append(diagnostics.ProviderBug("Expectation Check Failed", "Decoding expect from state.", err))
		return
	}
	ms, err := check(want, set)
	if err != nil {
		resp.Diagnostics.Append(diagnostics.ProviderBug("Expectation Check Failed", "Encoding the live StatefulSet.", err))
		return
	}
	m.Satisfied = types.BoolValue(len(ms) == 0)
	m.ObservedGeneration, m.Owner = types.Int64Value(set.Generation), types.StringValue(ownerOf(set))
	if len(ms) > 0 {
		resp.Diagnostics.Append(diagnostics.Warning("StatefulSet No Longer Holds Expected Fields", diagnostics.Detail{
			Checked: fmt.Sprintf("StatefulSet %s/%s against expect (refresh).", ns, name),
			Found:   mismatchText(ms, set),
			Do:      "The next apply waits for the owner to settle and checks again; fix what rewrote the fields.",
		}))
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}

// Delete forgets the expectation: nothing in the cluster is changed.
func (r *expectationResource) Delete(context.Context, resource.DeleteRequest, *resource.DeleteResponse) {
}

func mustParse(s string) time.Duration {
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0
	}
	return d
}
