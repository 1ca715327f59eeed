package migration

import (
	"fmt"

	"github.com/olapgke/terraform-provider-olapgke/internal/stsutil"
	corev1 "k8s.io/api/core/v1"
)

// The migration's one decision per ordinal: leave it, restart it in place, or
// move it. Plan (which ordinals appear in `moves`, with which action) and
// NextStep (which object the apply deletes next) both call the two object
// predicates below, podNeedsReplace and pvcNeedsReplace; need composes them
// for an ordinal. TestDecisionEquivalence checks that they agree.
//
// Only durable facts decide: which node a Pod is bound to, which node a PV is
// pinned to, whether that node still exists and what the template's
// nodeSelector and required node affinity say about it, the Pod's revision,
// and objects being deleted. Readiness, cordons, taints and free capacity
// change often between a plan and its apply; they decide whether a step can
// land (Plan's placement checks, NextStep's waits), never which step it is.

// ordinalNeed is the decision for one ordinal: action "" means leave it.
type ordinalNeed struct {
	action MigrationAction
	reason string
}

// need decides what ordinal o needs, from the live state of its Pod and of
// its node-local PVCs (claims).
func (v *Migration) need(o int32, claims []string) ordinalNeed {
	set := v.set
	pod := v.pod(o)
	anyPVC, missing, unbound := false, "", ""
	for _, c := range claims {
		name := stsutil.ClaimPVCName(c, set.Name, o)
		pvc := v.pvc(name)
		if pvc == nil {
			if missing == "" {
				missing = name
			}
			continue
		}
		anyPVC = true
		if pvc.Spec.VolumeName == "" && unbound == "" {
			unbound = name
		}
		if pvc.DeletionTimestamp != nil {
			return ordinalNeed{MigrationMove, "PVC " + name + " is being deleted (a move in progress)"}
		}
	}
	if pod != nil && pod.DeletionTimestamp == nil && pod.Spec.NodeName != "" {
		if why := v.nodeRejects(pod.Spec.NodeName); why != "" {
			return ordinalNeed{MigrationMove, fmt.Sprintf("Pod %s runs on node %s, which %s", pod.Name, pod.Spec.NodeName, why)}
		}
	}
	for _, c := range claims {
		name := stsutil.ClaimPVCName(c, set.Name, o)
		if why := v.pvcNeedsReplace(v.pvc(name), MoveProgress{}); why != "" {
			return ordinalNeed{MigrationMove, fmt.Sprintf("PVC %s: %s", name, why)}
		}
	}
	switch {
	case pod == nil && !anyPVC && (v.live == nil || !stsutil.InRange(v.live, o)):
		// Neither Pod nor PVCs of an ordinal the live set does not have yet
		// (a scale-up in this apply): the controller creates both where the
		// template says; it is not a step.
		return ordinalNeed{}
	case pod == nil && !anyPVC && len(claims) == 0:
		return ordinalNeed{MigrationRestart, "Pod " + stsutil.PodName(set.Name, o) + " does not exist (the StatefulSet controller recreates it)"}
	case pod == nil && !anyPVC:
		// Neither Pod nor PVCs of a live ordinal: a move whose old objects are
		// gone (an apply stopped after its deletes) before the controller
		// recreates them. It is finished as a step, waited for until Ready on
		// the target: leaving it would count it as an "other" ordinal that is
		// down, and start the next move while it still is.
		return ordinalNeed{MigrationMove, "Pod " + stsutil.PodName(set.Name, o) + " and its PVCs do not exist (a move in progress: the StatefulSet controller recreates them)"}
	case pod == nil && missing != "":
		return ordinalNeed{MigrationMove, "Pod " + stsutil.PodName(set.Name, o) + " and PVC " + missing + " do not exist (a move in progress: the StatefulSet controller recreates them)"}
	case pod == nil && unbound != "":
		return ordinalNeed{MigrationMove, "Pod " + stsutil.PodName(set.Name, o) + " does not exist and PVC " + unbound + " is not bound yet (a move in progress: the StatefulSet controller recreates the Pod)"}
	case pod == nil:
		return ordinalNeed{MigrationRestart, "Pod " + stsutil.PodName(set.Name, o) + " does not exist (the StatefulSet controller recreates it with its PVCs)"}
	case pod.DeletionTimestamp != nil:
		return ordinalNeed{MigrationRestart, "Pod " + pod.Name + " is terminating (the StatefulSet controller recreates it with its PVCs)"}
	case missing != "":
		return ordinalNeed{MigrationMove, "PVC " + missing + " does not exist (a move in progress)"}
	}
	if why := v.podNeedsReplace(pod, MoveProgress{}); why != "" {
		return ordinalNeed{MigrationRestart, fmt.Sprintf("Pod %s %s; its node %s and PVs still satisfy the template placement, so it restarts there with its PVCs", pod.Name, why, pod.Spec.NodeName)}
	}
	if pod.Spec.NodeName == "" && pod.Labels[stsutil.LabelControllerRevision] == v.targetRev {
		return ordinalNeed{MigrationRestart, "Pod " + pod.Name + " is not scheduled yet (a restart or move in progress)"}
	}
	return ordinalNeed{}
}

