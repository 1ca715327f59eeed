package planner

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/olapgke/terraform-provider-olapgke/internal/schedsim"
)

// Placement verdicts come from kube-scheduler's own PreFilter and Filter plugins (the default
// profile of the Kubernetes version olapgke is built with), run in-process over the snapshot by
// internal/schedsim, as cluster-autoscaler's scheduling simulator does: node affinity and
// selector, taints, cordons, resources, host ports, volume binding (PV node affinity,
// WaitForFirstConsumer with CSIStorageCapacity), volume zones and limits, topology spread and
// inter-Pod (anti-)affinity. Pods are placed one after another in the order the controller (or
// the migration) creates them; each placed Pod is assumed on its node, so later ones see its
// resources, ports, affinity, spread and storage, and each Pod it replaces is removed first.
//
// The one placement check still written here is PodCanComeBack (placement.go): it judges only
// what stays true between a plan and its apply, which is not a question the scheduler answers.

// Placer is the scheduling simulation of one Index, built on first use.
type placer struct {
	sim   *schedsim.Sim
	err   error
	gone  map[string]bool // namespace/name of Pods removed from the simulation
	synth int             // counter for UIDs of simulated Pods
}

func (ix *Index) Placer() *placer {
	if ix.pl != nil {
		return ix.pl
	}
	pl := &placer{gone: map[string]bool{}}
	ix.pl = pl
	s := ix.snap
	pods := s.AllPods
	if pods == nil {
		pods = s.Pods
	}
	w := schedsim.World{Nodes: s.Nodes, PVs: s.PVs, PVCs: s.PVCs, StorageClasses: s.StorageClasses,
		CSINodes: s.CSINodes, CSIDrivers: s.CSIDrivers, Capacities: s.Capacities}
	for i := range pods {
		p := &pods[i]
		if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue // the scheduler's cache drops terminated Pods
		}
		w.Pods = append(w.Pods, *p)
	}
	pl.sim, pl.err = schedsim.NewWithOptions(context.Background(), w, schedsim.Options{TrackStorageCapacity: true, Pods: s.PodCache})
	return pl
}

// removeOrdinalPod takes the Pod named name out of the simulation: the controller deletes it
// before it creates its replacement, so its resources, ports and affinity no longer count.
func (pl *placer) RemovePod(ix *Index, namespace, name string) {
	key := namespace + "/" + name
	if pl.sim == nil || pl.gone[key] {
		return
	}
	pl.gone[key] = true
	pods := ix.snap.AllPods
	if pods == nil {
		pods = ix.snap.Pods
	}
	for i := range pods {
		p := &pods[i]
		if p.Namespace == namespace && p.Name == name && pl.sim.Placed(p) {
			_ = pl.sim.Remove(p)
		}
	}
}

// Place asks the scheduler whether pod (spec from the template it is created from) can run with
// claims. The Pod gets the claim volumes the StatefulSet controller adds; claims still to be
// provisioned enter the simulation as new unbound PVCs. With assume, a Pod that fits occupies its
// node for every later placement.
func (pl *placer) Place(ix *Index, pod *corev1.Pod, claims []ClaimState, assume bool) Verdict {
	if pl.err != nil {
		return Verdict{Reason: "the scheduling simulation could not be built: " + pl.err.Error()}
	}
	p := pod.DeepCopy()
	pl.synth++
	p.UID = types.UID(fmt.Sprintf("olapgke-planned-%d-%s-%s", pl.synth, p.Namespace, p.Name))
	p.Spec.NodeName = ""
	for _, c := range claims {
		if c.Claim != "" {
			setClaimVolume(p, c.Claim, c.PVC)
		}
		if c.PV != nil {
			continue
		}
		if have := ix.PVC(p.Namespace, c.PVC); have != nil && have.DeletionTimestamp == nil && c.Spec == nil {
			continue // an existing claim still to be bound: the simulation has it as it is
		}
		pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: p.Namespace, Name: c.PVC}}
		if c.Spec != nil {
			pvc.Spec = *c.Spec.DeepCopy()
			pvc.Spec.VolumeName = ""
		} else {
			pvc.Spec.AccessModes = []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}
		}
		if c.StorageClass != "" {
			sc := c.StorageClass
			pvc.Spec.StorageClassName = &sc
		}
		if c.RequestBytes > 0 {
			pvc.Spec.Resources.Requests = corev1.ResourceList{corev1.ResourceStorage: *resource.NewQuantity(c.RequestBytes, resource.BinarySI)}
		}
		if err := pl.sim.SetPVC(pvc); err != nil {
			return Verdict{Reason: "the scheduling simulation rejected claim " + c.PVC + ": " + err.Error()}
		}
	}
	node, msg, err := pl.sim.Place(p)
	if err != nil {
		return Verdict{Reason: "the scheduling simulation failed: " + err.Error()}
	}
	if node == "" {
		return Verdict{Reason: msg, Node: pinnedNodeOf(ix, claims)}
	}
	if assume {
		if err := pl.sim.Assume(p, node); err != nil {
			return Verdict{Reason: "the scheduling simulation could not assume Pod " + p.Name + " on node " + node + ": " + err.Error()}
		}
	}
	return Verdict{OK: true, Node: node}
}

// setClaimVolume gives the Pod the volume the StatefulSet controller adds for a claim template
// (replacing a template volume of the same name, as updateStorage does).
func setClaimVolume(p *corev1.Pod, volume, claim string) {
	v := corev1.Volume{Name: volume, VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}}
	for i := range p.Spec.Volumes {
		if p.Spec.Volumes[i].Name == volume {
			p.Spec.Volumes[i] = v
			return
		}
	}
	p.Spec.Volumes = append(p.Spec.Volumes, v)
}

// pinnedNodeOf is the node the first pinned PV of claims pins the Pod to ("" when none).
func pinnedNodeOf(ix *Index, claims []ClaimState) string {
	for _, c := range claims {
		if c.PV != nil {
			if n := ix.PinnedNode(c.PV); n != "" {
				return n
			}
		}
	}
	return ""
}
