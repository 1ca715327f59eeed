package migration

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"sort"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	corev1 "k8s.io/api/core/v1"

	"github.com/olapgke/terraform-provider-olapgke/internal/diagnostics"
	"github.com/olapgke/terraform-provider-olapgke/internal/engine"
	"github.com/olapgke/terraform-provider-olapgke/internal/planner/gates"
	planmigration "github.com/olapgke/terraform-provider-olapgke/internal/planner/migration"
	"github.com/olapgke/terraform-provider-olapgke/internal/resources/durations"
)

// Gate defaults.
const (
	DefaultGateTimeout  = "30m"
	DefaultGateInterval = "10s"
)

type gateModel struct {
	Name         types.String       `tfsdk:"name"`
	Timeout      types.String       `tfsdk:"timeout"`
	Interval     types.String       `tfsdk:"interval"`
	PodCondition *podConditionModel `tfsdk:"pod_condition"`
	HTTP         *httpGateModel     `tfsdk:"http"`
}

type podConditionModel struct {
	Type   types.String `tfsdk:"type"`
	Status types.String `tfsdk:"status"`
}

type httpGateModel struct {
	URL            types.String `tfsdk:"url"`
	Method         types.String `tfsdk:"method"`
	Headers        types.Map    `tfsdk:"headers"`
	HeadersFromEnv types.Map    `tfsdk:"headers_from_env"`
	ExpectStatus   types.Int64  `tfsdk:"expect_status"`
	ExpectJSONPath types.String `tfsdk:"expect_json_path"`
	ExpectValue    types.String `tfsdk:"expect_value"`
}

var gateResultType = types.ObjectType{AttrTypes: map[string]attr.Type{
	"name": types.StringType, "seconds": types.Float64Type, "polls": types.Int64Type,
}}

type gateResultModel struct {
	Name    string  `tfsdk:"name"`
	Seconds float64 `tfsdk:"seconds"`
	Polls   int64   `tfsdk:"polls"`
}

func gateBlock() schema.ListNestedBlock {
	placeholders := "`{" + strings.Join(gates.GatePlaceholders, "}`, `{") + "}`"
	return schema.ListNestedBlock{
		MarkdownDescription: "Hydration gates: checks that must all pass after each restart or move (and its soak) before the " +
			"next batch starts, because Kubernetes Ready is not \"loaded\". Each gate has exactly one of `pod_condition` and `http`, " +
			"and its own `timeout` and `interval`. A gate that does not pass in time stops the apply quoting its last answer; the " +
			"ordinal stays in `completed` and the StatefulSet annotation `olapgke.io/gates-pending` marks it, so the next apply " +
			"(also after a killed one) waits for its gates again (action `gate`) without deleting anything of it. Strings of `http` " +
			"take the placeholders " + placeholders + ", filled for the ordinal whose step just ended.",
		NestedObject: schema.NestedBlockObject{
			Attributes: map[string]schema.Attribute{
				"name": schema.StringAttribute{Optional: true, MarkdownDescription: "Name in plans, logs and errors (default `gate <n>`, counting from 1)."},
				"timeout": schema.StringAttribute{Optional: true, Validators: []validator.String{durations.Positive()},
					MarkdownDescription: "How long the gate may take to pass, per ordinal (default `" + DefaultGateTimeout + "`)."},
				"interval": schema.StringAttribute{Optional: true, Validators: []validator.String{durations.Positive()},
					MarkdownDescription: "Time between polls (default `" + DefaultGateInterval + "`)."},
			},
			Blocks: map[string]schema.Block{
				"pod_condition": schema.SingleNestedBlock{
					MarkdownDescription: "Passes when the ordinal's Pod has this condition, e.g. a readinessGate type an agent or sidecar sets.",
					Attributes: map[string]schema.Attribute{
						"type":   schema.StringAttribute{Optional: true, MarkdownDescription: "Condition type (required in the block)."},
						"status": schema.StringAttribute{Optional: true, MarkdownDescription: "`True` (default), `False` or `Unknown`."},
					},
				},
				"http": schema.SingleNestedBlock{
					MarkdownDescription: "Passes when a request from where Terraform runs answers `expect_status` and, with " +
						"`expect_json_path`, the JSON body's value there equals `expect_value`. A slow answer (longer than the interval, " +
						"at least 1 s), a refused connection or another status is \"not yet\".",
					Attributes: map[string]schema.Attribute{
						"url":    schema.StringAttribute{Optional: true, MarkdownDescription: "Absolute http:// or https:// URL (required in the block); takes the placeholders."},
						"method": schema.StringAttribute{Optional: true, MarkdownDescription: "`GET` (default), `HEAD` or `POST` (empty body)."},
						"headers": schema.MapAttribute{ElementType: types.StringType, Optional: true, Sensitive: true, WriteOnly: true,
							MarkdownDescription: "Request headers; values take the placeholders. Write-only (Terraform 1.11+, OpenTofu 1.11+): " +
								"never in plan, state or logs. On older CLIs use `headers_from_env`."},
						"headers_from_env": schema.MapAttribute{ElementType: types.StringType, Optional: true,
							MarkdownDescription: "Request headers whose values are read, at apply, from the named environment variables of " +
								"the Terraform process (header name => variable name); only the variable names reach state."},
						"expect_status": schema.Int64Attribute{Optional: true, MarkdownDescription: "HTTP status that passes (default 200)."},
						"expect_json_path": schema.StringAttribute{Optional: true,
							MarkdownDescription: "JSON path into the body, as kubectl takes it (`{.tier1}`, `.a.b[0]` or `$.a.b`)."},
						"expect_value": schema.StringAttribute{Optional: true,
							MarkdownDescription: "Value the path must hold (strings as is, other values as compact JSON: `0`, `true`); takes the placeholders."},
					},
				},
			},
		},
	}
}

