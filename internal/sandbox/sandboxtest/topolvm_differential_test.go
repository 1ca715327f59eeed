package sandboxtest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"
)

// The differential test of issue #17: every TopoLVM behaviour olapgke relies on, run against
// the simulator (`up --topolvm sim`, the package's sandbox) and TopoLVM's own code (`up
// --topolvm real`), each scenario in a namespace of its own on both, each side reduced to an
// outcome without the names that differ between two sandboxes (node names carry a random
// suffix, PV names the claim's UID: nodes are named by role, PVs by claim). The outcomes must
// be equal, except for the divergences listed with their scenario: there each side must show
// exactly its documented value, so the test fails when either side changes.

const (
	diffFull       = int64(2*375-10) << 30 // pool nodes: 2 Local SSDs, lvmd's default spare-gb 10
	diffGi         = int64(1) << 30
	diffLVMDNS     = "topolvm-system"
	diffLVMDName   = "topolvm-lvmd-0" // the lvmd ConfigMap and DaemonSet
	diffLVMDKey    = "lvmd.yaml"
	diffTaint      = "olapgke.io/storage-not-ready"
	diffNodeHash   = "sandbox.olapgke.io/lvmd-config-hash" // real mode: the config its lvmd loaded
	diffRestartAnn = "olapgke.io/lvmd-config-sha256"       // internal/resources/deviceclass AnnLVMDConfigHash
	diffCapPrefix  = "capacity.topolvm.io/"
	diffSSDAnn     = diffCapPrefix + "ssd"
)

// diffRealWorld is testWorld (the simulator sandbox's world: the same pools, nodes and
// StorageClass) with external-provisioner's capacity poll at 3 s instead of the chart's 1 min
// (the simulator ignores bringUp): CSIStorageCapacity refreshes that real TopoLVM leaves to the
// poll (after a resize, a deletion, a recreated VM) arrive within the waits here. On GKE they
// take up to a minute; the simulator writes them at once.
const diffRealWorld = testWorld + `
topolvm:
  bringUp:
    capacityPoll: 3s
`

// diffSide is one of the two sandboxes.
type diffSide struct {
	name    string // "sim" or "real"
	kube    kubernetes.Interface
	control string // OLAPGKE_SANDBOX_CONTROL
}

// diffDivergence is a known difference in one field of a scenario's outcome: the simulator's
// and real TopoLVM's exact values.
type diffDivergence struct {
	field     string
	sim, real any
}

type diffScenario struct {
	name string
	// run drives the scenario on one side, in namespace ns, and returns its outcome (a struct).
	run      func(t *testing.T, sb *diffSide, ns string) any
	diverges []diffDivergence
}

// TestTopoLVMDifferential runs every scenario on both sandboxes (needs OLAPGKE_TOPOLVM_BIN) and
// compares the outcomes. The two sides of a scenario run in parallel; scenarios run one after
// the other (some change the cluster: lvmd's ConfigMap, a VM, extra nodes).
func TestTopoLVMDifferential(t *testing.T) {
	bin := topolvmBinOrSkip(t)
	start := time.Now()
	sides := []*diffSide{
		{name: "sim", kube: kube, control: envVars["OLAPGKE_SANDBOX_CONTROL"]},
		startDiffRealSandbox(t, bin),
	}
	t.Logf("real TopoLVM sandbox ready in %s", time.Since(start).Round(100*time.Millisecond))
	for _, sb := range sides {
		diffWaitSettled(t, sb)
	}
	for _, sc := range diffScenarios() {
		t.Run(sc.name, func(t *testing.T) {
			got := make([]any, len(sides))
			t.Run("sides", func(t *testing.T) {
				for i, sb := range sides {
					t.Run(sb.name, func(t *testing.T) {
						t.Parallel()
						ns := diffNamespace(t, sb, sc.name)
						got[i] = sc.run(t, sb, ns)
						t.Logf("%s: %+v", sb.name, got[i])
					})
				}
			})
			if t.Failed() {
				return
			}
			diffCompare(t, got[0], got[1], sc.diverges)
		})
	}
	t.Logf("differential test: %s", time.Since(start).Round(time.Second))
}

// diffCompare asserts each divergence exactly, then that the outcomes agree on every other field.
func diffCompare(t *testing.T, sim, real any, diverges []diffDivergence) {
	t.Helper()
	s, r := reflect.New(reflect.TypeOf(sim)).Elem(), reflect.New(reflect.TypeOf(real)).Elem()
	s.Set(reflect.ValueOf(sim))
	r.Set(reflect.ValueOf(real))
	for _, d := range diverges {
		fs, fr := s.FieldByName(d.field), r.FieldByName(d.field)
		if !fs.IsValid() || !fr.IsValid() {
			t.Fatalf("divergence on %s: no such field in %T", d.field, sim)
		}
		if !reflect.DeepEqual(fs.Interface(), d.sim) {
			t.Errorf("%s: simulator gives %#v, the documented divergence says %#v", d.field, fs.Interface(), d.sim)
		}
		if !reflect.DeepEqual(fr.Interface(), d.real) {
			t.Errorf("%s: real TopoLVM gives %#v, the documented divergence says %#v", d.field, fr.Interface(), d.real)
		}
		fs.Set(reflect.Zero(fs.Type()))
		fr.Set(reflect.Zero(fr.Type()))
	}
	if !reflect.DeepEqual(s.Interface(), r.Interface()) {
		t.Errorf("simulator and real TopoLVM differ:\n sim:  %+v\n real: %+v", s.Interface(), r.Interface())
	}
}

