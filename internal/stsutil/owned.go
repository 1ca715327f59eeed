package stsutil

import (
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// OwnedPods returns the Pods that belong to set by controller reference (or,
// without UIDs, by selector and name), keyed by ordinal.
func OwnedPods(set *appsv1.StatefulSet, pods []corev1.Pod) map[int]*corev1.Pod {
	out := map[int]*corev1.Pod{}
	if set == nil {
		return out
	}
	sel, _ := metav1.LabelSelectorAsSelector(set.Spec.Selector)
	for i := range pods {
		p := &pods[i]
		if set.Namespace != "" && p.Namespace != "" && p.Namespace != set.Namespace {
			continue
		}
		if ref := metav1.GetControllerOf(p); ref != nil {
			if ref.Kind != "StatefulSet" || ref.Name != set.Name || (set.UID != "" && ref.UID != set.UID) {
				continue
			}
		} else if sel == nil || !sel.Matches(labels.Set(p.Labels)) {
			continue
		}
		if !strings.HasPrefix(p.Name, set.Name+"-") {
			continue
		}
		o := OrdinalOf(p.Name)
		if o < 0 || p.Name != set.Name+"-"+strconv.Itoa(int(o)) {
			continue
		}
		out[int(o)] = p
	}
	return out
}

// IsTopoLVM reports whether a CSI driver or provisioner name is TopoLVM's (current or legacy).
func IsTopoLVM(name string) bool {
	return name == ProvisionerTopoLVM || name == ProvisionerTopoLVMLegacy
}
