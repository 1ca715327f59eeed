package statefulset

import (
	"context"
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	policyv1ac "k8s.io/client-go/applyconfigurations/policy/v1"
	"k8s.io/client-go/kubernetes"
)

const managedByLabel = "app.kubernetes.io/managed-by"

// podSelector is what the Service and the PDB select: the StatefulSet's matchLabels, or the pod
// template labels when the selector uses expressions only.
func podSelector(m *manifest) map[string]string {
	if s := m.Set.Spec.Selector; s != nil && len(s.MatchLabels) > 0 {
		return s.MatchLabels
	}
	return m.Set.Spec.Template.Labels
}

// headlessService is the governing Service named by spec.serviceName: clusterIP None, selector
// from the Pod labels, one port per distinct container port.
func headlessService(m *manifest) *corev1ac.ServiceApplyConfiguration {
	spec := corev1ac.ServiceSpec().WithClusterIP(corev1.ClusterIPNone).WithSelector(podSelector(m)).WithPublishNotReadyAddresses(true)
	type key struct {
		port  int32
		proto corev1.Protocol
	}
	seen := map[key]bool{}
	names := map[string]bool{}
	var ports []*corev1ac.ServicePortApplyConfiguration
	for _, c := range m.Set.Spec.Template.Spec.Containers {
		for _, p := range c.Ports {
			proto := p.Protocol
			if proto == "" {
				proto = corev1.ProtocolTCP
			}
			k := key{p.ContainerPort, proto}
			if seen[k] {
				continue
			}
			seen[k] = true
			name := p.Name
			if name == "" || names[name] {
				name = fmt.Sprintf("%s-%d", map[corev1.Protocol]string{corev1.ProtocolTCP: "tcp", corev1.ProtocolUDP: "udp", corev1.ProtocolSCTP: "sctp"}[proto], p.ContainerPort)
			}
			names[name] = true
			ports = append(ports, corev1ac.ServicePort().WithName(name).WithPort(p.ContainerPort).WithProtocol(proto).WithTargetPort(intstr.FromInt32(p.ContainerPort)))
		}
	}
	sort.SliceStable(ports, func(i, j int) bool { return *ports[i].Port < *ports[j].Port })
	spec.WithPorts(ports...)
	return corev1ac.Service(m.Set.Spec.ServiceName, m.Namespace).
		WithLabels(map[string]string{managedByLabel: FieldManager}).
		WithSpec(spec)
}

func applyService(ctx context.Context, kube kubernetes.Interface, m *manifest, force bool) error {
	_, err := kube.CoreV1().Services(m.Namespace).Apply(ctx, headlessService(m), metav1.ApplyOptions{FieldManager: FieldManager, Force: force})
	return err
}

func podDisruptionBudget(m *manifest, p *pdbModel) *policyv1ac.PodDisruptionBudgetApplyConfiguration {
	spec := policyv1ac.PodDisruptionBudgetSpec().WithSelector(metav1ac.LabelSelector().WithMatchLabels(podSelector(m)))
	if !p.MaxUnavailable.IsNull() && !p.MaxUnavailable.IsUnknown() {
		spec.WithMaxUnavailable(intstr.Parse(p.MaxUnavailable.ValueString()))
	}
	if !p.MinAvailable.IsNull() && !p.MinAvailable.IsUnknown() {
		spec.WithMinAvailable(intstr.Parse(p.MinAvailable.ValueString()))
	}
	return policyv1ac.PodDisruptionBudget(m.Name, m.Namespace).
		WithLabels(map[string]string{managedByLabel: FieldManager}).
		WithSpec(spec)
}

func applyPDB(ctx context.Context, kube kubernetes.Interface, m *manifest, p *pdbModel, force bool) error {
	_, err := kube.PolicyV1().PodDisruptionBudgets(m.Namespace).Apply(ctx, podDisruptionBudget(m, p), metav1.ApplyOptions{FieldManager: FieldManager, Force: force})
	return err
}

// deleteManaged deletes a Service or PDB only when olapgke's label says this resource made it.
func deleteService(ctx context.Context, kube kubernetes.Interface, ns, name string) error {
	svc, err := kube.CoreV1().Services(ns).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if svc.Labels[managedByLabel] != FieldManager {
		return nil
	}
	err = kube.CoreV1().Services(ns).Delete(ctx, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &svc.UID}})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

func deletePDB(ctx context.Context, kube kubernetes.Interface, ns, name string) error {
	pdb, err := kube.PolicyV1().PodDisruptionBudgets(ns).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if pdb.Labels[managedByLabel] != FieldManager {
		return nil
	}
	err = kube.PolicyV1().PodDisruptionBudgets(ns).Delete(ctx, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &pdb.UID}})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}
