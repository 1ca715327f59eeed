package rollout

import (
	"slices"
	"sort"

	"github.com/olapgke/terraform-provider-olapgke/internal/planner"
	corev1 "k8s.io/api/core/v1"
)

// rolloutTopoLVMWait is the rollout's counterpart of the migration's topoLVMWait: when ordinals
// this apply creates or recreates cannot be placed, and some nodes the desired template admits
// (but for the start-up taint) are not TopoLVM-ready for the claims' StorageClasses, the plan is
// built again on the snapshot with TopoLVM ready on those nodes (assumeTopoLVMReady: capacity
// without limit until published); when every such ordinal is placed then, these nodes are what
// the rollout waits for. nil otherwise: the unschedulable ordinals stand.
func rolloutTopoLVMWait(s *planner.Snapshot, p *Plan) []planner.NodeWait {
	if !unplaced(p) {
		return nil
	}
	ix := planner.NewIndex(s)
	var scs []string
	for i := range s.Desired.Spec.VolumeClaimTemplates {
		if sc := ix.StorageClassFor(s.Desired.Spec.VolumeClaimTemplates[i].Spec.StorageClassName); sc != "" && !slices.Contains(scs, sc) {
			scs = append(scs, sc)
		}
	}
	if len(scs) == 0 {
		return nil
	}
	tmpl := &s.Desired.Spec.Template
	placement := planner.NewPodPlacement(tmpl)
	tols := append(slices.Clip(tmpl.Spec.Tolerations), corev1.Toleration{Key: planner.TaintStorageNotReady, Operator: corev1.TolerationOpExists})
	var pending []planner.NodeWait
	for _, n := range ix.Nodes {
		if f, _ := planner.JudgeNode(placement.Req, tols, n, planner.CheckNow); f != planner.FailNone {
			continue
		}
		if why := ix.TopoLVMNotReady(n, scs); why != "" {
			pending = append(pending, planner.NodeWait{Node: n.Name, Reason: why})
		}
	}
	if len(pending) == 0 {
		return nil
	}
	hp, err := buildOnce(*planner.AssumeTopoLVMReady(s, pending, scs))
	if err != nil || unplaced(hp) {
		return nil
	}
	sort.Slice(pending, func(i, j int) bool { return pending[i].Node < pending[j].Node })
	return pending
}

// unplaced reports whether an ordinal the plan creates or recreates cannot be placed.
func unplaced(p *Plan) bool {
	for _, o := range p.Ordinals {
		if (o.Action == ActionCreate || o.Action == ActionRecreate) && !o.Schedulable {
			return true
		}
	}
	return false
}
