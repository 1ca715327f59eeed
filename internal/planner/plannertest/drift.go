package plannertest

import (
	"strings"

	"github.com/olapgke/terraform-provider-olapgke/internal/planner"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Drifts change a snapshot the way the cluster commonly changes between plan and apply.
func Drifts() map[string]func(s *planner.Snapshot) {
	return map[string]func(s *planner.Snapshot){
		"Pod restarted in place": func(s *planner.Snapshot) {
			for i := range s.Pods {
				if strings.HasSuffix(s.Pods[i].Name, "-1") {
					s.Pods[i].UID = types.UID("restarted-" + string(s.Pods[i].UID))
				}
			}
		},
		"Pod not Ready": func(s *planner.Snapshot) {
			for i := range s.Pods {
				if strings.HasSuffix(s.Pods[i].Name, "-1") {
					for j := range s.Pods[i].Status.Conditions {
						if s.Pods[i].Status.Conditions[j].Type == corev1.PodReady {
							s.Pods[i].Status.Conditions[j].Status = corev1.ConditionFalse
						}
					}
				}
			}
		},
		"node of an ordinal cordoned": func(s *planner.Snapshot) {
			for i := range s.Pods {
				if strings.HasSuffix(s.Pods[i].Name, "-1") {
					cordon(s, s.Pods[i].Spec.NodeName)
				}
			}
		},
		"unrelated node cordoned": func(s *planner.Snapshot) { cordon(s, NodeName("pool-b", 2)) },
		"node of an ordinal not ready": func(s *planner.Snapshot) {
			for i := range s.Pods {
				if strings.HasSuffix(s.Pods[i].Name, "-1") {
					for j := range s.Nodes {
						if s.Nodes[j].Name == s.Pods[i].Spec.NodeName {
							s.Nodes[j].Spec.Taints = append(s.Nodes[j].Spec.Taints,
								corev1.Taint{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoSchedule},
								corev1.Taint{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoExecute})
						}
					}
				}
			}
		},
		"node added": func(s *planner.Snapshot) {
			s.Nodes = append(s.Nodes, mkNode("pool-b", 9, 1000))
		},
	}
}

func cordon(s *planner.Snapshot, node string) {
	for i := range s.Nodes {
		if s.Nodes[i].Name == node {
			s.Nodes[i].Spec.Unschedulable = true
			s.Nodes[i].Spec.Taints = append(s.Nodes[i].Spec.Taints, corev1.Taint{Key: corev1.TaintNodeUnschedulable, Effect: corev1.TaintEffectNoSchedule})
		}
	}
}

func CopySnapshot(s planner.Snapshot) planner.Snapshot {
	c := s
	c.Pods = nil
	for i := range s.Pods {
		c.Pods = append(c.Pods, *s.Pods[i].DeepCopy())
	}
	c.Nodes = nil
	for i := range s.Nodes {
		c.Nodes = append(c.Nodes, *s.Nodes[i].DeepCopy())
	}
	return c
}
