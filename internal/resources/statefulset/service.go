package statefulset

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	policyv1ac "k8s.io/client-go/applyconfigurations/policy/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/olapgke/terraform-provider-olapgke/internal/diagnostics"
	olapkube "github.com/olapgke/terraform-provider-olapgke/internal/kube"
	"github.com/olapgke/terraform-provider-olapgke/internal/resources/apifailure"
	"github.com/olapgke/terraform-provider-olapgke/internal/stsutil"
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

// serviceDryRun is a server-side apply dry run of the headless Service as field manager olapgke.
// A dry run changes nothing, so it is retried on transient errors like every read of the plan.
func serviceDryRun(ctx context.Context, kube kubernetes.Interface, m *manifest, force bool) error {
	return olapkube.RetryRead(ctx, func(ctx context.Context) error {
		_, err := kube.CoreV1().Services(m.Namespace).Apply(ctx, headlessService(m), metav1.ApplyOptions{
			FieldManager: FieldManager, Force: force, DryRun: []string{metav1.DryRunAll},
		})
		return err
	})
}

// checkService says at plan (and again before apply writes anything) what applying the headless
// Service named by spec.serviceName would do: an error when it would fail (another field manager
// owns fields olapgke sets to other values, or the API server refuses it), a warning when apply
// adopts a Service olapgke did not create (it is then deleted on destroy). The selector is an
// atomic map under server-side apply, so a Service selecting other Pods is a conflict, never a
// merge of both selectors. Nothing for a Service olapgke applied or one that does not exist yet.
func checkService(ctx context.Context, kube kubernetes.Interface, m *manifest, force bool) diag.Diagnostics {
	var diags diag.Diagnostics
	svc := m.Namespace + "/" + m.Set.Spec.ServiceName
	live, err := olapkube.Get(ctx, kube.CoreV1().Services(m.Namespace).Get, m.Set.Spec.ServiceName)
	if apierrors.IsNotFound(err) {
		live, err = nil, nil
	}
	if err != nil {
		diags.Append(diagnostics.Error("Headless Service Check Failed", apifailure.Detail(
			fmt.Sprintf("Reading the headless Service %s named by spec.serviceName (manage_service = true). Nothing was changed.", svc), err,
			apifailure.Advice{Found: "The API server refused the read.", Do: "Fix what the cause names and plan again."})))
		return diags
	}
	// Without force first: a conflict is reported as such even with force_conflicts = true, so the
	// adoption warning can name the fields force takes over.
	err = serviceDryRun(ctx, kube, m, false)
	var taken map[string][]string
	var se *apierrors.StatusError
	if err != nil && errors.As(err, &se) {
		taken = conflictsByManager(se)
	}
	if len(taken) > 0 {
		if !force {
			// Advise force_conflicts only when it would work: fields other managers keep (a port
			// of the same name) can still make the forced apply invalid.
			diags.Append(serviceConflictDiagnostic(m, live, taken, serviceDryRun(ctx, kube, m, true)))
			return diags
		}
		err = serviceDryRun(ctx, kube, m, true)
	}
	if err != nil {
		diags.Append(serviceRejected(m, err))
		return diags
	}
	if live != nil && !stsutil.AppliedBy(live, FieldManager) {
		diags.Append(serviceAdoptionWarning(m, live, taken))
	}
	return diags
}