// gatesFrom converts the gate blocks to the planner's gates. withSecrets reads header values
// (the configuration at apply: headers are write-only, and headers_from_env is read from the
// environment); without it headers are left out (plans never show them).
func gatesFrom(ctx context.Context, l types.List, withSecrets bool) ([]gates.Gate, diag.Diagnostics) {
	ms, diags := gateModels(ctx, l)
	out := make([]gates.Gate, 0, len(ms))
	for i, m := range ms {
		g, d := gateFrom(ctx, i, m, withSecrets)
		diags.Append(d...)
		out = append(out, g)
	}
	return out, diags
}

// gateModels decodes the gate blocks (none when the list is null or unknown).
func gateModels(ctx context.Context, l types.List) ([]gateModel, diag.Diagnostics) {
	if l.IsNull() || l.IsUnknown() {
		return nil, nil
	}
	var ms []gateModel
	diags := l.ElementsAs(ctx, &ms, false)
	if diags.HasError() {
		return nil, diags
	}
	return ms, diags
}

// gateFrom converts gate block i (see gatesFrom).
func gateFrom(ctx context.Context, i int, m gateModel, withSecrets bool) (gates.Gate, diag.Diagnostics) {
	var diags diag.Diagnostics
	at := path.Root("gate").AtListIndex(i)
	g := gates.Gate{Name: m.Name.ValueString(), Timeout: parseDuration(m.Timeout, DefaultGateTimeout),
		Interval: parseDuration(m.Interval, DefaultGateInterval)}
	if g.Name == "" {
		g.Name = fmt.Sprintf("gate %d", i+1)
	}
	if c := m.PodCondition; c != nil {
		g.PodCondition = &gates.PodConditionGate{Type: corev1.PodConditionType(c.Type.ValueString()),
			Status: corev1.ConditionStatus(c.Status.ValueString())}
		if g.PodCondition.Status == "" {
			g.PodCondition.Status = corev1.ConditionTrue
		}
	}
	if h := m.HTTP; h != nil {
		hg := &gates.HTTPGate{URL: h.URL.ValueString(), Method: strings.ToUpper(h.Method.ValueString()),
			ExpectStatus: int(h.ExpectStatus.ValueInt64()), ExpectJSONPath: h.ExpectJSONPath.ValueString(),
			ExpectValue: h.ExpectValue.ValueString()}
		if hg.Method == "" {
			hg.Method = http.MethodGet
		}
		if h.ExpectStatus.IsNull() {
			hg.ExpectStatus = http.StatusOK
		}
		if withSecrets {
			hg.Headers = map[string]string{}
			if !h.Headers.IsNull() && !h.Headers.IsUnknown() {
				diags.Append(h.Headers.ElementsAs(ctx, &hg.Headers, false)...)
			}
			if !h.HeadersFromEnv.IsNull() && !h.HeadersFromEnv.IsUnknown() {
				var env map[string]string
				diags.Append(h.HeadersFromEnv.ElementsAs(ctx, &env, false)...)
				var missing []string
				for k, v := range env {
					val, ok := os.LookupEnv(v)
					if !ok {
						missing = append(missing, fmt.Sprintf("%s (header %s)", v, k))
						continue
					}
					hg.Headers[k] = val
				}
				if len(missing) > 0 {
					sort.Strings(missing)
					diags.Append(diagnostics.AttributeError(at.AtName("http").AtName("headers_from_env"), "Gate Header Variable Not Set",
						diagnostics.Detail{
							Checked: fmt.Sprintf("The environment of the Terraform process, for the headers of %s.", g.Name),
							Found:   "These variables are not set: " + strings.Join(missing, ", ") + ".",
							Do:      "Export them where terraform apply runs, or remove the headers; nothing was changed.",
						}))
				}
			}
		}
		g.HTTP = hg
	}
	return g, diags
}

