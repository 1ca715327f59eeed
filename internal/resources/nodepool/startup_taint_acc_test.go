package nodepool_test

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/olapgke/terraform-provider-olapgke/internal/acctest"
	"github.com/olapgke/terraform-provider-olapgke/internal/stsutil"
)

// bootstrapLabel is the label of the volume-group bootstrap DaemonSet
// (examples/topolvm-gke/vg-bootstrap.yaml), which the sandbox's TopoLVM simulator looks for.
var bootstrapLabel = map[string]string{"app.kubernetes.io/name": "olapgke-vg-bootstrap"}

// A pool with storage_startup_taint goes through the stages it goes through on GKE: its node
// registers with the startup taint and TopoLVM publishes nothing for it (no volume group yet);
// once the bootstrap DaemonSet exists the taint is removed, the Node is annotated as the script
// does and capacity is published. The user's taints never show the startup taint (no diff before
// or after the bootstrap), and an import finds storage_startup_taint from GKE's pool taints.
func TestAccLocalSSDNodePool_StartupTaint(t *testing.T) {
	env := acctest.Sandbox(t)
	ctx := context.Background()
	const pool, dsNS = "acc-startup", "acc-startup-bootstrap"
	cfg := poolConfig("test", pool, `
  node_count            = 1
  storage_startup_taint = true
  taints                = [{ key = "dedicated", value = "olap", effect = "NO_SCHEDULE" }]
`)
	t.Cleanup(func() {
		_ = env.Kube.CoreV1().Namespaces().Delete(context.Background(), dsNS, metav1.DeleteOptions{})
	})
	userTaints := statecheck.ExpectKnownValue(res, tfjsonpath.New("taints"), knownvalue.ListExact([]knownvalue.Check{
		knownvalue.ObjectExact(map[string]knownvalue.Check{"key": knownvalue.StringExact("dedicated"),
			"value": knownvalue.StringExact("olap"), "effect": knownvalue.StringExact("NO_SCHEDULE")}),
	}))
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories,
		CheckDestroy:             checkGone(pool),
		Steps: []resource.TestStep{
			{
				Config: cfg,
				ConfigStateChecks: []statecheck.StateCheck{userTaints,
					statecheck.ExpectKnownValue(res, tfjsonpath.New("storage_startup_taint"), knownvalue.Bool(true))},
				Check: resource.ComposeTestCheckFunc(
					checkNodes(env.Kube, pool, 1, nil, "dedicated", stsutil.TaintStorageNotReady),
					func(*terraform.State) error {
						n, err := startupPoolNode(ctx, env.Kube, pool)
						if err != nil {
							return err
						}
						if why := topoLVMCapacity(ctx, env.Kube, n); why == "" {
							return fmt.Errorf("node %s has TopoLVM capacity before the bootstrap ran", n.Name)
						}
						if v := n.Annotations[stsutil.AnnotationVolumeGroup]; v != "" {
							return fmt.Errorf("node %s annotated %s = %q before the bootstrap ran", n.Name, stsutil.AnnotationVolumeGroup, v)
						}
						return nil
					},
				),
			},
			{ // the bootstrap DaemonSet appears: taint removed, Node annotated, capacity published
				PreConfig: func() {
					if err := createBootstrap(ctx, env.Kube, dsNS); err != nil {
						t.Fatalf("creating the bootstrap DaemonSet: %v", err)
					}
					if err := waitBootstrapped(ctx, env.Kube, pool); err != nil {
						t.Fatal(err)
					}
				},
				Config: cfg,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectEmptyPlan(),
				}},
				ConfigStateChecks: []statecheck.StateCheck{userTaints},
				Check:             checkNodes(env.Kube, pool, 1, nil, "dedicated"),
			},
			{
				ResourceName: res, ImportState: true, ImportStateVerify: true, ImportStateId: pool,
				ImportStateVerifyIgnore: []string{"deletion_protection", "timeouts"},
			},
			{ // turned off: the pool's taints lose it, the user's taints stay
				Config: strings.Replace(cfg, "storage_startup_taint = true", "storage_startup_taint = false", 1),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(res, plancheck.ResourceActionUpdate),
				}},
				ConfigStateChecks: []statecheck.StateCheck{userTaints},
			},
		},
	})
}

