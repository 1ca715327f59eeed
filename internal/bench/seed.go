package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/olapgke/terraform-provider-olapgke/internal/stsutil"
)

// Annotations of a claim the scheduler, the PV controller and external-provisioner have bound
// (k8s.io/component-helpers storage/volume helpers.go; pv.kubernetes.io/provisioned-by is
// external-provisioner's on the PV it creates).
const (
	annSelectedNode           = "volume.kubernetes.io/selected-node"
	annStorageProvisioner     = "volume.kubernetes.io/storage-provisioner"
	annBetaStorageProvisioner = "volume.beta.kubernetes.io/storage-provisioner"
	annBindCompleted          = "pv.kubernetes.io/bind-completed"
	annBoundByController      = "pv.kubernetes.io/bound-by-controller"
	annProvisionedBy          = "pv.kubernetes.io/provisioned-by"
	topoLVMDriver             = "topolvm.io"
	topoLVMDeviceClassParam   = "topolvm.io/device-class"
	csiFSTypeParam            = "csi.storage.k8s.io/fstype"
)

// provisionerIdentity is external-provisioner's storage.kubernetes.io/csiProvisionerIdentity
// volume attribute (<start time ms>-<random>-<driver>), as the TopoLVM simulator writes it
// (internal/sandbox/topolvm provision.go); here the seeding process is the provisioner.
var provisionerIdentity = fmt.Sprintf("%d-%d-%s", time.Now().UnixMilli(), rand.IntN(10000), topoLVMDriver)

// Why the large cell seeds its volumes: at 2,000 nodes the scheduler placed the plan
// StatefulSet's Pods at about 25 a minute on a 2-core machine. For a Pod whose claim is unbound
// and WaitForFirstConsumer, VolumeBinding's Filter checks every node's capacity against the
// CSIStorageCapacity objects (one per node and device class here; hasEnoughCapacity lists them
// all for each node: k8s.io/kubernetes pkg/scheduler/framework/plugins/volumebinding
// binder.go), so each Pod costs nodes x capacities. With the claims bound first, Filter only matches each Pod's PV against the node,
// as for any Pod whose volume already exists. Letting the PV controller bind claims the
// simulator provisioned (selected-node written, 4 writes per claim by the PV controller's one
// claim worker) bound only 463 of 1,000 in 10 minutes on a busy 2-core machine: the bench writes
// the bound pair itself.
//
// seedClaims writes, per ordinal, the objects a placed StatefulSet's claim ends up as, one
// ordinal per node of the pool, spread over the pool in name order as the scheduler's spreading
// scores would:
//   - the claim as the StatefulSet controller creates it (name <claim>-<set>-<ordinal>, the
//     template's spec, the set's selector labels: k8s.io/kubernetes pkg/controller/statefulset
//     stateful_set_utils.go getPersistentVolumeClaims);
//   - the PV as external-provisioner creates it for TopoLVM's CreateVolume on that node
//     (pvc-<claim UID>, CSI source, node affinity topology.topolvm.io/node In [node], claimRef
//     with the claim's UID: the shape of the TopoLVM simulator's buildPV, internal/sandbox/topolvm
//     provision.go, and of external-provisioner's controller.go);
//   - the claim's volumeName and the annotations the scheduler (selected-node), the PV
//     controller (storage-provisioner, bind-completed, bound-by-controller) write: k8s.io/kubernetes
//     pkg/controller/volume/persistentvolume pv_controller.go bindClaimToVolume.
//
// The PV controller then finds both bound and sets their phases (syncBoundClaim, syncVolume), and
// the TopoLVM simulator books the PV's space from its informer. The StatefulSet applied next
// finds its claims and creates its Pods (its revision, owner references and labels are the
// controller's own); the scheduler places each Pod on its PV's node and KWOK runs it.
func seedClaims(ctx context.Context, cfg *rest.Config, ns string, replicas int, pool string, logf func(string, ...any)) error {
	c := rest.CopyConfig(cfg)
	c.QPS, c.Burst = 1000, 2000
	kube, err := kubernetes.NewForConfig(c)
	if err != nil {
		return err
	}
	sc, err := kube.StorageV1().StorageClasses().Get(ctx, StorageClass, metav1.GetOptions{})
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
				if err := seedOrdinal(ctx, kube, sc, ns, o, names[o*len(names)/replicas]); err != nil {
					mu.Lock()
					errs = append(errs, err)
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
	logf("  seeded %d bound claims on %d of %d %s nodes in %s", replicas, replicas, len(names), pool, time.Since(t0).Round(time.Millisecond))
	t1 := time.Now()
	var last string
	err = wait.PollUntilContextTimeout(ctx, time.Second, 15*time.Minute, true, func(ctx context.Context) (bool, error) {
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
	logf("  the PV controller had all %d claims Bound %s later", replicas, time.Since(t1).Round(time.Millisecond))
	return nil
}

// seedOrdinal writes ordinal o's claim and its PV on node, bound to each other (seedClaims).
func seedOrdinal(ctx context.Context, kube kubernetes.Interface, sc *storagev1.StorageClass, ns string, o int, node string) error {
	pvc, err := kube.CoreV1().PersistentVolumeClaims(ns).Create(ctx, seededClaim(ns, o), metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("claim %s-%s-%d: %w", Claim, PlanSet, o, err)
	}
	pv := seededPV(pvc, sc, node)
	if _, err := kube.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("PV %s: %w", pv.Name, err)
	}
	patch, err := json.Marshal(map[string]any{
		"metadata": map[string]any{"annotations": map[string]string{
			annSelectedNode: node, annStorageProvisioner: topoLVMDriver, annBetaStorageProvisioner: topoLVMDriver,
			annBindCompleted: "yes", annBoundByController: "yes",
		}},
		"spec": map[string]any{"volumeName": pv.Name},
	})
	if err != nil {
		return err
	}
	if _, err := kube.CoreV1().PersistentVolumeClaims(ns).Patch(ctx, pvc.Name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("binding claim %s to %s: %w", pvc.Name, pv.Name, err)
	}
	return nil
}

// seededClaim is ordinal o's claim of the plan StatefulSet (planManifest's volume claim
// template), as the StatefulSet controller creates it.
func seededClaim(ns string, o int) *corev1.PersistentVolumeClaim {
	sc := StorageClass
	return &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{
			Name: fmt.Sprintf("%s-%s-%d", Claim, PlanSet, o), Namespace: ns,
			Labels: map[string]string{"app": PlanSet},
		},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			StorageClassName: &sc,
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		},
	}
}

