package kwoknodes

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"sigs.k8s.io/kwok/pkg/apis/internalversion"
)

// VolumesMountedAnnotation (sandbox-only) on a Pod says the kubelet mounted its volumes: real
// TopoLVM's kubelet volume manager (internal/sandbox/topolvmreal kubeletmount.go,
// AnnVolumesMounted) writes "true" once TopoLVM's NodePublishVolume succeeded for every volume
// of the Pod.
const VolumesMountedAnnotation = "sandbox.olapgke.io/volumes-mounted"

// podVolumesMounted is a jq expression on a Pod: "none" when it has no claim (no PVC and no
// generic ephemeral volume), else the value of VolumesMountedAnnotation ("" when unset).
const podVolumesMounted = `if ([.spec.volumes[]? | select(.persistentVolumeClaim != null or .ephemeral != null)] | length) == 0 ` +
	`then "none" else (.metadata.annotations["` + VolumesMountedAnnotation + `"] // "") end`

// gatePodReadyOnVolumes adds one requirement to every Pod stage that starts a Pending Pod's
// containers (KWOK's pod-ready stage, kwok v0.8.0 kustomize/stage/pod/fast/pod-ready.yaml, and
// the sandbox's own start stages in podstages.go: image pull failure, crash loop, start
// unready): a Pod with claims is played only once its volumes are mounted, as a kubelet pulls
// no image and starts no container before its volume manager mounted the Pod's volumes
// (kubernetes pkg/kubelet/kubelet.go SyncPod: WaitForAttachAndMount). A Pod without claims is
// played as before.
func gatePodReadyOnVolumes(stages map[internalversion.StageResourceRef][]*internalversion.Stage) error {
	gated := 0
	for ref, ss := range stages {
		if ref.Kind != "Pod" {
			continue
		}
		for _, s := range ss {
			if !startsPendingPods(s) {
				continue
			}
			s.Spec.Selector.MatchExpressions = append(s.Spec.Selector.MatchExpressions, internalversion.MatchExpression{
				JQ: &internalversion.SelectorJQ{Key: podVolumesMounted, Operator: internalversion.SelectorOpIn, Values: []string{"none", "true"}},
			})
			gated++
		}
	}
	if gated == 0 {
		return fmt.Errorf("no KWOK stage starts Pending Pods among the sandbox's stages")
	}
	return nil
}

// startsPendingPods reports whether a stage selects Pods in phase Pending (one that starts
// their containers, or fails to).
func startsPendingPods(s *internalversion.Stage) bool {
	if s.Spec.Selector == nil {
		return false
	}
	for _, e := range s.Spec.Selector.MatchExpressions {
		if e.JQ != nil && e.JQ.Key == ".status.phase" && e.JQ.Operator == internalversion.SelectorOpIn &&
			len(e.JQ.Values) == 1 && e.JQ.Values[0] == string(corev1.PodPending) {
			return true
		}
	}
	return false
}