func diffScenarios() []diffScenario {
	return []diffScenario{
		{
			name: "provision",
			run:  diffProvision,
			diverges: []diffDivergence{
				// Real TopoLVM v0.41.0's CreateVolume answers volume_context nil
				// (topolvm/topolvm internal/driver/controller.go createVolume: the device class
				// lives on the LogicalVolume, spec.deviceClass), so external-provisioner writes
				// only its own storage.kubernetes.io/csiProvisionerIdentity into the PV. The
				// simulator also writes topolvm.io/device-class; the provider reads the class
				// from the LogicalVolume first (deviceclass in-use guard), so nothing relies on it.
				{field: "DeviceClassAttr", sim: "ssd", real: ""},
				// TopoLVM's GetCapacity answers AvailableCapacity only (topolvm/topolvm
				// internal/driver/controller.go GetCapacity), so external-provisioner v6.3.0
				// leaves CSIStorageCapacity.maximumVolumeSize unset
				// (kubernetes-csi/external-provisioner pkg/capacity/capacity.go syncCapacity).
				// The simulator sets it to the capacity (internal/sandbox/topolvm node.go
				// syncNodeCapacities): the scheduler and the planner (planner/index.go) then
				// judge the same, unset meaning "no limit but the capacity".
				{field: "CSIMaxVolume", sim: "capacity", real: "absent"},
			},
		},
		{name: "capacity shortage", run: diffShortage},
		{
			name: "expand within free space",
			run:  diffExpand,
			diverges: []diffDivergence{
				// external-resizer v1.14.0 records Resizing, then FileSystemResizeRequired
				// ("Require file system resize of volume on node": TopoLVM's
				// ControllerExpandVolume asks for node expansion on filesystem volumes,
				// kubernetes-csi/external-resizer pkg/controller/resize_status.go
				// markForPendingNodeExpansion), and the kubelet FileSystemResizeSuccessful once
				// NodeExpandVolume ran (kubernetes pkg/volume/util/operationexecutor
				// node_expander.go; the sandbox's shim, topolvmreal/kubeletexpand.go, needs a Pod
				// on the node using the claim). The simulator grows in one step and records
				// Resizing and VolumeResizeSuccessful (the event external-resizer writes only when
				// no node expansion is needed). The provider waits on the claim's status
				// capacity, which agrees, and reads no success event.
				{field: "Events", sim: []string{"Resizing", "VolumeResizeSuccessful"}, real: []string{"FileSystemResizeRequired", "FileSystemResizeSuccessful", "Resizing"}},
			},
		},
		{
			name: "expand beyond free space",
			run:  diffExpandBeyond,
			diverges: []diffDivergence{
				// external-resizer v1.14.0 with RecoverVolumeExpansionFailure (on) marks the claim
				// before calling the driver and keeps it so after TopoLVM's "not enough space"
				// (codes.Internal: a final, not an infeasible, error): allocatedResources at the
				// request, allocatedResourceStatuses ControllerResizeInProgress, conditions
				// Resizing and ControllerResizeError, retried with backoff
				// (kubernetes-csi/external-resizer pkg/controller/expand_and_recover.go,
				// resize_status.go markControllerExpansionFailed). The simulator only records
				// the event and leaves the status alone (internal/sandbox/topolvm resize.go).
				// The provider quotes the event (internal/engine/recreate.go resizeFailure,
				// which agrees since the simulator's fix) and reads allocatedResourceStatuses
				// only for the Infeasible values, which neither side writes here.
				{field: "ResizeStatus", sim: "allocated=0 status= conditions=[]", real: "allocated=2Ti status=ControllerResizeInProgress conditions=[ControllerResizeError Resizing]"},
			},
		},
		{name: "claim deletion frees space", run: diffDeleteFrees},
		{
			name: "same-name VM recreation",
			run:  diffSameName,
			diverges: []diffDivergence{
				// Real TopoLVM does not notice that a VM came back with empty disks: lvmd on the
				// new, empty volume group reports it whole and the PV / LogicalVolume of the lost
				// volume stay untouched (topolvm/topolvm internal/runners/metrics_exporter.go
				// only reports VG free space; nothing compares boot IDs). The simulator marks
				// the PV sandbox.olapgke.io/logical-volume-lost (internal/sandbox/topolvm
				// vgwipe.go), a sandbox-only annotation the provider does not read.
				{field: "LostAnnotation", sim: true, real: false},
			},
		},
		{
			name: "new device class and restart_lvmd",
			run:  diffNewClass,
			diverges: []diffDivergence{
				// lvmd reads lvmd.yaml only when it starts (topolvm/topolvm cmd/lvmd/app/root.go
				// loads the config file once, before serving), so a ConfigMap edit reaches no
				// running lvmd until the DaemonSet rolls its Pods (restart_lvmd). The simulator
				// applies the edit at once (internal/sandbox/topolvm simulator.go syncConfig).
				{field: "PublishedBeforeRestart", sim: 6, real: 0},
				// TopoLVM's metrics exporter only adds capacity.topolvm.io/<class> annotations
				// (topolvm/topolvm internal/runners/metrics_exporter.go updateNode: a merge patch
				// of the classes lvmd reports), so a class removed from lvmd.yaml keeps its last
				// annotation on every node after restart_lvmd. The simulator removes annotations
				// of classes no longer configured (internal/sandbox/topolvm node.go
				// nodeMetaPatch). The provider reads a class's annotation only for a class that
				// exists (olapgke_topolvm_device_class capacity).
				{field: "StaleAfterClassRemoved", sim: 0, real: 6},
			},
		},
		{
			name: "device class on a missing volume group",
			run:  diffMissingVG,
			diverges: []diffDivergence{
				// Real lvmd v0.41.0 exits at start when a configured volume group is missing
				// (topolvm/topolvm cmd/lvmd/app/root.go: "volume group not found"), so the first
				// node the DaemonSet rolls crash-loops (BackOff) and the RollingUpdate stalls
				// there (maxUnavailable 1); the other nodes keep the previous configuration. The
				// simulator takes the configuration and publishes every class only on the nodes
				// whose volume group it names (internal/sandbox/topolvm capacity.go
				// nodeCapacities): no crash, no BackOff, no stall.
				{field: "BackOffNodes", sim: 0, real: 1},
			},
		},
		{
			name: "node deletion",
			run:  diffNodeDeletion,
			diverges: []diffDivergence{
				// TopoLVM's node finalizer (topolvm/topolvm internal/controller/node_controller.go
				// doFinalize) deletes the PVCs whose selected-node is the node and the
				// LogicalVolumes on it, never PVs: a PV stays Bound while its PVC is held by
				// pvc-protection (a Pod still uses it) and goes only once the claim is gone
				// (reclaim Delete, external-provisioner's DeleteVolume: no LogicalVolume is
				// success). The simulator's finalizer also deletes the node's PVs at once
				// (internal/sandbox/topolvm node.go finalizeNode), so they are Terminating
				// (pv-protection) while their claims are. The end state is the same.
				{field: "AtNodeGone", sim: map[string]string{
					"elsewhere": "PVC Bound, PV Bound",
					"idle":      "PVC absent, PV absent",
					"used":      "PVC terminating, PV terminating",
				}, real: map[string]string{
					"elsewhere": "PVC Bound, PV Bound",
					"idle":      "PVC absent, PV absent",
					"used":      "PVC terminating, PV Bound",
				}},
			},
		},
		{
			name: "volume-group bootstrap",
			run:  diffBootstrap,
		},
	}
}

// ---- sandboxes ----

// startDiffRealSandbox starts `up --topolvm real` on diffRealWorld.
func startDiffRealSandbox(t *testing.T, topolvmBin string) *diffSide {
	t.Helper()
	p := startRealProcess(t, diffRealWorld, topolvmBin, nil)
	return &diffSide{name: "real", kube: kubernetes.NewForConfigOrDie(p.rest), control: p.env["OLAPGKE_SANDBOX_CONTROL"]}
}

// diffWaitSettled waits until every Local-SSD node of a side publishes its capacity both ways
// (annotation and CSIStorageCapacity, the same figure): external-provisioner's first poll.
func diffWaitSettled(t *testing.T, sb *diffSide) {
	t.Helper()
	for _, n := range diffSSDNodes(t, sb) {
		poll(t, 90*time.Second, sb.name+": capacity of "+n+" published", func(ctx context.Context) (bool, error) {
			a, okA, err := diffAnn(ctx, sb, n, diffSSDAnn)
			if err != nil || !okA {
				return false, fmt.Errorf("annotation: %v %v", okA, err)
			}
			c, err := diffCSI(ctx, sb, n)
			if err != nil {
				return false, err
			}
			return diffOK(c.count == 1 && c.capacity == a, "annotation %d, CSIStorageCapacity %+v", a, c)
		})
	}
}

// ---- helpers ----

// diffOK is a poll condition's answer: done, or not yet with what was seen (poll keeps the last).
func diffOK(ok bool, format string, args ...any) (bool, error) {
	if ok {
		return true, nil
	}
	return false, fmt.Errorf(format, args...)
}

func diffNamespace(t *testing.T, sb *diffSide, scenario string) string {
	t.Helper()
	ctx := t.Context()
	ns, err := sb.kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
		GenerateName: "diff-" + strings.ToLower(strings.ReplaceAll(strings.ReplaceAll(scenario, " ", "-"), "_", "-"))[:min(len(scenario), 30)] + "-",
	}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	poll(t, 30*time.Second, "default ServiceAccount in "+ns.Name, func(ctx context.Context) (bool, error) {
		_, err := sb.kube.CoreV1().ServiceAccounts(ns.Name).Get(ctx, "default", metav1.GetOptions{})
		return err == nil, err
	})
	// Cleanup: the namespace and, before the next scenario, every volume its claims held (so
	// that each scenario starts from nodes with their whole volume group free).
	t.Cleanup(func() {
		ctx := context.Background()
		_ = sb.kube.CoreV1().Namespaces().Delete(ctx, ns.Name, metav1.DeleteOptions{})
		err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
			pvs, err := sb.kube.CoreV1().PersistentVolumes().List(ctx, metav1.ListOptions{})
			if err != nil {
				return false, nil //nolint:nilerr // ask again
			}
			for _, pv := range pvs.Items {
				if pv.Spec.ClaimRef != nil && pv.Spec.ClaimRef.Namespace == ns.Name {
					return false, nil
				}
			}
			return true, nil
		})
		if err != nil {
			t.Errorf("%s: volumes of namespace %s not gone: %v", sb.name, ns.Name, err)
		}
	})
	return ns.Name
}

