package nodepool_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	container "cloud.google.com/go/container/apiv1"
	"cloud.google.com/go/container/apiv1/containerpb"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"google.golang.org/api/option"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/olapgke/terraform-provider-olapgke/internal/acctest"
	"github.com/olapgke/terraform-provider-olapgke/internal/gke"
	"github.com/olapgke/terraform-provider-olapgke/internal/provider"
)

// Annotations the sandbox writes for tests (internal/sandbox/README.md, "GKE's own rules").
const (
	annRecreatedAt = "sandbox.olapgke.io/recreated-at"
	annLVLost      = "sandbox.olapgke.io/logical-volume-lost"
)

// sandboxCluster is the sandbox's cluster as DIR/env names it.
func sandboxCluster(env *acctest.Env) gke.ClusterRef {
	return gke.ClusterRef{Project: env.Vars["GOOGLE_PROJECT"], Location: env.Vars["OLAPGKE_LOCATION"], Cluster: env.Vars["OLAPGKE_CLUSTER"]}
}

// TestAccLocalSSDNodePool_GKERuleReleaseChannel: the sandbox's cluster is on the REGULAR release
// channel, where GKE refuses node auto-upgrade off. Through Terraform the pool fails (olapgke's
// plan check, release_channel_acc_test.go, may name it before GKE does); GKE itself answers
// INVALID_ARGUMENT in its own words, which the provider surfaces as they are.
func TestAccLocalSSDNodePool_GKERuleReleaseChannel(t *testing.T) {
	env := acctest.Sandbox(t)
	const name = "acc-rule-channel"
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories,
		CheckDestroy:             checkGone(name),
		Steps: []resource.TestStep{{
			Config: poolConfig("test", name, `
  node_count = 1
  management = { auto_repair = true, auto_upgrade = false }
`),
			ExpectError: regexp.MustCompile(`auto_upgrade|Auto_upgrade`),
		}},
	})

	// The same pool straight to GKE: its own answer.
	ctx := t.Context()
	c, err := provider.ClientsFromEnvironment(ctx, "acctest")
	if err != nil {
		t.Fatal(err)
	}
	api, err := c.GKE(ctx)
	if err != nil {
		t.Fatal(err)
	}
	err = api.CreateNodePool(ctx, sandboxCluster(env), &containerpb.NodePool{
		Name: name, InitialNodeCount: 1,
		Config:     &containerpb.NodeConfig{MachineType: "n2-standard-8"},
		Management: &containerpb.NodeManagement{AutoRepair: true, AutoUpgrade: false},
	})
	const want = "Auto_upgrade cannot be false when release_channel REGULAR is set."
	var st interface{ GRPCStatus() *status.Status }
	if !errors.As(err, &st) || st.GRPCStatus().Code() != codes.InvalidArgument || st.GRPCStatus().Message() != want {
		t.Fatalf("CreateNodePool with auto_upgrade false: %v, want InvalidArgument %q", err, want)
	}
	if _, err := api.GetNodePool(ctx, sandboxCluster(env), name); !gke.IsNotFound(err) {
		t.Fatalf("the refused pool exists: %v", err)
	}
}

// logMark is a position in the sandbox log; refusalsSince counts what the GKE emulator refused
// after it.
type logMark struct {
	path   string
	offset int64
}

func markLog(t *testing.T, env *acctest.Env) *logMark {
	t.Helper()
	p := filepath.Join(env.Dir, "sandbox.log")
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	return &logMark{path: p, offset: fi.Size()}
}

// refusalsSince counts the sandbox log's `msg="call refused"` lines after m for rpc on node pool
// pool with code (the GKE emulator logs each call it refused because the cluster was busy).
func (m *logMark) refusalsSince(rpc, pool string, code codes.Code) (int, error) {
	f, err := os.Open(m.path)
	if err != nil {
		return 0, err
	}
	defer func() { _ = f.Close() }()
	if _, err := f.Seek(m.offset, 0); err != nil {
		return 0, err
	}
	n := 0
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		l := sc.Text()
		if strings.Contains(l, `msg="call refused"`) && strings.Contains(l, " rpc="+rpc+" ") &&
			strings.Contains(l, "/nodePools/"+pool+" ") && strings.Contains(l, " code="+code.String()+" ") {
			n++
		}
	}
	return n, sc.Err()
}