// startupPoolNode is the pool's one Node.
func startupPoolNode(ctx context.Context, kc kubernetes.Interface, pool string) (*corev1.Node, error) {
	l, err := kc.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: stsutil.LabelNodePool + "=" + pool})
	if err != nil {
		return nil, err
	}
	if len(l.Items) != 1 {
		return nil, fmt.Errorf("pool %s has %d Node(s), want 1", pool, len(l.Items))
	}
	return &l.Items[0], nil
}

// topoLVMCapacity is "" when TopoLVM publishes capacity for node n (a capacity.topolvm.io/
// annotation and a CSIStorageCapacity selecting it, above zero), else what is missing.
func topoLVMCapacity(ctx context.Context, kc kubernetes.Interface, n *corev1.Node) string {
	ann := false
	for k := range n.Annotations {
		ann = ann || strings.HasPrefix(k, stsutil.AnnotationCapacityPrefix)
	}
	if !ann {
		return "no " + stsutil.AnnotationCapacityPrefix + " annotation"
	}
	caps, err := kc.StorageV1().CSIStorageCapacities(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	if err != nil {
		return err.Error()
	}
	for _, c := range caps.Items {
		if c.NodeTopology != nil && c.NodeTopology.MatchLabels[stsutil.LabelTopoLVMNode] == n.Name && c.Capacity != nil && c.Capacity.Sign() > 0 {
			return ""
		}
	}
	return "no CSIStorageCapacity for it"
}

// createBootstrap creates a bootstrap DaemonSet: the sandbox runs no DaemonSet controller, so
// only the object matters (no Pods).
func createBootstrap(ctx context.Context, kc kubernetes.Interface, ns string) error {
	_, err := kc.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	sel := &metav1.LabelSelector{MatchLabels: bootstrapLabel}
	_, err = kc.AppsV1().DaemonSets(ns).Create(ctx, &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: "vg-bootstrap", Labels: bootstrapLabel},
		Spec: appsv1.DaemonSetSpec{
			Selector: sel,
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: bootstrapLabel},
				Spec: corev1.PodSpec{
					NodeSelector: map[string]string{"cloud.google.com/gke-local-nvme-ssd": "true"},
					Tolerations:  []corev1.Toleration{{Key: stsutil.TaintStorageNotReady, Operator: corev1.TolerationOpExists}},
					Containers:   []corev1.Container{{Name: "vg-bootstrap", Image: "olapgke/vg-bootstrap:test"}},
				},
			},
		},
	}, metav1.CreateOptions{})
	return err
}

var annotationValue = regexp.MustCompile(`^vg-ssd created \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ on \S+$`)

// waitBootstrapped polls until the pool's node lost the startup taint, carries the bootstrap's
// annotation and has TopoLVM capacity.
func waitBootstrapped(ctx context.Context, kc kubernetes.Interface, pool string) error {
	var last string
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		last = bootstrapPending(ctx, kc, pool)
		return last == "", nil
	})
	if err != nil {
		return fmt.Errorf("bootstrap did not finish on pool %s: %s (%v)", pool, last, err)
	}
	return nil
}

// bootstrapPending is what the bootstrap has not done yet on the pool's node, "" when done.
func bootstrapPending(ctx context.Context, kc kubernetes.Interface, pool string) string {
	n, err := startupPoolNode(ctx, kc, pool)
	if err != nil {
		return err.Error()
	}
	for _, t := range n.Spec.Taints {
		if t.Key == stsutil.TaintStorageNotReady {
			return "node " + n.Name + " still carries " + stsutil.TaintStorageNotReady
		}
	}
	if v := n.Annotations[stsutil.AnnotationVolumeGroup]; !annotationValue.MatchString(v) {
		return fmt.Sprintf("node %s annotation %s = %q", n.Name, stsutil.AnnotationVolumeGroup, v)
	}
	if why := topoLVMCapacity(ctx, kc, n); why != "" {
		return "node " + n.Name + ": " + why
	}
	return ""
}

// Listing the startup taint in taints as well as setting storage_startup_taint is refused at
// plan: Read would hide the entry and the plan would never be empty.
func TestUnitLocalSSDNodePool_StartupTaintTwice(t *testing.T) {
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories,
		Steps: []resource.TestStep{{
			Config: acctest.UnitProviderConfig + poolConfig("test", "p", `
  node_count            = 1
  storage_startup_taint = true
  taints                = [{ key = "olapgke.io/storage-not-ready", value = "true", effect = "NO_SCHEDULE" }]
`),
			PlanOnly:    true,
			ExpectError: wrapped(`Startup Taint Set Twice.*storage_startup_taint already adds`),
		}},
	})
}
