package bench

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/olapgke/terraform-provider-olapgke/internal/stsutil"
)

// annSelectedNode is the node the scheduler's VolumeBinding plugin writes on a
// WaitForFirstConsumer claim in PreBind (k8s.io/kubernetes
// pkg/scheduler/framework/plugins/volumebinding binder.go, BindPodVolumes; the key is
// k8s.io/component-helpers storage/volume AnnSelectedNode). The PV controller then names the
// claim's provisioner and the provisioner creates the PV on that node.
const annSelectedNode = "volume.kubernetes.io/selected-node"

// Why the large cell seeds its claims: at 2,000 nodes the scheduler placed the plan StatefulSet's
// Pods at about 25 a minute on a 2-core machine. For a Pod whose claim is unbound and
// WaitForFirstConsumer, VolumeBinding's Filter checks every node's capacity against the
// CSIStorageCapacity objects (one per node and device class here), so each Pod costs nodes x
// capacities; 1,000 Pods on 5,000 nodes would take far longer than the cell. With the claims
// bound first, Filter only matches each Pod's PV against the node (no capacity check), as for
// any Pod whose volume already exists.
//
// seedClaims does, for the claims, what the scheduler would have done: it creates each
// ordinal's claim as the StatefulSet controller does (name <claim>-<set>-<ordinal>, the
// template's spec, the set's selector labels: k8s.io/kubernetes pkg/controller/statefulset
// stateful_set_utils.go getPersistentVolumeClaims) with the node already chosen in the
// selected-node annotation, one ordinal per node of the pool, spread over the pool in name
// order as the scheduler's spreading scores would. Everything after that is the sandbox's own
// machinery, as on a scheduled world: the PV controller names the provisioner, the TopoLVM
// simulator provisions the PV on the node, the PV controller binds both. The StatefulSet
// applied next finds its claims and creates its Pods (its revision, owner references and labels
// are the controller's own), and the scheduler places each Pod on its PV's node.
func seedClaims(ctx context.Context, cfg *rest.Config, ns string, replicas int, pool string, logf func(string, ...any)) error {
	c := rest.CopyConfig(cfg)
	c.QPS, c.Burst = 1000, 2000
	kube, err := kubernetes.NewForConfig(c)
	if err != nil {
		return err
	}
	nodes, err := kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: stsutil.LabelNodePool + "=" + pool})
	if err != nil {
		return err
	}
	var names []string
	for i := range nodes.Items {
		n := &nodes.Items[i]
		// Nodes the scheduler would take: Ready, no taint, TopoLVM registered on them (the
		// node's topology label is what the PV's node affinity names).
		if stsutil.NodeReady(n) == corev1.ConditionTrue && len(n.Spec.Taints) == 0 && !n.Spec.Unschedulable && n.Labels[stsutil.LabelTopoLVMNode] == n.Name {
			names = append(names, n.Name)
		}
	}
	sort.Strings(names)
	if len(names) < replicas {
		return fmt.Errorf("seeding %d claims: only %d schedulable TopoLVM nodes in %s", replicas, len(names), pool)
	}
	t0 := time.Now()
	work := make(chan int)
	var (
		mu   sync.Mutex
		errs []error
		wg   sync.WaitGroup
	)
	for w := 0; w < 16; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for o := range work {
				node := names[o*len(names)/replicas]
				pvc := seededClaim(ns, o, node)
				if _, err := kube.CoreV1().PersistentVolumeClaims(ns).Create(ctx, pvc, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
					mu.Lock()
					errs = append(errs, fmt.Errorf("claim %s: %w", pvc.Name, err))
					mu.Unlock()
				}
			}
		}()
	}
	for o := 0; o < replicas; o++ {
		work <- o
	}
	close(work)
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	logf("  seeded %d claims on %d of %d %s nodes in %s", replicas, replicas, len(names), pool, time.Since(t0).Round(time.Millisecond))
	var last string
	err = wait.PollUntilContextTimeout(ctx, time.Second, 10*time.Minute, true, func(ctx context.Context) (bool, error) {
		l, err := kube.CoreV1().PersistentVolumeClaims(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=" + PlanSet})
		if err != nil {
			last = err.Error()
			return false, nil //nolint:nilerr // polled again until the timeout, which reports last
		}
		bound := 0
		for i := range l.Items {
			if l.Items[i].Status.Phase == corev1.ClaimBound {
				bound++
			}
		}
		last = fmt.Sprintf("%d of %d claims Bound", bound, replicas)
		return bound >= replicas, nil
	})
	if err != nil {
		return fmt.Errorf("seeded claims not bound (%s): %w", last, err)
	}
	logf("  %d seeded claims provisioned and Bound in %s", replicas, time.Since(t0).Round(time.Millisecond))
	return nil
}