// checkWaitedOut checks that GKE refused rpc on pool with code at least once since the mark:
// the apply that succeeded did wait the refusal out.
func checkWaitedOut(mark **logMark, rpc, pool string, code codes.Code) resource.TestCheckFunc {
	return func(*terraform.State) error {
		n, err := (*mark).refusalsSince(rpc, pool, code)
		if err != nil {
			return err
		}
		if n == 0 {
			return fmt.Errorf("GKE never refused %s on %s with %s during this step: the test did not exercise the wait (the cluster operation ended before the call?)", rpc, pool, code)
		}
		return nil
	}
}

// TestAccLocalSSDNodePool_GKERuleBusyClusterIsWaitedOut: a node pool update started while GKE
// runs a cluster-wide operation (FAILED_PRECONDITION "Operation ... is currently upgrading
// cluster ...") and, with the concurrent operations quota at 1 held by such an operation
// (RESOURCE_EXHAUSTED "Too many operations ..."), waits with backoff and succeeds once the
// operation ends, as the google provider does.
func TestAccLocalSSDNodePool_GKERuleBusyClusterIsWaitedOut(t *testing.T) {
	env := acctest.Sandbox(t)
	ctx := context.Background()
	const name = "acc-rule-busy"
	cl := sandboxCluster(env)
	// Long enough that Terraform's plan is done and the update is sent while it runs.
	const hold = 10 * time.Second
	t.Cleanup(func() {
		if err := env.SetOperationQuota(context.Background(), 0); err != nil {
			t.Errorf("restoring the operation quota: %v", err)
		}
	})
	labels := func(role string) string {
		return poolConfig("test", name, fmt.Sprintf(`
  node_count = 1
  labels     = { role = %q }
`, role))
	}
	var mark *logMark
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories,
		CheckDestroy:             checkGone(name),
		Steps: []resource.TestStep{
			{Config: labels("a"), Check: checkNodes(env.Kube, name, 1, map[string]string{"role": "a"})},
			{ // a control plane upgrade holds the cluster
				PreConfig: func() {
					mark = markLog(t, env)
					if err := env.StartClusterOperation(ctx, cl.Project, cl.Location, cl.Cluster, "UPGRADE_MASTER", hold); err != nil {
						t.Fatal(err)
					}
				},
				Config: labels("b"),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(res, plancheck.ResourceActionUpdate),
				}},
				Check: resource.ComposeAggregateTestCheckFunc(
					checkNodes(env.Kube, name, 1, map[string]string{"role": "b"}),
					checkWaitedOut(&mark, "UpdateNodePool", name, codes.FailedPrecondition),
				),
			},
			{ // one concurrent operation allowed, and a cluster update takes it
				PreConfig: func() {
					mark = markLog(t, env)
					if err := env.SetOperationQuota(ctx, 1); err != nil {
						t.Fatal(err)
					}
					if err := env.StartClusterOperation(ctx, cl.Project, cl.Location, cl.Cluster, "UPDATE_CLUSTER", hold); err != nil {
						t.Fatal(err)
					}
				},
				Config: labels("c"),
				Check: resource.ComposeAggregateTestCheckFunc(
					checkNodes(env.Kube, name, 1, map[string]string{"role": "c"}),
					checkWaitedOut(&mark, "UpdateNodePool", name, codes.ResourceExhausted),
				),
			},
		},
	})
}

// poolNode returns the only node of pool.
func poolNode(ctx context.Context, env *acctest.Env, pool string) (*corev1.Node, error) {
	l, err := env.Kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: "cloud.google.com/gke-nodepool=" + pool})
	if err != nil {
		return nil, err
	}
	if len(l.Items) != 1 {
		return nil, fmt.Errorf("pool %s has %d nodes, want 1", pool, len(l.Items))
	}
	return &l.Items[0], nil
}