// podNeedsReplace returns why pod must be deleted, "" when it stays: it is
// bound to a node the template does not select (or that is gone), it is not
// at the update revision while the controller leaves that to us (OnDelete),
// or it is the Pod a step in progress started with.
func (v *Migration) podNeedsReplace(pod *corev1.Pod, pr MoveProgress) string {
	if pod.Spec.NodeName != "" {
		if why := v.nodeRejects(pod.Spec.NodeName); why != "" {
			return "runs on node " + pod.Spec.NodeName + ", which " + why
		}
	}
	if v.onDelete && v.targetRev != "" && pod.Labels[stsutil.LabelControllerRevision] != v.targetRev {
		return fmt.Sprintf("is at revision %s, the update revision is %s", pod.Labels[stsutil.LabelControllerRevision], v.targetRev)
	}
	if pr.OldPodUID != "" && pod.UID == pr.OldPodUID {
		return "is the Pod the step started with"
	}
	if uid, ok := v.restart[pod.Name]; ok && string(pod.UID) == uid {
		return "is the Pod a restart was requested for (" + stsutil.AnnotationRestart + ")"
	}
	return ""
}

// pvcNeedsReplace returns why pvc must be deleted and provisioned again, ""
// when it is kept: its PV is pinned where the template does not go, or it is
// the PVC a move in progress started with. A PVC whose PV fits the placement
// is never deleted, whatever happens to its Pod.
func (v *Migration) pvcNeedsReplace(pvc *corev1.PersistentVolumeClaim, pr MoveProgress) string {
	if pvc == nil {
		return ""
	}
	if pv := v.boundPV(pvc); pv != nil {
		if ok, why := v.pvFits(pv); !ok {
			return "PV " + pv.Name + " " + why
		}
	}
	if uid, ok := pr.OldPVCUIDs[pvc.Name]; ok && uid == pvc.UID {
		return "it is the PVC the move started with"
	}
	return ""
}

// nodeRejects says why the template does not select the named node ("" when
// it does).
func (v *Migration) nodeRejects(name string) string {
	n := v.ix.Node(name)
	if n == nil {
		return "no longer exists"
	}
	if ok, why := v.affinity.Matches(n); !ok {
		return why
	}
	return ""
}

// pvFits reports whether a PV can be used on some node the template selects.
func (v *Migration) pvFits(pv *corev1.PersistentVolume) (bool, string) {
	p := v.ix.Pin(pv)
	if p.Unconstrained {
		return true, ""
	}
	if len(p.Nodes) == 0 {
		return false, fmt.Sprintf("is pinned to %s, which matches no existing node", p.Desc)
	}
	var why string
	for _, i := range p.Nodes {
		ok, w := v.affinity.Matches(v.ix.Nodes[i])
		if ok {
			return true, ""
		}
		if why == "" {
			why = fmt.Sprintf("is pinned to node %s (%s), which %s", v.ix.Nodes[i].Name, p.Desc, w)
		}
	}
	return false, why
}

// Need is the action ordinal o needs by this snapshot ("" to leave it).
func (v *Migration) Need(o int32, claims []string) MigrationAction {
	if v.set == nil {
		return ""
	}
	return v.need(o, claims).action
}
