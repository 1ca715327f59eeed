package vgbootstrap

import (
	"context"
	"regexp"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework-timeouts/resource/timeouts"
	"github.com/hashicorp/terraform-plugin-framework-validators/int64validator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/booldefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/boolplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/int64default"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringdefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
)

type model struct {
	ID              types.String   `tfsdk:"id"`
	Namespace       types.String   `tfsdk:"namespace"`
	CreateNamespace types.Bool     `tfsdk:"create_namespace"`
	Image           types.String   `tfsdk:"image"`
	VolumeGroup     types.String   `tfsdk:"volume_group"`
	LVMMode         types.String   `tfsdk:"lvm_mode"`
	RecheckSeconds  types.Int64    `tfsdk:"recheck_seconds"`
	WaitForNodes    types.Bool     `tfsdk:"wait_for_nodes"`
	ThinPools       types.Map      `tfsdk:"thin_pools"`
	Timeouts        timeouts.Value `tfsdk:"timeouts"`
}

func (m model) options() options {
	return options{
		Namespace: m.Namespace.ValueString(), CreateNamespace: m.CreateNamespace.ValueBool(), Image: m.Image.ValueString(),
		VolumeGroup: m.VolumeGroup.ValueString(), LVMMode: m.LVMMode.ValueString(), RecheckSeconds: m.RecheckSeconds.ValueInt64(),
		ThinPools: thinPoolsOf(m.ThinPools),
	}
}

// dns1123Label is a Kubernetes namespace name.
var dns1123Label = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)