// autoRepairs counts the cluster's AUTO_REPAIR_NODES operations on pool, as GKE's ListOperations
// shows them to any client.
func autoRepairs(ctx context.Context, env *acctest.Env, pool string) (int, error) {
	cm, err := container.NewClusterManagerClient(ctx, option.WithEndpoint(env.Vars["OLAPGKE_CONTAINER_ENDPOINT"]),
		option.WithoutAuthentication(), option.WithGRPCDialOption(grpc.WithTransportCredentials(insecure.NewCredentials())))
	if err != nil {
		return 0, err
	}
	defer func() { _ = cm.Close() }()
	cl := sandboxCluster(env)
	ops, err := cm.ListOperations(ctx, &containerpb.ListOperationsRequest{Parent: "projects/" + cl.Project + "/locations/" + cl.Location})
	if err != nil {
		return 0, err
	}
	n := 0
	for _, op := range ops.GetOperations() {
		if op.GetOperationType() == containerpb.Operation_AUTO_REPAIR_NODES && strings.HasSuffix(op.GetTargetLink(), "/nodePools/"+pool) &&
			op.GetStatus() == containerpb.Operation_DONE && op.GetError() == nil {
			n++
		}
	}
	return n, nil
}

// TestAccLocalSSDNodePool_GKERuleRecreatedNodes: GKE recreates a pool's VM on its own (node
// auto-repair), under a new name or under the same name. Either way the pool's configuration
// still matches (an empty plan) and its refreshed nodes name what Kubernetes shows; the
// operations are listed by GKE. Under the same name the Node object stays, its boot ID changes,
// and TopoLVM finds the Local SSDs empty: the space is free again and the PV of the StatefulSet
// that lived there is marked lost while still pinned to the node.
func TestAccLocalSSDNodePool_GKERuleRecreatedNodes(t *testing.T) {
	env := acctest.Sandbox(t)
	ctx := context.Background()
	const name, ns, set = "acc-rule-repair", "acc-rule-repair", "db"
	t.Cleanup(func() {
		_ = env.Kube.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{})
	})
	cfg := poolConfig("test", name, `
  node_count            = 1
  allow_local_data_loss = true
`)
	var before *corev1.Node
	nodeNamed := func(want func() string) resource.TestCheckFunc {
		return resource.TestCheckResourceAttrWith(res, "nodes.0", func(v string) error {
			if v != want() {
				return fmt.Errorf("nodes.0 = %q, want %q", v, want())
			}
			return nil
		})
	}
	var after *corev1.Node
	recreate := func(mode string) func() {
		return func() {
			var err error
			if before, err = poolNode(ctx, env, name); err != nil {
				t.Fatal(err)
			}
			if err := env.RecreateNode(ctx, before.Name, mode); err != nil {
				t.Fatal(err)
			}
			if after, err = poolNode(ctx, env, name); err != nil {
				t.Fatal(err)
			}
		}
	}
	checkRepairs := func(want int) resource.TestCheckFunc {
		return func(*terraform.State) error {
			n, err := autoRepairs(ctx, env, name)
			if err == nil && n != want {
				err = fmt.Errorf("GKE lists %d AUTO_REPAIR_NODES operation(s) on %s, want %d", n, name, want)
			}
			return err
		}
	}
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories,
		CheckDestroy:             checkGone(name),
		Steps: []resource.TestStep{
			{
				Config: cfg,
				Check: func(*terraform.State) error {
					if err := runStatefulSet(ctx, env.Kube, ns, set, name); err != nil {
						return err
					}
					return exitQuickly(ctx, env, ns, set)
				},
			},
			{ // a new VM, a new node
				PreConfig: recreate(acctest.RecreateNewName),
				Config:    cfg,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectEmptyPlan(),
				}},
				Check: resource.ComposeAggregateTestCheckFunc(
					func(*terraform.State) error {
						if after.Name == before.Name || after.UID == before.UID || after.Annotations[annRecreatedAt] == "" {
							return fmt.Errorf("node %s (%s) -> %s (%s, %s=%q): want a new node", before.Name, before.UID, after.Name, after.UID, annRecreatedAt, after.Annotations[annRecreatedAt])
						}
						return nil
					},
					nodeNamed(func() string { return after.Name }),
					checkRepairs(1),
				),
			},
			{ // the StatefulSet's ordinal on the new node, then the same VM name recreated empty
				PreConfig: func() {
					// The old node took the PV with it (TopoLVM's node finalizer); the
					// controller recreates the claim, which lands on the new node.
					if err := waitOrdinalOn(ctx, env.Kube, ns, set, 0, name); err != nil {
						t.Fatal(err)
					}
					recreate(acctest.RecreateSameName)()
				},
				Config: cfg,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectEmptyPlan(),
				}},
				Check: resource.ComposeAggregateTestCheckFunc(
					func(*terraform.State) error {
						if after.Name != before.Name || after.UID != before.UID || after.Status.NodeInfo.BootID == before.Status.NodeInfo.BootID ||
							after.Annotations[annRecreatedAt] == "" || after.Spec.Unschedulable {
							return fmt.Errorf("node %s: UID %s -> %s, boot ID %s -> %s, %s=%q, unschedulable %v: want the same Node, rebooted",
								before.Name, before.UID, after.UID, before.Status.NodeInfo.BootID, after.Status.NodeInfo.BootID,
								annRecreatedAt, after.Annotations[annRecreatedAt], after.Spec.Unschedulable)
						}
						return nil
					},
					nodeNamed(func() string { return before.Name }),
					checkRepairs(2),
					func(*terraform.State) error { return checkVolumeLost(ctx, env, ns, "data-"+set+"-0", before.Name) },
				),
			},
		},
	})
}

