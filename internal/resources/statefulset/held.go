package statefulset

import (
	"fmt"
	"sort"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/diag"

	"github.com/olapgke/terraform-provider-olapgke/internal/diagnostics"
	"github.com/olapgke/terraform-provider-olapgke/internal/planner/rollout"
)

// heldDiagnostics reports the ordinals the planned `ordinals` place but that a cordon or a node
// condition's taint keeps from being placed now (rollout.Plan.Held). Terraform plans again at
// apply, also for a saved plan applied later, and refuses a known value that changed, so the
// planned values never depend on that state: it is reported here, as an error (nothing is
// changed) or, with allow_unschedulable, a warning (the apply proceeds and the Pods wait).
func heldDiagnostics(m *manifest, p *rollout.Plan, allowUnschedulable bool) diag.Diagnostics {
	var diags diag.Diagnostics
	if len(p.Held) == 0 {
		return diags
	}
	set := m.Namespace + "/" + m.Name
	var lines []string
	nodes := map[string]bool{}
	for _, h := range p.Held {
		lines = append(lines, "- "+rollout.DescribeHeld(h))
		for _, n := range h.Nodes {
			nodes[n.Node] = true
		}
	}
	names := make([]string, 0, len(nodes))
	for n := range nodes {
		names = append(names, n)
	}
	sort.Strings(names)
	until := "until those nodes are uncordoned and Ready again"
	if len(names) > 0 {
		until = "until " + strings.Join(names, ", ") + " can take Pods again (kubectl uncordon, the node Ready again)"
	}
	d := diagnostics.Detail{
		Checked: fmt.Sprintf("For every ordinal this apply creates or recreates in StatefulSet %s: whether its new Pod can be placed with the nodes as they are now, "+
			"cordons and the taints Kubernetes sets from node conditions included. The planned ordinals leave that state out: "+
			"it changes by itself between a plan and its apply.", set),
		Found: "These ordinals can be placed, but not now; their new Pods would stay Pending " + until + ":\n" + strings.Join(lines, "\n"),
		Do: "Nothing was changed. Make the nodes schedulable again (kubectl uncordon) and apply again; " +
			"or set allow_unschedulable = true to apply anyway and leave these Pods Pending until then.",
	}
	if allowUnschedulable {
		d.Do = "allow_unschedulable = true, so the apply proceeds as planned and these Pods stay Pending " + until +
			"; the rollout stops at the first of them until then."
		diags.Append(diagnostics.AttributeWarning(manifestPath, "Ordinals Held By Node State", d))
		return diags
	}
	diags.Append(diagnostics.AttributeError(manifestPath, "Ordinals Held By Node State", d))
	return diags
}