// diffPoolNodes are a pool's node names, sorted: a node's role is its index (names differ
// between the sandboxes).
func diffPoolNodes(t *testing.T, sb *diffSide, pool string) []string {
	t.Helper()
	l, err := sb.kube.CoreV1().Nodes().List(t.Context(), metav1.ListOptions{LabelSelector: poolLabel + "=" + pool})
	if err != nil || len(l.Items) == 0 {
		t.Fatalf("%s: nodes of %s: %v", sb.name, pool, err)
	}
	var out []string
	for _, n := range l.Items {
		out = append(out, n.Name)
	}
	sort.Strings(out)
	return out
}

func diffSSDNodes(t *testing.T, sb *diffSide) []string {
	t.Helper()
	l, err := sb.kube.CoreV1().Nodes().List(t.Context(), metav1.ListOptions{LabelSelector: "cloud.google.com/gke-local-nvme-ssd=true"})
	if err != nil || len(l.Items) == 0 {
		t.Fatalf("%s: Local SSD nodes: %v", sb.name, err)
	}
	var out []string
	for _, n := range l.Items {
		out = append(out, n.Name)
	}
	sort.Strings(out)
	return out
}

func diffAnn(ctx context.Context, sb *diffSide, node, key string) (int64, bool, error) {
	n, err := sb.kube.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
	if err != nil {
		return 0, false, err
	}
	v, ok := n.Annotations[key]
	if !ok {
		return 0, false, nil
	}
	q, err := resource.ParseQuantity(v)
	if err != nil {
		return 0, true, fmt.Errorf("node %s %s=%q: %v", node, key, v, err)
	}
	return q.Value(), true, nil
}

// diffCapacity is what external-provisioner publishes for the StorageClass on one node.
type diffCapacity struct {
	count    int // CSIStorageCapacity objects of the StorageClass selecting the node
	capacity int64
	maxVol   string // "absent", "capacity" (equal to it), or the value
	labels   string
}

func diffCSI(ctx context.Context, sb *diffSide, node string) (diffCapacity, error) {
	caps, err := sb.kube.StorageV1().CSIStorageCapacities(diffLVMDNS).List(ctx, metav1.ListOptions{})
	if err != nil {
		return diffCapacity{}, err
	}
	var out diffCapacity
	for _, c := range caps.Items {
		if c.StorageClassName != storageClass || c.NodeTopology == nil || c.NodeTopology.MatchLabels[topolvmNode] != node {
			continue
		}
		out.count++
		if c.Capacity != nil {
			out.capacity = c.Capacity.Value()
		}
		switch {
		case c.MaximumVolumeSize == nil:
			out.maxVol = "absent"
		case c.Capacity != nil && c.MaximumVolumeSize.Cmp(*c.Capacity) == 0:
			out.maxVol = "capacity"
		default:
			out.maxVol = c.MaximumVolumeSize.String()
		}
		var ls []string
		for k, v := range c.Labels {
			ls = append(ls, k+"="+v)
		}
		sort.Strings(ls)
		out.labels = strings.Join(ls, ",")
	}
	return out, nil
}

// diffSettle polls get until it returns want or timeout passes, and returns the last value
// (the outcome then shows the difference; no failure here).
func diffSettle(ctx context.Context, timeout time.Duration, want int64, get func(ctx context.Context) (int64, error)) int64 {
	var last int64 = -1
	_ = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		v, err := get(ctx)
		if err != nil {
			return false, nil //nolint:nilerr // ask again
		}
		last = v
		return v == want, nil
	})
	return last
}

func diffAnnOf(sb *diffSide, node string) func(ctx context.Context) (int64, error) {
	return func(ctx context.Context) (int64, error) {
		v, ok, err := diffAnn(ctx, sb, node, diffSSDAnn)
		if err == nil && !ok {
			err = errors.New("no capacity annotation")
		}
		return v, err
	}
}

func diffCSIOf(sb *diffSide, node string) func(ctx context.Context) (int64, error) {
	return func(ctx context.Context) (int64, error) {
		c, err := diffCSI(ctx, sb, node)
		if err == nil && c.count != 1 {
			err = fmt.Errorf("%d CSIStorageCapacity objects", c.count)
		}
		return c.capacity, err
	}
}

// diffClaim creates a TopoLVM claim and a Pod using it on node (kubernetes.io/hostname), and
// waits for the Pod to run when wantRunning.
func diffClaim(t *testing.T, sb *diffSide, ns, name, node, size string, wantRunning bool) {
	t.Helper()
	ctx := t.Context()
	sc := storageClass
	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			StorageClassName: &sc,
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(size)}},
		},
	}
	if _, err := sb.kube.CoreV1().PersistentVolumeClaims(ns).Create(ctx, pvc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	grace := int64(0)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PodSpec{
			NodeSelector:                  map[string]string{"kubernetes.io/hostname": node},
			TerminationGracePeriodSeconds: &grace,
			Containers: []corev1.Container{{
				Name: "db", Image: "registry.k8s.io/pause:3.10",
				VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}},
			}},
			Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: name},
			}}},
		},
	}
	if _, err := sb.kube.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if !wantRunning {
		return
	}
	poll(t, 90*time.Second, sb.name+": Pod "+name+" running with its claim bound", func(ctx context.Context) (bool, error) {
		p, err := sb.kube.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		c, err := sb.kube.CoreV1().PersistentVolumeClaims(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return diffOK(p.Status.Phase == corev1.PodRunning && c.Status.Phase == corev1.ClaimBound, "Pod %s, PVC %s", p.Status.Phase, c.Status.Phase)
	})
}

func diffGetClaim(t *testing.T, sb *diffSide, ns, name string) (*corev1.PersistentVolumeClaim, *corev1.PersistentVolume) {
	t.Helper()
	c, err := sb.kube.CoreV1().PersistentVolumeClaims(ns).Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if c.Spec.VolumeName == "" {
		return c, nil
	}
	pv, err := sb.kube.CoreV1().PersistentVolumes().Get(t.Context(), c.Spec.VolumeName, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("PV of %s: %v", name, err)
	}
	return c, pv
}

// diffReasons are the sorted distinct reasons of the events on an object (by UID) among keep
// (all when keep is empty).
func diffReasons(t *testing.T, sb *diffSide, ns string, uid types.UID, keep ...string) []string {
	t.Helper()
	evs, err := sb.kube.CoreV1().Events(ns).List(t.Context(), metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("involvedObject.uid", string(uid)).String()})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range evs.Items {
		if (len(keep) == 0 || slices.Contains(keep, e.Reason)) && !slices.Contains(out, e.Reason) {
			out = append(out, e.Reason)
		}
	}
	sort.Strings(out)
	return out
}

// ---- scenarios ----

// provisionOutcome: WaitForFirstConsumer provisioning of one 10Gi claim on a chosen node.
type provisionOutcome struct {
	PVCPhase, PVCCapacity        string
	SelectedIsNode, PinnedIsNode bool
	AffinityTerms, AffinityExprs int
	PVPhase, PVCapacity, Reclaim string
	Driver, FSType, VolumeMode   string
	PodPhase                     string
	DeviceClassAttr              string
	ProvisionerEvents            []string
	AnnDropGi, CSIDropGi         int64 // capacity annotation / CSIStorageCapacity drop on the node
	CapacityAnnKeys              []string
	CSIObjects                   map[int]int // objects per Local-SSD node for the StorageClass -> nodes
	CSIMaxVolume, CSILabels      string
	FullBeforeAnn, FullBeforeCSI bool // the node published its whole volume group before
}