// seededPV is the PV external-provisioner writes for TopoLVM's volume of pvc on node (the
// TopoLVM simulator's buildPV, internal/sandbox/topolvm provision.go): 1 GiB (the claim's
// request, already whole GiB), the class's device class, fs type and reclaim policy.
func seededPV(pvc *corev1.PersistentVolumeClaim, sc *storagev1.StorageClass, node string) *corev1.PersistentVolume {
	policy := corev1.PersistentVolumeReclaimDelete
	if sc.ReclaimPolicy != nil {
		policy = *sc.ReclaimPolicy
	}
	mode := corev1.PersistentVolumeFilesystem
	return &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{
			Name:        "pvc-" + string(pvc.UID),
			Annotations: map[string]string{annProvisionedBy: topoLVMDriver},
		},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:    corev1.ResourceList{corev1.ResourceStorage: pvc.Spec.Resources.Requests[corev1.ResourceStorage]},
			AccessModes: pvc.Spec.AccessModes,
			VolumeMode:  &mode,
			PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{
				Driver:       topoLVMDriver,
				VolumeHandle: string(uuid.NewUUID()),
				FSType:       sc.Parameters[csiFSTypeParam],
				VolumeAttributes: map[string]string{
					topoLVMDeviceClassParam:                        sc.Parameters[topoLVMDeviceClassParam],
					"storage.kubernetes.io/csiProvisionerIdentity": provisionerIdentity,
				},
			}},
			ClaimRef: &corev1.ObjectReference{
				Kind: "PersistentVolumeClaim", APIVersion: "v1",
				Namespace: pvc.Namespace, Name: pvc.Name, UID: pvc.UID,
			},
			StorageClassName:              sc.Name,
			PersistentVolumeReclaimPolicy: policy,
			MountOptions:                  sc.MountOptions,
			NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{
				NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{
					Key: stsutil.LabelTopoLVMNode, Operator: corev1.NodeSelectorOpIn, Values: []string{node},
				}}}},
			}},
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