func (r *bootstrapResource) Schema(ctx context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	resp.Schema = schema.Schema{
		MarkdownDescription: "The volume-group bootstrap for GKE Local-SSD node pools: a privileged DaemonSet " +
			"([`examples/topolvm-gke/vg-bootstrap.yaml`](https://github.com/olapgke/terraform-provider-olapgke/blob/main/examples/topolvm-gke/vg-bootstrap.yaml) and `vg-bootstrap.sh`, the same files `kubectl apply -k` " +
			"installs) that creates the LVM volume group TopoLVM's lvmd needs on every node's raw-block Local SSDs " +
			"(also after GKE recreated a VM with empty disks), never touches a device holding anything else, and " +
			"only then removes the node pool's start-up taint `olapgke.io/storage-not-ready` " +
			"(`olapgke_local_ssd_node_pool.storage_startup_taint`). Apply waits until every Local-SSD node has its " +
			"volume group or the bootstrap said why not (Warning Events on the Node), and warns about the nodes " +
			"left behind. One per cluster. Destroying it leaves the volume groups on the nodes (and waits until the namespace it created is gone).",
		Attributes: map[string]schema.Attribute{
			"id": schema.StringAttribute{
				Computed: true, MarkdownDescription: "`<namespace>/vg-bootstrap`.",
				PlanModifiers: []planmodifier.String{stringplanmodifier.UseStateForUnknown()},
			},
			"namespace": schema.StringAttribute{
				Optional: true, Computed: true, Default: stringdefault.StaticString("olapgke-system"),
				MarkdownDescription: "Namespace of the DaemonSet, its ServiceAccount and the script's ConfigMap. Default `olapgke-system`. Changing it replaces the resource.",
				PlanModifiers:       []planmodifier.String{stringplanmodifier.RequiresReplace()},
				Validators:          []validator.String{stringvalidator.RegexMatches(dns1123Label, "must be a Kubernetes namespace name (lower-case DNS-1123 label)")},
			},
			"create_namespace": schema.BoolAttribute{
				Optional: true, Computed: true, Default: booldefault.StaticBool(true),
				MarkdownDescription: "Create the namespace (labelled `pod-security.kubernetes.io/enforce: privileged`: the Pods write LVM metadata to the node's disks) and delete it on destroy. Default `true`. Set false to use an existing namespace whose Pod Security level admits privileged Pods.",
				PlanModifiers:       []planmodifier.Bool{boolplanmodifier.RequiresReplace()},
			},
			"image": schema.StringAttribute{
				Required:            true,
				MarkdownDescription: "The bootstrap's image, built from [`examples/topolvm-gke/Dockerfile`](https://github.com/olapgke/terraform-provider-olapgke/blob/main/examples/topolvm-gke/Dockerfile) (bash, lvm2, util-linux, curl, jq) and pushed to a registry the nodes can pull from. No public image is published.",
				Validators:          []validator.String{stringvalidator.LengthAtLeast(1)},
			},
			"volume_group": schema.StringAttribute{
				Optional: true, Computed: true, Default: stringdefault.StaticString("vg-ssd"),
				MarkdownDescription: "The volume group to create: the `volume_group` of the `olapgke_topolvm_device_class` resources that use these nodes. Default `vg-ssd`. Changing it after nodes were bootstrapped does not move their disks: the script never touches devices in another group, so those nodes keep their old group (and Warning Events say so).",
				Validators:          []validator.String{volumeGroupValidator{}},
			},
			"lvm_mode": schema.StringAttribute{
				Optional: true, Computed: true, Default: stringdefault.StaticString("auto"),
				MarkdownDescription: "How the script runs LVM: `host` (the node's `/sbin/lvm` through nsenter, as TopoLVM's lvmd does), `container` (the image's lvm, udev sync off) or `auto` (host when the node has `/sbin/lvm`). Default `auto`.",
				Validators:          []validator.String{stringvalidator.OneOf("auto", "host", "container")},
			},
			"recheck_seconds": schema.Int64Attribute{
				Optional: true, Computed: true, Default: int64default.StaticInt64(60),
				MarkdownDescription: "Seconds between the script's passes on each node (a pass with nothing to do changes nothing). Default `60`.",
				Validators:          []validator.Int64{int64validator.Between(5, 3600)},
			},
			"thin_pools": schema.MapAttribute{
				Optional: true, ElementType: types.Int64Type,
				MarkdownDescription: "Thin pools the script creates in the volume group it created, by name, each a percent of the group's size (`lvcreate --type thin-pool -l N%VG`), e.g. `{ pool0 = 80 }` (the shares add up to 100 or less; thick classes get what is left). A thin `olapgke_topolvm_device_class` needs its `thin_pool.name` here: lvmd exits \"Thin pool not found\" at start without it, and TopoLVM creates no pool. A node keeps its start-up taint until its pools exist; the script writes them to the Node annotation `olapgke.io/thin-pools`, which the device class checks at plan. Pools are never resized or removed; a group the script did not create (adopted) is never changed, and a missing pool there is reported (Warning `ThinPoolNotCreated`).",
				Validators:          []validator.Map{thinPoolsValidator{}},
			},
			"wait_for_nodes": schema.BoolAttribute{
				Optional: true, Computed: true, Default: booldefault.StaticBool(true),
				MarkdownDescription: "Default `true`. After create and update, wait (up to the create/update timeout, default `10m`) until every node labelled `cloud.google.com/gke-local-nvme-ssd=true` has the volume group and no start-up taint, or the bootstrap recorded why it left the node alone. Nodes left behind are named in a warning.",
			},
		},
		Blocks: map[string]schema.Block{
			"timeouts": timeouts.Block(ctx, timeouts.Opts{
				Create: true, Update: true, Delete: true,
				CreateDescription: timeoutDoc("writing the bootstrap's objects and, with `wait_for_nodes`, for every Local-SSD node's volume group"),
				UpdateDescription: timeoutDoc("the same as `create`, after a change"),
				DeleteDescription: timeoutDoc("the DaemonSet's removal and, when it created it, the namespace's"),
			}),
		},
	}
}

// timeoutDoc describes one timeouts field with the default the CRUD code uses (defaultTimeout).
func timeoutDoc(what string) string {
	return "How long to wait for " + what + ". Default `" + strings.TrimSuffix(defaultTimeout.String(), "0s") +
		"`. A duration such as `30m` or `1h` (units `s`, `m`, `h`)."
}