// seededClaim is ordinal o's claim of the plan StatefulSet (planManifest's volume claim
// template), as the StatefulSet controller creates it, with the scheduler's node choice.
func seededClaim(ns string, o int, node string) *corev1.PersistentVolumeClaim {
	sc := StorageClass
	return &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{
			Name: fmt.Sprintf("%s-%s-%d", Claim, PlanSet, o), Namespace: ns,
			Labels:      map[string]string{"app": PlanSet},
			Annotations: map[string]string{annSelectedNode: node},
		},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			StorageClassName: &sc,
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		},
	}
}

// nodeNames matches the sandbox's GKE node names (gke-<cluster>-<pool>-<hash>-<suffix>).
var nodeNames = regexp.MustCompile(`gke-[a-z0-9-]+?-pool-[a-z]-[0-9a-f]{8}-[a-z0-9]{4}`)

// planVerdicts is what a plan says per ordinal: its output from the per-ordinal warning on,
// blank lines dropped, each node name replaced by NODE<k>, k counting distinct nodes in order of
// appearance: two worlds name their nodes differently, but which ordinals share a node must
// agree.
func planVerdicts(out string) string {
	i := strings.Index(out, "Ordinals Will Be Recreated")
	if i < 0 {
		return ""
	}
	seen := map[string]string{}
	out = nodeNames.ReplaceAllStringFunc(out[i:], func(n string) string {
		if _, ok := seen[n]; !ok {
			seen[n] = fmt.Sprintf("NODE%d", len(seen)+1)
		}
		return seen[n]
	})
	var lines []string
	for _, l := range strings.Split(out, "\n") {
		if l = strings.TrimRight(l, " "); l != "" {
			lines = append(lines, l)
		}
	}
	return strings.Join(lines, "\n")
}

// SeedSelfCheck runs the plan cell of ordinals on two fresh worlds of nodes nodes, one whose
// Pods the scheduler placed (PlanScenario) and one seeded as the large cell is (seedClaims), and
// reports how their plans differ: the per-ordinal verdicts (node names aside) and the requests
// of `plan -refresh=false` and of the refreshing plan, by key. A seeded world whose plan
// differs would make the large cell measure something else than a placed StatefulSet's plan.
func SeedSelfCheck(ctx context.Context, sandboxBin, providerDir, dir string, nodes, ordinals int, logf func(string, ...any)) error {
	var res [2]PlanResult
	for i, seed := range []bool{false, true} {
		name := map[bool]string{false: "scheduled", true: "seeded"}[seed]
		wdir := filepath.Join(dir, name)
		sb, err := StartSandbox(ctx, sandboxBin, wdir, World(nodes-5, 5), 15*time.Minute, "--topolvm", "sim")
		if err != nil {
			return fmt.Errorf("%s world: %w", name, err)
		}
		proxy, err := NewProxy(sb.Rest)
		if err != nil {
			sb.Stop()
			return err
		}
		r := planScenario(ctx, sb, proxy, providerDir, filepath.Join(wdir, "plan"), nodes, []int{ordinals}, 1, seed, logf)
		_ = proxy.Close()
		sb.Stop()
		if len(r) != 1 || r[0].Err != "" {
			return fmt.Errorf("%s world: plan failed: %+v", name, r)
		}
		res[i] = r[0]
	}
	var diffs []string
	a, b := planVerdicts(res[0].lastOutput), planVerdicts(res[1].lastOutput)
	for i, v := range []string{a, b} { // for a look when they differ
		_ = os.WriteFile(filepath.Join(dir, []string{"scheduled", "seeded"}[i], "plan-verdicts.txt"), []byte(v+"\n"), 0o644)
	}
	if a != b || a == "" {
		diffs = append(diffs, fmt.Sprintf("per-ordinal verdicts differ:\n--- scheduled\n%s\n--- seeded\n%s", a, b))
	}
	if d := requestDiff(res[0].Requests[0], res[1].Requests[0]); d != "" {
		diffs = append(diffs, "plan -refresh=false requests differ: "+d)
	}
	if d := requestDiff(res[0].RefreshRequests, res[1].RefreshRequests); d != "" {
		diffs = append(diffs, "refreshing plan requests differ: "+d)
	}
	if len(diffs) > 0 {
		return fmt.Errorf("seeded world's plan differs from the scheduled world's (%d nodes x %d ordinals): %s", nodes, ordinals, strings.Join(diffs, "; "))
	}
	logf("seed self-check: %d nodes x %d ordinals, seeded plan = scheduled plan (%d verdict lines, %d requests, %d refreshing)",
		nodes, ordinals, strings.Count(planVerdicts(res[0].lastOutput), "\n")+1, res[0].Requests[0].Total(), res[0].RefreshRequests.Total())
	return nil
}

// requestDiff lists the request keys whose counts differ between a and b ("" when equal).
func requestDiff(a, b Requests) string {
	union := maps.Clone(a)
	maps.Copy(union, b)
	var out []string
	keys := slices.Sorted(maps.Keys(union))
	for _, k := range keys {
		if a[k] != b[k] {
			out = append(out, fmt.Sprintf("%s: %d vs %d", k, a[k], b[k]))
		}
	}
	return strings.Join(out, ", ")
}