func diffProvision(t *testing.T, sb *diffSide, ns string) any {
	ctx := t.Context()
	node := diffPoolNodes(t, sb, "pool-b")[0]
	a0 := diffSettle(ctx, 30*time.Second, diffFull, diffAnnOf(sb, node))
	c0, err := diffCSI(ctx, sb, node)
	if err != nil {
		t.Fatal(err)
	}
	c0.capacity = diffSettle(ctx, 30*time.Second, diffFull, diffCSIOf(sb, node))
	diffClaim(t, sb, ns, "data", node, "10Gi", true)
	pvc, pv := diffGetClaim(t, sb, ns, "data")
	pod, err := sb.kube.CoreV1().Pods(ns).Get(ctx, "data", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	o := provisionOutcome{
		PVCPhase: string(pvc.Status.Phase), PVCCapacity: qty(pvc.Status.Capacity),
		SelectedIsNode: pvc.Annotations["volume.kubernetes.io/selected-node"] == node,
		PodPhase:       string(pod.Status.Phase),
		FullBeforeAnn:  a0 == diffFull, FullBeforeCSI: c0.capacity == diffFull,
		CSIObjects: map[int]int{},
	}
	if pinned, err := pvNode(pv); err == nil {
		o.PinnedIsNode = pinned == node
	}
	o.AffinityTerms = len(pv.Spec.NodeAffinity.Required.NodeSelectorTerms)
	for _, term := range pv.Spec.NodeAffinity.Required.NodeSelectorTerms {
		o.AffinityExprs += len(term.MatchExpressions)
	}
	o.PVPhase, o.PVCapacity, o.Reclaim = string(pv.Status.Phase), qty(pv.Spec.Capacity), string(pv.Spec.PersistentVolumeReclaimPolicy)
	if pv.Spec.VolumeMode != nil {
		o.VolumeMode = string(*pv.Spec.VolumeMode)
	}
	if pv.Spec.CSI != nil {
		o.Driver, o.FSType, o.DeviceClassAttr = pv.Spec.CSI.Driver, pv.Spec.CSI.FSType, pv.Spec.CSI.VolumeAttributes["topolvm.io/device-class"]
	}
	o.ProvisionerEvents = diffReasons(t, sb, ns, pvc.UID, "Provisioning", "ProvisioningSucceeded", "ProvisioningFailed")

	o.AnnDropGi = (a0 - diffSettle(ctx, 30*time.Second, a0-10*diffGi, diffAnnOf(sb, node))) / diffGi
	// external-provisioner refreshes the segment after provisioning; the simulator at once.
	o.CSIDropGi = (c0.capacity - diffSettle(ctx, 30*time.Second, c0.capacity-10*diffGi, diffCSIOf(sb, node))) / diffGi
	n, err := sb.kube.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for k := range n.Annotations {
		if strings.HasPrefix(k, diffCapPrefix) {
			o.CapacityAnnKeys = append(o.CapacityAnnKeys, k)
		}
	}
	sort.Strings(o.CapacityAnnKeys)
	// external-provisioner's capacity controller may hold two objects for a segment for a moment
	// (it creates one before its informer shows the other, then deletes the extra): read the
	// objects per node once each node has one, or as they are after 30 s.
	read := func() (map[int]int, string, string) {
		counts, maxVol, labels := map[int]int{}, "", ""
		for _, m := range diffSSDNodes(t, sb) {
			c, err := diffCSI(ctx, sb, m)
			if err != nil {
				t.Fatal(err)
			}
			counts[c.count]++
			if m == node {
				maxVol, labels = c.maxVol, c.labels
			}
		}
		return counts, maxVol, labels
	}
	_ = wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		o.CSIObjects, o.CSIMaxVolume, o.CSILabels = read()
		return len(o.CSIObjects) == 1 && o.CSIObjects[1] > 0, nil
	})
	return o
}

// shortageOutcome: a claim larger than the node's free space.
type shortageOutcome struct {
	PodPhase, ScheduledStatus, ScheduledReason, ScheduledMessage string
	PVCPhase                                                     string
	SelectedNode                                                 bool
	ProvisionerEvents                                            []string
}

func diffShortage(t *testing.T, sb *diffSide, ns string) any {
	node := diffPoolNodes(t, sb, "pool-b")[0]
	diffClaim(t, sb, ns, "huge", node, "2Ti", false)
	var o shortageOutcome
	read := func(ctx context.Context) error {
		p, err := sb.kube.CoreV1().Pods(ns).Get(ctx, "huge", metav1.GetOptions{})
		if err != nil {
			return err
		}
		c, err := sb.kube.CoreV1().PersistentVolumeClaims(ns).Get(ctx, "huge", metav1.GetOptions{})
		if err != nil {
			return err
		}
		o = shortageOutcome{PodPhase: string(p.Status.Phase), PVCPhase: string(c.Status.Phase)}
		_, o.SelectedNode = c.Annotations["volume.kubernetes.io/selected-node"]
		for _, cond := range p.Status.Conditions {
			if cond.Type == corev1.PodScheduled {
				o.ScheduledStatus, o.ScheduledReason, o.ScheduledMessage = string(cond.Status), cond.Reason, cond.Message
			}
		}
		if o.ScheduledStatus != string(corev1.ConditionFalse) {
			return fmt.Errorf("PodScheduled %q", o.ScheduledStatus)
		}
		return nil
	}
	poll(t, 30*time.Second, sb.name+": Pod huge unschedulable", func(ctx context.Context) (bool, error) {
		err := read(ctx)
		return err == nil, err
	})
	// It stays so: no node, no volume (the scheduler filters the node out on CSIStorageCapacity).
	holds(t, 2*time.Second, sb.name+": Pod huge stays Pending", func(ctx context.Context) error {
		if err := read(ctx); err != nil {
			return err
		}
		if o.PodPhase != string(corev1.PodPending) || o.SelectedNode {
			return fmt.Errorf("Pod %s, selected-node set %v", o.PodPhase, o.SelectedNode)
		}
		return nil
	})
	c, _ := diffGetClaim(t, sb, ns, "huge")
	o.ProvisionerEvents = diffReasons(t, sb, ns, c.UID, "Provisioning", "ProvisioningSucceeded", "ProvisioningFailed")
	return o
}

// expandOutcome: a used 10Gi claim grown to 20Gi.
type expandOutcome struct {
	PVCCapacity, PVCapacity, ResizeState string
	AnnDropGi, CSIDropGi                 int64
	Events                               []string
}

