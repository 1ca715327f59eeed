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

	"github.com/olapgke/terraform-provider-olapgke/internal/resources/objectlist"
)

func volumeAttributes() map[string]schema.Attribute {
	return map[string]schema.Attribute{
		"claim":       schema.StringAttribute{Computed: true, Description: "volumeClaimTemplate name."},
		"pvc":         schema.StringAttribute{Computed: true, Description: "PersistentVolumeClaim name (`<claim>-<set>-<ordinal>`)."},
		"pv":          schema.StringAttribute{Computed: true, Description: "Bound PersistentVolume, empty when not bound yet."},
		"pinned_node": schema.StringAttribute{Computed: true, Description: "Node the PV's required node affinity pins it to (`topology.topolvm.io/node`), empty when none."},
	}
}

// ordinalNameAttribute is `name` of one entry of a per-ordinal list: the Pod name. Terraform's
// plan renderer always shows an attribute called name (with id and tags) in a nested object whose
// other attributes did not change, so every entry of a plan says which ordinal it is.
func ordinalNameAttribute() schema.StringAttribute {
	return schema.StringAttribute{Computed: true, MarkdownDescription: "Pod name of the ordinal (`<set>-<ordinal>`), shown by " +
		"`terraform plan` on every entry."}
}

func (r *statefulSetResource) Schema(ctx context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	resp.Schema = schema.Schema{
		// Version 1 added ordinals[*].name, plan_summary and claim_resizes (upgrade.go).
		Version: schemaVersion,
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
				Description: "Default `false`. Take ownership of fields another field manager owns (server-side apply force), for the StatefulSet, " +
					"the headless Service (`manage_service`) and the PodDisruptionBudget.",
			},
			"manage_service": schema.BoolAttribute{
				Optional: true, Computed: true, Default: booldefault.StaticBool(true),
				Description: "Default `true`. Manage the headless Service named by spec.serviceName (clusterIP None, selector from the Pod labels, ports from the containers), " +
					"applied with server-side apply after the StatefulSet. The plan dry-runs it: a Service whose fields another field manager owns " +
					"with other values (a Helm chart or kubectl that ships it) is a plan error naming the managers and fields, and nothing is created; " +
					"set `false` to leave that Service to its owner, or `force_conflicts = true` to take those fields over. " +
					"A Service olapgke did not create and that has no conflicting fields is adopted, with a plan warning. " +
					"A Service olapgke applied (label `app.kubernetes.io/managed-by=olapgke`) is deleted on destroy; `false` never touches the Service.",
			},
			"allow_unschedulable": schema.BoolAttribute{
				Optional: true, Computed: true, Default: booldefault.StaticBool(false),
				Description: "Downgrade the plan error for ordinals that would be recreated into a Pod that can never schedule to a warning. Default `false`.",
			},
			"wait_for_rollout": schema.BoolAttribute{
				Optional: true, Computed: true, Default: booldefault.StaticBool(true),
				Description: "Wait after apply until the ordinals the plan recreates or creates are Running and Ready at the update revision " +
					"(RollingUpdate), or only the created ordinals (OnDelete). Fails fast when a Pod cannot schedule because of PV node affinity or its volume cannot be provisioned. Default `true`.",
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
			"plan_summary": schema.StringAttribute{
				Computed: true,
				MarkdownDescription: "One line saying what this apply does to the ordinals, e.g. `restart 3 ordinals in place (2,1,0), " +
					"keep 3 PVCs`, for a plan reviewer. In state (after a refresh): `no change`. Known at plan when `ordinals` is.",
			},
			"ordinals": objectlist.FromNested(schema.ListNestedAttribute{
				Computed: true,
				MarkdownDescription: "Per-ordinal plan, known at plan time: what this apply does to each ordinal (`create`, `delete`, `recreate`, `stale`, `stranded`, `unchanged`), " +
					"in which wave the controller acts, and whether the ordinal's Pod can schedule afterwards. `stale`: the Pod is kept on " +
					"the old revision (OnDelete, partition) and could come back in place if deleted; `stranded`: kept, but could not come " +
					"back in place (its PVs are pinned to nodes the new template may not use; `reason` says why): " +
					"olapgke_statefulset_migration moves it. A refresh replaces the list with the " +
					"live view (every ordinal as it is today: Pod, node, PVs; `action` `unchanged`, or `stale` / `stranded` for a Pod not at the update " +
					"revision), so a plan reads \"today -> planned\". Entries are in ordinal order; `name` (the Pod name) identifies each.",
				NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
					"name":    ordinalNameAttribute(),
					"ordinal": schema.Int64Attribute{Computed: true},
					"pod":     schema.StringAttribute{Computed: true},
					"node":    schema.StringAttribute{Computed: true, Description: "Node the Pod runs on today."},
					"action":  schema.StringAttribute{Computed: true},
					"wave":    schema.Int64Attribute{Computed: true, Description: "0: not acted on; 1: as soon as the apply lands; k+1: once wave k is Ready."},
					"schedulable": schema.BoolAttribute{Computed: true, MarkdownDescription: "Whether the Pod the ordinal runs after this apply " +
						"can be placed: for `create` and `recreate` the new Pod (false: it would stay Pending), for `stale` the Pod it would " +
						"get if deleted, for `stranded` and `unchanged` the Pod it keeps."},
					"reason":  schema.StringAttribute{Computed: true},
					"blocked": schema.BoolAttribute{Computed: true, Description: "An earlier wave stalls, so the controller never reaches this ordinal."},
					"volumes": schema.ListNestedAttribute{Computed: true,
						NestedObject: schema.NestedAttributeObject{Attributes: volumeAttributes()}},
					"pvcs_after": schema.StringAttribute{Computed: true, MarkdownDescription: "For `delete` (a scale-down or destroy): " +
						"`retained` (persistentVolumeClaimRetentionPolicy Retain: the PVCs and their data stay, pinned to their nodes, and " +
						"a later scale-up reuses them) or `deleted` (Delete: the PVCs and their data go with the ordinal). Empty otherwise."},
				}},
			}),
			"claim_resizes": objectlist.FromNested(schema.ListNestedAttribute{
				Computed: true,
				MarkdownDescription: "What a claim template size change (claim growth) does to each PVC the StatefulSet owns by name, " +
					"the retained claims of scaled-down ordinals (`persistentVolumeClaimRetentionPolicy.whenScaled = Retain`) included: " +
					"`grows` (TopoLVM resizes the volume; a retained claim's filesystem grows when a Pod mounts it again) or `keeps_size` " +
					"(a retained claim that cannot grow, with `reason`: a scaled-up ordinal comes back on a volume of `size_after`). " +
					"Known at plan; empty when the apply resizes no claim, and after a refresh.",
				NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
					"name":        schema.StringAttribute{Computed: true, Description: "PersistentVolumeClaim name."},
					"ordinal":     schema.Int64Attribute{Computed: true},
					"claim":       schema.StringAttribute{Computed: true, Description: "volumeClaimTemplate name."},
					"retained":    schema.BoolAttribute{Computed: true, Description: "The claim of an ordinal outside the set's range, kept after a scale-down."},
					"size_before": schema.StringAttribute{Computed: true, Description: "The PVC's storage request today."},
					"size_after":  schema.StringAttribute{Computed: true, Description: "Its request after the apply."},
					"fate":        schema.StringAttribute{Computed: true, Description: "`grows` or `keeps_size`."},
					"reason":      schema.StringAttribute{Computed: true, Description: "For `keeps_size`: why the claim cannot grow."},
				}},
			}),
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
			"timeouts": timeouts.Block(ctx, timeouts.Opts{
				Create: true, Update: true, Delete: true,
				CreateDescription: "How long to wait for the rollout this apply starts. Default `" + defaultWriteTimeout.String() + "`.",
				UpdateDescription: "How long to wait for the rollout this apply starts. Default `" + defaultWriteTimeout.String() + "`.",
				DeleteDescription: "How long to wait until the StatefulSet and its Pods are gone. Default `" + defaultDeleteTimeout.String() + "`.",
			}),
		},
	}
}