// otherManagers names the field managers of obj other than olapgke, with their operation
// ("helm (Update)"), sorted.
func otherManagers(obj metav1.Object) []string {
	seen := map[string]bool{}
	var out []string
	for _, e := range obj.GetManagedFields() {
		if e.Manager == FieldManager && e.Operation == metav1.ManagedFieldsOperationApply {
			continue
		}
		s := fmt.Sprintf("%q (%s)", e.Manager, e.Operation)
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	sort.Strings(out)
	return out
}

// fieldLines lists one field per line with its owner, so long field paths stay readable where
// Terraform wraps diagnostics at 80 columns.
func fieldLines(byManager map[string][]string) string {
	var lines []string
	for mg, fields := range byManager {
		for _, f := range fields {
			lines = append(lines, fmt.Sprintf("- %s (owned by %q)", f, mg))
		}
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// serviceConflictDiagnostic explains a conflict on the headless Service; forceErr is what a dry run
// with force_conflicts = true says (nil: it would take the Service over).
func serviceConflictDiagnostic(m *manifest, live *corev1.Service, byManager map[string][]string, forceErr error) diag.Diagnostic {
	svc := m.Namespace + "/" + m.Set.Spec.ServiceName
	found := fmt.Sprintf("Service %s exists, and other field managers own fields olapgke would set to other values:\n%s", svc, fieldLines(byManager))
	if live != nil {
		if mgs := otherManagers(live); len(mgs) > 0 {
			found += "\n\nIts field managers: " + strings.Join(mgs, ", ") + "."
		}
	}
	do := "If another tool keeps this Service (a Helm chart that ships it), set manage_service = false: " +
		"olapgke leaves it to its owner and never deletes it.\n"
	if forceErr == nil {
		do += "To take it over instead, set force_conflicts = true (it applies to the StatefulSet, this Service " +
			"and the PodDisruptionBudget): olapgke then owns these fields with its own values (selector from " +
			"the Pod labels, one port per container port) and deletes the Service on destroy; its owner may " +
			"write them back on its next run."
	} else {
		do += "force_conflicts = true would not take it over: a dry run with it fails too, because of " +
			"what the other managers keep in the Service:\n" + forceErr.Error() + "\n" +
			"If nothing else needs this Service, delete it and plan again: apply then creates olapgke's own."
	}
	return diagnostics.AttributeError(path.Root("manage_service"), "Headless Service Owned By Another Manager", diagnostics.Detail{
		Checked: fmt.Sprintf("A server-side apply dry run of the headless Service %s named by spec.serviceName (manage_service = true, field manager olapgke).", svc),
		Found: found + "\n\nApplying would fail at the Service after the StatefulSet was written " +
			"(and its Pods started). Nothing was changed.",
		Do: do,
	})
}

// serviceRejected explains a failed dry run of the headless Service other than a conflict.
func serviceRejected(m *manifest, err error) diag.Diagnostic {
	svc := m.Namespace + "/" + m.Set.Spec.ServiceName
	checked := fmt.Sprintf("A server-side apply dry run of the headless Service %s named by spec.serviceName (manage_service = true). Nothing was changed.", svc)
	if apifailure.Classify(err) != apifailure.Refused {
		return diagnostics.Error("Headless Service Dry Run Failed", apifailure.Detail(checked, err, apifailure.Advice{}))
	}
	return diagnostics.AttributeError(path.Root("manage_service"), "Headless Service Rejected By The API Server", apifailure.Detail(checked, err, apifailure.Advice{
		Found: "The API server refused the Service olapgke would apply (clusterIP None, selector from the Pod labels, " +
			"one port per container port), merged with what other field managers keep in an existing Service of that name " +
			"(its ports, its clusterIP).",
		Do: "Fix what the cause names (spec.serviceName, the Pod labels or the container ports). If another tool keeps " +
			"this Service, set manage_service = false; if nothing else needs it, delete it and plan again.",
	}))
}

// serviceAdoptionWarning says that apply takes over a Service olapgke did not create, and that
// destroying the resource then deletes it.
func serviceAdoptionWarning(m *manifest, live *corev1.Service, taken map[string][]string) diag.Diagnostic {
	svc := m.Namespace + "/" + m.Set.Spec.ServiceName
	by := "no field manager is recorded"
	if mgs := otherManagers(live); len(mgs) > 0 {
		by = "its field managers: " + strings.Join(mgs, ", ")
	}
	found := fmt.Sprintf("Service %s exists and olapgke did not create it (%s). Apply adopts it: olapgke applies its selector, "+
		"ports and the label %s=%s, and fields only other managers set stay.", svc, by, managedByLabel, FieldManager)
	if len(taken) > 0 {
		found += "\n\nforce_conflicts = true takes these fields over from their owners:\n" + fieldLines(taken)
	}
	found += "\n\nFrom then on, destroying this resource (or replacing it) deletes the Service."
	return diagnostics.AttributeWarning(path.Root("manage_service"), "Headless Service Will Be Adopted", diagnostics.Detail{
		Checked: fmt.Sprintf("The live headless Service %s named by spec.serviceName and a server-side apply dry run of it (manage_service = true).", svc),
		Found:   found,
		Do:      "If another tool still needs this Service, set manage_service = false to leave it alone. Otherwise nothing.",
	})
}