func diffExpand(t *testing.T, sb *diffSide, ns string) any {
	ctx := t.Context()
	node := diffPoolNodes(t, sb, "pool-b")[1]
	diffClaim(t, sb, ns, "grow", node, "10Gi", true)
	a0 := diffSettle(ctx, 30*time.Second, diffFull-10*diffGi, diffAnnOf(sb, node))
	c0 := diffSettle(ctx, 30*time.Second, diffFull-10*diffGi, diffCSIOf(sb, node))
	growClaim(t, sb.kube, grownClaim{ns: ns, pvc: "grow"}, "20Gi")
	var o expandOutcome
	poll(t, 60*time.Second, sb.name+": claim grow at 20Gi", func(ctx context.Context) (bool, error) {
		c, err := sb.kube.CoreV1().PersistentVolumeClaims(ns).Get(ctx, "grow", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		pv, err := sb.kube.CoreV1().PersistentVolumes().Get(ctx, c.Spec.VolumeName, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		o.PVCCapacity, o.PVCapacity, o.ResizeState = qty(c.Status.Capacity), qty(pv.Spec.Capacity), hasResizeState(c)
		return diffOK(o.PVCCapacity == "20Gi" && o.ResizeState == "", "%+v", o)
	})
	o.AnnDropGi = (a0 - diffSettle(ctx, 30*time.Second, a0-10*diffGi, diffAnnOf(sb, node))) / diffGi
	// Real: at external-provisioner's next capacity poll (3 s here, 1 min on GKE).
	o.CSIDropGi = (c0 - diffSettle(ctx, 30*time.Second, c0-10*diffGi, diffCSIOf(sb, node))) / diffGi
	c, _ := diffGetClaim(t, sb, ns, "grow")
	o.Events = diffReasons(t, sb, ns, c.UID, "Resizing", "VolumeResizeSuccessful", "FileSystemResizeRequired", "FileSystemResizeSuccessful", "VolumeResizeFailed")
	return o
}

// expandBeyondOutcome: a used 10Gi claim grown past its node's volume group.
type expandBeyondOutcome struct {
	FailedMessage           string // VolumeResizeFailed, the PV name replaced by <pv>
	PVCCapacity, PVCapacity string
	AnnUnchanged            bool
	ResizeStatus            string // allocatedResources, allocatedResourceStatuses, conditions
}

func diffExpandBeyond(t *testing.T, sb *diffSide, ns string) any {
	ctx := t.Context()
	node := diffPoolNodes(t, sb, "pool-b")[1]
	diffClaim(t, sb, ns, "toobig", node, "10Gi", true)
	a0 := diffSettle(ctx, 30*time.Second, diffFull-10*diffGi, diffAnnOf(sb, node))
	c, pv := diffGetClaim(t, sb, ns, "toobig")
	growClaim(t, sb.kube, grownClaim{ns: ns, pvc: "toobig"}, "2Ti")
	var o expandBeyondOutcome
	poll(t, 60*time.Second, sb.name+": VolumeResizeFailed on toobig", func(ctx context.Context) (bool, error) {
		evs, err := sb.kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: fields.AndSelectors(
			fields.OneTermEqualSelector("involvedObject.uid", string(c.UID)),
			fields.OneTermEqualSelector("reason", "VolumeResizeFailed")).String()})
		if err != nil || len(evs.Items) == 0 {
			return false, err
		}
		e := evs.Items[0]
		o.FailedMessage = e.Type + " " + strings.ReplaceAll(e.Message, pv.Name, "<pv>")
		return true, nil
	})
	check := func(ctx context.Context) error {
		c, err := sb.kube.CoreV1().PersistentVolumeClaims(ns).Get(ctx, "toobig", metav1.GetOptions{})
		if err != nil {
			return err
		}
		p, err := sb.kube.CoreV1().PersistentVolumes().Get(ctx, pv.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		o.PVCCapacity, o.PVCapacity, o.ResizeStatus = qty(c.Status.Capacity), qty(p.Spec.Capacity), diffResizeStatus(c)
		if o.PVCCapacity != "10Gi" || o.PVCapacity != "10Gi" {
			return fmt.Errorf("claim %s, PV %s; want both 10Gi", o.PVCCapacity, o.PVCapacity)
		}
		return nil
	}
	holds(t, 2*time.Second, sb.name+": toobig keeps 10Gi", check)
	a1, _, _ := diffAnn(ctx, sb, node, diffSSDAnn)
	o.AnnUnchanged = a1 == a0
	return o
}

// diffResizeStatus is what a claim's status says of a resize: allocatedResources,
// allocatedResourceStatuses and the types of its true conditions, sorted.
func diffResizeStatus(c *corev1.PersistentVolumeClaim) string {
	alloc := c.Status.AllocatedResources[corev1.ResourceStorage]
	var conds []string
	for _, cond := range c.Status.Conditions {
		if cond.Status == corev1.ConditionTrue {
			conds = append(conds, string(cond.Type))
		}
	}
	sort.Strings(conds)
	return fmt.Sprintf("allocated=%s status=%s conditions=%v", alloc.String(), c.Status.AllocatedResourceStatuses[corev1.ResourceStorage], conds)
}

// deleteOutcome: a provisioned claim deleted.
type deleteOutcome struct {
	PVGone               bool
	AnnBackGi, CSIBackGi int64 // how far below the value before provisioning, in GiB
	UsedAnnGi, UsedCSIGi int64 // drop while provisioned
}

func diffDeleteFrees(t *testing.T, sb *diffSide, ns string) any {
	ctx := t.Context()
	node := diffPoolNodes(t, sb, "pool-b")[2]
	a0 := diffSettle(ctx, 30*time.Second, diffFull, diffAnnOf(sb, node))
	c0 := diffSettle(ctx, 30*time.Second, diffFull, diffCSIOf(sb, node))
	diffClaim(t, sb, ns, "gone", node, "10Gi", true)
	var o deleteOutcome
	o.UsedAnnGi = (a0 - diffSettle(ctx, 30*time.Second, a0-10*diffGi, diffAnnOf(sb, node))) / diffGi
	o.UsedCSIGi = (c0 - diffSettle(ctx, 30*time.Second, c0-10*diffGi, diffCSIOf(sb, node))) / diffGi
	_, pv := diffGetClaim(t, sb, ns, "gone")
	if err := sb.kube.CoreV1().Pods(ns).Delete(ctx, "gone", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := sb.kube.CoreV1().PersistentVolumeClaims(ns).Delete(ctx, "gone", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	poll(t, 60*time.Second, sb.name+": PV of gone deleted", func(ctx context.Context) (bool, error) {
		_, err := sb.kube.CoreV1().PersistentVolumes().Get(ctx, pv.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, err
	})
	o.PVGone = true
	o.AnnBackGi = (a0 - diffSettle(ctx, 30*time.Second, a0, diffAnnOf(sb, node))) / diffGi
	// Real: external-provisioner refreshes at its next poll (3 s here).
	o.CSIBackGi = (c0 - diffSettle(ctx, 30*time.Second, c0, diffCSIOf(sb, node))) / diffGi
	return o
}

// sameNameOutcome: GKE recreates the VM of a node holding a volume under the same name.
type sameNameOutcome struct {
	UsedBeforeGi             int64
	AnnFull, CSIFull         bool
	PVSameUID, PVPinnedThere bool
	PVCPhase                 string
	LostAnnotation           bool
	PodGone                  bool
}

func diffSameName(t *testing.T, sb *diffSide, ns string) any {
	ctx := t.Context()
	node := diffPoolNodes(t, sb, "pool-b")[1]
	diffClaim(t, sb, ns, "lost", node, "10Gi", true)
	var o sameNameOutcome
	o.UsedBeforeGi = (diffFull - diffSettle(ctx, 30*time.Second, diffFull-10*diffGi, diffAnnOf(sb, node))) / diffGi
	_, pv := diffGetClaim(t, sb, ns, "lost")
	if err := recreateVM(ctx, sb.control, node, "same-name"); err != nil {
		t.Fatal(err)
	}
	o.AnnFull = diffSettle(ctx, 60*time.Second, diffFull, diffAnnOf(sb, node)) == diffFull
	o.CSIFull = diffSettle(ctx, 60*time.Second, diffFull, diffCSIOf(sb, node)) == diffFull
	c, got := diffGetClaim(t, sb, ns, "lost")
	o.PVCPhase = string(c.Status.Phase)
	if got != nil {
		o.PVSameUID = got.UID == pv.UID
		pinned, _ := pvNode(got)
		o.PVPinnedThere = pinned == node
		_, o.LostAnnotation = got.Annotations["sandbox.olapgke.io/logical-volume-lost"]
	}
	// The recreation drains the node: the Pod (no controller) goes.
	poll(t, 30*time.Second, sb.name+": Pod lost drained", func(ctx context.Context) (bool, error) {
		_, err := sb.kube.CoreV1().Pods(ns).Get(ctx, "lost", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, err
	})
	o.PodGone = true
	return o
}

// ---- lvmd configuration ----

func diffHash(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// diffSetLVMD writes lvmd.yaml.
func diffSetLVMD(ctx context.Context, sb *diffSide, text string) error {
	cms := sb.kube.CoreV1().ConfigMaps(diffLVMDNS)
	cm, err := cms.Get(ctx, diffLVMDName, metav1.GetOptions{})
	if err != nil {
		return err
	}
	cm.Data[diffLVMDKey] = text
	_, err = cms.Update(ctx, cm, metav1.UpdateOptions{})
	return err
}

// diffRestartLVMD is what the provider's restart_lvmd does (internal/resources/deviceclass
// kube.go restartLVMD): the lvmd DaemonSet's pod-template annotation set to the config's hash.
func diffRestartLVMD(ctx context.Context, sb *diffSide, text string) error {
	patch, _ := json.Marshal(map[string]any{"spec": map[string]any{"template": map[string]any{"metadata": map[string]any{
		"annotations": map[string]string{diffRestartAnn: diffHash(text)}}}}})
	_, err := sb.kube.AppsV1().DaemonSets(diffLVMDNS).Patch(ctx, diffLVMDName, types.MergePatchType, patch, metav1.PatchOptions{})
	return err
}

// diffLVMDClasses is lvmd.yaml with extra device classes after the existing ones.
func diffLVMDClasses(t *testing.T, original string, extra ...map[string]any) string {
	t.Helper()
	doc := map[string]any{}
	if err := yaml.Unmarshal([]byte(original), &doc); err != nil {
		t.Fatal(err)
	}
	classes, _ := doc["device-classes"].([]any)
	for _, e := range extra {
		classes = append(classes, e)
	}
	doc["device-classes"] = classes
	b, err := yaml.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// diffRestoreLVMD puts the original device classes back, with a comment that makes the text
// (and so restart_lvmd's hash) new, restarts lvmd and, on real TopoLVM, waits until every node's
// lvmd loaded it (sandbox.olapgke.io/lvmd-config-hash) and capacity is published again; the
// simulator has it at once. It runs in cleanups too, hence its own context.
func diffRestoreLVMD(t *testing.T, sb *diffSide, nodes []string, original, scenario string) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	text := strings.TrimRight(original, "\n") + "\n# restored after the differential scenario " + scenario + "\n"
	if err := diffSetLVMD(ctx, sb, text); err != nil {
		t.Errorf("%s: restore lvmd.yaml: %v", sb.name, err)
		return
	}
	if err := diffRestartLVMD(ctx, sb, text); err != nil {
		t.Errorf("%s: restart lvmd: %v", sb.name, err)
		return
	}
	if sb.name != "real" {
		return
	}
	for _, n := range nodes {
		err := wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
			got, err := sb.kube.CoreV1().Nodes().Get(ctx, n, metav1.GetOptions{})
			if err != nil {
				return false, nil //nolint:nilerr // ask again
			}
			return got.Annotations[diffNodeHash] == diffHash(text), nil
		})
		if err != nil {
			t.Errorf("%s: lvmd of %s not on the restored config: %v", sb.name, n, err)
			return
		}
	}
	for _, n := range nodes {
		err := wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
			a, okA, err1 := diffAnn(ctx, sb, n, diffSSDAnn)
			c, err2 := diffCSI(ctx, sb, n)
			return err1 == nil && err2 == nil && okA && c.count == 1 && c.capacity == a, nil
		})
		if err != nil {
			t.Errorf("%s: capacity of %s not published again after the restore: %v", sb.name, n, err)
			return
		}
	}
}

// diffCountAnn counts the Local-SSD nodes carrying the annotation, and those where it equals
// the ssd class's.
func diffCountAnn(ctx context.Context, sb *diffSide, nodes []string, key string) (carrying, equalSSD int, err error) {
	for _, n := range nodes {
		got, err := sb.kube.CoreV1().Nodes().Get(ctx, n, metav1.GetOptions{})
		if err != nil {
			return 0, 0, err
		}
		if v, ok := got.Annotations[key]; ok {
			carrying++
			if v == got.Annotations[diffSSDAnn] {
				equalSSD++
			}
		}
	}
	return carrying, equalSSD, nil
}

// newClassOutcome: thin pools made on every node, three thin device classes on them added to
// lvmd.yaml, then restart_lvmd.
type newClassOutcome struct {
	Nodes                  int
	PublishedBeforeRestart int // nodes with capacity.topolvm.io/diff-fast before the restart
	PublishedAfterRestart  int
	SSDStillPublishedOnAll bool
	// SSDCapacity is every distinct capacity of the thick class ssd after the restart: the
	// pools are logical volumes of vg-ssd, so ssd sees the group less the pools and its spare.
	SSDCapacity             []int64
	StaleAfterClassRemoved  int // nodes still annotated once the class is gone again
	InvalidConfigEventCount int
	// ThinCapacity is every distinct class=capacity of the thin classes across the nodes after
	// the restart: floor(pool size x ratio), as lvmd's Watch reports it (no spare for thin).
	ThinCapacity []string
}

// diffPools are the thin pools diffNewClass makes on every node's vg-ssd.
var diffPools = map[string]int64{"pool-fast": 50 * diffGi, "pool-a": 100 * diffGi, "pool-b": 200 * diffGi}

// diffSetPools writes the node's thin pools (sandbox.olapgke.io/thin-pools, "name=bytes,...",
// what the node's set-up made; nil removes them).
func diffSetPools(ctx context.Context, sb *diffSide, node string, pools map[string]int64) error {
	var v any
	if pools != nil {
		var parts []string
		for _, n := range slices.Sorted(maps.Keys(pools)) {
			parts = append(parts, fmt.Sprintf("%s=%d", n, pools[n]))
		}
		v = strings.Join(parts, ",")
	}
	body, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]any{"sandbox.olapgke.io/thin-pools": v}}})
	if err != nil {
		return err
	}
	_, err = sb.kube.CoreV1().Nodes().Patch(ctx, node, types.MergePatchType, body, metav1.PatchOptions{})
	return err
}

