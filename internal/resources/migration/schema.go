package migration

import (
	"context"

	"github.com/hashicorp/terraform-plugin-framework-timeouts/resource/timeouts"
	"github.com/hashicorp/terraform-plugin-framework-validators/int64validator"
	"github.com/hashicorp/terraform-plugin-framework-validators/listvalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/booldefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/int64default"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/mapplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringdefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	planmigration "github.com/olapgke/terraform-provider-olapgke/internal/planner/migration"
	"github.com/olapgke/terraform-provider-olapgke/internal/resources/durations"
	"github.com/olapgke/terraform-provider-olapgke/internal/resources/objectlist"
)

// Defaults.
const (
	DefaultOrdinalTimeout = "10m"
	DefaultUnschedulable  = "20s"
	DefaultApplyTimeout   = "60m"
)

// nameAttribute is `name` of one entry of a per-ordinal list: the Pod name. Terraform's plan
// renderer always shows an attribute called name in a nested object whose other attributes did
// not change, so every entry of a plan says which ordinal it is.
func nameAttribute() schema.StringAttribute {
	return schema.StringAttribute{Computed: true, MarkdownDescription: "Pod name of the ordinal (`<statefulset>-<ordinal>`), shown by " +
		"`terraform plan` on every entry."}
}

func (r *migrationResource) Schema(ctx context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	volumes := schema.ListNestedAttribute{
		Computed: true,
		NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
			"claim":       schema.StringAttribute{Computed: true, Description: "volumeClaimTemplate name."},
			"pvc":         schema.StringAttribute{Computed: true, Description: "PVC name (`<claim>-<set>-<ordinal>`), deleted and recreated by the move."},
			"pv":          schema.StringAttribute{Computed: true, Description: "PV bound today, empty when none."},
			"pinned_node": schema.StringAttribute{Computed: true, Description: "Node that PV is pinned to (`topology.topolvm.io/node`), empty when none."},
		}},
	}
	resp.Schema = schema.Schema{
		// Version 1 added moves[*].name, completed[*].name and plan_summary (upgrade.go).
		Version: schemaVersion,
		MarkdownDescription: "Replaces StatefulSet ordinals one at a time (or `max_unavailable` at a time), disrupting only " +
			"what the change needs. Per ordinal it takes one of two steps, decided by the same predicate at plan and at apply:\n\n" +
			"- `restart`: the Pod is not at the update revision (a template change under OnDelete: image, args, env, " +
			"resources, labels, probes) and its node and every PV still satisfy the template's placement. Only the Pod is " +
			"deleted (UID precondition); the StatefulSet controller recreates it with the same PVCs on the same node, so its " +
			"Local SSD cache is kept. The step ends when the new Pod is Running and Ready at the update revision there.\n" +
			"- `move`: the Pod's node or one of its node-local PVs fails the placement (a node pool switch). Its node-local " +
			"PVCs are deleted (TopoLVM PVs are pinned to one node), then the Pod; the step ends when the new Pod is Running " +
			"and Ready at the update revision on a matching node with new PVs pinned there.\n\n" +
			"A PVC whose PV fits the placement is never deleted. Each step then soaks `min_ready_seconds`. The steps are " +
			"known at plan (`moves`), refused at plan when a Pod could not be placed again (a restart onto a cordoned node, " +
			"a move without capacity), placed again against the live cluster before anything of an ordinal is deleted, and " +
			"resumable: finished ordinals are kept in state (`completed`, with durations) and the next apply continues where a " +
			"failed or killed one stopped. Ordinals that need nothing are never touched.\n\n" +
			"The StatefulSet must use `updateStrategy.type = OnDelete` (or, for moves only, a RollingUpdate partition above " +
			"every ordinal with no pending template change), so the controller does not roll Pods on its own.",
		Attributes: map[string]schema.Attribute{
			"id": schema.StringAttribute{
				Computed: true, Description: "`<namespace>/<statefulset>`.",
				PlanModifiers: []planmodifier.String{stringplanmodifier.UseStateForUnknown()},
			},
			"namespace": schema.StringAttribute{
				Required: true, Description: "Namespace of the StatefulSet.",
				PlanModifiers: []planmodifier.String{stringplanmodifier.RequiresReplace()},
				Validators:    []validator.String{stringvalidator.LengthAtLeast(1)},
			},
			"statefulset": schema.StringAttribute{
				Required: true, Description: "Name of the StatefulSet.",
				PlanModifiers: []planmodifier.String{stringplanmodifier.RequiresReplace()},
				Validators:    []validator.String{stringvalidator.LengthAtLeast(1)},
			},
			"ordinals": schema.ListAttribute{
				ElementType: types.Int64Type, Optional: true,
				MarkdownDescription: "Ordinals to consider (default: all). Of these, only the ordinals that need a move are " +
					"moved: their Pod runs on a node the template does not select, a node-local PV is pinned to such a node, " +
					"their Pod is not at the update revision, or a move of theirs is in progress. With `order = \"explicit\"` " +
					"the ordinals move in the order listed.",
				Validators: []validator.List{listvalidator.UniqueValues(), listvalidator.SizeAtLeast(1),
					listvalidator.ValueInt64sAre(int64validator.AtLeast(0))},
			},
			"order": schema.StringAttribute{
				Optional: true, Computed: true, Default: stringdefault.StaticString(string(planmigration.OrderDescending)),
				MarkdownDescription: "`descending` (default, like the controller's RollingUpdate), `ascending`, or " +
					"`explicit` (the order of `ordinals`, which is then required). Ordinals whose Pod is not Ready go first.",
				Validators: []validator.String{stringvalidator.OneOf(string(planmigration.OrderDescending), string(planmigration.OrderAscending), string(planmigration.OrderExplicit))},
			},
			"volume_claims": schema.ListAttribute{
				ElementType: types.StringType, Optional: true, Computed: true,
				MarkdownDescription: "volumeClaimTemplates whose PVCs are node-local and recreated by a move. Default: those " +
					"whose PVs carry a required node affinity (for templates with no PV yet: a TopoLVM StorageClass).",
				Validators: []validator.List{listvalidator.UniqueValues(), listvalidator.ValueStringsAre(stringvalidator.LengthAtLeast(1))},
			},
			"max_unavailable": schema.Int64Attribute{
				Optional: true, Computed: true, Default: int64default.StaticInt64(1),
				MarkdownDescription: "How many ordinals move at once (default 1); never more than a PodDisruptionBudget selecting the Pods allows. The next ordinal starts as soon as one of them is done, as the StatefulSet controller's `maxUnavailable` does; with `gate` blocks they move as a batch whose gates pass before the next batch starts.",
				Validators:          []validator.Int64{int64validator.AtLeast(1)},
			},
			"min_ready_seconds": schema.Int64Attribute{
				Optional: true, Computed: true, Default: int64default.StaticInt64(0),
				MarkdownDescription: "Soak: seconds each new Pod must stay Ready before the next ordinal moves.",
				Validators:          []validator.Int64{int64validator.AtLeast(0)},
			},
			"require_others_ready": schema.BoolAttribute{
				Optional: true, Computed: true, Default: booldefault.StaticBool(true),
				MarkdownDescription: "Refuse (at plan and before each ordinal) while an ordinal that is not being moved is not Running and Ready; wait instead (up to `ordinal_timeout`) for one that is only starting where and as the template says (an earlier step's Pod, not Ready yet). Default true.",
			},
			"force_delete_on_unreachable_nodes": schema.BoolAttribute{
				Optional: true, Computed: true, Default: booldefault.StaticBool(false),
				MarkdownDescription: "What to do with an ordinal whose Pod is on a node that does not answer: its Ready " +
					"condition Unknown or False (for 40 s), or the node lifecycle controller's " +
					"`node.kubernetes.io/unreachable` or `node.kubernetes.io/not-ready` NoExecute taint. No kubelet " +
					"confirms a deletion there, so a deleted Pod stays Terminating until the node comes back, the Node " +
					"object is deleted, or the Pod is force-deleted, and the ordinal's Local SSD data on that node cannot " +
					"be read from anywhere else. `false` (default): the plan refuses such an ordinal, and the apply stops " +
					"at it before deleting anything of it (or at once, when its Pod is already Terminating there) instead " +
					"of waiting out `ordinal_timeout`. `true`: **the data on that node is abandoned**: the apply deletes " +
					"the ordinal's PVCs, force-deletes its Pod (grace period 0, as `kubectl delete --force " +
					"--grace-period=0`; if the node was only partitioned, its containers may still run until its " +
					"kubelet returns and stops them) and moves it, creating new, empty PVCs on the target.",
			},
			"ordinal_timeout": schema.StringAttribute{
				Optional: true, Computed: true, Default: stringdefault.StaticString(DefaultOrdinalTimeout),
				MarkdownDescription: "How long one ordinal may take from its first deletion to the end of its soak, and how long the next ordinal may wait, while none is moving, to be allowed to start, e.g. `10m` (default).",
				Validators:          []validator.String{durations.Positive()},
			},
			"unschedulable_timeout": schema.StringAttribute{
				Optional: true, Computed: true, Default: stringdefault.StaticString(DefaultUnschedulable),
				MarkdownDescription: "How long a moved Pod may stay Unschedulable, or fail in a way a retry may still clear (its new PVC " +
					"failing provisioning, a `FailedMount`, a container in `ErrImagePull`/`ImagePullBackOff`, `CrashLoopBackOff` or " +
					"`CreateContainerConfigError`), before the apply stops quoting the scheduler, the event or the kubelet's reason " +
					"(default `20s`, the grace the statefulset resource's rollout wait gives the same failures). A PV node affinity " +
					"conflict stops it at once.",
				Validators: []validator.String{durations.Positive()},
			},
			"copy": schema.SingleNestedAttribute{
				Optional: true,
				MarkdownDescription: "Warm moves: each `move` copies the ordinal's node-local volumes to new claims on the target " +
					"node while its Pod still serves, then hands them to the Pod the controller recreates there, so it starts with " +
					"its cache (a Druid historical does not load its segments again). Per ordinal: a claim is provisioned on the " +
					"node the plan's placement chose (`volume.kubernetes.io/selected-node`, same class and access modes, the larger of " +
					"the template's request and the live claim's capacity); a source copier Pod on the old node mounts the live claims " +
					"read-only and a sink copier Pod on the target node copies them over the Pod network; once the sink exits 0, the " +
					"new volumes are kept (`Retain`), the old Pod and claims are deleted, the new volumes are reserved for the " +
					"ordinal's claim names (`claimRef`) before the old claims can go, and their reclaim policy is restored once the " +
					"recreated claims are bound. The ordinal is down only from its old Pod's deletion to its new Pod's readiness. " +
					"A copy that fails or outlives `timeout` deletes only what it made (the copiers and the new claims) and stops " +
					"the apply; nothing of the ordinal is deleted before the copy is complete. Every step is recognisable from the " +
					"cluster (labels `olapgke.io/warm-move`, `olapgke.io/copier`), so a killed apply resumes. Claims with access " +
					"mode `ReadWriteOncePod` are refused at plan (the source copier must mount the live claim next to the Pod).",
				Attributes: map[string]schema.Attribute{
					"image": schema.StringAttribute{Required: true, MarkdownDescription: "Image of both copiers; it needs `sh`, " +
						"`rsync` and `awk` for the default commands (olapgke ships none: name one your registry allows).",
						Validators: []validator.String{stringvalidator.LengthAtLeast(1)}},
					"source_command": schema.ListAttribute{ElementType: types.StringType, Optional: true, MarkdownDescription: "Command " +
						"of the source copier (default: an rsync daemon serving each claim read-only as a module of its name on port " +
						"8873). Claims are mounted at `/data/<claim>`; the environment has `OLAPGKE_CLAIMS`, `OLAPGKE_PORT`, " +
						"`OLAPGKE_DATA` and `OLAPGKE_BWLIMIT_KBPS`."},
					"sink_command": schema.ListAttribute{ElementType: types.StringType, Optional: true, MarkdownDescription: "Command " +
						"of the sink copier (default: `rsync -a --delete` of each claim from `rsync://$OLAPGKE_SOURCE:$OLAPGKE_PORT/<claim>/`, " +
						"bounded by `--bwlimit`). It must exit 0 only once every claim is copied; its termination message is quoted " +
						"when it fails. `OLAPGKE_SOURCE` is the source copier's Pod IP."},
					"bandwidth": schema.StringAttribute{Optional: true, MarkdownDescription: "Bound of the copy in bytes per second, " +
						"a Kubernetes quantity such as `200Mi` (passed as `OLAPGKE_BWLIMIT_KBPS`; default: unbounded).",
						Validators: []validator.String{quantityValidator{}}},
					"timeout": schema.StringAttribute{Optional: true, MarkdownDescription: "How long one ordinal's copy may take from " +
						"the sink's start (default `2h`); then the copy is rolled back and the apply stops.",
						Validators: []validator.String{durations.Positive()}},
					"final_sync": schema.BoolAttribute{Optional: true, MarkdownDescription: "After the old Pod is gone (and before the " +
						"hand-over), run the sink a second time to copy what changed since the first pass while the Pod still served " +
						"(default false). The ordinal is down during this pass too. A failed final pass stops the apply with the old " +
						"claims kept (the source copier still holds them); the next apply runs the pass again."},
					"pod_annotations": schema.MapAttribute{ElementType: types.StringType, Optional: true, MarkdownDescription: "Annotations " +
						"of both copier Pods, e.g. `{ \"sidecar.istio.io/inject\" = \"false\" }`."},
				},
			},
			"planned_manifest": schema.StringAttribute{
				Optional: true,
				MarkdownDescription: "JSON of the StatefulSet as it will be when this resource applies, when the same apply " +
					"changes it first, e.g. `jsonencode(olapgke_statefulset.historical.manifest)` with `depends_on`. The plan's " +
					"`moves` and checks (placement, update strategy, claim sizes) then use its template instead of the live one, " +
					"and apply verifies the live template asks for the same placement before moving anything. Without it, " +
					"the plan uses the template `olapgke_statefulset` plans in the same run (with `depends_on`), or the live one " +
					"when another tool writes the StatefulSet.",
			},
			"triggers": schema.MapAttribute{
				ElementType: types.StringType, Optional: true,
				MarkdownDescription: "Arbitrary values; changing them replaces this resource, i.e. runs a new migration that moves whatever needs moving then.",
				PlanModifiers:       []planmodifier.Map{mapplanmodifier.RequiresReplace()},
			},
			"plan_summary": schema.StringAttribute{
				Computed: true,
				MarkdownDescription: "One line saying what the apply does, for a plan reviewer, e.g. `move 3 of 3 ordinals (2,1,0) " +
					"historical-a -> historical-b, 1 at a time, soak 60s, gate segments-loaded, about 54m; Ready never below 2` " +
					"(the estimate only once this resource has recorded steps in `completed`; the Ready floor only with " +
					"`require_others_ready`). Known at plan when `moves` is; `nothing to move` when no ordinal needs a step.",
			},
			"moves": objectlist.FromNested(schema.ListNestedAttribute{
				Computed: true,
				MarkdownDescription: "In a plan: the ordinals this apply restarts or moves, in order (known at plan; `completed` is then " +
					"unknown). After an apply: the steps it took. A refresh replaces it with the ordinals that still need a step, " +
					"which makes the next plan an update (for example after a Pod moved back). When nothing needs a step, a plan " +
					"keeps the latest run's moves and changes nothing.",
				NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
					"name":    nameAttribute(),
					"ordinal": schema.Int64Attribute{Computed: true},
					"pod":     schema.StringAttribute{Computed: true},
					"action": schema.StringAttribute{Computed: true, MarkdownDescription: "`restart`: only the Pod is deleted; the " +
						"controller recreates it with the same PVCs on the same node (its node and every PV still satisfy the template " +
						"placement; the cache is kept). `move`: the Pod's node or a PV fails the placement; its node-local PVCs are deleted, then the Pod. " +
						"`gate`: an earlier apply finished the ordinal's step but stopped before its gates passed; only the gates are waited for."},
					"from_node":           schema.StringAttribute{Computed: true, Description: "Node the Pod runs on today, empty when none."},
					"to_pool_or_selector": schema.StringAttribute{Computed: true, Description: "Node pool (cloud.google.com/gke-nodepool) or node selector of the template."},
					"volumes":             volumes,
					"reason":              schema.StringAttribute{Computed: true, Description: "Why the ordinal is restarted or moved."},
					"gates": schema.ListAttribute{Computed: true, ElementType: types.StringType,
						MarkdownDescription: "The gates this step waits for before the next batch, as checked for this ordinal " +
							"(header values never shown; a moved Pod's `{node}` and every `{pod_ip}` are filled at apply)."},
					"mode": schema.StringAttribute{Computed: true, MarkdownDescription: "For a `move`: `warm` (with a `copy` block: " +
						"the ordinal's claims are copied to the target node while its Pod serves, then handed to its new Pod there) or `cold` " +
						"(new, empty claims on the target node). Null for a restart or a gate."},
					"copy_bytes": schema.Int64Attribute{Computed: true, MarkdownDescription: "For a `warm` move: the space its copy " +
						"takes on the target node while both copies exist, in bytes: for each node-local claim, the larger of the claim " +
						"template's request and the live claim's capacity (what the copy's claims request). The plan and the apply's " +
						"preflight place the copy with it, so a move whose target node lacks that much free space in the device class " +
						"is refused before anything is created. Null otherwise."},
					"copy_max_seconds": schema.Float64Attribute{Computed: true, MarkdownDescription: "For a `warm` move with " +
						"`copy.bandwidth`: the longest its copy can take, `copy_bytes` / `bandwidth` (the copy reads only what the " +
						"volumes hold, so it is usually shorter). The copy runs while the Pod serves: it is not downtime. Null " +
						"otherwise. While a copy runs, its progress (bytes, rate, time left) is in the StatefulSet's Events " +
						"(`OlapgkeCopyProgress`) and in the plan's **Migration In Progress** warning."},
					"estimated_seconds": schema.Float64Attribute{Computed: true,
						MarkdownDescription: "Estimated time of the step, gates included: the mean of the steps of the same action " +
							"this resource recorded in `completed` (null before any)."},
				}},
			}),
			"update_revision": schema.StringAttribute{
				Computed: true,
				MarkdownDescription: "The StatefulSet revision restarted and moved Pods come back at: the one the controller will " +
					"give `planned_manifest`'s template (or the template olapgke_statefulset writes in the same run), else the live " +
					"`status.updateRevision`. Apply checks it before the first step.",
			},
			"completed": objectlist.FromNested(schema.ListNestedAttribute{
				Computed: true,
				MarkdownDescription: "Ordinals this resource has moved (latest move per ordinal), with how long each took. " +
					"Terraform receives it once, when the apply ends (finished, failed, timed out or stopped by an interrupt), not after each ordinal; " +
					"a killed apply records none of its moves here, and the next plan finds them done from the cluster.",
				NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
					"name":             nameAttribute(),
					"ordinal":          schema.Int64Attribute{Computed: true},
					"action":           schema.StringAttribute{Computed: true, Description: "`restart` or `move`."},
					"pod":              schema.StringAttribute{Computed: true},
					"pod_uid":          schema.StringAttribute{Computed: true, Description: "UID of the new Pod."},
					"node":             schema.StringAttribute{Computed: true, Description: "Node the new Pod runs on."},
					"pvs":              schema.ListAttribute{Computed: true, ElementType: types.StringType, Description: "PVs, pinned to `node` (new ones for a move, the same for a restart)."},
					"duration_seconds": schema.Float64Attribute{Computed: true, Description: "From the first deletion to the end of the soak."},
					"finished_at":      schema.StringAttribute{Computed: true, Description: "RFC 3339."},
					"gates": schema.ListNestedAttribute{Computed: true,
						MarkdownDescription: "The gates' waits after the step, once they passed (empty without gates or before they passed).",
						NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
							"name":    schema.StringAttribute{Computed: true},
							"seconds": schema.Float64Attribute{Computed: true, Description: "From the end of the step (and its soak) to the gate passing."},
							"polls":   schema.Int64Attribute{Computed: true},
						}},
					},
				}},
			}),
		},
		Blocks: map[string]schema.Block{
			"gate": gateBlock(),
			"timeouts": timeouts.Block(ctx, timeouts.Opts{
				Create: true, Update: true,
				CreateDescription: "How long the whole apply may take, every ordinal with its soak and gates. Default `" + DefaultApplyTimeout + "`: size it as ordinals x (`ordinal_timeout` + gate `timeout`).",
				UpdateDescription: "How long the whole apply may take, every ordinal with its soak and gates. Default `" + DefaultApplyTimeout + "`: size it as ordinals x (`ordinal_timeout` + gate `timeout`).",
			}),
		},
	}
}
