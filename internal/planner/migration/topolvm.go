package migration

import (
	"slices"
	"sort"

	"github.com/olapgke/terraform-provider-olapgke/internal/planner"
	corev1 "k8s.io/api/core/v1"
)

// claimStorageClasses are the StorageClasses of the node-local claims a move recreates.
func (v *Migration) claimStorageClasses(claims []string) []string {
	var out []string
	for _, c := range claims {
		for i := range v.set.Spec.VolumeClaimTemplates {
			vct := &v.set.Spec.VolumeClaimTemplates[i]
			if vct.Name == c {
				if sc := v.ix.StorageClassFor(vct.Spec.StorageClassName); sc != "" && !slices.Contains(out, sc) {
					out = append(out, sc)
				}
			}
		}
	}
	return out
}

// TopoLVMPending lists, by name, the nodes the template would admit but for the start-up
// taint on which TopoLVM is not ready yet for the claims' StorageClasses.
func (v *Migration) TopoLVMPending(claims []string) []planner.NodeWait {
	if v.set == nil {
		return nil
	}
	scs := v.claimStorageClasses(claims)
	tols := append(slices.Clip(v.tmpl.Spec.Tolerations), corev1.Toleration{Key: planner.TaintStorageNotReady, Operator: corev1.TolerationOpExists})
	var out []planner.NodeWait
	for _, n := range v.ix.Nodes {
		if f, _ := planner.JudgeNode(v.affinity.Req, tols, n, planner.CheckNow); f != planner.FailNone {
			continue
		}
		if why := v.ix.TopoLVMNotReady(n, scs); why != "" {
			out = append(out, planner.NodeWait{Node: n.Name, Reason: why})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Node < out[j].Node })
	return out
}

// placementKinds are the problems a target node that is not TopoLVM-ready can cause.
func placementProblem(k MigrationProblemKind) bool {
	return k == ProblemTargetNodesMissing || k == ProblemCapacity || k == ProblemUnschedulable
}

// topoLVMWait is the decision for steps that do not fit now: the target nodes to wait for
// when the steps would fit were TopoLVM ready on them (no start-up taint, driver registered,
// capacity published without limit: TopoLVM's real capacity is judged again once published);
// nil when they fit now, when every target node is ready, or when they would not fit anyway
// (then the problems stand).
func (v *Migration) topoLVMWait(steps []Move, claims []string, warm bool, problems []MigrationProblem) []planner.NodeWait {
	moving := false
	for _, m := range steps {
		moving = moving || m.Action == MigrationMove
	}
	failing := false
	for _, p := range problems {
		failing = failing || placementProblem(p.Kind)
	}
	if !moving || !failing {
		return nil
	}
	pending := v.TopoLVMPending(claims)
	if len(pending) == 0 {
		return nil
	}
	hv := NewMigration(planner.AssumeTopoLVMReady(v.s, pending, v.claimStorageClasses(claims)))
	if len(hv.targetNodes()) == 0 {
		return nil
	}
	if probs := hv.simulatePlacement(slices.Clone(steps), claims, warm); len(probs) > 0 {
		return nil
	}
	return pending
}