func diffNewClass(t *testing.T, sb *diffSide, ns string) any {
	ctx := t.Context()
	nodes := diffSSDNodes(t, sb)
	cm, err := sb.kube.CoreV1().ConfigMaps(diffLVMDNS).Get(ctx, diffLVMDName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	original := cm.Data[diffLVMDKey]
	for _, n := range nodes {
		if err := diffSetPools(ctx, sb, n, diffPools); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		for _, n := range nodes {
			if err := diffSetPools(ctx, sb, n, nil); err != nil {
				t.Errorf("%s: remove the thin pools of %s: %v", sb.name, n, err)
			}
		}
		// The next scenario starts from whole volume groups.
		for _, n := range nodes {
			if err := wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
				a, ok, err := diffAnn(ctx, sb, n, diffSSDAnn)
				return err == nil && ok && a == diffFull, nil
			}); err != nil {
				t.Errorf("%s: %s: ssd capacity not whole again after the pools went: %v", sb.name, n, err)
			}
		}
	})
	// Three thin classes: no two classes may share a thick volume group or a thin pool
	// (lvmd's ValidateDeviceClasses).
	thinClasses := []string{"diff-fast", "diff-thin-a", "diff-thin-b"}
	text := diffLVMDClasses(t, original,
		map[string]any{"name": thinClasses[0], "volume-group": "vg-ssd", "type": "thin", "spare-gb": 10,
			"thin-pool": map[string]any{"name": "pool-fast", "overprovision-ratio": 1}},
		map[string]any{"name": thinClasses[1], "volume-group": "vg-ssd", "type": "thin", "spare-gb": 50,
			"thin-pool": map[string]any{"name": "pool-a", "overprovision-ratio": 2}},
		map[string]any{"name": thinClasses[2], "volume-group": "vg-ssd", "type": "thin",
			"thin-pool": map[string]any{"name": "pool-b", "overprovision-ratio": 4.5}})
	if err := diffSetLVMD(ctx, sb, text); err != nil {
		t.Fatal(err)
	}
	restored := false
	t.Cleanup(func() {
		if !restored {
			diffRestoreLVMD(t, sb, nodes, original, "new device class")
		}
	})
	key := diffCapPrefix + "diff-fast"
	o := newClassOutcome{Nodes: len(nodes)}
	// Until every node publishes the class, or 5 s: a running lvmd never re-reads its config.
	_ = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 5*time.Second, true, func(ctx context.Context) (bool, error) {
		n, _, err := diffCountAnn(ctx, sb, nodes, key)
		if err != nil {
			return false, nil //nolint:nilerr // ask again
		}
		o.PublishedBeforeRestart = n
		return n == len(nodes), nil
	})
	if err := diffRestartLVMD(ctx, sb, text); err != nil {
		t.Fatal(err)
	}
	wantSSD := diffFull + 10*diffGi - 350*diffGi - 10*diffGi
	poll(t, 2*time.Minute, sb.name+": every node publishes diff-fast after restart_lvmd", func(ctx context.Context) (bool, error) {
		n, _, err := diffCountAnn(ctx, sb, nodes, key)
		o.PublishedAfterRestart = n
		if err != nil {
			return false, err
		}
		return diffOK(n == len(nodes), "%d nodes publish it", n)
	})
	ssd, _, err := diffCountAnn(ctx, sb, nodes, diffSSDAnn)
	if err != nil {
		t.Fatal(err)
	}
	o.SSDStillPublishedOnAll = ssd == len(nodes)
	seen, seenSSD := map[string]bool{}, map[int64]bool{}
	for _, n := range nodes {
		got, err := sb.kube.CoreV1().Nodes().Get(ctx, n, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range thinClasses {
			seen[c+"="+got.Annotations[diffCapPrefix+c]] = true
		}
		v, _, err := diffAnn(ctx, sb, n, diffSSDAnn)
		if err != nil {
			t.Fatal(err)
		}
		seenSSD[v] = true
	}
	for k := range seen {
		o.ThinCapacity = append(o.ThinCapacity, k)
	}
	sort.Strings(o.ThinCapacity)
	o.SSDCapacity = slices.Sorted(maps.Keys(seenSSD))
	want := []string{
		fmt.Sprintf("%s=%d", thinClasses[0], 50*diffGi),
		fmt.Sprintf("%s=%d", thinClasses[1], 2*100*diffGi),
		fmt.Sprintf("%s=%d", thinClasses[2], int64(4.5*float64(200*diffGi))),
	}
	if !slices.Equal(o.ThinCapacity, want) {
		t.Errorf("%s: thin capacity %v, want %v (each: its pool x its ratio)", sb.name, o.ThinCapacity, want)
	}
	if !slices.Equal(o.SSDCapacity, []int64{wantSSD}) {
		t.Errorf("%s: ssd capacity %v, want %d (the group less the pools and spare)", sb.name, o.SSDCapacity, wantSSD)
	}
	diffRestoreLVMD(t, sb, nodes, original, "new device class")
	restored = true
	// The class gone from every lvmd: is its annotation gone too?
	_ = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 5*time.Second, true, func(ctx context.Context) (bool, error) {
		n, _, err := diffCountAnn(ctx, sb, nodes, key)
		if err != nil {
			return false, nil //nolint:nilerr // ask again
		}
		o.StaleAfterClassRemoved = n
		return n == 0, nil
	})
	evs, err := sb.kube.CoreV1().Events(diffLVMDNS).List(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("reason", "InvalidLVMDConfig").String()})
	if err != nil {
		t.Fatal(err)
	}
	o.InvalidConfigEventCount = len(evs.Items)
	return o
}

