package statefulset

import (
	"context"

	"github.com/hashicorp/terraform-plugin-framework-timeouts/resource/timeouts"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/booldefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
)

func volumeAttributes() map[string]schema.Attribute {
	return map[string]schema.Attribute{
		"claim":       schema.StringAttribute{Computed: true, Description: "volumeClaimTemplate name."},
		"pvc":         schema.StringAttribute{Computed: true, Description: "PersistentVolumeClaim name (`<claim>-<set>-<ordinal>`)."},
		"pv":          schema.StringAttribute{Computed: true, Description: "Bound PersistentVolume, empty when not bound yet."},
		"pinned_node": schema.StringAttribute{Computed: true, Description: "Node the PV's required node affinity pins it to (`topology.topolvm.io/node`), empty when none."},
	}
}

func (r *statefulSetResource) Schema(ctx context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	resp.Schema = schema.Schema{
		Description: "A StatefulSet applied with server-side apply (field manager `olapgke`), with a per-ordinal plan: " +
			"which Pods the apply recreates, in what order, and whether each can schedule again on the nodes its local PVs are pinned to.",
		Attributes: map[string]schema.Attribute{
			"id": schema.StringAttribute{
				Computed: true, Description: "`<namespace>/<name>`.",
				PlanModifiers: []planmodifier.String{stringplanmodifier.UseStateForUnknown()},
			},
			"manifest": schema.DynamicAttribute{
				Required: true,
				Description: "The whole StatefulSet (`apiVersion`, `kind`, `metadata`, `spec`) as an object, e.g. " +
					"`yamldecode(file(\"historical.yaml\"))`. Every field is passed to the API server untouched " +
					"(updateStrategy, podManagementPolicy, persistentVolumeClaimRetentionPolicy, ordinals, minReadySeconds, " +
					"volumeClaimTemplates, the pod template). `metadata.namespace` defaults to `default`.",
			},
			"namespace":       schema.StringAttribute{Computed: true, Description: "Namespace from the manifest."},
			"name":            schema.StringAttribute{Computed: true, Description: "Name from the manifest."},
			"uid":             schema.StringAttribute{Computed: true, Description: "UID of the StatefulSet object."},
			"update_revision": schema.StringAttribute{Computed: true, Description: "status.updateRevision after the last apply."},
			"service_name":    schema.StringAttribute{Computed: true, Description: "spec.serviceName of the manifest."},
			"force_conflicts": schema.BoolAttribute{
				Optional: true, Computed: true, Default: booldefault.StaticBool(false),
				Description: "Take ownership of fields another field manager owns (server-side apply force), for the StatefulSet, " +
					"the headless Service (`manage_service`) and the PodDisruptionBudget.",
			},
			"manage_service": schema.BoolAttribute{
				Optional: true, Computed: true, Default: booldefault.StaticBool(true),
				Description: "Manage the headless Service named by spec.serviceName (clusterIP None, selector from the Pod labels, ports from the containers), " +
					"applied with server-side apply after the StatefulSet. The plan dry-runs it: a Service whose fields another field manager owns " +
					"with other values (a Helm chart or kubectl that ships it) is a plan error naming the managers and fields, and nothing is created; " +
					"set `false` to leave that Service to its owner, or `force_conflicts = true` to take those fields over. " +
					"A Service olapgke did not create and that has no conflicting fields is adopted, with a plan warning. " +
					"A Service olapgke applied (label `app.kubernetes.io/managed-by=olapgke`) is deleted on destroy; `false` never touches the Service.",
			},
			"allow_unschedulable": schema.BoolAttribute{
				Optional: true, Computed: true, Default: booldefault.StaticBool(false),
				Description: "Downgrade the plan error for ordinals that would be recreated into a Pod that can never schedule to a warning.",
			},
			"wait_for_rollout": schema.BoolAttribute{
				Optional: true, Computed: true, Default: booldefault.StaticBool(true),
				Description: "Wait after apply until the ordinals the plan recreates or creates are Running and Ready at the update revision " +
					"(RollingUpdate), or only the created ordinals (OnDelete). Fails fast when a Pod cannot schedule because of PV node affinity or its volume cannot be provisioned.",
			},
			"pod_disruption_budget": schema.SingleNestedAttribute{
				Optional:    true,
				Description: "A PodDisruptionBudget named like the StatefulSet, selecting its Pods. Set exactly one of the two.",
				Attributes: map[string]schema.Attribute{
					"max_unavailable": schema.StringAttribute{
						Optional: true, Description: "Number (`\"1\"`) or percentage (`\"25%\"`).",
						Validators: []validator.String{
							stringvalidator.ExactlyOneOf(path.MatchRelative().AtParent().AtName("min_available")),
							stringvalidator.RegexMatches(intOrPercent, "must be a number or a percentage"),
						},
					},
					"min_available": schema.StringAttribute{
						Optional: true, Description: "Number (`\"2\"`) or percentage (`\"75%\"`).",
						Validators: []validator.String{
							stringvalidator.RegexMatches(intOrPercent, "must be a number or a percentage"),
						},
					},
				},
			},
			"ordinals": schema.ListNestedAttribute{
				Computed: true,
				Description: "Per-ordinal plan, known at plan time: what this apply does to each ordinal (`create`, `delete`, `recreate`, `stale`, `unchanged`), " +
					"in which wave the controller acts, and whether the ordinal's Pod can schedule afterwards.",
				NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
					"ordinal":     schema.Int64Attribute{Computed: true},
					"pod":         schema.StringAttribute{Computed: true},
					"node":        schema.StringAttribute{Computed: true, Description: "Node the Pod runs on today."},
					"action":      schema.StringAttribute{Computed: true},
					"wave":        schema.Int64Attribute{Computed: true, Description: "0: not acted on; 1: as soon as the apply lands; k+1: once wave k is Ready."},
					"schedulable": schema.BoolAttribute{Computed: true},
					"reason":      schema.StringAttribute{Computed: true},
					"blocked":     schema.BoolAttribute{Computed: true, Description: "An earlier wave stalls, so the controller never reaches this ordinal."},
					"volumes": schema.ListNestedAttribute{Computed: true,
						NestedObject: schema.NestedAttributeObject{Attributes: volumeAttributes()}},
					"pvcs_after": schema.StringAttribute{Computed: true, MarkdownDescription: "For `delete` (a scale-down or destroy): " +
						"`retained` (persistentVolumeClaimRetentionPolicy Retain: the PVCs and their data stay, pinned to their nodes, and " +
						"a later scale-up reuses them) or `deleted` (Delete: the PVCs and their data go with the ordinal). Empty otherwise."},
				}},
			},
			"rollout": schema.SingleNestedAttribute{
				Computed:    true,
				Description: "The live rollout as last read.",
				Attributes: map[string]schema.Attribute{
					"current_revision": schema.StringAttribute{Computed: true},
					"update_revision":  schema.StringAttribute{Computed: true},
					"replicas":         schema.Int64Attribute{Computed: true},
					"ready_replicas":   schema.Int64Attribute{Computed: true},
					"updated_replicas": schema.Int64Attribute{Computed: true},
					"current_replicas": schema.Int64Attribute{Computed: true},
					"stalled":          schema.BoolAttribute{Computed: true, Description: "The rollout is not complete and some Pod is not Ready."},
					"stuck": schema.ListNestedAttribute{Computed: true,
						NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
							"ordinal":  schema.Int64Attribute{Computed: true},
							"pod":      schema.StringAttribute{Computed: true},
							"node":     schema.StringAttribute{Computed: true},
							"phase":    schema.StringAttribute{Computed: true},
							"revision": schema.StringAttribute{Computed: true},
							"reason":   schema.StringAttribute{Computed: true, Description: "PodScheduled=False reason (Unschedulable), else the Ready condition's or a waiting container's."},
							"message":  schema.StringAttribute{Computed: true, Description: "The scheduler's message, verbatim."},
						}}},
				},
			},
		},
		Blocks: map[string]schema.Block{
			"timeouts": timeouts.Block(ctx, timeouts.Opts{Create: true, Update: true, Delete: true}),
		},
	}
}
