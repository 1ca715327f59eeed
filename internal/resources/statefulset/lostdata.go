package statefulset

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	appsv1 "k8s.io/api/apps/v1"

	"github.com/olapgke/terraform-provider-olapgke/internal/diagnostics"
	"github.com/olapgke/terraform-provider-olapgke/internal/planner"
)

// privateNodesSeen is the private-state key of planner.ObserveNodes' record: per PV, the node's
// UID and VM identity (instance ID, system UUID, boot ID) while the ordinal was Ready there. Private state is not part of the plan, so
// recording it on refresh changes no planned value.
const privateNodesSeen = "nodes_seen"

// privateGetter and privateSetter are the parts of the framework's private state API Read uses
// (ReadRequest.Private and ReadResponse.Private; callers check those for nil).
type privateGetter interface {
	GetKey(ctx context.Context, key string) ([]byte, diag.Diagnostics)
}
type privateSetter interface {
	SetKey(ctx context.Context, key string, value []byte) diag.Diagnostics
}

func loadNodesSeen(ctx context.Context, p privateGetter) map[string]planner.NodeSeen {
	seen := map[string]planner.NodeSeen{}
	b, _ := p.GetKey(ctx, privateNodesSeen)
	if len(b) > 0 {
		_ = json.Unmarshal(b, &seen) // an unreadable record is no record
	}
	return seen
}

func saveNodesSeen(ctx context.Context, p privateSetter, seen map[string]planner.NodeSeen) diag.Diagnostics {
	b, err := json.Marshal(seen)
	if err != nil {
		return nil
	}
	return p.SetKey(ctx, privateNodesSeen, b)
}

// recordNodes judges snap.Live's volumes against the record in prior (nil: none), saves the next
// record (planner.ObserveNodes) into next, and returns the judgement (volumes whose data is
// lost, volumes whose node restarted on the same VM). prior and next are the framework's private
// state of the request and the response.
func recordNodes(ctx context.Context, prior privateGetter, next privateSetter, snap *planner.Snapshot, diags *diag.Diagnostics) planner.LocalData {
	if snap == nil || snap.Live == nil {
		return planner.LocalData{}
	}
	seen := map[string]planner.NodeSeen{}
	if !isNil(prior) {
		seen = loadNodesSeen(ctx, prior)
	}
	judged := planner.JudgeLocalData(snap.Live, snap, seen)
	if !isNil(next) {
		diags.Append(saveNodesSeen(ctx, next, judged.Seen)...)
	}
	return judged
}

// isNil reports a nil interface or a nil pointer in one (the framework's *ProviderData).
func isNil(v any) bool {
	if v == nil {
		return true
	}
	rv := reflect.ValueOf(v)
	return rv.Kind() == reflect.Pointer && rv.IsNil()
}

// lostDataWarning names every volume whose local data is gone and the way out.
func lostDataWarning(set *appsv1.StatefulSet, lost []planner.LostVolume) diag.Diagnostic {
	lines := make([]string, 0, len(lost))
	ordinals := make([]string, 0, len(lost))
	for _, lv := range lost {
		lines = append(lines, fmt.Sprintf("- ordinal %d: PVC %s, PV %s, pinned to node %s: %s.", lv.Ordinal, lv.PVC, lv.PV, lv.Node, lv.What))
		ordinals = append(ordinals, fmt.Sprint(lv.Ordinal))
	}
	return diagnostics.Warning("Local Data Lost Outside Terraform", diagnostics.Detail{
		Checked: fmt.Sprintf("The nodes the Local SSD volumes of StatefulSet %s/%s are pinned to (topology.topolvm.io/node), against the Nodes that exist and what olapgke last saw of them.", set.Namespace, set.Name),
		Found: "GKE replaced VMs outside Terraform (auto-repair, auto-upgrade, host errors), " +
			"or the volume group on a node's disks was created after the volume. " +
			"A Local SSD does not survive its VM, so these volumes are gone while their " +
			"PVs still pin the Pods there (Pending, or ContainerCreating with FailedMount):\n" +
			strings.Join(lines, "\n"),
		Do: fmt.Sprintf("Move ordinals %s with olapgke_statefulset_migration: it recreates their PVCs, so the Pods land where a new volume can be made and download their data again. Keep GKE from recreating Local-SSD nodes with maintenance exclusions.",
			strings.Join(ordinals, ", ")),
	})
}

// restartedWarning names every volume whose node restarted on the same VM since olapgke saw its
// ordinal Ready there, and says that nothing is to be done: a reboot keeps Local SSD data.
func restartedWarning(set *appsv1.StatefulSet, restarted []planner.RestartedVolume) diag.Diagnostic {
	lines := make([]string, 0, len(restarted))
	for _, rv := range restarted {
		lines = append(lines, fmt.Sprintf("- ordinal %d: PVC %s, PV %s: %s.", rv.Ordinal, rv.PVC, rv.PV, rv.What))
	}
	return diagnostics.Warning("Node Restarted, Local Data Expected Intact", diagnostics.Detail{
		Checked: fmt.Sprintf("The nodes the Local SSD volumes of StatefulSet %s/%s are pinned to, against what olapgke last saw of them.", set.Namespace, set.Name),
		Found: "These nodes restarted (a new boot ID) on the same VM: a guest reboot, a reset or " +
			"a host-error restart. Compute Engine keeps Local SSD data through those, so each " +
			"ordinal keeps its volume and its data (node restarted, data expected intact):\n" +
			strings.Join(lines, "\n"),
		Do: "Nothing. Keep the PVCs: deleting one would throw away a warm cache. If a Pod does " +
			"not become Ready again, read its Events (kubectl describe pod). The next apply " +
			"(or terraform apply -refresh-only) records the restart, and this warning stops.",
	})
}