// missingVGOutcome: a device class on a volume group no node has, then restart_lvmd.
type missingVGOutcome struct {
	GhostPublished int // nodes annotated capacity.topolvm.io/diff-ghost
	SSDPublished   int // nodes still annotated for ssd
	BackOffNodes   int // nodes with a Warning BackOff Event naming the volume group
	CSIForSSD      int // nodes with a CSIStorageCapacity of the StorageClass
}

func diffMissingVG(t *testing.T, sb *diffSide, ns string) any {
	ctx := t.Context()
	nodes := diffSSDNodes(t, sb)
	cm, err := sb.kube.CoreV1().ConfigMaps(diffLVMDNS).Get(ctx, diffLVMDName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	original := cm.Data[diffLVMDKey]
	text := diffLVMDClasses(t, original, map[string]any{"name": "diff-ghost", "volume-group": "vg-diff-missing"})
	if err := diffSetLVMD(ctx, sb, text); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { diffRestoreLVMD(t, sb, nodes, original, "missing volume group") })
	if err := diffRestartLVMD(ctx, sb, text); err != nil {
		t.Fatal(err)
	}
	backOff := func(ctx context.Context) (int, error) {
		evs, err := nodeBackOffs(ctx, sb.kube)
		if err != nil {
			return 0, err
		}
		on := map[string]bool{}
		for _, e := range evs {
			if e.Type == corev1.EventTypeWarning && strings.Contains(e.Message, "vg-diff-missing") {
				on[e.InvolvedObject.Name] = true
			}
		}
		return len(on), nil
	}
	var o missingVGOutcome
	// Until lvmd crash-loops somewhere, or 10 s.
	_ = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		n, err := backOff(ctx)
		o.BackOffNodes = n
		return err == nil && n > 0, nil
	})
	// The rollout stalls on the crash-looping node (maxUnavailable 1): still one only.
	holds(t, 2*time.Second, sb.name+": BackOff on at most one node", func(ctx context.Context) error {
		n, err := backOff(ctx)
		if err == nil && n > 1 {
			err = fmt.Errorf("lvmd crash-loops on %d nodes", n)
		}
		o.BackOffNodes = max(o.BackOffNodes, n)
		return err
	})
	if o.GhostPublished, _, err = diffCountAnn(ctx, sb, nodes, diffCapPrefix+"diff-ghost"); err != nil {
		t.Fatal(err)
	}
	if o.SSDPublished, _, err = diffCountAnn(ctx, sb, nodes, diffSSDAnn); err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes {
		c, err := diffCSI(ctx, sb, n)
		if err != nil {
			t.Fatal(err)
		}
		if c.count > 0 {
			o.CSIForSSD++
		}
	}
	return o
}

// ---- nodes the test adds (the same names on both sides) ----

// diffAddNode creates a Local-SSD Node (2 disks) the way a kubelet registers, for KWOK to keep
// alive and TopoLVM to manage; it is deleted at cleanup if still there.
func diffAddNode(t *testing.T, sb *diffSide, name string, taints []corev1.Taint) {
	t.Helper()
	now := metav1.Now()
	cond := func(ty corev1.NodeConditionType, s corev1.ConditionStatus, reason string) corev1.NodeCondition {
		return corev1.NodeCondition{Type: ty, Status: s, Reason: reason, LastHeartbeatTime: now, LastTransitionTime: now}
	}
	res := corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse("8"), corev1.ResourceMemory: resource.MustParse("32Gi"),
		corev1.ResourcePods: resource.MustParse("110"), corev1.ResourceEphemeralStorage: resource.MustParse("100Gi"),
	}
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name: name,
			Labels: map[string]string{
				"kubernetes.io/hostname": name, "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64",
				"cloud.google.com/gke-local-nvme-ssd": "true", poolLabel: "diff-extra",
				"topology.kubernetes.io/zone": "us-central1-a",
			},
			Annotations: map[string]string{"kwok.x-k8s.io/node": "fake", "sandbox.olapgke.io/local-nvme-ssd-count": "2"},
		},
		Spec: corev1.NodeSpec{Taints: taints},
		Status: corev1.NodeStatus{
			Capacity: res, Allocatable: res, Phase: corev1.NodeRunning,
			Conditions: []corev1.NodeCondition{
				cond(corev1.NodeReady, corev1.ConditionTrue, "KubeletReady"),
				cond(corev1.NodeMemoryPressure, corev1.ConditionFalse, "KubeletHasSufficientMemory"),
				cond(corev1.NodeDiskPressure, corev1.ConditionFalse, "KubeletHasNoDiskPressure"),
				cond(corev1.NodePIDPressure, corev1.ConditionFalse, "KubeletHasSufficientPID"),
			},
			Addresses: []corev1.NodeAddress{{Type: corev1.NodeHostName, Address: name}},
			NodeInfo:  corev1.NodeSystemInfo{BootID: "diff-" + name, OperatingSystem: "linux", Architecture: "amd64", KubeletVersion: "v1.37.2"},
		},
	}
	if _, err := sb.kube.CoreV1().Nodes().Create(t.Context(), n, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx := context.Background()
		err := sb.kube.CoreV1().Nodes().Delete(ctx, name, metav1.DeleteOptions{})
		if apierrors.IsNotFound(err) {
			return
		}
		if err := diffWaitNodeGone(ctx, sb, name); err != nil {
			t.Errorf("%s: node %s: %v", sb.name, name, err)
		}
	})
}

func diffWaitNodeGone(ctx context.Context, sb *diffSide, name string) error {
	return wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := sb.kube.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, nil
	})
}

// diffTopoLVMOn is what TopoLVM shows on a node: the topology label, the driver registration
// as the planner judges it (planner.TopoLVMNotReady: CSINode lists topolvm.io, or no CSINode
// and the label), the capacity annotation and the CSIStorageCapacity.
type diffTopoLVMOn struct {
	Label, Registered bool
	Annotation        int64 // -1: none
	CSI               int64 // -1: none
}

func diffTopoLVM(ctx context.Context, sb *diffSide, name string) (diffTopoLVMOn, error) {
	// The four are read in the reverse of the order TopoLVM and the kubelet write them (the
	// capacity annotation, then the topology label, then the CSINode entry, then
	// external-provisioner's CSIStorageCapacity), so that one reading is never torn: a later
	// write seen implies the earlier ones are seen too. Read the other way round, a registration
	// finishing between the Node read and the CSINode read showed "registered, no label" (a CI
	// run of the real side did, on a loaded machine).
	o := diffTopoLVMOn{Annotation: -1, CSI: -1}
	c, err := diffCSI(ctx, sb, name)
	if err != nil {
		return o, err
	}
	if c.count > 0 {
		o.CSI = c.capacity
	}
	cn, err := sb.kube.StorageV1().CSINodes().Get(ctx, name, metav1.GetOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return o, err
	}
	n, nerr := sb.kube.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	if nerr != nil {
		return o, nerr
	}
	_, o.Label = n.Labels[topolvmNode]
	if err != nil { // no CSINode
		o.Registered = o.Label
	} else {
		o.Registered = slices.ContainsFunc(cn.Spec.Drivers, func(d storagev1.CSINodeDriver) bool { return d.Name == "topolvm.io" })
	}
	if v, ok := n.Annotations[diffSSDAnn]; ok {
		q, err := resource.ParseQuantity(v)
		if err != nil {
			return o, fmt.Errorf("node %s %s=%q: %v", name, diffSSDAnn, v, err)
		}
		o.Annotation = q.Value()
	}
	return o, nil
}