// gateValueUnknown reports whether a gate block holds a value not known yet (then its checks
// wait for apply).
func gateValueUnknown(m gateModel) bool {
	vals := []attr.Value{m.Name, m.Timeout, m.Interval}
	if c := m.PodCondition; c != nil {
		vals = append(vals, c.Type, c.Status)
	}
	if h := m.HTTP; h != nil {
		vals = append(vals, h.URL, h.Method, h.Headers, h.HeadersFromEnv, h.ExpectStatus, h.ExpectJSONPath, h.ExpectValue)
	}
	for _, v := range vals {
		if v.IsUnknown() {
			return true
		}
	}
	return false
}

// validateGates checks each known gate block (validate time).
func validateGates(ctx context.Context, l types.List) diag.Diagnostics {
	ms, diags := gateModels(ctx, l)
	for i, m := range ms {
		if gateValueUnknown(m) {
			continue
		}
		g, d := gateFrom(ctx, i, m, false)
		diags.Append(d...)
		// Header values are templates too: check them (write-only values are in the
		// configuration at validate time).
		if h := m.HTTP; h != nil && g.HTTP != nil && !h.Headers.IsNull() {
			g.HTTP.Headers = map[string]string{}
			for k, v := range h.Headers.Elements() {
				if sv, ok := v.(types.String); ok && !sv.IsUnknown() {
					g.HTTP.Headers[k] = sv.ValueString()
				}
			}
		}
		if err := gates.CheckGate(g); err != nil {
			diags.Append(diagnostics.AttributeError(path.Root("gate").AtListIndex(i), "Invalid Gate", diagnostics.Detail{
				Checked: fmt.Sprintf("Gate %d (%s).", i+1, g.Name),
				Found:   capitalize(err.Error()) + ".",
				Do:      "Give the gate exactly one of pod_condition { type } and http { url }, with placeholders from the documentation.",
			}))
		}
	}
	return diags
}

// stepHistory is what earlier runs recorded, for the plan's estimates.
func stepHistory(list []completedModel) []planmigration.StepRecord {
	out := make([]planmigration.StepRecord, 0, len(list))
	for _, c := range list {
		r := planmigration.StepRecord{Action: planmigration.MigrationAction(c.Action.ValueString()), Seconds: c.DurationSeconds}
		for _, g := range c.gateResults() {
			r.GateSeconds += g.Seconds
			r.Gated = true
		}
		out = append(out, r)
	}
	return out
}

// gateRecords converts the engine's gate results for `completed`.
func gateRecords(rs []engine.GateResult) []gateResultModel {
	out := make([]gateResultModel, 0, len(rs))
	for _, r := range rs {
		out = append(out, gateResultModel{Name: r.Name, Seconds: float64(r.Duration.Milliseconds()) / 1000, Polls: int64(r.Polls)})
	}
	return out
}