// exitQuickly makes the StatefulSet's Pods end within a second of a drain instead of the default
// 30 s grace period: the template for Pods to come, the sandbox's exit-after-sigterm annotation
// for the running one.
func exitQuickly(ctx context.Context, env *acctest.Env, ns, set string) error {
	patch := []byte(`{"spec":{"template":{"spec":{"terminationGracePeriodSeconds":1}}}}`)
	if _, err := env.Kube.AppsV1().StatefulSets(ns).Patch(ctx, set, types.StrategicMergePatchType, patch, metav1.PatchOptions{}); err != nil {
		return err
	}
	patch = []byte(`{"metadata":{"annotations":{"sandbox.olapgke.io/exit-after-sigterm":"1s"}}}`)
	_, err := env.Kube.CoreV1().Pods(ns).Patch(ctx, set+"-0", types.StrategicMergePatchType, patch, metav1.PatchOptions{})
	return err
}

// checkVolumeLost waits until the PVC's PV, still pinned to node, is marked lost and the node's
// TopoLVM capacity is its whole volume group again (2 x 375 GiB less lvmd's 10 GiB spare).
func checkVolumeLost(ctx context.Context, env *acctest.Env, ns, claim, node string) error {
	var last string
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		pvc, err := env.Kube.CoreV1().PersistentVolumeClaims(ns).Get(ctx, claim, metav1.GetOptions{})
		if err != nil {
			last = err.Error()
			return false, nil //nolint:nilerr // transient: poll again until the timeout
		}
		pv, err := env.Kube.CoreV1().PersistentVolumes().Get(ctx, pvc.Spec.VolumeName, metav1.GetOptions{})
		if err != nil {
			last = err.Error()
			return false, nil //nolint:nilerr // transient: poll again until the timeout
		}
		n, err := env.Kube.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			last = err.Error()
			return false, nil //nolint:nilerr // transient: poll again until the timeout
		}
		pinned := pv.Spec.NodeAffinity != nil && pv.Spec.NodeAffinity.Required != nil &&
			strings.Contains(pv.Spec.NodeAffinity.Required.String(), node)
		free := n.Annotations["capacity.topolvm.io/ssd"]
		last = fmt.Sprintf("PV %s: %s=%q, pinned to %s: %v; node capacity.topolvm.io/ssd=%s", pv.Name, annLVLost, pv.Annotations[annLVLost], node, pinned, free)
		// Only the simulator marks the lost volume (sandbox.olapgke.io/logical-volume-lost); real
		// TopoLVM notices nothing, and shows the loss as a whole volume group free again.
		marked := pv.Annotations[annLVLost] != "" || acctest.RealTopoLVM()
		return marked && pinned && free == fmt.Sprint(740<<30), nil
	})
	if err != nil {
		return fmt.Errorf("%w: %s", err, last)
	}
	return nil
}