func diffClaimState(ctx context.Context, sb *diffSide, ns, name, pv string) (string, error) {
	pvcState, pvState := "absent", "absent"
	c, err := sb.kube.CoreV1().PersistentVolumeClaims(ns).Get(ctx, name, metav1.GetOptions{})
	switch {
	case err == nil && c.DeletionTimestamp != nil:
		pvcState = "terminating"
	case err == nil:
		pvcState = string(c.Status.Phase)
	case !apierrors.IsNotFound(err):
		return "", err
	}
	p, err := sb.kube.CoreV1().PersistentVolumes().Get(ctx, pv, metav1.GetOptions{})
	switch {
	case err == nil && p.DeletionTimestamp != nil:
		pvState = "terminating"
	case err == nil:
		pvState = string(p.Status.Phase)
	case !apierrors.IsNotFound(err):
		return "", err
	}
	return "PVC " + pvcState + ", PV " + pvState, nil
}

// nodeDeletionOutcome: a Node holding volumes is deleted; TopoLVM's node finalizer runs.
type nodeDeletionOutcome struct {
	Before     diffTopoLVMOn
	AtNodeGone map[string]string // claim -> state once the Node object is gone
	Final      map[string]string // once the Pod GC removed the Pod of the deleted node
	CSILeft    int               // CSIStorageCapacity objects left for the deleted node
}

func diffNodeDeletion(t *testing.T, sb *diffSide, ns string) any {
	ctx := t.Context()
	const node = "diff-node-deleted"
	diffAddNode(t, sb, node, nil)
	var o nodeDeletionOutcome
	poll(t, time.Minute, sb.name+": TopoLVM on "+node, func(ctx context.Context) (bool, error) {
		var err error
		o.Before, err = diffTopoLVM(ctx, sb, node)
		if err != nil {
			return false, err
		}
		return diffOK(o.Before.Registered && o.Before.Annotation == diffFull && o.Before.CSI == diffFull, "%+v", o.Before)
	})
	diffClaim(t, sb, ns, "used", node, "10Gi", true)
	diffClaim(t, sb, ns, "idle", node, "10Gi", true)
	diffClaim(t, sb, ns, "elsewhere", diffPoolNodes(t, sb, "pool-b")[0], "10Gi", true)
	pvs := map[string]string{}
	for _, c := range []string{"used", "idle", "elsewhere"} {
		_, pv := diffGetClaim(t, sb, ns, c)
		pvs[c] = pv.Name
	}
	// idle's Pod goes first: nothing protects its claim when the node goes.
	if err := sb.kube.CoreV1().Pods(ns).Delete(ctx, "idle", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	poll(t, 30*time.Second, sb.name+": Pod idle gone", func(ctx context.Context) (bool, error) {
		_, err := sb.kube.CoreV1().Pods(ns).Get(ctx, "idle", metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	if err := sb.kube.CoreV1().Nodes().Delete(ctx, node, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := diffWaitNodeGone(ctx, sb, node); err != nil {
		t.Fatalf("%s: node %s not gone (TopoLVM's finalizer): %v", sb.name, node, err)
	}
	states := func(ctx context.Context) (map[string]string, error) {
		out := map[string]string{}
		for c, pv := range pvs {
			s, err := diffClaimState(ctx, sb, ns, c, pv)
			if err != nil {
				return nil, err
			}
			out[c] = s
		}
		return out, nil
	}
	// The idle claim (no Pod: not protected) goes with its volume as the finalizer runs.
	poll(t, 30*time.Second, sb.name+": idle claim and volume gone", func(ctx context.Context) (bool, error) {
		s, err := states(ctx)
		o.AtNodeGone = s
		if err != nil {
			return false, err
		}
		return diffOK(s["idle"] == "PVC absent, PV absent", "%v", s)
	})
	// The used claim waits for its Pod: the Pod GC removes Pods of a node gone for 40 s.
	poll(t, 3*time.Minute, sb.name+": used claim and volume gone", func(ctx context.Context) (bool, error) {
		s, err := states(ctx)
		o.Final = s
		if err != nil {
			return false, err
		}
		return diffOK(s["used"] == "PVC absent, PV absent", "%v", s)
	})
	// No capacity stays published for the node.
	_ = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 20*time.Second, true, func(ctx context.Context) (bool, error) {
		c, err := diffCSI(ctx, sb, node)
		o.CSILeft = c.count
		return err == nil && c.count == 0, nil
	})
	return o
}

// bootstrapOutcome: a node registered with the startup taint, then the volume-group bootstrap.
type bootstrapOutcome struct {
	Tainted           diffTopoLVMOn // while the taint is on (3 s)
	TaintGone         bool
	VolumeGroupAnn    string // olapgke.io/volume-group, up to " created"
	Bootstrapped      diffTopoLVMOn
	ProvisionsThere   bool
	ProvisionedPinned bool
}

func diffBootstrap(t *testing.T, sb *diffSide, ns string) any {
	ctx := t.Context()
	const node = "diff-node-tainted"
	diffAddNode(t, sb, node, []corev1.Taint{{Key: diffTaint, Value: "true", Effect: corev1.TaintEffectNoSchedule}})
	var o bootstrapOutcome
	// The simulator's first sync and real TopoLVM's agent bring-up (1.5 s) would both be done.
	holds(t, 3*time.Second, sb.name+": no TopoLVM on the tainted node", func(ctx context.Context) error {
		s, err := diffTopoLVM(ctx, sb, node)
		o.Tainted = s
		if err == nil && (s.Label || s.Annotation >= 0 || s.CSI >= 0) {
			err = fmt.Errorf("TopoLVM on a node with the startup taint: %+v", s)
		}
		return err
	})
	labels := map[string]string{"app.kubernetes.io/name": "olapgke-vg-bootstrap"}
	ds := &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: "vg-bootstrap", Labels: labels},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{
					Name: "bootstrap", Image: "registry.k8s.io/pause:3.10",
					Env: []corev1.EnvVar{{Name: "VG_NAME", Value: "vg-ssd"}},
				}}},
			},
		},
	}
	if _, err := sb.kube.AppsV1().DaemonSets(ns).Create(ctx, ds, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	poll(t, time.Minute, sb.name+": bootstrap removes the taint", func(ctx context.Context) (bool, error) {
		n, err := sb.kube.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		o.TaintGone = !slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == diffTaint })
		o.VolumeGroupAnn, _, _ = strings.Cut(n.Annotations["olapgke.io/volume-group"], " created")
		return o.TaintGone, nil
	})
	poll(t, time.Minute, sb.name+": TopoLVM on "+node+" once bootstrapped", func(ctx context.Context) (bool, error) {
		var err error
		o.Bootstrapped, err = diffTopoLVM(ctx, sb, node)
		if err != nil {
			return false, err
		}
		return diffOK(o.Bootstrapped.Registered && o.Bootstrapped.Annotation == diffFull && o.Bootstrapped.CSI == diffFull, "%+v", o.Bootstrapped)
	})
	// The bootstrap DaemonSet goes before the node (cleanups run last-in first-out).
	t.Cleanup(func() {
		_ = sb.kube.AppsV1().DaemonSets(ns).Delete(context.Background(), ds.Name, metav1.DeleteOptions{})
	})
	diffClaim(t, sb, ns, "after", node, "10Gi", true)
	o.ProvisionsThere = true
	_, pv := diffGetClaim(t, sb, ns, "after")
	pinned, _ := pvNode(pv)
	o.ProvisionedPinned = pinned == node
	return o
}
